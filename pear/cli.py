"""The ``pear`` command line: ``pear run``, ``pear show``, ``pear index``, ``pear paper``.

Errors a user can make (bad argument, unknown preset/dataset/method/backend, missing file,
unreachable server) print one line naming the problem and exit with code 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from pear.factory import make_backend

__all__ = ["main", "make_backend"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"pear: error: {message}\n")


def _csv(kind):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty list {text!r}")
        try:
            return tuple(kind(t) for t in items)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value in {text!r}") from None
    return parse


def _int_at_least(lowest: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lowest:
            raise argparse.ArgumentTypeError(f"must be >= {lowest}: {text!r}")
        return v
    return parse


_positive, _nonneg = _int_at_least(1), _int_at_least(0)


def _role(text: str) -> tuple[int, str]:
    """``AGENT=ROLE`` (agent numbered from 1); the role's name is checked by the config."""
    agent, sep, role = text.partition("=")
    if not sep or not agent.strip().isdigit() or not role.strip():
        raise argparse.ArgumentTypeError(f"expected AGENT=ROLE (e.g. 2=adversarial), got {text!r}")
    return int(agent), role.strip()


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pear", description="PEAR multi-agent debate: run grids, inspect runs, "
                "rebuild the paper's tables and figures.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run (or resume) an experiment grid",
                       description="Run every missing debate of a preset grid into --out; "
                                   "rerunning resumes.")
    r.add_argument("--preset", default="smoke", help="smoke | paper | sim (default: smoke)")
    r.add_argument("--backend", default="llamacpp",
                   help="llamacpp | openai | vllm | simulated (default: llamacpp)")
    r.add_argument("--out", required=True, help="run directory (records, manifest, cache)")
    r.add_argument("--datasets", type=_csv(str), help="comma-separated datasets")
    r.add_argument("--methods", type=_csv(str), help="comma-separated methods")
    r.add_argument("--seeds", type=_csv(int), help="comma-separated run seeds")
    r.add_argument("--n-questions", type=_positive, help="questions per dataset")
    r.add_argument("--rounds", type=_nonneg, help="debate rounds")
    r.add_argument("--agents", type=_positive, help="number of agents")
    r.add_argument("--prompt-style", choices=("paper", "compact"),
                   help="paper (the study's templates) or compact (tiny CPU models)")
    r.add_argument("--stop", help="early stopping: none (default, the study) | consensus | "
                   "stable:K (the vote unchanged for K rounds)")
    r.add_argument("--role", action="append", type=_role, metavar="AGENT=ROLE",
                   help="role of one agent (numbered from 1): honest | adversarial | "
                   "overconfident | underconfident; repeatable")
    r.add_argument("--agent-models", type=_csv(str), metavar="M1,M2,...",
                   help="one model per agent (a mixed population; openai or llamacpp backend)")
    r.add_argument("--no-full", action="store_true", help="skip the full-dataset runs")
    r.add_argument("--model", action="append", help="model name (vllm/openai); repeatable")
    r.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    r.add_argument("--base-url", action="append",
                   help="OpenAI-compatible endpoint; repeatable; MODEL=URL serves one of "
                   "--agent-models from its own server")
    r.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    r.add_argument("--quiet", action="store_true", help="no progress bar")

    s = sub.add_parser("show", help="summarise a run directory",
                       description="Accuracy per method x dataset, tokens and parse failures.")
    s.add_argument("run_dir")
    s.add_argument("--drop-invalid", action="store_true", help=_DROP_HELP)

    ix = sub.add_parser("index", help="build or update a run directory's columnar view",
                        description="Index the records under RUN_DIR into RUN_DIR/view/ "
                                    "(Parquet): only lines appended since the last index are "
                                    "read; a stale or damaged view is rebuilt.")
    ix.add_argument("run_dir")
    ix.add_argument("--drop-invalid", action="store_true", help=_DROP_HELP)

    va = sub.add_parser("validate", help="check a run directory's records before trusting them",
                        description="Check every record line under RUN_DIR (typed schema, "
                                    "sizes, ids, ranges, internal consistency; with the run "
                                    "manifest: config hashes, gold answers, graphs) and report "
                                    "each problem with its count and first examples. Exit 0: "
                                    "valid (warnings allowed); 1: damaged records.")
    va.add_argument("run_dir")

    pp = sub.add_parser("paper", help="execute every notebook (jupytext + papermill)",
                        description="Run the notebooks in order; outputs go to figures/.")
    pp.add_argument("--backend", default="llamacpp",
                    help="llamacpp | vllm | openai | simulated | replay")
    pp.add_argument("--preset", default="smoke", help="smoke | paper | sim")
    pp.add_argument("--model", default="", help="model name/path ('' = backend default)")
    pp.add_argument("--runs", default="", help="run directory (default data/runs/<preset>-<backend>)")
    pp.add_argument("--seeds", default="", help="comma-separated seeds ('' = preset's)")
    pp.add_argument("--n-questions", default=0, type=_nonneg, help="0 = preset's")
    pp.add_argument("--base-url", default="", help="OpenAI-compatible endpoint")
    pp.add_argument("--only", default="", help="comma-separated notebook name prefixes")
    pp.add_argument("--drop-invalid", action="store_true", help=_DROP_HELP)
    return p


_DROP_HELP = ("analyse the valid records of a damaged run (say what was left out) instead of "
              "stopping")


def _cmd_run(a: argparse.Namespace) -> int:
    from pear.experiment import preset, run
    over: dict[str, Any] = {}
    for arg, key in (("datasets", "datasets"), ("methods", "methods"), ("seeds", "seeds"),
                     ("n_questions", "n_questions"), ("rounds", "rounds"),
                     ("agents", "n_agents"), ("prompt_style", "prompt_style")):
        if getattr(a, arg) is not None:
            over[key] = getattr(a, arg)
    if a.no_full:
        over["full_datasets"] = ()
    if a.stop is not None:
        over["stop"] = a.stop
    if a.role:
        over["roles"] = dict(a.role)
    if a.agent_models:
        over["agent_models"] = a.agent_models
    if a.model and a.backend in ("vllm", "openai") and not a.agent_models:
        over["models"] = tuple(a.model)
    exp = preset(a.preset, **over)
    out = Path(a.out)
    cache = None if a.no_cache else out / "cache.sqlite"
    if exp.debate.agent_models:
        backend: Any = _population_factory(a, exp, cache)
    elif exp.models:
        def factory(m: str):
            return make_backend(a.backend, exp=exp, model=m, base_urls=a.base_url,
                                cache_path=cache)
        backend = factory
    else:
        backend = make_backend(a.backend, exp=exp, model_path=a.model_path,
                               base_urls=a.base_url, cache_path=cache)
    summary = run(exp, backend, out, progress=not a.quiet)
    print(f"{summary.written} debates written, {summary.already_done} already done, "
          f"{len(summary.failed)} failed; {summary.requests} requests in "
          f"{summary.generate_calls} backend calls, {summary.tokens} tokens, "
          f"{summary.cache_hits} cache hits")
    if summary.failed:
        print(f"first failure: {summary.failed[0][1]} (rerun the same command to resume)",
              file=sys.stderr)
    return 0 if summary.complete else 1


def _cmd_index(a: argparse.Namespace) -> int:
    from pear.view import index, load
    s = index(a.run_dir, drop_invalid=a.drop_invalid)
    load(a.run_dir, update=False, drop_invalid=a.drop_invalid)  # repeated ids, torn tails
    why = f" ({s.reason})" if s.reason else ""
    print(f"{s.action}{why}: {s.new_debates} new debates read from {s.files} record files in "
          f"{s.seconds:.1f} s; the view of {a.run_dir} holds {s.debates} debates")
    return 0


def _population_factory(a: argparse.Namespace, exp: Any, cache: Path | None):
    """``model name -> Backend`` for a mixed population (``--agent-models``); ``--base-url
    MODEL=URL`` gives a model its own server, plain URLs serve every model."""
    names = list(dict.fromkeys(exp.debate.agent_models))
    if a.model:
        raise ValueError("give --model or --agent-models, not both")
    if a.backend == "simulated":
        raise ValueError("the simulated backend is one population; --agent-models needs the "
                         "openai or llamacpp backend")
    if a.backend == "vllm" and len(names) > 1:
        raise ValueError("one vLLM process holds one engine: serve each model with `vllm serve "
                         "MODEL` and use --backend openai --base-url MODEL=URL per model")
    per_model: dict[str, list[str]] = {}
    shared: list[str] = []
    for url in a.base_url or []:
        model, sep, rest = url.partition("=")
        if sep and model in names:
            per_model.setdefault(model, []).append(rest)
        else:
            shared.append(url)

    def factory(m: str):
        if a.backend == "llamacpp":
            return make_backend("llamacpp", exp=exp, model_path=m, cache_path=cache)
        return make_backend(a.backend, exp=exp, model=m, base_urls=per_model.get(m) or shared,
                            cache_path=cache)
    return factory


def _cmd_validate(a: argparse.Namespace) -> int:
    from pear.validate import validate
    result = validate(a.run_dir)
    print(result.report())
    return 0 if result.findings.ok else 1


def _cmd_show(a: argparse.Namespace) -> int:
    from pear.view import load
    df = load(a.run_dir, drop_invalid=a.drop_invalid).debates
    if df.empty:
        raise ValueError(f"no debate records under {a.run_dir!r}")
    from pear.config import METHODS
    table = df.pivot_table(index="method", columns="dataset", values="correct", aggfunc="mean")
    table = table.reindex([m for m in METHODS if m in table.index])
    print(f"{len(df)} debates; models: {', '.join(sorted(df['model'].unique()))}")
    print("\naccuracy (mean over questions and seeds)")
    print(table.round(3).to_string())
    cost = df.groupby("method")[["tokens", "calls", "parse_failures"]].mean()
    cost = cost.reindex([m for m in METHODS if m in cost.index])
    print("\nper debate: tokens, calls, parse failures")
    print(cost.round(1).to_string())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "show":
            return _cmd_show(args)
        if args.command == "index":
            return _cmd_index(args)
        if args.command == "validate":
            return _cmd_validate(args)
        from pear.paper import build
        return build(backend=args.backend, preset=args.preset, model=args.model,
                     runs=args.runs, seeds=args.seeds, n_questions=args.n_questions,
                     base_url=args.base_url, only=args.only, drop_invalid=args.drop_invalid)
    except KeyboardInterrupt:
        print("pear: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"pear: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - backend errors reach the user as one line
        from pear.backends.base import BackendError
        if isinstance(err, BackendError):
            print(f"pear: error: {err}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
