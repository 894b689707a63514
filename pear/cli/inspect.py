"""Commands that read recorded runs: ``pear show``, ``pear index``, ``pear validate``,
``pear grade-check`` and ``pear parity`` (runs of one grid on different backends), with
``pear parity-run``, which writes one such run."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pear.cli.options import DROP_HELP, nonneg
from pear.paths import SITE_DIR

__all__ = ["add_show", "add_index", "add_validate", "add_grade_check", "add_parity",
           "add_parity_run"]


def add_show(sub: Any) -> None:
    s = sub.add_parser("show", help="summarise a run directory, or show one debate",
                       description="Accuracy per method x dataset, tokens and parse failures; "
                                   "with --debate ID, that debate's transcript (Markdown, or "
                                   "an HTML page with --html).")
    s.add_argument("run_dir")
    s.add_argument("--drop-invalid", action="store_true", help=DROP_HELP)
    s.add_argument("--debate", metavar="ID", help="show this debate round by round")
    s.add_argument("--html", action="store_true",
                   help="with --debate: write the transcript as an HTML page (to --out, by "
                        "default where the results site's debate browser links it: "
                        "build/site/debates/d/ID.html)")
    s.add_argument("--out", metavar="PATH", help="with --html: the page's path")
    s.set_defaults(handler=_cmd_show)


def _cmd_show(a: argparse.Namespace) -> int:
    if a.debate is None and (a.html or a.out):
        raise ValueError("--html and --out need --debate ID")
    if a.debate is not None:
        return _cmd_show_debate(a)
    from pear.store.view import load  # heavy: pandas, msgspec, only for this command
    df = load(a.run_dir, drop_invalid=a.drop_invalid).debates
    if df.empty:
        raise ValueError(f"no debate records under {a.run_dir!r}")
    from pear.catalog.labels import method_order  # heavy: pandas, only for this command
    table = df.pivot_table(index="method", columns="dataset", values="correct", aggfunc="mean")
    table = table.reindex(method_order(table.index))
    print(f"{len(df)} debates; models: {', '.join(sorted(df['model'].unique()))}")
    print("\naccuracy (mean over questions and seeds)")
    print(table.round(3).to_string())
    cost = df.groupby("method")[["tokens", "calls", "parse_failures"]].mean()
    cost = cost.reindex(method_order(cost.index))
    print("\nper debate: tokens, calls, parse failures")
    print(cost.round(1).to_string())
    from pear.runs.compute import report
    from pear.store.manifest import read
    manifest = read(a.run_dir)
    if manifest is not None:  # where it ran and what it cost
        print("\n" + "\n".join(report(manifest)))
    return 0


def _cmd_show_debate(a: argparse.Namespace) -> int:
    from pear.store.view import load  # heavy: pandas, msgspec, only for this command
    view = load(a.run_dir, drop_invalid=a.drop_invalid)
    if not a.html:
        # heavy: pandas, only for this command
        from pear.analysis.transcript import render_transcript
        if not (view.debates["debate_id"] == a.debate).any():
            raise ValueError(f"no debate {a.debate!r} among the {len(view.debates)} debates "
                             f"under {a.run_dir!r}")
        print(render_transcript(view.record(a.debate)), end="")
        return 0
    from pear.paper.site import page_path, write_debate_page  # heavy: pandas, only for this command
    path = Path(a.out) if a.out else page_path(SITE_DIR, a.debate)
    print(write_debate_page(view, a.debate, path))
    return 0


def add_index(sub: Any) -> None:
    ix = sub.add_parser("index", help="build or update a run directory's columnar view",
                        description="Index the records under RUN_DIR into RUN_DIR/view/ "
                                    "(Parquet): only lines appended since the last index are "
                                    "read; a stale or damaged view is rebuilt.")
    ix.add_argument("run_dir")
    ix.add_argument("--drop-invalid", action="store_true", help=DROP_HELP)
    ix.set_defaults(handler=_cmd_index)


def _cmd_index(a: argparse.Namespace) -> int:
    from pear.store.view import index, load  # heavy: pandas, msgspec, only for this command
    s = index(a.run_dir, drop_invalid=a.drop_invalid)
    load(a.run_dir, update=False, drop_invalid=a.drop_invalid)  # repeated ids, torn tails
    why = f" ({s.reason})" if s.reason else ""
    print(f"{s.action}{why}: {s.new_debates} new debates read from {s.files} record files in "
          f"{s.seconds:.1f} s; the view of {a.run_dir} holds {s.debates} debates")
    return 0


def add_validate(sub: Any) -> None:
    va = sub.add_parser("validate", help="check a run directory's records before trusting them",
                        description="Check every record line under RUN_DIR (typed schema, "
                                    "sizes, ids, ranges, internal consistency; with the run "
                                    "manifest: config hashes, gold answers, graphs) and report "
                                    "each problem with its count and first examples. Exit 0: "
                                    "valid (warnings allowed); 1: damaged records.")
    va.add_argument("run_dir")
    va.set_defaults(handler=_cmd_validate)


def _cmd_validate(a: argparse.Namespace) -> int:
    from pear.store.validate import validate  # heavy: pandas, msgspec, only for this command
    result = validate(a.run_dir)
    print(result.report())
    return 0 if result.findings.ok else 1


def add_grade_check(sub: Any) -> None:
    g = sub.add_parser("grade-check", help="regrade a run's answers with the current graders",
                       description="Per dataset, how many recorded verdicts the current graders "
                                   "change, with examples.")
    g.add_argument("run_dir")
    g.add_argument("--examples", type=nonneg, default=3, help="examples per direction")
    g.set_defaults(handler=_cmd_grade_check)


def _cmd_grade_check(a: argparse.Namespace) -> int:
    from pear.runs.gradecheck import check_run, format_report
    print(format_report(check_run(a.run_dir, examples=a.examples)))
    return 0


# ----------------------------------------------------------------- parity (pear.runs.parity)

def add_parity(sub: Any) -> None:
    pa = sub.add_parser("parity", help="compare runs of one grid on different backends",
                        description="Backend parity: the same seeded grid on one model through "
                        "two or more backends (e.g. `pear parity-run BACKEND OUT` for "
                        "each), compared per phase with the first run: prompt tokens, "
                        "answer and confidence agreement, parse and truncation rates, final "
                        "accuracy.  Writes PREFIX.md and PREFIX.tex.")
    pa.add_argument("runs", nargs="+", metavar="RUN", help="run directories (LABEL=DIR names "
                    "a column; the first run is the reference)")
    pa.add_argument("--out", default="figures/parity", help="output prefix (default: "
                    "figures/parity)")
    pa.set_defaults(handler=_cmd_parity)


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


def add_parity_run(sub: Any) -> None:
    pr = sub.add_parser("parity-run", help="run the parity grid on one backend",
                        description="Run the parity grid (pear.runs.parity.PARITY_GRID: GSM8K, "
                        "3 questions, CoT, Clique and PEAR, 3 agents, 1 round, greedy) on one "
                        "backend into OUT, as `pear run` builds that backend; compare such runs "
                        "with `pear parity A=DIR B=DIR ...`.")
    pr.add_argument("backend", metavar="BACKEND",
                    help="llamacpp | openai | vllm | vllm-cpu | simulated")
    pr.add_argument("out", metavar="OUT", help="the run directory to write")
    pr.add_argument("--model", help="the model's name (as for pear run)")
    pr.add_argument("--model-path", metavar="PATH", help="a GGUF file (llamacpp)")
    pr.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible server")
    pr.add_argument("--prompt-style", choices=("compact", "paper"), default="compact",
                    help="the prompts (default: compact)")
    pr.set_defaults(handler=_cmd_parity_run)


def _cmd_parity_run(a: argparse.Namespace) -> int:
    from pear.runs.parity import run_side  # heavy: the runner and backends, only for this command
    s = run_side(a.backend, a.out, model=a.model, model_path=a.model_path,
                 base_url=a.base_url, prompt_style=a.prompt_style)
    print(f"{a.out}: {s.written} debates written, complete={s.complete}")
    return 0
