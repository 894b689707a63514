"""The ``pear`` command line: ``pear run``, ``pear show``, ``pear index``, ``pear paper``,
``pear models``, ``pear plan``, ``pear merge``, ``pear grade-check``, ``pear launch``.

Errors a user can make (bad argument, unknown preset/dataset/method/backend, missing file,
unreachable server) print one line naming the problem and exit with code 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from pear.paths import SITE_DIR, cache_path
from pear.runs.factory import make_backend

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

def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return v


def _shard(text: str) -> tuple[int, int]:
    from pear.runs.experiment import parse_shard
    try:
        return parse_shard(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("invalid shard ")) from None


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pear", description="PEAR multi-agent debate: run grids, inspect runs, "
                "rebuild the paper's tables and figures.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    sub.add_parser("models", help="list the study's models and model groups",
                   description="The model registry: what `--model KEY` and `--model paper` "
                               "run, with the settings and the part of the grid each needs.")
    _add_plan(sub)
    _add_inspection(sub)
    _add_paper(sub)
    _add_plugin_argument(sub.add_parser(
        "methods", help="list every method (the study's and plug-ins) with its origin",
        description="Every registered method: the study's, the bundled related work, entry "
                    "points of group 'pear.methods', and modules given by --plugin or "
                    "PEAR_PLUGINS."))
    cd = sub.add_parser("claims-diff", help="the claims whose verdict or value moved between "
                        "two builds", description="Compare the claims ledgers of two builds "
                        "(figures directories holding claims.json, or run directories, whose "
                        "ledger is computed from their records): claims whose finding changed "
                        "or whose intervals no longer overlap, with both intervals.")
    cd.add_argument("build_a", help="figures directory or run directory")
    cd.add_argument("build_b", help="figures directory or run directory")
    cd.add_argument("--seed", type=_nonneg, default=0,
                    help="bootstrap seed for a ledger computed from a run directory")
    _add_parity(sub)
    _add_branch(sub)
    _add_launch(sub)
    return p


def _grid_arguments(parser: argparse.ArgumentParser, *, preset: str, backend: str,
                    verb: str) -> None:
    """The arguments that choose a grid, shared by ``run`` and ``plan``."""
    parser.add_argument("--preset", default=preset,
                        help=f"smoke | paper | sim | beyond (default: {preset})")
    parser.add_argument("--backend", default=backend,
                        help=f"llamacpp | openai | vllm | simulated (default: {backend})")
    parser.add_argument("--datasets", type=_csv(str), help="comma-separated datasets")
    parser.add_argument("--methods", type=_csv(str), help="comma-separated methods")
    parser.add_argument("--seeds", type=_csv(int), help="comma-separated run seeds")
    parser.add_argument("--n-questions", type=_positive, help="questions per dataset")
    parser.add_argument("--rounds", type=_nonneg, help="debate rounds")
    parser.add_argument("--agents", dest="n_agents", type=_positive, help="number of agents")
    parser.add_argument("--no-full", action="store_true", help="skip the full-dataset runs")
    parser.add_argument("--shard", type=_shard,
                        help=f"i/N: {verb} only part i of N of the grid (deterministic; "
                             "`pear merge` combines the parts)")
    parser.add_argument("--no-study-scope", action="store_true",
                        help=f"{verb} the study's models on the whole grid, not only the "
                             "methods, questions and full sets the study ran on them")


def _add_run(sub: Any) -> None:
    r = sub.add_parser("run", help="run (or resume) an experiment grid",
                       description="Run every missing debate of a preset grid into --out; "
                                   "rerunning resumes.")
    _grid_arguments(r, preset="smoke", backend="llamacpp", verb="run")
    r.add_argument("--out", required=True, help="run directory (records, manifest, cache)")
    r.add_argument("--prompt-style", choices=("paper", "compact"),
                   help="paper (the study's templates) or compact (tiny CPU models)")
    r.add_argument("--stop", help="early stopping: none (default, the study) | consensus | "
                   "stable:K (the vote unchanged for K rounds)")
    r.add_argument("--role", dest="roles", action="append", type=_role, metavar="AGENT=ROLE",
                   help="role of one agent (numbered from 1): honest | adversarial | "
                   "overconfident | underconfident; repeatable")
    r.add_argument("--agent-models", type=_csv(str), metavar="M1,M2,...",
                   help="one model per agent (a mixed population; openai or llamacpp backend)")
    r.add_argument("--model", action="append", help="model name (vllm/openai); repeatable")
    r.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    r.add_argument("--base-url", action="append",
                   help="OpenAI-compatible endpoint; repeatable; MODEL=URL serves one of "
                   "--agent-models from its own server")
    r.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_plugin_argument(r)
    r.add_argument("--tensor-parallel-size", type=_positive,
                   help="vllm: GPUs per model (tensor parallel)")


def _add_plan(sub: Any) -> None:
    pl = sub.add_parser("plan", help="what a grid costs, without loading a model",
                        description="Debates, model calls, prompt/completion tokens, cached "
                                    "share and GPU-hours of a preset grid.")
    _grid_arguments(pl, preset="paper", backend="vllm", verb="plan")
    pl.add_argument("--model", action="append",
                    help="model name, registry key or group (paper, api, study); repeatable")
    pl.add_argument("--throughput", type=_positive_float,
                    help="computed tokens per second of one GPU (uncached prompt + completion)")
    pl.add_argument("--from", dest="from_run", metavar="RUN_DIR",
                    help="use the measured averages of an existing run")
    pl.add_argument("--fill", type=_positive_float, default=1.0,
                    help="dry run: share of the token budget a reply uses (default 1: the "
                         "upper bound)")
    pl.add_argument("--chars-per-token", type=_positive_float, default=None,
                    help="dry run: characters per token (default 4)")


def _add_inspection(sub: Any) -> None:
    """``merge``, ``show``, ``index``, ``validate``, ``grade-check``: commands on recorded runs."""
    mg = sub.add_parser("merge", help="combine run directories (e.g. shards) into one",
                        description="Check that the runs' manifests agree and copy their "
                                    "records into a new directory.")
    mg.add_argument("out", help="new run directory")
    mg.add_argument("runs", nargs="+", help="run directories to combine")

    s = sub.add_parser("show", help="summarise a run directory, or show one debate",
                       description="Accuracy per method x dataset, tokens and parse failures; "
                                   "with --debate ID, that debate's transcript (Markdown, or "
                                   "an HTML page with --html).")
    s.add_argument("run_dir")
    s.add_argument("--drop-invalid", action="store_true", help=_DROP_HELP)
    s.add_argument("--debate", metavar="ID", help="show this debate round by round")
    s.add_argument("--html", action="store_true",
                   help="with --debate: write the transcript as an HTML page (to --out, by "
                        "default where the results site's debate browser links it: "
                        "build/site/debates/d/ID.html)")
    s.add_argument("--out", metavar="PATH", help="with --html: the page's path")

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
    g = sub.add_parser("grade-check", help="regrade a run's answers with the current graders",
                       description="Per dataset, how many recorded verdicts the current graders "
                                   "change, with examples.")
    g.add_argument("run_dir")
    g.add_argument("--examples", type=_nonneg, default=3, help="examples per direction")

    im = sub.add_parser("import", help="import other frameworks' recorded debates as a run",
                        description="Read debate records written by another framework (du: Du "
                                    "et al.'s {question: [agent_contexts, gold]}; dylan: "
                                    "DyLAN's variant) into a new run directory of PEAR "
                                    "records, graded by our graders; questions found in our "
                                    "benchmark by their text take our ids and gold. Bad input "
                                    "is an error naming the file and the entry (exit 2) and "
                                    "nothing is written, unless --skip-bad.")
    im.add_argument("format", choices=("du", "dylan"), help="the files' format")
    im.add_argument("files", nargs="+", metavar="FILE", help="record files (.json or .json.gz)")
    im.add_argument("--out", required=True, help="new run directory")
    im.add_argument("--dataset", default="math500",
                    help="one of ours (mmlu_pro, truthfulqa, gsm8k, math500; default math500) "
                         "or a new name with --grading")
    im.add_argument("--grading", choices=("numbers", "letters", "math"), default=None,
                    help="how to grade a dataset we do not ship (e.g. Du et al.'s MMLU: "
                         "letters)")
    im.add_argument("--model", default="", help="the model that debated, recorded as given")
    im.add_argument("--skip-bad", action="store_true",
                    help="import the good entries and list the bad ones in the manifest")


def _add_paper(sub: Any) -> None:
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
    pp.add_argument("--previous", default="", metavar="DIR",
                    help="an earlier build's figures directory (copy it aside first): the "
                    "site shows the claims that moved since (pear claims-diff)")
    _add_plugin_argument(pp)


def _add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE, which registers methods (repeatable; also "
                             "PEAR_PLUGINS=mod1,mod2)")


def _load_plugins(a: argparse.Namespace) -> None:
    """Import the plug-in modules (entry points, ``$PEAR_PLUGINS``, ``--plugin``); the
    variable is extended so that the notebook kernels of ``pear paper`` load them too."""
    from pear.methods import PLUGINS_ENV, load_plugins
    mods = list(getattr(a, "plugin", None) or [])
    if mods:
        old = [m for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
        os.environ[PLUGINS_ENV] = ",".join(dict.fromkeys(old + mods))
    load_plugins()  # entry points, $PEAR_PLUGINS, --plugin: once, before any name is read


def _cmd_methods(_a: argparse.Namespace) -> int:
    from pear.catalog.labels import method_label, method_order
    from pear.methods import names, spec
    print(f"{'method':<18}{'label':<26}{'origin':<14}{'kind':<8}{'module':<31}params")
    for name in method_order(names()):
        m = spec(name)
        where = (m.module or "pear.core.methods") + (f" {m.version}" if m.version else "")
        params = ", ".join(f"{k}={v}" for k, v in m.params) or "-"
        print(f"{name:<18}{method_label(name):<26}{m.origin:<14}{m.kind:<8}{where:<30} {params}")
        if m.description:
            print(f"{'':<18}{m.description}")
    return 0


_DROP_HELP = ("analyse the valid records of a damaged run (say what was left out) instead of "
              "stopping")


def _run_experiment(a: argparse.Namespace) -> Any:
    """The grid the arguments choose (``pear run``, ``pear plan``, each ``pear launch``
    shard): every argument named like a setting of :func:`pear.runs.experiment.preset`
    (a field of the experiment or of its debate config) overrides the preset's."""
    from pear.runs.experiment import PRESET_SETTINGS, preset
    over = {k: v for k in PRESET_SETTINGS if (v := getattr(a, k, None)) is not None}
    if getattr(a, "no_full", False):
        over["full_datasets"] = ()
    if getattr(a, "no_study_scope", False):
        over["study_scope"] = False
    if over.get("roles"):
        over["roles"] = dict(over["roles"])
    if getattr(a, "model", None) and (a.command == "plan" or a.backend in ("vllm", "openai")):
        over["models"] = tuple(a.model)
    return preset(a.preset, **over)


def _cmd_run(a: argparse.Namespace) -> int:
    from pear.runs.experiment import run
    from pear.runs.factory import grid_backend
    exp = _run_experiment(a)
    extra = {"tensor_parallel_size": a.tensor_parallel_size} \
        if a.tensor_parallel_size and a.backend == "vllm" else None
    backend = grid_backend(a.backend, exp, model_path=a.model_path, base_urls=a.base_url,
                           cache_path=None if a.no_cache else cache_path(a.out), extra=extra)
    summary = run(exp, backend, Path(a.out), progress=not a.quiet, stop=_stop_on_signal())
    if summary.stopped:
        print(f"pear: stopped by a signal after {summary.written} debates (every finished "
              "debate is recorded); rerun the same command to resume", file=sys.stderr)
        return 143
    print(f"{summary.written} debates written, {summary.already_done} already done, "
          f"{len(summary.failed)} failed; {summary.requests} requests in "
          f"{summary.generate_calls} backend calls, {summary.tokens} tokens, "
          f"{summary.cache_hits} cache hits")
    if summary.failed:
        print(f"first failure: {summary.failed[0][1]} (rerun the same command to resume)",
              file=sys.stderr)
    return 0 if summary.complete else 1


def _stop_on_signal():
    """A ``stop`` flag for :func:`pear.runs.experiment.run` set by SIGTERM or SIGUSR1 (a
    scheduler's preemption, or its warning before the time limit): the debates in flight
    finish and are recorded, then the run stops.  A signal more than 5 s after the first
    (not the same one sent twice, as Slurm and the task's script both do) stops at once."""
    import signal
    import time
    hits: list[float] = []

    def handler(signum: int, _frame: Any) -> None:
        hits.append(time.monotonic())
        if len(hits) > 1:
            if hits[-1] - hits[0] > 5.0:
                raise KeyboardInterrupt
            return
        print(f"pear: {signal.Signals(signum).name}: finishing the debates in flight, then "
              "stopping", file=sys.stderr, flush=True)
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (e.g. called from a test's thread)
            pass
    return lambda: bool(hits)


def _cmd_index(a: argparse.Namespace) -> int:
    from pear.store.view import index, load
    s = index(a.run_dir, drop_invalid=a.drop_invalid)
    load(a.run_dir, update=False, drop_invalid=a.drop_invalid)  # repeated ids, torn tails
    why = f" ({s.reason})" if s.reason else ""
    print(f"{s.action}{why}: {s.new_debates} new debates read from {s.files} record files in "
          f"{s.seconds:.1f} s; the view of {a.run_dir} holds {s.debates} debates")
    return 0


def _cmd_show_debate(a: argparse.Namespace) -> int:
    from pear.store.view import load
    view = load(a.run_dir, drop_invalid=a.drop_invalid)
    if not a.html:
        from pear.analysis.transcript import render_transcript
        if not (view.debates["debate_id"] == a.debate).any():
            raise ValueError(f"no debate {a.debate!r} among the {len(view.debates)} debates "
                             f"under {a.run_dir!r}")
        print(render_transcript(view.record(a.debate)), end="")
        return 0
    from pear.paper.site import page_path, write_debate_page
    path = Path(a.out) if a.out else page_path(SITE_DIR, a.debate)
    print(write_debate_page(view, a.debate, path))
    return 0


def _cmd_import(a: argparse.Namespace) -> int:
    from pear.store.importing import import_files
    print(import_files(a.format, a.files, a.out, dataset=a.dataset, grading=a.grading,
                       model=a.model, skip_bad=a.skip_bad).report())
    return 0


def _cmd_validate(a: argparse.Namespace) -> int:
    from pear.store.validate import validate
    result = validate(a.run_dir)
    print(result.report())
    return 0 if result.findings.ok else 1


def _cmd_show(a: argparse.Namespace) -> int:
    if a.debate is None and (a.html or a.out):
        raise ValueError("--html and --out need --debate ID")
    if a.debate is not None:
        return _cmd_show_debate(a)
    from pear.store.view import load
    df = load(a.run_dir, drop_invalid=a.drop_invalid).debates
    if df.empty:
        raise ValueError(f"no debate records under {a.run_dir!r}")
    from pear.catalog.labels import method_order
    table = df.pivot_table(index="method", columns="dataset", values="correct", aggfunc="mean")
    table = table.reindex(method_order(table.index))
    print(f"{len(df)} debates; models: {', '.join(sorted(df['model'].unique()))}")
    print("\naccuracy (mean over questions and seeds)")
    print(table.round(3).to_string())
    cost = df.groupby("method")[["tokens", "calls", "parse_failures"]].mean()
    cost = cost.reindex(method_order(cost.index))
    print("\nper debate: tokens, calls, parse failures")
    print(cost.round(1).to_string())
    return 0


def _cmd_models(_a: argparse.Namespace) -> int:
    from pear.catalog.models import GROUPS, MODELS
    print(f"{'key':<18}{'display name':<18}{'backend':<8}{'model id':<34}{'methods':>8}"
          f"{'questions':>10}  {'full sets':<19} settings")
    for m in MODELS:
        settings = []
        if m.chat_template_kwargs:
            settings.append(f"chat_template_kwargs={dict(m.chat_template_kwargs)}")
        if m.max_model_len:
            settings.append(f"max_model_len={m.max_model_len}")
        if m.api_key_env:
            settings.append(f"{m.base_url} (key in ${m.api_key_env})")
        print(f"{m.key:<18}{m.display_name:<18}{m.backend:<8}{m.model_id:<34}"
              f"{len(m.methods):>8}{m.n_questions:>10}  {','.join(m.full_datasets) or '-':<19} "
              f"{'; '.join(settings)}")
    print("\nmethods: 14 = every method (with the ablations), 8 = the main table's; "
          "questions per dataset")
    print("groups: " + "; ".join(f"{g} = {', '.join(keys)}" for g, keys in GROUPS.items()))
    print("run: pear run --preset paper --backend vllm --model paper --out data/runs/paper "
          "(one model after another, each resumable)")
    notes = [f"{m.key}: {m.notes}" for m in MODELS if m.notes]
    if notes:
        print("notes:\n  " + "\n  ".join(notes))
    return 0


def _cmd_plan(a: argparse.Namespace) -> int:
    from pear import backends
    from pear.backends.dry import CHARS_PER_TOKEN
    from pear.runs.plan import estimate, format_plan
    if a.backend not in backends.BACKENDS:
        raise ValueError(f"unknown backend {a.backend!r}: choose one of "
                         f"{', '.join(backends.BACKENDS)}")
    if a.fill > 1:
        raise ValueError(f"invalid --fill {a.fill!r}: a share of the token budget in (0, 1]")
    exp = _run_experiment(a)
    costs = [estimate(exp, m, from_run=a.from_run, fill=a.fill,
                      chars_per_token=a.chars_per_token or CHARS_PER_TOKEN)
             for m in (exp.models or (None,))]
    print(format_plan(exp, costs, backend=a.backend, throughput=a.throughput))
    return 0


def _cmd_merge(a: argparse.Namespace) -> int:
    from pear.runs.merge import merge
    s = merge(a.out, a.runs)
    print(f"{s.records} debates merged into {a.out} ({s.duplicates} duplicates dropped)"
          + (f"; shards {', '.join(s.shards)}" if s.shards else ""))
    if s.missing_shards:
        print(f"missing shards: {', '.join(map(str, s.missing_shards))}; running the unsharded "
              f"grid into {a.out} finishes them", file=sys.stderr)
    return 0


def _ledger_of(path: str, seed: int) -> list[dict[str, Any]]:
    """A build's claims ledger: saved in a figures directory, or computed from a run
    directory's records with the grid its manifest recorded."""
    from pathlib import Path

    from pear.claims.diff import LEDGER_FILE, ledger_records, read_ledger
    p = Path(path)
    if p.is_file() or (p / LEDGER_FILE).is_file():
        return read_ledger(p)
    from pear.store import manifest
    man = manifest.read(p) if p.is_dir() else None
    if not man or not man.get("experiments"):
        raise FileNotFoundError(f"{path!r} is neither a figures directory with {LEDGER_FILE} "
                                "nor a run directory with a manifest")
    from pear.claims.evaluate import ledger
    from pear.paper.study import load_results
    from pear.runs.experiment import Experiment
    from pear.store.validate import ValidationError, validate
    checked = validate(p)  # records from elsewhere are checked before they are trusted
    if not checked.findings.ok:
        raise ValidationError(p, checked.findings)
    exp = Experiment.from_dict(man["experiments"][-1])
    subset = load_results(p, exp, "subset")
    full = load_results(p, exp, "full") if exp.full_datasets else None
    return ledger_records(ledger(subset, full, rng=seed))


def _cmd_claims_diff(a: argparse.Namespace) -> int:
    from pear.claims.diff import diff, format_diff
    table = diff(_ledger_of(a.build_a, a.seed), _ledger_of(a.build_b, a.seed))
    print(format_diff(table, names=(a.build_a, a.build_b)))
    return 0


# ----------------------------------------------------------------- parity (pear.runs.parity)

def _add_parity(sub: Any) -> None:
    pa = sub.add_parser("parity", help="compare runs of one grid on different backends",
                        description="Backend parity: the same seeded grid on one model through "
                        "two or more backends (e.g. `python -m pear.runs.parity run BACKEND "
                        "OUT` for each), compared per phase with the first run: prompt tokens, "
                        "answer and confidence agreement, parse and truncation rates, final "
                        "accuracy.  Writes PREFIX.md and PREFIX.tex.")
    pa.add_argument("runs", nargs="+", metavar="RUN", help="run directories (LABEL=DIR names "
                    "a column; the first run is the reference)")
    pa.add_argument("--out", default="figures/parity", help="output prefix (default: "
                    "figures/parity)")


def _cmd_parity(a: argparse.Namespace) -> int:
    from pear.runs.parity import parity_table
    from pear.store.records import read_records
    runs: dict[str, list[dict[str, Any]]] = {}
    for item in a.runs:
        label, _, path = item.partition("=") if "=" in item else (Path(item).name, "", item)
        if not Path(path).is_dir():
            raise FileNotFoundError(f"no run directory {path!r}")
        runs[label] = read_records(path)
        if not runs[label]:
            raise ValueError(f"run directory {path!r} holds no records")
    md, tex = parity_table(runs)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(md)
    out.with_suffix(".tex").write_text(tex)
    print(md + f"\nwritten: {out.with_suffix('.md')}, {out.with_suffix('.tex')}")
    return 0


# ----------------------------------------------------------------- branch (pear.runs.branch)

def _add_branch(sub: Any) -> None:
    b = sub.add_parser("branch", help="rerun the rounds after R of recorded debates under "
                       "other methods", description="Counterfactual branching: every debate "
                       "of RUN's parent method continues from its recorded state after round "
                       "R under each of --methods; rounds 0..R are copied, never re-asked. "
                       "Records carry branched_from; `pear validate OUT` checks the copied "
                       "rounds against the parent's.")
    b.add_argument("run_dir", help="the parent run directory")
    b.add_argument("--from-round", type=_nonneg, required=True, metavar="R",
                   help="branch after round R (0 = after the initial answers)")
    b.add_argument("--methods", type=_csv(str), required=True, metavar="M[,M...]",
                   help="debate methods to branch into")
    b.add_argument("--out", required=True, help="run directory of the branches")
    b.add_argument("--parent-method", help="the parent debates' method (default: the run's "
                   "one debate method, else random)")
    b.add_argument("--backend", help="the parent's model through this backend (default: the "
                   "parent's simulated agents; a real model must be named)")
    b.add_argument("--model", help="model name (vllm/openai)")
    b.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    b.add_argument("--base-url", action="append", help="OpenAI-compatible endpoint")
    b.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_plugin_argument(b)


def _cmd_branch(a: argparse.Namespace) -> int:
    from pear.runs.branch import branch, parent_experiment
    backend = None
    if a.backend and a.backend != "simulated":
        _, exp = parent_experiment(a.run_dir)
        cache = None if a.no_cache else cache_path(a.out)
        Path(a.out).mkdir(parents=True, exist_ok=True)
        backend = make_backend(a.backend, exp=exp, model=a.model, model_path=a.model_path,
                               base_urls=a.base_url, cache_path=cache)
    s = branch(a.run_dir, a.from_round, a.methods, a.out, backend=backend,
               parent_method=a.parent_method, progress=not a.quiet)
    print(f"{s.written} branches written, {s.already_done} already done, "
          f"{s.skipped_stopped} parents ended by round {a.from_round}; {s.calls} model calls "
          f"made, {s.calls_copied} calls of copied rounds not repeated")
    return 0


# ----------------------------------------------------------------- launch (pear.runs.launch)

_LAUNCH_GRID = ("preset", "backend", "datasets", "methods", "seeds", "n_questions", "rounds",
                "n_agents", "no_full", "no_study_scope", "prompt_style", "stop", "base_url",
                "no_cache")
"""The options of ``pear launch`` that every shard's ``pear run`` repeats."""


def _add_launch(sub: Any) -> None:
    la = sub.add_parser("launch", help="run a grid's shards on a Slurm cluster or as local "
                        "processes; status; merge", description="Shards of a grid as Slurm "
                        "job arrays (one per model) or local processes, each a resumable "
                        "`pear run --shard i/N`, merged per model into OUT/<model>/ "
                        "(docs/cluster.md).")
    lsub = la.add_subparsers(dest="launch_command", required=True, parser_class=_Parser)
    for name, what in (("slurm", "submit one Slurm job array per model and a merge job"),
                       ("local", "run the shards as local processes, then merge")):
        p = lsub.add_parser(name, help=what, description=what + "; rerunning submits only "
                            "the shards that are not complete")
        _grid_arguments(p, preset="paper", backend="vllm", verb="launch")
        for action in p._actions:  # the launcher chooses the shards (--shards)
            if action.dest == "shard":
                action.help = argparse.SUPPRESS
        p.add_argument("--model", action="append", help="model name, registry key or group "
                       "(paper, api, study); repeatable; one array per model")
        p.add_argument("--base-url", action="append", help="OpenAI-compatible endpoint "
                       "(openai backend); repeatable")
        p.add_argument("--prompt-style", choices=("paper", "compact"))
        p.add_argument("--stop", help="early stopping (as `pear run --stop`)")
        p.add_argument("--no-cache", action="store_true", help="no response cache per shard")
        p.add_argument("--out", required=True, help="launch directory")
        p.add_argument("--shards", type=_positive, help="shards per model")
        p.add_argument("--target-hours", type=_positive_float, metavar="H",
                       help="instead of --shards: as many shards as keep each task under H "
                       "hours by the `pear plan` estimate (vllm)")
        p.add_argument("--gpu-kind", default="h100", help="GPU kind for memory and time "
                       "estimates (docs/cluster.md; default h100)")
        p.add_argument("--throughput", type=_positive_float,
                       help="computed tokens per second of one GPU (default: the GPU kind's)")
        p.add_argument("--time", help="time limit per task (Slurm format; default: from the "
                       "estimate)")
        p.add_argument("--gpus-per-node", type=_positive,
                       help="refuse models that need more GPUs per task")
        p.add_argument("--then-paper", action="store_true",
                       help="after a complete merge, the notebooks on the merged records "
                       "(pear paper --backend replay; one model)")
        if name == "slurm":
            p.add_argument("--partition")
            p.add_argument("--account")
            p.add_argument("--throttle", type=_positive, metavar="K",
                           help="at most K tasks of an array at once (%%K)")
            p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                           help="passed to every array script as '#SBATCH ARG' (repeatable)")
            p.add_argument("--dry-run", action="store_true",
                           help="write the scripts under OUT/launch/, submit nothing")
        else:
            p.add_argument("--parallel", type=_positive, default=1,
                           help="processes at once (capped by the visible GPUs)")
    st = lsub.add_parser("status", help="debates done / expected per model and shard",
                         description="Progress from the records (and squeue where it knows "
                         "the tasks): per shard debates done / expected, Slurm state, "
                         "restarts; totals with an ETA.")
    st.add_argument("out", help="launch directory")
    mg = lsub.add_parser("merge", help="merge each model's shards into OUT/<model>/ and "
                         "name what is missing (the merge job runs this)")
    mg.add_argument("out", help="launch directory")


def _launch_run_args(a: argparse.Namespace) -> list[str]:
    """The ``pear run`` arguments of the launch's grid, in a fixed order (each option as
    ``pear run`` spells it)."""
    sub = argparse.ArgumentParser().add_subparsers()
    _add_run(sub)
    flags = {act.dest: act.option_strings[0] for act in sub.choices["run"]._actions
             if act.option_strings}
    out = ["--preset", a.preset, "--backend", a.backend]
    for dest in _LAUNCH_GRID[2:]:
        v = getattr(a, dest, None)
        flag = flags[dest]
        if v is None or v is False or v == []:
            continue
        if v is True:
            out.append(flag)
        elif dest == "base_url":
            for url in v:
                out += [flag, url]
        else:
            out += [flag, ",".join(map(str, v)) if isinstance(v, tuple) else str(v)]
    return out


def _cmd_launch(a: argparse.Namespace) -> int:
    from pear.runs import launch as L
    if a.launch_command in ("status", "merge"):
        spec = L.read_launch(a.out)
        if a.launch_command == "status":
            print(L.format_status(spec, L.status(spec)))
            return 0
        lines, complete = L.merge_launch(spec)
        print("\n".join(lines))
        return 0 if complete else 1
    if a.shard:
        raise ValueError("--shard is chosen by the launcher: give --shards N")
    run_args = _launch_run_args(a)
    run_ns = _parser().parse_args(["run", *run_args, "--out", a.out]
                                  + [x for m in (a.model or []) for x in ("--model", m)])
    exp = _run_experiment(run_ns)
    if a.backend not in ("vllm", "openai") and a.model:
        raise ValueError(f"--model is for the vllm and openai backends, not {a.backend!r}")
    if a.launch_command == "slurm" and not a.dry_run:
        L.check_slurm(a.partition)  # before anything is written
    spec = L.plan_launch(exp, run_args, a.out, backend=a.backend, shards=a.shards,
                         target_hours=a.target_hours, time_limit=a.time, gpu_kind=a.gpu_kind,
                         throughput=a.throughput, gpus_per_node=a.gpus_per_node)
    L.check_same_grid(spec)
    if a.then_paper:
        from pear.runs.launch.spec import paper_command
        paper = paper_command(spec)  # refused before anything is written
    L.write_launch(spec)
    from pear.runs.launch.finish import describe
    print("\n".join(describe(arr) for arr in spec.arrays))
    if a.launch_command == "local":
        results = L.run_local(spec, a.parallel)
        failed = [f"{m} {i}" for m, i, rc in results if rc != 0]
        if failed:
            print(f"shards that did not finish: {', '.join(failed)} (logs in "
                  f"{spec.dir / 'logs'}); rerun the same command to resume", file=sys.stderr)
        lines, complete = L.merge_launch(spec)
        print("\n".join(lines))
        if complete and a.then_paper:
            import subprocess
            return subprocess.run(paper, cwd=spec.workdir).returncode
        return 0 if complete else 1
    paths = L.write_scripts(spec, partition=a.partition, account=a.account,
                            throttle=a.throttle, sbatch_args=a.sbatch_arg,
                            then_paper=a.then_paper)
    print("scripts: " + ", ".join(str(p) for p in paths))
    if a.dry_run:
        return 0
    done = L.submit(spec, throttle=a.throttle)
    if not done:
        print("nothing to submit: every shard is complete or still queued "
              f"(pear launch status {a.out})")
    for slug, job, shards in done:
        print(f"submitted {slug}: job {job}"
              + (f" (shards {','.join(map(str, shards))})" if shards else " (afterany)"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _load_plugins(args)
        if args.command == "methods":
            return _cmd_methods(args)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "show":
            return _cmd_show(args)
        if args.command == "index":
            return _cmd_index(args)
        if args.command == "validate":
            return _cmd_validate(args)
        if args.command == "import":
            return _cmd_import(args)
        if args.command in ("models", "plan", "merge"):
            return {"models": _cmd_models, "plan": _cmd_plan, "merge": _cmd_merge}[
                args.command](args)
        if args.command == "claims-diff":
            return _cmd_claims_diff(args)
        if args.command == "parity":
            return _cmd_parity(args)
        if args.command == "branch":
            return _cmd_branch(args)
        if args.command == "launch":
            return _cmd_launch(args)
        if args.command == "grade-check":
            from pear.runs.gradecheck import check_run, format_report
            print(format_report(check_run(args.run_dir, examples=args.examples)))
            return 0
        from pear.paper.build import build
        return build(backend=args.backend, preset=args.preset, model=args.model,
                     runs=args.runs, seeds=args.seeds, n_questions=args.n_questions,
                     base_url=args.base_url, only=args.only, drop_invalid=args.drop_invalid,
                     previous=args.previous)
    except KeyboardInterrupt:
        print("pear: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"pear: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - backend errors reach the user as one line
        from pear.core.backend import BackendError
        if isinstance(err, BackendError):
            print(f"pear: error: {err}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
