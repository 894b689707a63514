"""A finished build published: its results site (:func:`write_results_site`, through
:func:`pear.paper.site.write_site`) with what was built, the notebooks' outputs, the run's
debates and the claims that moved since an earlier build (:func:`previous_diff`)."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.catalog.labels import evidence_mark
from pear.claims.diff import LEDGER_FILE, diff, diff_html, read_ledger
from pear.paper.registry import EXPECTED_OUTPUTS, entry
from pear.paper.site import build_meta, write_site
from pear.paper.study import REPO_ROOT, describe_scope, experiment
from pear.store.view import load
from pear.backends.registry import REPLAY, SIMULATED

__all__ = ["previous_diff", "write_results_site"]


def previous_diff(previous: str | os.PathLike[str], figures: Path) -> str:
    """The claims that moved from a previous build (a figures directory or ledger file
    holding ``claims.json``) to this one, as the site's HTML fragment; "" when this build
    wrote no ledger."""
    if not (figures / LEDGER_FILE).is_file():
        return ""
    prev = Path(previous)
    return diff_html(diff(read_ledger(prev), read_ledger(figures)),
                     (f"previous ({prev.name or prev})", "this build"))


def write_results_site(site: Path, *, names: Sequence[str], figures: Path, notebooks: Path,
                       params: Mapping[str, Any], started: float, previous: str = "") -> Path:
    """The results site of a finished build (:func:`pear.paper.site.write_site`): what was built
    (backend, preset, models, grid, time, commit), the notebooks ``names``, the debates of
    the run, and (``previous``: an earlier build's figures directory) the claims that moved
    since; returns its ``index.html``."""
    exp = experiment(params["preset"], params["seeds"], params["n_questions"],
                     params["model"], params["backend"])
    runs = Path(params["runs_dir"])
    deb = load(runs, columns={"debates": ["model", "backend"]}).debates
    grid = describe_scope(exp, "subset") + (f"; {describe_scope(exp, 'full')}"
                                            if exp.full_datasets else "")
    backends = ", ".join(sorted(set(deb["backend"]))) or params["backend"]
    meta = build_meta(backend=backends if params["backend"] != REPLAY
                      else f"replay of {backends}", preset=params["preset"],
                      models=sorted(set(deb["model"])), grid=grid, debates=len(deb),
                      started=started, seconds=time.time() - started, repo=REPO_ROOT)
    case = next((figures / entry(n).case_study for n in names if entry(n).case_study), None)
    found = re.search(r"Debate `([^`]+)`", case.read_text(encoding="utf-8")) \
        if case is not None and case.is_file() else None
    if found and found.group(1) not in set(load(runs, columns={"debates": ["debate_id"]})
                                           .debates["debate_id"]):
        print(f"case study skipped: debate {found.group(1)} of {case} is not in the run "
              f"{runs}", flush=True)
        found = None
    t0 = time.perf_counter()
    mark = evidence_mark(simulated=SIMULATED in set(deb["backend"]), preset=exp.name,
                         models=sorted(set(deb["model"])), n_questions=exp.n_questions)
    out = write_site(site, figures_dir=figures, notebooks_dir=notebooks, runs_dir=runs,
                     notebooks={n: EXPECTED_OUTPUTS[n] for n in names}, meta=meta,
                     case_study=found.group(1) if found else "", mark=mark,
                     claims_diff=previous_diff(previous, figures) if previous else "",
                     params=params)
    print(f"results site: {out.root / 'index.html'} ({len(out.pages)} pages: "
          f"{out.transcripts} debate transcripts of {out.debates} debates) in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return out.root / "index.html"
