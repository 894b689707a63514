"""Leave-one-out over DyLAN's MATH subjects: the grounded population held against debates it
was not fitted on (notebook 17).

For each of the subjects of DyLAN's corpus (:data:`pear.store.import_cache.CORPUS`, imported by
:func:`pear.store.import_cache.corpus_run`; the subject is each record's
:func:`pear.sim.revision.subject`), a grounded population is fitted by the same code as the
shipped ``grounded`` (:func:`pear.populations.corpus_fit.fit_corpus` with ``leave_out``) on the
debates of
the *other* subjects and, as ``grounded`` is, DyLAN's MMLU debates (``extra``): the revision
model, the question sets' round-0 accuracies and the same-wrong-answer share all come from
them.  It is then held against the held-out subject's
debates by ``pear population sim-check`` (:func:`pear.populations.simcheck.check` with ``records``
= that
subject's debates: DyLAN's protocol, the skill alone matched to the subject's round-0
accuracy).  The ``study`` population (fitted to none of DyLAN's debates) on the same debates is
the contrast.

The outcome is deterministic given the corpus, the code, the replicates and the seed, and is
cached under ``build/leave_one_subject_out/`` keyed by all of them (:func:`cache_key`; the code is every
source file of the ``pear`` package), so that a second build reads it instead of simulating
again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from pear.core.hashing import content_digest
from pear.populations import debate_statistics, simcheck
from pear.parallel import fork_map
from pear.paths import BUILD_DIR, PACKAGE_DIR, shown, write_json
from pear.sim import revision
from pear.populations import corpus_fit
from pear.store import import_cache
from pear.runs.factory import default_workers
from pear.sim.population import load
from pear.store import manifest
from pear.store.records import read_records
from pear.backends.registry import SIMULATED

__all__ = ["CONTRAST", "LeaveOneOut", "subjects", "population_name", "fit_without",
           "leave_one_out", "cache_key", "table", "summary", "describe"]

CONTRAST = ("study",)
"""The populations held against each held-out subject beside the fold's own."""
HELDOUT = "grounded without it"
"""The fold's population in tables: grounded, fitted without the held-out subject."""


def subjects(records: Sequence[dict[str, Any]]) -> list[str]:
    """The subjects of ``records`` (sorted); an error if a record gives none."""
    out = {revision.subject(r) for r in records}
    if None in out:
        raise ValueError("a record gives no subject (imported.extra.subject): the leave-one-out "
                         "runs over the subjects of DyLAN's MATH corpus")
    return sorted(s for s in out if s)


def population_name(subject: str) -> str:
    """``grounded-without-<subject>`` (lower case, words joined by ``-``).

    >>> population_name("Counting & Probability")
    'grounded-without-counting-probability'
    """
    return "grounded-without-" + "-".join(re.findall(r"[a-z0-9]+", subject.lower()))


def fit_without(subject: str, runs: Sequence[str | os.PathLike[str]] | None = None) -> Any:
    """The grounded population fitted on ``runs`` (default: DyLAN's corpus) without the debates
    of ``subject`` (:func:`pear.populations.corpus_fit.fit_corpus` with ``leave_out``) and its
    :class:`~pear.populations.corpus_fit.CorpusFit`."""
    g = corpus_fit.fit_corpus(runs, leave_out=lambda r: revision.subject(r) == subject)
    if not g.left_out:
        raise ValueError(f"no debate of subject {subject!r} in {[str(p) for p in g.runs]}")
    pop = corpus_fit.grounded_population(g, population_name(subject), diagnostics={
        "left_out": {"subject": subject, "debates": g.left_out}})
    return pop, g


@dataclass(frozen=True)
class LeaveOneOut:
    """The outcome of :func:`leave_one_out`."""

    rows: pd.DataFrame
    """One row per (subject, population, statistic): ``real``, ``lo``, ``hi`` (95% bootstrap
    over the subject's debates), ``debates`` (those that define it), ``simulated`` (mean over
    the replicates), ``inside``; ``population`` is :data:`HELDOUT` or a contrast's name."""
    folds: pd.DataFrame
    """One row per subject: ``debates`` held out, ``fitted_debates`` and ``choices`` (choice sets)
    of the fit without it, ``fit_s`` (reading the corpus and fitting), ``check_s`` (its
    sim-checks), the fitted ``fingerprint`` and coefficients (one column per feature)."""
    setting: dict[str, Any]
    """Corpus, replicates, seed, contrast, cache key, and whether this was read from the cache."""


def _source_digest() -> str:
    """sha256 of every source file of the ``pear`` package (path and content)."""
    h = hashlib.sha256()
    for p in sorted(PACKAGE_DIR.rglob("*")):
        if p.is_file() and p.suffix in (".py", ".md", ".json", ".toml") and \
                "__pycache__" not in p.parts:
            h.update(p.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def cache_key(corpus_sha256: str, subjects_: Sequence[str], replicates: int, seed: int,
              contrast: Sequence[str], n_resamples: int) -> str:
    """What the outcome depends on, hashed: the debates fitted on and held out (``corpus``:
    each run's imported files and protocol, :func:`_source`), the package's source files, the
    subjects, replicates, seed, contrast populations (their fingerprints) and resamples."""
    spec = {"corpus": corpus_sha256, "code": _source_digest(), "subjects": list(subjects_),
            "replicates": replicates, "seed": seed, "n_resamples": n_resamples,
            "contrast": {c: load(c).fingerprint for c in contrast}}
    return content_digest(spec, n=16)


def _source(run: Path) -> str:
    """What a run's debates are, for :func:`cache_key`: an import's files (sha256) and source
    protocol (one file imported per protocol is several runs), else the run's path."""
    imported = (manifest.read(run) or {}).get("imported") or {}
    files = ",".join(f["sha256"] for f in imported.get("files") or [])
    return f"{files}/{(imported.get('protocol') or {}).get('name')}" if files else str(run)


def _fold(run: Path, subject: str, replicates: int, seed: int, contrast: Sequence[str],
          n_resamples: int, extra: Sequence[Path] = ()
          ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One subject held out (the fit on ``run`` without it and on the runs ``extra``): the rows
    of :attr:`LeaveOneOut.rows` and its fold's row."""
    t0 = time.perf_counter()
    pop, g = fit_without(subject, [run, *extra])
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    held = [r for r in read_records(run) if revision.subject(r) == subject]
    rows = []
    for name, population in ((HELDOUT, pop), *((c, c) for c in contrast)):
        check = simcheck.check(run, population, replicates, seed, records=held,
                               n_resamples=n_resamples)
        rows += [{"subject": subject, "population": name, **s} for s in check.statistics]
    return rows, {"subject": subject, "debates": len(held), "fitted_debates": g.fit.n_debates,
                  "choices": g.fit.n_choices, "fit_s": round(fit_s, 3),
                  "check_s": round(time.perf_counter() - t0, 3),
                  "fingerprint": pop.fingerprint,
                  **dict(zip(pop.revision.features, pop.revision.coef))}


def leave_one_out(run: str | os.PathLike[str] | None = None, *, replicates: int = 20,
                  seed: int = 0, subjects_: Sequence[str] | None = None,
                  contrast: Sequence[str] = CONTRAST, n_resamples: int = 2000,
                  cache: str | os.PathLike[str] | None = BUILD_DIR / "leave_one_subject_out",
                  workers: int | None = None,
                  extra: Sequence[str | os.PathLike[str]] | None = None) -> LeaveOneOut:
    """Per subject of ``run`` (default: DyLAN's corpus, :func:`pear.store.import_cache.corpus_run`;
    ``subjects_``: these only), the population fitted without it (:func:`fit_without`) and the
    ``contrast`` populations held against its debates (:func:`pear.populations.simcheck.check`,
    ``replicates`` and ``seed``).  Read from / written to ``cache`` (None: no cache).  The
    subjects run in ``workers`` forked processes (default: every core, as a simulated run;
    the outcome does not depend on it).  ``extra``: runs every fold is also fitted on (default:
    DyLAN's MMLU teams, :func:`pear.store.import_cache.mmlu_runs`, as ``grounded`` is, when
    ``run`` is not given; else none: pass them to hold a fit like ``grounded``'s)."""
    if extra is None:
        extra = import_cache.mmlu_runs() if run is None else ()
    extra = tuple(Path(e) for e in extra)
    run = Path(run) if run is not None else import_cache.corpus_run()
    every = subjects(read_records(run))
    chosen = list(subjects_) if subjects_ else every
    unknown = [s for s in chosen if s not in every]
    if unknown:
        raise ValueError(f"unknown subject {unknown[0]!r}: the run's subjects are "
                         + ", ".join(every))
    files = ((manifest.read(run) or {}).get("imported") or {}).get("files") or []
    corpus = ",".join(_source(r) for r in (run, *extra))
    key = cache_key(corpus, chosen, replicates, seed, contrast, n_resamples)
    setting = {"run": str(run), "corpus": [f["name"] for f in files],
               "also_fitted_on": [str(e) for e in extra], "subjects": chosen,
               "replicates": replicates, "seed": seed, "contrast": list(contrast),
               "n_resamples": n_resamples, "key": key, "cached": False}
    path = Path(cache) / f"leave-one-out-{key}.json" if cache is not None else None
    if path is not None and path.is_file():
        data = json.loads(path.read_text())
        return LeaveOneOut(pd.DataFrame(data["rows"]), pd.DataFrame(data["folds"]),
                           {**data["setting"], "cached": True, "cache": str(path)})
    t0 = time.perf_counter()
    n = min(workers or default_workers(SIMULATED), len(chosen))
    done = list(fork_map(partial(_fold, run, replicates=replicates, seed=seed,
                                 contrast=tuple(contrast), n_resamples=n_resamples,
                                 extra=extra), chosen, n))
    rows = [row for part, _ in done for row in part]
    folds = [fold for _, fold in done]
    setting["seconds"] = round(time.perf_counter() - t0, 1)
    setting["workers"] = n
    out = LeaveOneOut(pd.DataFrame(rows), pd.DataFrame(folds), setting)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"rows": rows, "folds": folds, "setting": setting})
    return out


def _fmt(x: Any) -> str:
    return debate_statistics.NOT_DEFINED if x is None or x != x else f"{x:.3f}"


def table(loo: LeaveOneOut) -> pd.DataFrame:
    """Subject x statistic: the real value with its 95% interval, the debates that define it,
    and per population the simulated value and whether it lies inside ("yes", "no", "n/a")."""
    labels = {k: v for k, v in debate_statistics.STATISTICS.items()}
    r = loo.rows
    real = r.drop_duplicates(["subject", "statistic"]).set_index(["subject", "statistic"])
    out = pd.DataFrame({
        "real [95% CI]": [f"{_fmt(a)} [{_fmt(b)}, {_fmt(c)}]" if a is not None and a == a
                          else debate_statistics.NOT_DEFINED
                          for a, b, c in zip(real["real"], real["lo"], real["hi"])],
        "debates": real["debates"].astype(int)}, index=real.index)
    for name in dict.fromkeys(r["population"]):
        p = r[r["population"] == name].set_index(["subject", "statistic"]).reindex(out.index)
        out[f"{name}: simulated"] = [_fmt(x) for x in p["simulated"]]
        out[f"{name}: inside"] = [{True: "yes", False: "no"}.get(
            x, debate_statistics.NOT_DEFINED) for x in p["inside"]]
    out.index = pd.MultiIndex.from_tuples(
        [(s, labels.get(k, k)) for s, k in out.index], names=["subject", "statistic"])
    return out


def summary(loo: LeaveOneOut) -> pd.DataFrame:
    """Per subject: the debates held out, the choice sets the population without it was fitted
    on, and per population how many of the statistics that can be compared have their
    simulated value inside the real interval ("k of n"); a last row over all subjects."""
    r = loo.rows
    folds = loo.folds.set_index("subject")
    out = pd.DataFrame({"debates": folds["debates"].astype(int),
                        "choice sets fitted": folds["choices"].astype(int)})
    total: dict[str, Any] = {"debates": int(folds["debates"].sum()), "choice sets fitted": None}
    for name in dict.fromkeys(r["population"]):
        p = r[(r["population"] == name) & r["inside"].notna()]
        k = p.groupby("subject")["inside"].agg(lambda x: int(sum(map(bool, x))))
        n = p.groupby("subject")["inside"].size()
        out[f"{name}: inside"] = [f"{k.get(s, 0)} of {n.get(s, 0)}" for s in out.index]
        total[f"{name}: inside"] = f"{int(k.sum())} of {int(n.sum())}"
    out = pd.concat([out, pd.DataFrame([total], index=pd.Index(["all subjects"]))])
    out["choice sets fitted"] = out["choice sets fitted"].astype("Int64")
    return out.rename_axis("held-out subject")


def describe(loo: LeaveOneOut) -> str:
    """What was fitted and checked, and how long it took (Markdown)."""
    st, f = loo.setting, loo.folds
    how = (f"each fit took {f['fit_s'].min():.2f}-{f['fit_s'].max():.2f} s (reading the corpus "
           f"included) and each subject's sim-checks {f['check_s'].min():.1f}-"
           f"{f['check_s'].max():.1f} s; all {len(f)} subjects {st['seconds']:.1f} s in "
           f"{st['workers']} process{'es' if st['workers'] > 1 else ''}")
    if st.get("cached"):
        how = f"read from the cache {shown(st['cache'])} (when computed: {how})"
    return (f"Leave-one-out over {len(f)} subjects of {', '.join(st['corpus']) or st['run']} "
            f"({int(f['debates'].sum())} debates): per subject a grounded population fitted on "
            f"the other subjects' debates only ({int(f['fitted_debates'].min())}-"
            f"{int(f['fitted_debates'].max())} debates with a debate round), held against the "
            f"subject's debates with {st['replicates']} replicates (seed {st['seed']}) beside "
            f"{', '.join(st['contrast']) or 'no other population'}; {how}.")
