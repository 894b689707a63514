"""The ``pear`` command line: ``pear run``, ``pear show``, ``pear grade-check``, ``pear paper``.

Errors a user can make (bad argument, unknown preset/dataset/method/backend, missing file,
unreachable server) print one line naming the problem and exit with code 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Sequence

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
    r.add_argument("--no-full", action="store_true", help="skip the full-dataset runs")
    r.add_argument("--model", action="append", help="model name (vllm/openai); repeatable")
    r.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    r.add_argument("--base-url", action="append", help="OpenAI-compatible endpoint; repeatable")
    r.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    r.add_argument("--quiet", action="store_true", help="no progress bar")

    s = sub.add_parser("show", help="summarise a run directory",
                       description="Accuracy per method x dataset, tokens and parse failures.")
    s.add_argument("run_dir")

    g = sub.add_parser("grade-check", help="regrade a run's answers with the current graders",
                       description="Per dataset, how many recorded verdicts the current graders "
                                   "change, with examples.")
    g.add_argument("run_dir")
    g.add_argument("--examples", type=_nonneg, default=3, help="examples per direction")

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
    return p


def make_backend(name: str, *, exp: Any = None, model: str | None = None,
                 model_path: str | None = None, base_urls: Sequence[str] | None = None,
                 cache_path: str | os.PathLike[str] | None = None) -> Any:
    """Construct a backend by name with the CLI's settings, wrapped in the response cache."""
    from pear import backends
    from pear.experiment import answer_key
    settings: dict[str, Any] = {}
    if name == "simulated":
        settings = {"answer_key": answer_key(exp), "n_agents": exp.debate.n_agents}
    elif name == "llamacpp":
        settings = {"model_path": model_path} if model_path else {}
    elif name == "openai":
        if not model:
            raise ValueError("the openai backend needs --model NAME")
        settings = {"model": model, **({"base_url": list(base_urls)} if base_urls else {})}
    elif name == "vllm":
        if not model:
            raise ValueError("the vllm backend needs --model NAME")
        settings = {"model": model}
    be = backends.get(name, **settings)
    if cache_path is not None and name != "simulated":
        from pear.backends.cache import CachedBackend
        be = CachedBackend(be, cache_path)
    return be


def _cmd_run(a: argparse.Namespace) -> int:
    from pear.experiment import preset, run
    over: dict[str, Any] = {}
    for arg, key in (("datasets", "datasets"), ("methods", "methods"), ("seeds", "seeds"),
                     ("n_questions", "n_questions"), ("rounds", "rounds"),
                     ("agents", "n_agents")):
        if getattr(a, arg) is not None:
            over[key] = getattr(a, arg)
    if a.no_full:
        over["full_datasets"] = ()
    if a.model and a.backend in ("vllm", "openai"):
        over["models"] = tuple(a.model)
    exp = preset(a.preset, **over)
    out = Path(a.out)
    cache = None if a.no_cache else out / "cache.sqlite"
    if exp.models:
        def factory(m: str):
            return make_backend(a.backend, exp=exp, model=m, base_urls=a.base_url,
                                cache_path=cache)
        backend: Any = factory
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


def _cmd_show(a: argparse.Namespace) -> int:
    from pear.records import debates_frame, read_records
    recs = read_records(a.run_dir)
    if not recs:
        raise ValueError(f"no debate records under {a.run_dir!r}")
    df = debates_frame(recs)
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
        if args.command == "grade-check":
            from pear.gradecheck import check_run, format_report
            print(format_report(check_run(args.run_dir, examples=args.examples)))
            return 0
        from pear.paper import build
        return build(backend=args.backend, preset=args.preset, model=args.model,
                     runs=args.runs, seeds=args.seeds, n_questions=args.n_questions,
                     base_url=args.base_url, only=args.only)
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
