"""The reviewer's checklist of a build: the results site's ``checklist.html`` answers
NeurIPS's questions 5-8 (code and data, settings, error bars, compute) and ACL's C1-C4
(parameters and GPU-hours, settings, descriptive statistics, packages) for this build, each
answer linking to the output or file that shows it.

The numbers come from the build's run manifests (:mod:`pear.runs.compute`: machines and
compute; :mod:`pear.store.environment`: package versions and the lock) and the intervals'
methods and levels from the modules that compute them (:mod:`pear.analysis.stats`,
:mod:`pear.claims.evidence`), never typed here.  The files an answer cites are copied into the
site (``provenance/``: every run's manifest, the build manifest, the lock, ``pyproject.toml``,
the benchmarks' sources, ``docs/reproducibility.md``), so that every link resolves offline.

``docs/reproducibility.md`` says where each answer comes from for any build.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.paths import REPO_ROOT, RUN_MANIFEST, VIEW_DIR, beside, shown, shown_in
from pear.runs.compute import clock, reproducibility, total
from pear.store.environment import describe, lock
from pear.store.manifest import read
from pear.catalog.models import lookup
from pear.backends.registry import SIMULATED

__all__ = ["PAGE", "PROVENANCE", "build_runs", "checklist_body", "copy_provenance",
           "paper_command"]

PAGE = "checklist.html"
"""The checklist's page in the site."""
PROVENANCE = "provenance"
"""The site's folder of the files the checklist cites."""

_REPO_FILES = ("pyproject.toml", "environment.yml", "data/benchmarks/SOURCES.md",
               "docs/reproducibility.md", "docs/protocol.md")


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def build_runs(runs_dir: str | os.PathLike[str]) -> list[tuple[str, Path, dict[str, Any]]]:
    """``(label, directory, manifest)`` of every run the build recorded: the run itself, then
    each run under its studies folder (``<runs_dir>-studies/``: variants, branches)."""
    root = Path(runs_dir)
    out = []
    if (man := read(root)) is not None:
        out.append((root.name, root, man))
    studies = beside(root, "studies")
    if studies.is_dir():
        for f in sorted(studies.rglob(RUN_MANIFEST)):
            if f.parent.name != VIEW_DIR and (man := read(f.parent)) is not None:
                out.append((f"{studies.name}/{f.parent.relative_to(studies).as_posix()}",
                            f.parent, man))
    return out


def paper_command(params: Mapping[str, Any]) -> str:
    """The ``pear paper`` command that makes this build again (its non-empty parameters; the
    run directory as :func:`pear.paths.shown` names it, no builder's path).

    >>> paper_command({"backend": "simulated", "preset": "smoke", "model": "", "seeds": "0,1",
    ...                "n_questions": 0, "runs_dir": "data/runs/x", "base_url": ""})
    'pear paper --backend simulated --preset smoke --runs data/runs/x --seeds 0,1'
    >>> paper_command({"backend": "simulated", "preset": "smoke", "runs_dir": "/scratch/me/r"})
    'pear paper --backend simulated --preset smoke --runs …/r'
    """
    parts = ["pear paper", f"--backend {params.get('backend')}",
             f"--preset {params.get('preset')}"]
    for key, flag in (("model", "--model"), ("runs_dir", "--runs"), ("seeds", "--seeds"),
                      ("n_questions", "--n-questions"), ("base_url", "--base-url")):
        if params.get(key):
            parts.append(f"{flag} {shown(params[key]) if key == 'runs_dir' else params[key]}")
    return " ".join(parts)


def copy_provenance(site: Path, runs: Sequence[tuple[str, Path, Mapping[str, Any]]],
                    figures_dir: Path, repo: Path = REPO_ROOT) -> dict[str, str]:
    """Copy the files the checklist cites into ``site/provenance/``; returns what was
    copied as ``{name: path relative to the site}`` (run manifests as ``run:<label>``, the
    lock files as ``lock:<file>``)."""
    dest = site / PROVENANCE
    dest.mkdir(parents=True, exist_ok=True)
    copied: dict[str, str] = {}

    def put(key: str, src: Path, name: str) -> None:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".json"):  # a manifest's paths as the site shows them (pear.paths.shown)
            target.write_text(json.dumps(shown_in(json.loads(src.read_text())), indent=2) + "\n")
        else:
            shutil.copy2(src, target)
        copied[key] = f"{PROVENANCE}/{name}"

    for label, d, _ in runs:
        put(f"run:{label}", d / RUN_MANIFEST,
            "runs/" + re.sub(r"[^A-Za-z0-9_.-]+", "_", label) + ".manifest.json")
    if (figures_dir / "build.json").is_file():
        put("build", figures_dir / "build.json", "build.json")
    for name in (lock(repo) or {}).get("files", {}):
        put(f"lock:{name}", repo / name, name)
    for name in _REPO_FILES:
        if (repo / name).is_file():
            put(name, repo / name, name)
    return copied


def _link(href: str | None, text: str) -> str:
    return f"<a href=\"{_e(href)}\">{_e(text)}</a>" if href else _e(text)


def _notebook(site: Path, name: str, text: str) -> str:
    """A link to notebook ``name``'s part of the index (and its executed page) when the
    build has it; else says it is not in this build."""
    page = f"notebooks/{name}.html"
    if not (site / page).is_file():
        return f"{_e(text)} (notebook <code>{_e(name)}</code> is not in this build)"
    return (f"<a href=\"index.html#{_e(name)}\">{_e(text)}</a> (<a href=\"{_e(page)}\">"
            f"executed notebook {_e(name)}</a>)")


def _params_b(model: str, backend: str = "") -> str:
    """A model's parameters: none for simulated agents, the catalog's (model card), else
    read from its name, else unknown."""
    from pear.catalog.labels import model_labels  # heavy: pandas, only for this function
    if backend == SIMULATED:
        return "none: simulated agents, no model"
    m = lookup(model)
    if m is not None and m.params_b:
        return f"{m.params_b:g} B (model card)"
    found = re.search(r"(\d+(?:\.\d+)?)\s*([MB])\b", model_labels([model])[model])
    return f"{found.group(1)} {found.group(2)} (from its name)" if found else "unknown"


def _compute_rows(runs: Sequence[tuple[str, Path, Mapping[str, Any]]],
                  copied: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The compute table (a row per run, then the total) and the total."""
    rows, attempts = [], []
    for label, _, man in runs:
        comp = man.get("compute") or total(man.get("attempts") or [])
        attempts += man.get("attempts") or []
        machines = "; ".join(describe(h) for h in man.get("hardware") or []) or "not recorded"
        rows.append(f"<tr><td>{_link(copied.get('run:' + label), label)}</td>"
                    f"<td>{_e(machines)}</td>{_compute_cells(comp)}</tr>")
    whole = total(attempts)
    rows.append(f"<tr><th>Total</th><td></td>{_compute_cells(whole)}</tr>")
    head = ("<table><tr><th>Run</th><th>Machines</th><th>Attempts</th><th>Wall time</th>"
            "<th>GPU-hours</th><th>Model calls</th><th>Tokens</th><th>Debates</th></tr>")
    return head + "".join(rows) + "</table>", whole


def _compute_cells(c: Mapping[str, Any]) -> str:
    def cell(v: Any, fmt: str = "{}") -> str:
        return f"<td class=\"num\">{'?' if v is None else fmt.format(v)}</td>"
    wall = c.get("wall_s")
    return (cell(c.get("attempts")) + cell(None if wall is None else clock(wall))
            + cell(c.get("gpu_hours"), "{:.4g}") + cell(c.get("calls")) + cell(c.get("tokens"))
            + cell(c.get("debates")))


def _settings_table(man: Mapping[str, Any]) -> str:
    proto = man.get("protocol") or {}
    exp = (man.get("experiments") or [{}])[-1]
    rows = [("grid", f"datasets {', '.join(exp.get('datasets') or [])}; methods "
                     f"{', '.join(exp.get('methods') or [])}; seeds {exp.get('seeds')}; "
                     f"{exp.get('n_questions') or 'all'} questions per dataset")]
    for part in ("debate", "router"):
        for k, v in (proto.get(part) or {}).items():
            rows.append((f"{part}.{k}", json.dumps(v)))
    rows.append(("question_seed", proto.get("question_seed")))
    return ("<details><summary>Every setting of the run</summary><table>"
            + "".join(f"<tr><td><code>{_e(k)}</code></td><td>{_e(v)}</td></tr>" for k, v in rows)
            + "</table></details>")


def _versions(man: Mapping[str, Any]) -> str:
    v = {k: x for k, x in (man.get("versions") or {}).items() if x}
    return ", ".join(f"{k} {x}" for k, x in v.items()) or "not recorded"


def _reproducibility(man: Mapping[str, Any]) -> str:
    parts = [f"{label}: " + ", ".join(f"{k}={v}" for k, v in r.items())
             for s in man.get("backend_settings") or []
             for label, r in reproducibility(s, man.get("backend") or "?")]
    return "; ".join(parts) or "not recorded"


def checklist_body(site: Path, *, runs_dir: str | os.PathLike[str], figures_dir: Path,
                   params: Mapping[str, Any], repo: Path = REPO_ROOT) -> str:
    """The checklist page's HTML body for the build whose site is ``site`` (its notebooks
    and figures already written), copying the files it cites into the site."""
    # heavy: pandas, scipy, only for this function
    from pear.analysis.stats import ALPHA, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
    from pear.claims.evidence import N_BOOT
    runs = build_runs(runs_dir)
    if not runs:
        raise FileNotFoundError(f"no run manifest in {str(runs_dir)!r}: the checklist needs "
                                "the build's run")
    copied = copy_provenance(site, runs, figures_dir, repo)
    main_label, _, man = runs[0]
    run_link = copied[f"run:{main_label}"]
    level = f"{1 - ALPHA:.0%}"
    locked = man.get("lock")
    lock_text = (f"lock {locked['sha256'][:16]} ("
                 + ", ".join(_link(copied.get(f"lock:{f}"), f) for f in locked["files"]) + ")"
                 if locked else "no lock file in the checkout that ran it")
    compute_table, whole = _compute_rows(runs, copied)
    exp = (man.get("experiments") or [{}])[-1]
    seeds = exp.get("seeds") or []
    models = man.get("models") or []
    nb = lambda name, text: _notebook(site, name, text)  # noqa: E731
    answers = [
        ("NeurIPS Q5", "Open access to data and code, with the exact commands and environment",
         f"Code: commit <code>{_e(params.get('commit') or man.get('git_commit'))}</code> "
         f"(the run itself: <code>{_e(man.get('git_commit'))}</code>). Environment: "
         f"Python and packages {_e(_versions(man))}; {lock_text}; "
         f"{_link(copied.get('pyproject.toml'), 'pyproject.toml')}. This build: "
         f"<code>{_e(paper_command(params))}</code>; the run's own command: "
         f"<code>{_e(man.get('command'))}</code> ({_link(run_link, 'run manifest')}, "
         f"{_link(copied.get('build'), 'build manifest')}). Data: the benchmarks with their "
         f"sources and licences ({_link(copied.get('data/benchmarks/SOURCES.md'), 'SOURCES.md')}"
         f"; sha256 of each file in the run manifest's <code>data_sha256</code>); every debate "
         f"of the run: {_link('debates/index.html', 'the debate browser')}."),
        ("NeurIPS Q6", "Experimental setting: every setting and how it was chosen",
         f"The protocol (agents, rounds, graph, router weights and thresholds, temperature, "
         f"token budget, prompts) and the grid as the run recorded them: "
         f"{_settings_table(man)} Backends and the settings that decide reproducibility: "
         f"{_e(_reproducibility(man))}. Which values are the study's and which are ours: "
         f"{_link(copied.get('docs/reproducibility.md'), 'docs/reproducibility.md')} "
         f"and {_link(copied.get('docs/protocol.md'), 'docs/protocol.md')}. Run manifest: "
         f"{_link(run_link, 'manifest.json')}; "
         + nb("00_run_experiments", "the run") + "."),
        ("NeurIPS Q7", "Error bars: what varies, how each interval is computed, its level",
         f"Accuracy tables and the ablation and round-curve figures: mean over the "
         f"{len(seeds)} seeds ({_e(seeds)}) of each seed's accuracy on the same questions, ± the "
         f"sample standard deviation across seeds (ddof = 1; none with one seed): it varies "
         f"the sampling seeds, not the questions — "
         + nb("01_main_results", "main results") + ", "
         + nb("03_ablation", "ablation") + ", " + nb("04_round_curves", "round curves")
         + f". Significance: McNemar's exact two-sided test on (seed, question) pairs against "
         f"the strongest fixed topology, Holm-adjusted across settings; the discordant win "
         f"rate with its Wilson {level} interval; the accuracy difference with a paired "
         f"percentile bootstrap {level} interval (questions resampled with their pair, "
         f"{BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}) — "
         + nb("06_significance", "significance") + f". Claims ledger: {level} percentile "
         f"intervals of a two-way bootstrap over questions and seeds ({N_BOOT} replicates) — "
         + nb("13_claims", "claims") + f". Every test at the {ALPHA:g} level."),
        ("NeurIPS Q8", "Compute: the machines, and the compute per run and in total",
         f"{compute_table}<p>Wall time is summed over attempts (a resume or requeue is an "
         f"attempt); GPU-hours = wall hours x GPUs the process held. In total "
         f"{whole['gpu_hours']:.4g} GPU-hours and {clock(whole['wall_s'])} of wall time over "
         f"{whole['attempts']} attempts.</p>"),
        ("ACL C1", "Parameters of the models, total computational budget, infrastructure",
         "Models: " + "; ".join(
             f"<code>{_e(m)}</code>: {_e(_params_b(m, man.get('backend') or ''))}"
             for m in models)
         + f". Budget: {whole['gpu_hours']:.4g} GPU-hours, {whole['calls']} model calls, "
         f"{whole['tokens']} tokens over the build's runs (NeurIPS Q8's table). "
         f"Infrastructure: each run's machines in that table, from its "
         f"{_link(run_link, 'manifest')}."),
        ("ACL C2", "Experimental setup and hyperparameters",
         "No hyperparameter search: the protocol's values are the study's where it gives them "
         "and marked as ours where it does not (the routing temperature, the sampling "
         "temperature from the authors' code); the temperature sweep and the other studies "
         "vary one setting each — " + nb("10_temperature_sweep", "temperature sweep")
         + ". Every value: NeurIPS Q6."),
        ("ACL C3", "Descriptive statistics: error bars, summary statistics, mean or best",
         f"Every accuracy is a mean (over {len(seeds)} seeds and "
         f"{exp.get('n_questions') or 'all'} questions per dataset), never a best run, with "
         f"the spread across seeds (NeurIPS Q7); counts per cell in "
         + nb("01_main_results", "main results") + "; cost per method in "
         + nb("07_cost_pareto", "cost") + "."),
        ("ACL C4", "Packages: implementations and versions used",
         f"Grading with Math-Verify, statistics with SciPy and statsmodels, the view with "
         f"pandas and pyarrow; versions as installed for the run: {_e(_versions(man))}; "
         f"{lock_text}."),
    ]
    rows = "".join(f"<tr id=\"{_e(q.replace(' ', '-').lower())}\"><th>{_e(q)}</th>"
                   f"<td><strong>{_e(title)}</strong><br>{answer}</td></tr>"
                   for q, title, answer in answers)
    return ("<nav class=\"top\"><a href=\"index.html\">← results</a></nav>"
            "<h1>Reviewer's checklist</h1><p>The NeurIPS paper checklist's questions 5-8 and "
            "ACL's responsible-NLP checklist C1-C4, answered for this build from its run "
            "manifests and outputs; each answer links to what shows it.</p>"
            f"<table class=\"checklist\">{rows}</table>")
