"""An ensemble of plausible simulated populations: how much a simulated build's conclusions
hang on the population it simulates.

The ``grounded`` population's revision model is an estimate; its sampling distribution is
drawn by refitting it on DyLAN's debates resampled with replacement
(:func:`pear.populations.draws.bootstrap_populations`, seeded; the first 20 draws of seed 0 are
shipped data, ``data/populations/ensemble/``).  :func:`run` runs one reduced
grid (:func:`grid`) under ``grounded`` (the point) and under each of K bootstrap populations
(``grounded-b0`` ... ``grounded-b<K-1>``), and states across the K:

* the main results: accuracy of PEAR, Random, Clique and CoT-SC per dataset
  (:func:`table_main`: grounded's value, the ensemble's [min, max] and 5-95 %);
* PEAR's gains over Random, Clique and CoT-SC per dataset and pooled over datasets
  (:func:`table_gains`: the range, and the share of populations where PEAR is ahead);
* every claim of the ledger (:func:`table_claims`): its finding under grounded (95 %
  intervals) and the share of populations in which it holds at their point values
  (:func:`pear.claims.evaluate.ledger` with ``n_boot=0``: a comparison on its claimed
  side, a printed number within its rounding).

Accuracy is :func:`pear.analysis.metrics.accuracy`'s, gains are
:func:`pear.analysis.metrics.gains`' (pooled: :func:`~pear.analysis.metrics.gain_summary`'s
overall mean), claims are the ledger's.

Layout of an ensemble folder (default ``<run>-ensemble/`` beside a build's run,
:func:`pear.paths.beside`)::

    ensemble.json              the bootstrap seed and every population's fingerprint
    populations/<name>.json    each population as a file (its run's manifest names it)
    <name>/                    one run directory per population (records, manifest)

Every run goes through :func:`pear.runs.runner.run` (resumable, append-only; ``workers``
populations at once, a process each): a second call runs only what is missing, and a larger
K adds populations (the bootstrap's draws are sequential: the first K of a larger K are the
same).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from pear.analysis import metrics
from pear.backends.registry import SIMULATED, spec as backend_spec
from pear.catalog.labels import dataset_label, method_label
from pear.parallel import fork_map
from pear.paths import write_json
from pear.core.config import whole_number
from pear.core.methods import METHODS
from pear.populations import corpus_fit
from pear.populations.draws import bootstrap_populations
from pear.paper.study import experiment, load_results, is_imported, describe_scope
from pear.runs.factory import default_workers, grid_backend
from pear.runs.runner import check_workers, run as run_grid
from pear.sim import population as pop

__all__ = ["DEFAULT_K", "DEFAULT_QUESTIONS", "POINT", "MAIN", "BASELINES", "POOLED", "RECORD",
           "Ensemble", "grid", "population_file", "run_under", "unvaried", "write_populations",
           "write_family", "run", "table_main", "table_gains",
           "held_by_member", "TRAITS", "TRAIT_GAP", "member_traits", "where_it_holds", "sorting_trait",
           "table_claims", "caption_main", "caption_gains", "caption_claims",
           "describe_times", "claims_not_run"]

DEFAULT_K = 20  # issue 35: K populations, default 20
DEFAULT_QUESTIONS = 20  # our choice: the CI size (14 methods x 4 datasets x 20 questions x 1 seed)
POINT = "grounded"
"""The point population: the revision model fitted on all the data."""
MAIN = ("pear", "random", "clique", "cot_sc")
"""The methods of the main table across the ensemble."""
BASELINES = ("random", "clique", "cot_sc")
"""PEAR's gains are stated over these."""
POOLED = "pooled"
"""The dataset key of a gain pooled over datasets (their unweighted mean, the study's)."""
RECORD = "ensemble.json"
PERCENTILES = (5, 95)


@dataclass
class Ensemble:
    """What :func:`run` found: per population (``population`` column; :data:`POINT` and the
    bootstrap members) the accuracy of :data:`MAIN` per dataset, PEAR's gains, and the
    claims' point findings; the point's full ledger (95 % intervals); the seconds each
    population took and the debates it wrote.  ``note`` (tables say it) when the build has
    nothing to vary (a real model's, or imported debates)."""

    exp: Any
    root: Path
    seed: int
    members: tuple[str, ...]
    accuracy: pd.DataFrame
    gains: pd.DataFrame
    findings: pd.DataFrame
    ledger: pd.DataFrame | None
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Claim -> the methods it names that the grid does not run (not evaluated)."""
    seconds: dict[str, float] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)
    note: str = ""
    wall_s: float = 0.0
    """The seconds all populations took together (they run several at once)."""
    family: bool = False
    """The members are the family of real twins (:mod:`pear.populations.family`), not
    bootstrap draws."""

    @property
    def k(self) -> int:
        return len(self.members)

    @classmethod
    def empty(cls, exp: Any, root: str | Path, note: str, family: bool = False) -> "Ensemble":
        """An ensemble of nothing, saying why (``note``, e.g. :func:`unvaried`'s)."""
        e = pd.DataFrame()
        return cls(exp, Path(root), 0, (), e, e, e, None, note=note, family=family)


# ----------------------------------------------------------------- the grid and populations

def grid(preset: str = "sim", n_questions: int = DEFAULT_QUESTIONS, *, seeds: str = "",
         methods: Sequence[str] | None = None, base: Any = None) -> Any:
    """The reduced grid every population runs: the preset's subset grid (``base``: an
    experiment to reduce instead) on its first seed (of ``seeds``, if given), ``n_questions``
    per dataset (at most the base's), no full sets, and the study's methods (``methods``:
    those; the self-consistency sizes ``sc@k`` of comparisons at equal compute left out,
    which no claim needs).  :data:`MAIN` must be among them."""
    n_questions = whole_number(n_questions, "n_questions", 1, fix="questions per dataset >= 1")
    exp = base if base is not None else experiment(preset, seeds=seeds, backend=SIMULATED)
    chosen = tuple(methods) if methods else tuple(m for m in exp.methods if m in METHODS)
    lacking = [m for m in MAIN if m not in chosen]
    if lacking:
        raise ValueError(f"invalid methods {','.join(chosen)}: the ensemble's tables need "
                         f"{', '.join(MAIN)} (missing {', '.join(lacking)})")
    n = int(n_questions) if exp.n_questions is None else min(int(n_questions), exp.n_questions)
    return dataclasses.replace(exp, methods=chosen, seeds=exp.seeds[:1], n_questions=n,
                               full_datasets=())


def population_file(p: Any, root: str | Path) -> Path:
    """``root/populations/<name>.json``, the file a grid under population ``p`` names
    (:func:`run_under`): written unless it holds ``p`` already (the same fingerprint), so a
    resumed grid keeps its file and a refitted population of the same name replaces it."""
    file = Path(root) / "populations" / f"{p.name}.json"
    try:
        same = file.is_file() and pop.load(file).fingerprint == p.fingerprint
    except ValueError:
        same = False
    if not same:
        file.parent.mkdir(parents=True, exist_ok=True)
        p.write(file)
    return file


def run_under(exp: Any, file: str | Path, out: str | Path, *, workers: int | None = None,
              progress: bool = False) -> Any:
    """Run (or resume) the grid ``exp`` on simulated agents of the population ``file``
    (:func:`population_file`) into the run directory ``out``, through
    :func:`pear.runs.runner.run` (resumable, append-only; ``workers`` processes, default
    every core); its summary.  A grid left incomplete (a debate failed) is an error naming
    the first failure."""
    be = grid_backend(SIMULATED, exp, extra={"population": str(file)})
    s = run_grid(exp, be, Path(out), progress=progress,
                 workers=workers or default_workers(SIMULATED))
    s.raise_if_incomplete(f"population {Path(file).stem}: the grid")
    return s


def _check_k(k: Any) -> int:
    return whole_number(k, "k", 1, fix="an ensemble needs at least one population (k >= 1)")


def write_populations(root: str | Path, k: int = DEFAULT_K, seed: int = 0, *,
                      grounding: Any = None) -> dict[str, Path]:
    """The ensemble's population files under ``root/populations``: :data:`POINT` and the
    first ``k`` bootstrap draws of ``seed``, name -> file, point first.  Files already there
    are kept (:func:`population_file`; and checked against ``root/ensemble.json``: another
    seed or point is an error); the missing ones are written, refitting only then.  ``grounding``
    (:class:`pear.populations.corpus_fit.CorpusFit`): the fit to draw from; default the shipped
    ``grounded`` population and its shipped draws
    (:func:`pear.populations.draws.bootstrap_populations`; a refit on DyLAN's corpus where they
    are not shipped)."""
    k = _check_k(k)
    seed = whole_number(seed, "seed", 0, fix="a bootstrap seed >= 0")
    root = Path(root)
    pdir = root / "populations"
    point = corpus_fit.grounded_population(grounding) if grounding is not None else pop.load(POINT)
    names = [POINT] + [f"{POINT}-b{i}" for i in range(k)]
    record = _read_record(root)
    if record and (record.get("seed") != seed
                   or record.get("point", {}).get("fingerprint") != point.fingerprint):
        raise ValueError(
            f"ensemble folder {str(root)!r} holds populations drawn with seed "
            f"{record.get('seed')!r} from {POINT} {str(record.get('point', {}).get('fingerprint'))[:12]}"
            f", not seed {seed} from {point.fingerprint[:12]}: use another folder")
    have = {n: pop.load(pdir / f"{n}.json") for n in names if (pdir / f"{n}.json").is_file()}
    todo = [n for n in names[1:] if n not in have]
    if todo:
        draws = bootstrap_populations(k, seed, grounding)
        for p in draws:
            if p.name in todo:
                have[p.name] = p
    for p in [point, *have.values()]:
        population_file(p, root)
    fingerprints = {**(record or {}).get("populations", {}),
                    **{n: have[n].fingerprint for n in names[1:]}}
    write_json(root / RECORD, {"seed": seed, "point": point.manifest(),
                               "populations": fingerprints}, newline=True)
    return {n: pdir / f"{n}.json" for n in names}


def write_family(root: str | Path) -> dict[str, Path]:
    """The family's population files under ``root/populations``: :data:`POINT` and every
    shipped member (:func:`pear.populations.family.load`), name -> file, point first; their
    fingerprints recorded in ``root/ensemble.json`` (a folder that holds another family or
    bootstrap draws is an error)."""
    from pear.populations import family  # the populations' room: pandas, scipy
    root = Path(root)
    point = pop.load(POINT)
    members = family.load()
    prints = {p.name: p.fingerprint for p in members}
    record = _read_record(root)
    if record and (record.get("family") != prints
                   or record.get("point", {}).get("fingerprint") != point.fingerprint):
        raise ValueError(f"ensemble folder {str(root)!r} holds other populations than the "
                         "shipped family: use another folder")
    files = {p.name: population_file(p, root) for p in [point, *members]}
    write_json(root / RECORD, {"point": point.manifest(), "family": prints}, newline=True)
    return files


def _read_record(root: Path) -> dict[str, Any] | None:
    import json
    path = root / RECORD
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"unreadable ensemble record {str(path)!r}: {err}") from None


# ----------------------------------------------------------------- running and reading

def run(exp: Any, root: str | Path, k: int = DEFAULT_K, seed: int = 0, *,
        grounding: Any = None, workers: int | None = None, progress: bool = False,
        replay: bool = False, say: Callable[[str], None] | None = print,
        family: bool = False) -> Ensemble:
    """Run (or resume) ``exp`` under :data:`POINT` and ``k`` bootstrap populations into
    ``root`` (:func:`write_populations`; one run directory per population, each through
    :func:`pear.runs.runner.run`), then read every run: the accuracy, gains and claims of
    :class:`Ensemble`.  ``workers`` populations run and are read at once, each in a forked
    process of its own that keeps its Math-Verify worker from one population to the next
    (default every core; the records are those of one process).  ``progress``: a bar per
    population when they run one at a time.  ``replay``: run nothing, read what ``root``
    holds.  ``say`` gets one line per population, in order.  ``family``: the members are the
    family of real twins (:func:`write_family`; ``k`` and ``seed`` unused) instead of
    bootstrap draws."""
    global _FORKED
    k = _check_k(k)
    workers = check_workers(workers or default_workers(SIMULATED))
    root = Path(root)
    if family:
        files = _recorded_family(root) if replay else write_family(root)
    elif replay:
        files = _recorded_populations(root, k, seed)
    else:
        files = write_populations(root, k, seed, grounding=grounding)
    from pear.claims.evidence import paper_source  # heavy: scipy, only for this function
    paper = paper_source()  # the study's side of every population's ledger
    seconds, written, results = {}, {}, {}
    t0 = time.perf_counter()
    _FORKED = (exp, root, files, seed, paper, replay, progress and workers == 1)
    done = fork_map(_population, files, workers)
    try:
        for name, (result, n, took) in zip(files, done):
            results[name], seconds[name] = result, took
            if not replay:
                written[name] = n
            if say:
                say(f"{name}: {n} debates written in {seconds[name]:.1f} s (run and read)")
    finally:
        done.close()  # cancels the populations not yet started (after an error)
        _FORKED = None
    wall = time.perf_counter() - t0
    members = tuple(n for n in files if n != POINT)
    missing = claims_not_run(exp)
    cat = {key: pd.concat([r[key].assign(population=n) for n, r in results.items()],
                          ignore_index=True) for key in ("accuracy", "gains", "findings")}
    return Ensemble(exp, root, seed, members, cat["accuracy"], cat["gains"], cat["findings"],
                    results[POINT]["ledger"], missing, seconds, written, wall_s=wall,
                    family=family)


_FORKED: tuple[Any, ...] | None = None


def claims_not_run(exp: Any) -> dict[str, tuple[str, ...]]:
    """Claim -> the methods it names (:func:`pear.claims.evaluate.methods_named`) that
    ``exp``'s grid does not run, for every claim that names one: on such a grid the ledger
    would judge it on fewer methods than it names, so it is not evaluated.

    >>> claims_not_run(grid(methods=MAIN))["intro-beats-fixed-all-settings"]
    ('star', 'chain', 'ring')
    """
    # heavy: scipy, only for this function
    from pear.claims.evaluate import load_recompute, methods_named
    raw = load_recompute()
    ran = set(exp.methods)
    return {cid: need for cid in raw["claims"]
            if (need := tuple(m for m in methods_named(cid, raw) if m not in ran))}


def _population(name: str) -> tuple[dict[str, Any], int, float]:
    """Population ``name`` of the ensemble :func:`run` is running (in this process or a
    forked one): its run (unless replaying) and :func:`_read`; the debates it wrote and the
    seconds it took."""
    assert _FORKED is not None, "a population runs inside ensemble.run"
    exp, root, files, seed, paper, replay, progress = _FORKED
    t0, written = time.perf_counter(), 0
    if not replay:
        written = run_under(exp, files[name], root / name, workers=1,
                            progress=progress).written
    return (_read(exp, root / name, seed, full=name == POINT, paper=paper), written,
            time.perf_counter() - t0)


def _recorded_populations(root: Path, k: int, seed: int) -> dict[str, Path]:
    record = _read_record(root)
    names = [POINT] + [f"{POINT}-b{i}" for i in range(k)]
    absent = [n for n in names if not (root / "populations" / f"{n}.json").is_file()
              or not (root / n).is_dir()]
    if record is None or absent or record.get("seed") != seed:
        what = (f"no population {absent[0]!r}" if absent and record else
                f"seed {record.get('seed')!r}, not {seed}" if record else "no ensemble")
        raise FileNotFoundError(f"replay: {str(root)!r} holds {what}: run the ensemble first "
                                "(a simulated build, or `pear ensemble`)")
    return {n: root / "populations" / f"{n}.json" for n in names}


def _recorded_family(root: Path) -> dict[str, Path]:
    record = _read_record(root)
    if record is None or not record.get("family"):
        raise FileNotFoundError(f"replay: {str(root)!r} holds no family: run it first "
                                "(`pear ensemble --family`)")
    names = [POINT, *record["family"]]
    absent = [n for n in names if not (root / n).is_dir()]
    if absent:
        raise FileNotFoundError(f"replay: {str(root)!r} holds no run of {absent[0]!r}")
    return {n: root / "populations" / f"{n}.json" for n in names}


def _read(exp: Any, run_dir: Path, seed: int, full: bool, paper: Any = None
          ) -> dict[str, Any]:
    """One population's run: accuracy of :data:`MAIN`, PEAR's gains over
    :data:`BASELINES` per dataset and pooled, the claims' point findings, and (``full``)
    the ledger with 95 % intervals (``paper``: the study's side of the ledger, made once by
    the caller)."""
    from pear.claims.evaluate import ledger  # heavy: scipy, only for this function
    res = load_results(run_dir, exp, "subset")
    acc = metrics.accuracy(res.debates)
    parts = []
    for b in BASELINES:
        g = metrics.gains(acc, "pear", b)
        pooled = metrics.gain_summary(g).query("level == 'overall'")["gain"].iloc[0]
        parts.append(pd.concat([g[["dataset", "gain"]],
                                pd.DataFrame({"dataset": [POOLED], "gain": [pooled]})])
                     .assign(baseline=b))
    point = ledger(res, None, rng=seed, n_boot=0, paper=paper)
    return {"accuracy": acc.loc[acc["method"].isin(MAIN), ["dataset", "method", "accuracy"]],
            "gains": pd.concat(parts, ignore_index=True),
            "findings": point[["id", "kind", "finding"]],
            "ledger": ledger(res, None, rng=seed, paper=paper) if full else None}


def unvaried(backend: str, run_dir: str | Path, root: str | Path, family: bool = False) -> str:
    """Why a build (``backend``, its run ``run_dir``) has no simulated population to vary
    across the ensemble folder ``root`` (:func:`pear.paths.beside` its run, ``ensemble`` or,
    ``family``, ``family``; the tables say it, :meth:`Ensemble.empty`); ``""``
    when it has one: its agents are simulated, or it replays a simulated run with ``root``
    beside it."""
    root = Path(root)
    replay = not backend_spec(backend).runs
    if not (replay or backend_spec(backend).simulator):
        return (f"this build's agents are a real model (backend {backend}): there is no "
                "simulated population to vary")
    if replay and is_imported(run_dir):
        return "this build replays imported debates: there is no simulated population to vary"
    if replay and not (root / RECORD).is_file():
        return (f"no {'family' if family else 'ensemble'} was run beside this run "
                f"({root.name} is missing): a simulated build or `pear ensemble"
                f"{' --family' if family else ''}` runs it")
    return ""


# ----------------------------------------------------------------- tables

def _spread(values: pd.Series) -> dict[str, float]:
    lo, hi = np.percentile(values.to_numpy(float), PERCENTILES)
    return {"Min": float(values.min()), "Max": float(values.max()),
            f"{PERCENTILES[0]} %": float(lo), f"{PERCENTILES[1]} %": float(hi)}


def _point_rows(frame: pd.DataFrame, keys: tuple[str, ...]
                ) -> Iterator[tuple[pd.Series, pd.DataFrame]]:
    """Each row of :data:`POINT` in ``frame`` (in frame order) with the other populations'
    rows of the same ``keys``."""
    point = frame[frame["population"] == POINT]
    draws = frame[frame["population"] != POINT]
    for _, r in point.iterrows():
        same = draws[keys[0]] == r[keys[0]]
        for key in keys[1:]:
            same = same & (draws[key] == r[key])
        yield r, draws[same]


def _note(ens: Ensemble) -> pd.DataFrame:
    return pd.DataFrame({"note": [f"Not computed: {ens.note}."]})


def table_main(ens: Ensemble) -> pd.DataFrame:
    """Accuracy per (dataset, method) of :data:`MAIN`: grounded's, and across the ensemble
    its minimum, maximum and 5th/95th percentiles (over the K bootstrap populations), rows
    in the study's table order.  (Each population is its own simulated model.)"""
    if ens.note:
        return _note(ens)
    rows = []
    for r, d in _point_rows(ens.accuracy, ("dataset", "method")):
        rows.append({"Dataset": dataset_label(r["dataset"]), "Method": method_label(r["method"]),
                     "Grounded": r["accuracy"], **_spread(d["accuracy"])})
    return pd.DataFrame(rows).set_index(["Dataset", "Method"])


def table_gains(ens: Ensemble) -> pd.DataFrame:
    """PEAR's gain in accuracy points over each of :data:`BASELINES`, per dataset and
    pooled over datasets: grounded's, the ensemble's [min, max] and 5th/95th percentiles,
    and in how many of the K populations PEAR is ahead (gain > 0)."""
    if ens.note:
        return _note(ens)
    rows = []
    for r, d in _point_rows(ens.gains, ("baseline", "dataset")):
        ahead = int((d["gain"] > 0).sum())
        rows.append({"Over": method_label(r["baseline"]),
                     "Dataset": "Pooled" if r["dataset"] == POOLED
                     else dataset_label(r["dataset"]),
                     "Grounded": r["gain"], **_spread(d["gain"]),
                     "PEAR ahead in": f"{ahead}/{len(d)}",
                     "Share": ahead / len(d) if len(d) else np.nan})
    return pd.DataFrame(rows).set_index(["Over", "Dataset"])


def held_by_member(ens: Ensemble) -> dict[str, pd.Series]:
    """Per claim the grid judges (not covered and not-run claims left out), whether it holds
    in each member (a boolean series indexed by member name, in the ensemble's order)."""
    if ens.note:
        return {}
    f = ens.findings
    draws = f[(f["population"] != POINT) & (f["finding"] != "not covered")]
    out = {}
    for cid, part in draws.groupby("id", sort=False):
        if cid not in ens.missing:
            out[cid] = (part.set_index("population")["finding"] == "supported").reindex(
                [m for m in ens.members if m in set(part["population"])])
    return out


TRAITS = {"follow_right": "agents follow a right answer they hear",
          "follow": "agents follow the answers they hear",
          "keep": "agents keep their own answer",
          "keep_right": "agents keep a right answer more than a wrong one",
          "invent": "agents come up with another answer",
          "find_right": "agents find a right answer nobody gave",
          "strength": "agents answer right at first"}
"""What sets a family's members apart (:func:`member_traits`), in words: the twins' six
revision effects (:mod:`pear.populations.twin`) and their round-0 accuracy."""
TRAIT_GAP = {"follow_right": 0.1, "follow": 0.1, "keep": 0.1, "keep_right": 0.1, "invent": 0.1,
             "find_right": 0.1, "strength": 0.02}
"""Our choice: the least gap between the members on either side of a threshold for
:func:`sorting_trait` to say it: about one standard error of a twin's effect (0.07-0.11 for
DyLAN's twins, in logits) and two points of accuracy; a closer split is noise."""


def member_traits(ens: Ensemble) -> pd.DataFrame:
    """Per member of a family ensemble (index: name) its :data:`TRAITS`: the revision
    effects its file records (a published member frees ``follow_right`` only, a DebateLedger
    member ``keep_right`` and the pull of a right answer; the others are the base's, 0) and ``strength``, its expected round-0 accuracy averaged over the grid's
    datasets (:func:`pear.sim.population.expected_accuracy`)."""
    rows = {}
    for name in ens.members:
        p = pop.load(ens.root / "populations" / f"{name}.json")
        effects = p.info.get("diagnostics", {}).get("effects", {})
        row = {t: float(effects.get(t, {}).get("estimate", 0.0)) for t in TRAITS
               if t != "strength"}
        row["strength"] = float(np.mean([pop.expected_accuracy(p.params, d)
                                         for d in ens.exp.datasets]))
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(TRAITS))


def where_it_holds(held: pd.Series, traits: pd.DataFrame) -> str:
    """In words, the members in which a claim holds (``held``: a boolean per member) and,
    when one trait sorts them, which (:func:`sorting_trait`).

    >>> t = pd.DataFrame({"follow_right": [1.0, 0.5, -0.2, -1.0], "follow": [0, 0, 0, 0.0],
    ...                   "keep": [0.0] * 4, "keep_right": [0.0] * 4, "invent": [0.0] * 4,
    ...                   "find_right": [0.0] * 4,
    ...                   "strength": [0.5, 0.6, 0.5, 0.6]}, index=list("abcd"))
    >>> where_it_holds(pd.Series([True, True, False, False], index=list("abcd")), t)
    'holds in 2 of 4 members: those where agents follow a right answer they hear more (follow_right >= 0.5: 2 of 2; below: 0 of 2)'
    >>> where_it_holds(pd.Series([False, True, True, True], index=list("abcd")), t)
    'holds in 3 of 4 members; no one trait of the members sorts them'
    """
    words = f"holds in {int(held.astype(bool).sum())} of {len(held)} members"
    which = sorting_trait(held, traits)
    return words + (f": {which}" if which.startswith("those") else f"; {which}" if which
                    else "")


def sorting_trait(held: pd.Series, traits: pd.DataFrame) -> str:
    """Which members a claim holds in, by one trait (``""`` when it holds in all or none):
    the threshold on one :data:`TRAITS` column that puts the most members on their side
    (ties: the earlier trait, the lower threshold), between members at least
    :data:`TRAIT_GAP` apart, said only when it sorts at least two more members than calling
    them all alike and all but at most a tenth of them."""
    h = held.astype(bool).to_numpy()
    n, k = len(h), int(h.sum())
    if n == 0 or k in (0, n):
        return ""
    best = None
    for trait in TRAITS:
        x = traits.loc[held.index, trait].to_numpy(float)
        values = np.unique(x)
        for t in values[1:][np.diff(values) >= TRAIT_GAP[trait]]:
            above = x >= t
            for more in (True, False):  # holds where the trait is high, or where it is low
                right = int(((above if more else ~above) == h).sum())
                if best is None or right > best[0]:
                    best = (right, trait, t, more)
    if best is None:
        return "no one trait of the members sorts them"
    right, trait, t, more = best
    if right < max(k, n - k) + 2 or n - right > n // 10:
        return "no one trait of the members sorts them"
    x = traits.loc[held.index, trait].to_numpy(float)
    high, low = h[x >= t], h[x < t]
    if more:
        rule, (first, second, other) = f"{trait} >= {t:.2g}", (high, low, "below")
    else:
        rule, (first, second, other) = f"{trait} < {t:.2g}", (low, high, "above")
    return (f"those where {TRAITS[trait]} {'more' if more else 'less'} ({rule}: "
            f"{int(first.sum())} of {len(first)}; {other}: {int(second.sum())} of "
            f"{len(second)})")


def table_claims(ens: Ensemble) -> pd.DataFrame:
    """Every claim of the ledger: its finding under grounded (the ledger's 95 % intervals
    on this grid), whether it holds at grounded's point values, and in how many of the K
    populations it holds at theirs (and the share), or why it is not evaluated (a method
    the grid does not run; not covered by such a grid).  Across a family, the members in
    which it holds in words (:func:`where_it_holds`)."""
    if ens.note:
        return _note(ens)
    point = ens.findings[ens.findings["population"] == POINT].set_index("id")["finding"]
    held = held_by_member(ens)
    traits = member_traits(ens) if ens.family else None
    rows = []
    for _, r in ens.ledger.iterrows():
        cid = r["id"]
        row = {"Claim": cid, "Kind": r["kind"], "Grounded finding": r["finding"]}
        if cid in ens.missing:
            where = (f"not evaluated: the ensemble grid does not run "
                     f"{', '.join(method_label(m) for m in ens.missing[cid])}")
            at_point, share = "–", np.nan
        elif cid not in held or held[cid].empty:
            where, at_point, share = "not covered by the ensemble grid", "–", np.nan
        else:
            h = held[cid]
            where = f"{int(h.sum())}/{len(h)}"
            at_point = {"supported": "yes", "not covered": "–"}.get(point.get(cid), "no")
            share = float(h.mean())
            if traits is not None:
                row["Where it holds"] = sorting_trait(h, traits) or "–"
        rows.append({**row, "Holds at grounded's point": at_point, "Holds in": where,
                     "Share": share})
    out = pd.DataFrame(rows).set_index("Claim")
    if traits is not None:  # last: the long text
        out = out[[c for c in out.columns if c != "Where it holds"] + ["Where it holds"]]
        out["Where it holds"] = out["Where it holds"].fillna("–")
    return out


def _grid_words(ens: Ensemble) -> str:
    e = ens.exp
    return (f"grid: {len(e.methods)} methods x {len(e.datasets)} datasets x "
            f"{describe_scope(e, 'subset')}")


def _whom(ens: Ensemble) -> str:
    return "the family of real twins" if ens.family else "an ensemble of simulated populations"


def _what(ens: Ensemble) -> str:
    if ens.family:
        return (f"Across the family of {ens.k} real twins (a twin of each licensed run: "
                f"DyLAN's MATH subjects and MMLU teams; a moment-matched twin of each "
                f"published model and task, and of each model of DebateLedger's per-model "
                f"table; {_grid_words(ens)}; simulated agents)")
    return (f"Across an ensemble of {ens.k} plausible simulated populations (the grounded "
            f"revision model refitted on DyLAN's debates resampled with replacement, bootstrap "
            f"seed {ens.seed}; {_grid_words(ens)}; simulated agents)")


def caption_main(ens: Ensemble) -> str:
    if ens.note:
        return f"The main results across {_whom(ens)}: {ens.note}."
    return (f"{_what(ens)}: accuracy of PEAR, Random, Clique and CoT-SC per dataset under "
            f"grounded (the fit on all the debates), and the ensemble's minimum, maximum and "
            f"{PERCENTILES[0]}th/{PERCENTILES[1]}th percentiles. The spread holds the "
            "population's uncertainty and the simulation's own noise on this grid.")


def caption_gains(ens: Ensemble) -> str:
    if ens.note:
        return f"PEAR's gains across {_whom(ens)}: {ens.note}."
    return (f"{_what(ens)}: PEAR's gain over Random, Clique and CoT-SC in accuracy points per "
            "dataset and pooled (the mean over datasets) under grounded, the ensemble's "
            "range, and the populations in which PEAR is ahead (gain > 0).")


def caption_claims(ens: Ensemble) -> str:
    if ens.note:
        return f"The claims across {_whom(ens)}: {ens.note}."
    some = table_claims(ens)["Share"]
    part = int(((some > 0) & (some < 1)).sum())
    return (f"{_what(ens)}: every claim's finding under grounded (95 % intervals on this grid) "
            "and the populations in which it holds at their point values (the ledger's "
            "evaluators with every interval collapsed to its value: a comparison on its "
            "claimed side, a printed number within its rounding). "
            f"{part} claims hold in some populations and not in others: those conclusions "
            "depend on the simulated population."
            + (" Where it holds: the one trait of the members (a revision effect of the twin, "
               "or its round-0 accuracy) whose threshold sorts them, when one does."
               if ens.family else ""))


def describe_times(ens: Ensemble) -> str:
    """Seconds per population (run and read; median, min, max) and in all."""
    if not ens.seconds:
        return ens.note or "nothing run"
    s = np.array(list(ens.seconds.values()))
    what = "family members" if ens.family else "bootstrap draws"
    return (f"{len(s)} populations ({POINT} and {ens.k} {what}) in {ens.wall_s:.0f} s: "
            f"{np.median(s):.1f} s per population (median; {s.min():.1f}-{s.max():.1f} s; "
            f"{s.sum():.0f} s in all, several at once), "
            f"{sum(ens.written.values())} debates written")
