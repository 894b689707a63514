"""Notebook 00's glue: run (or resume) the preset's grid into the build's run directory
(:func:`run_experiments`, or only check the records it holds for a replay) and describe
what it recorded (:func:`describe_runs`).  The grid and the run directory come from the
notebooks' parameters (:func:`pear.paper.study.experiment`, :func:`pear.paper.study.runs_path`);
the analysis notebooks read the run through :mod:`pear.paper.study`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from pear.catalog.labels import DATASETS, method_order
from pear.paths import cache_path, shown
from pear.paper.study import BACKENDS
from pear.runs.factory import default_workers, grid_backend
from pear.runs.runner import RunSummary, run
from pear.store.records import record_files
from pear.store.validate import ValidationError, drop_invalid_default, validate
from pear.store.view import index, load
from pear.backends.registry import REPLAY

__all__ = ["run_experiments", "describe_runs"]


def run_experiments(backend: str, exp: Any, runs_dir: str | os.PathLike[str], *,
                    model: str = "", base_url: str = "", progress: bool = True,
                    cache: str | os.PathLike[str] | None = None) -> RunSummary | None:
    """Run (or resume) every debate of ``exp`` into ``runs_dir`` with the CLI's backend
    (responses cached in ``cache``, default ``runs_dir/cache.sqlite``; the studies share the
    main run's cache, so a request they repeat costs no model call), then bring the run's
    columnar view up to date (:func:`pear.store.view.index`) so that the analysis notebooks
    only read it; returns the :class:`pear.runs.runner.RunSummary` (an incomplete grid is a
    RuntimeError saying why).  ``backend="replay"`` runs nothing: it checks that ``runs_dir``
    holds records, checks every line from scratch while indexing them
    (:func:`pear.store.validate.validate`: a damaged run stops here, unless
    ``PEAR_DROP_INVALID=1``) and returns None."""
    out = Path(runs_dir)
    if backend == REPLAY:
        if not out.is_dir() or not any(p.stat().st_size for p in record_files(out)):
            raise FileNotFoundError(f"backend 'replay' needs recorded debates, but {str(out)!r} "
                                    "holds none: pass --runs DIR of an earlier run")
        print(f"replay: checking every record in {shown(out)} (untrusted until checked); "
              "nothing is run")
        checked = validate(out)
        print(checked.report(elide=True))
        if not checked.findings.ok and not drop_invalid_default():
            raise ValidationError(out, checked.findings)
        return None
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    be = grid_backend(backend, exp, model_path=model or None,
                      base_urls=[base_url] if base_url else None,
                      cache_path=Path(cache) if cache is not None else cache_path(out))
    s = run(exp, be, out, progress=progress, workers=default_workers(backend))
    print(s.line())
    s.raise_if_incomplete()
    done = index(out)
    print(f"columnar view: {done.action} ({done.new_debates} new debates, "
          f"{done.debates} in all) in {done.seconds:.1f} s")
    return s


def describe_runs(runs_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Debates recorded under ``runs_dir`` (its columnar view): one row per (model,
    method), one column per dataset."""
    df = load(runs_dir, columns={"debates": ["model", "method", "dataset"]}).debates
    table = df.pivot_table(index=["model", "method"], columns="dataset", values="debate",
                           aggfunc="size", fill_value=0)
    rank = {m: i for i, m in enumerate(method_order(df["method"].unique()))}
    table = table.sort_index(key=lambda ix: ix.map(rank) if ix.name == "method" else ix)
    return table[[d for d in DATASETS if d in table] + [d for d in table if d not in DATASETS]]
