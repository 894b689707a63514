"""What the claims ledger (:mod:`pear.claims.evaluate`) measures claims against: per-setting,
per-method values of every quantity the study's text quotes, with bootstrap replicates.

A :class:`Cell` holds one quantity (``accuracy``, ``round_3``, ``w2r``, ``tokens`` ...) as
a (settings x methods) array of point values, where a setting is a (model, dataset) pair,
and, for a build, ``B`` bootstrap replicates of it.  :func:`from_view` computes them from a
run's columnar view through :mod:`pear.analysis.metrics` (every per-debate value is that module's,
grouped by debate): each setting's debates are resampled over questions and over seeds at
once (a two-way bootstrap: every replicate draws the questions and the seeds with
replacement, keeping every method of a drawn question and seed together, so that
differences between methods stay paired), and the value of a setting is the mean over its
(seed, question) debates, as the study averages over queries.  :func:`from_paper` gives the
same quantities from the study's printed tables (no replicates): what "recomputed from the
study's tables" means in the ledger.

>>> cells = from_paper()
>>> c = cells["subset"]["accuracy"]
>>> len(c.settings), c.point.shape[1] >= 8
(24, True)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.analysis import metrics, stats
from pear.catalog.labels import method_order
from pear.analysis.compare import load_paper, to_internal, paper_model
from pear.analysis.theory import states_from_records
from pear.core.config import RouterConfig, whole_number
from pear.store.checks import Checker
from pear.store.indexing import VIEW_DIR, read_manifest
from pear.store.validate import Findings
from pear.backends.registry import SIMULATED

__all__ = ["N_BOOT", "NO_RELABELLING", "Cell", "Relabelling", "Source", "per_debate",
           "from_view", "from_paper", "build_source", "paper_source", "METRIC_UNITS",
           "OPEN_MODELS", "PSEUDO_MODELS"]

N_BOOT = 1000  # our choice: replicates; percentile CIs at 95% settle to ~0.01 of their width
KEYS = ["model", "dataset", "method", "seed", "question_id"]
DIAGNOSTICS = tuple(q for q in metrics.DIAGNOSTICS if q != "net")
METRIC_UNITS = {"accuracy": "fraction", "tokens": "tokens", "w2r": "fraction",
                "r2w": "fraction", "net": "fraction", "acceptance": "fraction",
                "cross_answer": "fraction", "source_confidence": "fraction",
                "influence_entropy": "fraction", "permanent_hub": "fraction",
                "head_share": "fraction", "edges_per_round": "edges",
                "in_regular": "fraction"}
"""The unit of each quantity (``round_<r>`` accuracies are fractions)."""


@dataclass
class Cell:
    """One quantity per (setting, method): ``point`` (settings x methods), ``reps``
    (B x settings x methods, or None for printed tables), ``n_questions`` and ``n_seeds``
    per setting."""

    settings: list[tuple[str, str]]
    methods: list[str]
    point: np.ndarray
    reps: np.ndarray | None = None
    n_questions: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    n_seeds: np.ndarray = field(default_factory=lambda: np.zeros(0, int))

    def column(self, method: str) -> int | None:
        return self.methods.index(method) if method in self.methods else None


# ----------------------------------------------------------------- a build's records

def _hub(debates: pd.DataFrame, edges: pd.DataFrame) -> pd.Series:
    """Per debate: 1 if one agent holds the unique largest out-degree in every debate
    round, 0 if not, NaN without edges."""
    e = edges[edges["round"] > 0]
    deg = e.groupby(["debate", "round", "source"], observed=True).size().rename("d")
    deg = deg.reset_index()
    top = deg.groupby(["debate", "round"])["d"].transform("max")
    best = deg[deg["d"] == top]
    unique = best.groupby(["debate", "round"])["source"].agg(["size", "first"])
    holder = unique["first"].where(unique["size"] == 1, -1)  # -1: a tie for the top
    first = holder.groupby(level="debate").transform("first")  # the first debate round's
    per = ((first >= 0) & (holder == first)).groupby(level="debate").all().astype(float)
    return debates["debate"].map(per).astype(float)


def _head_share(debates: pd.DataFrame, agent_rounds: pd.DataFrame) -> pd.Series:
    """Per debate: agent 0's share of the final influence (NaN when all influence is 0)."""
    last = agent_rounds.groupby("debate")["round"].transform("max")
    fin = agent_rounds[agent_rounds["round"] == last]
    total = fin.groupby("debate")["influence"].sum()
    head = fin[fin["agent"] == 0].set_index("debate")["influence"]
    share = (head / total.replace(0.0, np.nan))
    return debates["debate"].map(share).astype(float)


def _structure(debates: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
    """Per debate: mean critique edges per debate round, and 1 if every agent has the same
    in-degree in every debate round (NaN without debate rounds)."""
    e = edges[edges["round"] > 0]
    n = debates.set_index("debate")["n_agents"]
    indeg = e.groupby(["debate", "round", "target"], observed=True).size().rename("k")
    indeg = indeg.reset_index()
    per_round = indeg.groupby(["debate", "round"]).agg(k_min=("k", "min"), k_max=("k", "max"),
                                                       targets=("k", "size"),
                                                       edges=("k", "sum"))
    per_round["regular"] = ((per_round["k_min"] == per_round["k_max"])
                            & (per_round["targets"] == per_round.index.get_level_values(
                                "debate").map(n))).astype(float)
    per = per_round.groupby(level="debate").agg(edges_per_round=("edges", "mean"),
                                                in_regular=("regular", "min"))
    return pd.DataFrame({k: debates["debate"].map(per[k]).astype(float) for k in per})


def per_debate(view: Any) -> pd.DataFrame:
    """One row per debate of ``view`` (a :class:`pear.store.view.View` or anything with its four
    tables): identity (:data:`KEYS`), ``accuracy`` (0/1), ``tokens``, the diagnostics per
    query (:func:`pear.analysis.metrics.update_rates`, :func:`~pear.analysis.metrics.critique_rates`,
    :func:`~pear.analysis.metrics.mean_influence_entropy`, grouped by debate), ``round_<r>`` (the
    vote's correctness after round r, a stopped or single-round debate's last round carried
    forward), ``permanent_hub``, ``head_share``, ``edges_per_round``, ``in_regular``."""
    deb = view.debates.reset_index(drop=True)
    ar, ed, ro = view.agent_rounds, view.edges, view.rounds
    out = pd.DataFrame({k: deb[k].astype(str) if k != "seed" else deb[k].astype(int)
                        for k in KEYS})
    out["debate"] = deb["debate"].to_numpy()
    out["accuracy"] = deb["correct"].astype(float).to_numpy()
    out["tokens"] = deb["tokens"].astype(float).to_numpy()
    by = ("debate",)
    upd = metrics.update_rates(deb, ar, by).set_index("debate")[["w2r", "r2w"]]
    crit = metrics.critique_rates(deb, ed, by).set_index("debate")[
        ["acceptance", "cross_answer", "source_confidence"]]
    ent = metrics.mean_influence_entropy(deb, ar, by).set_index("debate")["influence_entropy"]
    for frame in (upd, crit, ent.to_frame()):
        for col in frame:
            out[col] = out["debate"].map(frame[col]).astype(float)
    votes = ro.pivot_table(index="debate", columns="round", values="vote_correct",
                           aggfunc="first", observed=True).astype(float)
    votes = votes.reindex(columns=range(int(votes.columns.max()) + 1 if len(votes.columns)
                                        else 1)).ffill(axis=1)
    for r in votes.columns:
        out[f"round_{r}"] = out["debate"].map(votes[r]).to_numpy()
    out["permanent_hub"] = _hub(deb, ed).to_numpy()
    out["head_share"] = _head_share(deb, ar).to_numpy()
    for col, values in _structure(deb, ed).items():
        out[col] = values.to_numpy()
    return out


def _replicates(x: np.ndarray, ws: np.ndarray, wq: np.ndarray) -> np.ndarray:
    """Weighted means (B x methods) of ``x`` (methods x seeds x questions, NaN = missing)
    under seed weights ``ws`` (B x S) and question weights ``wq`` (B x Q)."""
    ok = ~np.isnan(x)
    num = np.einsum("bs,msq,bq->bm", ws, np.where(ok, x, 0.0), wq, optimize=True)
    den = np.einsum("bs,msq,bq->bm", ws, ok.astype(float), wq, optimize=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def from_view(view: Any, *, rng: np.random.Generator, n_boot: int = N_BOOT,
              quantities: Sequence[str] | None = None) -> dict[str, Cell]:
    """Every quantity of :func:`per_debate` (or those named) as a :class:`Cell` with
    ``n_boot`` two-way bootstrap replicates drawn from ``rng``; ``net`` = ``w2r`` - ``r2w``
    of the means, as the study's Net.  ``n_boot=0``: point values only (``reps`` None, as
    the study's tables): every interval of the ledger is then its point value."""
    n_boot = whole_number(n_boot, "n_boot", 0, fix="a number of replicates >= 0")
    df = per_debate(view)
    names = [c for c in df.columns if c not in KEYS and c != "debate"]
    if quantities is not None:
        names = [c for c in names if c in quantities]
    methods = method_order(df["method"].unique())
    mcode = {m: i for i, m in enumerate(methods)}
    settings = sorted(set(zip(df["model"], df["dataset"])))
    point = {q: np.full((len(settings), len(methods)), np.nan) for q in names}
    reps = {q: np.full((n_boot, len(settings), len(methods)), np.nan) for q in names}
    nq, ns = np.zeros(len(settings), int), np.zeros(len(settings), int)
    groups = df.groupby(["model", "dataset"], sort=True)
    for s, key in enumerate(settings):
        part = groups.get_group(key)
        seeds, sc = np.unique(part["seed"].to_numpy(), return_inverse=True)
        qids, qc = np.unique(part["question_id"].to_numpy(), return_inverse=True)
        mc = part["method"].map(mcode).to_numpy()
        nq[s], ns[s] = len(qids), len(seeds)
        ws = stats.bootstrap_weights(len(seeds), n_boot, rng=rng)
        wq = stats.bootstrap_weights(len(qids), n_boot, rng=rng)
        for q in names:
            x = np.full((len(methods), len(seeds), len(qids)), np.nan)
            x[mc, sc, qc] = part[q].to_numpy(float)
            with np.errstate(invalid="ignore"):
                point[q][s] = _replicates(x, np.ones((1, len(seeds))),
                                          np.ones((1, len(qids))))[0]
            reps[q][:, s] = _replicates(x, ws.astype(float), wq.astype(float))
    out = {q: Cell(settings, methods, point[q], reps[q] if n_boot else None, nq, ns)
           for q in names}
    if "w2r" in out and "r2w" in out:
        w, r = out["w2r"], out["r2w"]
        out["net"] = Cell(settings, methods, w.point - r.point,
                          w.reps - r.reps if n_boot else None, nq, ns)
    return out


# ----------------------------------------------------------------- the study's tables

def _table_cell(df: pd.DataFrame, value: str, settings_of) -> Cell:
    df = df.copy()
    keys = [settings_of(r) for r in df.itertuples()]
    settings = list(dict.fromkeys(keys))
    methods = method_order(df["method"].unique())
    point = np.full((len(settings), len(methods)), np.nan)
    for key, m, v in zip(keys, df["method"], df[value]):
        point[settings.index(key), methods.index(m)] = float(v)
    return Cell(settings, methods, point, None, np.zeros(len(settings), int),
                np.zeros(len(settings), int))


OPEN_MODELS = ("Gemma-3-12B", "Llama-3.1-8B", "Qwen-2.5-14B", "Qwen-3-30B-A3B")
"""The study's open-source backbones (its diagnostics average over their 16 settings)."""
_OPEN = ("open models", "all datasets")
_ALL = ("all models", "all datasets")
PSEUDO_MODELS = (_OPEN[0], _ALL[0])
"""Settings of the study's tables that are already averages over settings."""


def from_paper() -> dict[str, Mapping[str, Cell]]:
    """The study's printed tables as cells: ``subset`` (main results: ``accuracy``, and
    ``round_5`` = the final accuracy; the diagnostics averaged over the open settings as
    one setting; tokens per example as one setting) and ``full`` (the full-set table)."""
    main = to_internal(load_paper("main_results"))
    acc = _table_cell(main, "accuracy", lambda r: (r.model, r.dataset))
    subset: dict[str, Cell] = {"accuracy": acc, "round_5": acc}
    diag = to_internal(load_paper("diagnostics"))
    for q in (*DIAGNOSTICS, "net"):
        subset[q] = _table_cell(diag.dropna(subset=[q]), q, lambda r: _OPEN)
    cost = to_internal(load_paper("cost"))
    subset["tokens"] = _table_cell(cost, "tokens_per_example", lambda r: _ALL)
    full = to_internal(load_paper("full_dataset"))
    return {"subset": subset,
            "full": {"accuracy": _table_cell(full, "accuracy", lambda r: (r.model, r.dataset))}}


# ----------------------------------------------------------------- relabelling runs

NO_RELABELLING = "no relabelling runs beside this build (notebook 19_relabelling was not run)"
"""Why the relabelling claims are not covered when a build gives no relabelling runs."""


@dataclass
class Relabelling:
    """A relabelling study of the build (notebook 19's tables, computed from its records by
    :func:`pear.paper.relabelling.tables`): the panel's ``odd`` agent seated at each of
    ``seats`` positions, the same questions and seeds at every seat.

    ``spread``: per method ``method, mean_accuracy, spread`` (range of accuracy over the
    seats), ``null_spread`` (its mean when each question's outcomes are permuted across
    seats) and ``p_value`` (:func:`pear.analysis.stats.relabelling_spread`, the
    randomisation test at matched seeds), ``n`` (questions x seeds at every seat).
    ``orbit``: per fixed router beside its orbit average ``router, router_accuracy,
    orbit_accuracy, difference`` (orbit - router over (question, seed, seat) pairs),
    ``diff_low, diff_high`` (its paired bootstrap 95 % interval), ``p_value`` (McNemar's
    exact p), ``n_pairs``, ``router_spread, orbit_spread``."""

    spread: pd.DataFrame
    orbit: pd.DataFrame
    seats: int
    odd: str = "odd"
    description: str = ""


# ----------------------------------------------------------------- one side of the ledger

@dataclass
class Source:
    """Everything one side of the ledger offers the claims: a build's records, or the
    study's printed tables (``paper``).  Model names of ``models`` map to the study's
    names (None: not one of the study's models)."""

    cells: dict[str, Cell]
    full: dict[str, Cell]
    paper: bool = False
    sig: pd.DataFrame | None = None
    """Significance rows: ``model, dataset, b, c, n_pairs, p_exact, wilson_low,
    wilson_high, power, pear_acc, best_baseline_acc`` (accuracies as fractions)."""
    spearman: pd.DataFrame | None = None
    """Rank agreement rows: ``model, dataset, rho, p_value, rho_low, rho_high``."""
    models: dict[str, str | None] = field(default_factory=dict)
    design: dict[str, Any] = field(default_factory=dict)
    n: int | None = None
    k: int | None = None
    states: list[Any] = field(default_factory=list)
    router: Any = None
    graphs_checked: tuple[bool, int] | None = None
    """(whether the run manifest let the records' graphs be checked, graph problems)."""
    simulated: bool = False
    smoke: bool = False
    imported: bool = False
    """Records imported from another framework (``pear import``): another protocol (no
    PEAR, no confidences or critiques, no token counts)."""
    description: str = ""
    relabelling: Relabelling | str = NO_RELABELLING
    """The build's relabelling study, or why it has none (the reason its claims show)."""


def _significance(debates: pd.DataFrame, seed: int) -> pd.DataFrame:
    sig = stats.significance(debates[debates["seed"] == seed])
    return sig[["model", "dataset", "b", "c", "n_pairs", "p_exact", "wilson_low",
                "wilson_high", "power", "pear_acc", "best_baseline_acc"]]


def _rank_rows(sub: Cell, full: Cell) -> pd.DataFrame:
    """Spearman's rho between the subset's and the full set's accuracies over the methods in
    both, per common setting, with percentile intervals from the replicates."""
    from scipy.stats import rankdata

    rows = []
    methods = [m for m in full.methods if m in sub.methods]
    for key in full.settings:
        if key not in sub.settings:
            continue
        i, j = sub.settings.index(key), full.settings.index(key)
        ms = [m for m in methods if not np.isnan(sub.point[i, sub.column(m)])
              and not np.isnan(full.point[j, full.column(m)])]
        if len(ms) < 3:
            continue
        a = sub.point[i, [sub.column(m) for m in ms]]
        b = full.point[j, [full.column(m) for m in ms]]
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho, p = stats.spearman(a, b)
        lo = hi = np.nan
        if sub.reps is not None and full.reps is not None:
            ra = rankdata(sub.reps[:, i, [sub.column(m) for m in ms]], axis=1)
            rb = rankdata(full.reps[:, j, [full.column(m) for m in ms]], axis=1)
            ra, rb = ra - ra.mean(1, keepdims=True), rb - rb.mean(1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                r = (ra * rb).sum(1) / np.sqrt((ra ** 2).sum(1) * (rb ** 2).sum(1))
            if np.isfinite(r).any():
                lo, hi = np.nanpercentile(r, [2.5, 97.5])
        rows.append({"model": key[0], "dataset": key[1], "rho": rho, "p_value": p,
                     "rho_low": lo, "rho_high": hi, "n_methods": len(ms)})
    return pd.DataFrame(rows, columns=["model", "dataset", "rho", "p_value", "rho_low",
                                       "rho_high", "n_methods"])


def _states(view: Any, limit: int) -> list[Any]:
    """Router states (:func:`pear.analysis.theory.states_from_records`) of up to ``limit`` rounds of
    the first PEAR debates (full records read one at a time)."""
    deb = view.debates
    ids = deb.loc[(deb["method"] == "pear") & (deb["rounds"] > 0), "debate_id"].head(limit)
    records = (view.record(i) for i in ids)
    return list(states_from_records(records, limit=limit))


def _design(deb: pd.DataFrame, full: pd.DataFrame | None) -> dict[str, Any]:
    pear = deb[deb["method"] == "pear"]
    return {"datasets": pear["dataset"].nunique(), "models": pear["model"].nunique(),
            "questions": deb.groupby(["model", "dataset"])["question_id"].nunique().to_dict(),
            "seeds": deb["seed"].nunique(),
            "full_questions": ({} if full is None or full.empty else
                               full.groupby("dataset")["question_id"].nunique().to_dict()),
            "full_models": set() if full is None else set(full["model"])}


def _protocol_n(deb: pd.DataFrame, exp: Any) -> int | None:
    """The number of agents n of the build's protocol (from its debates if no preset)."""
    if exp is not None:
        return int(exp.debate.n_agents)
    n = deb.loc[deb["method"] != "cot", "n_agents"]
    return int(n.max()) if len(n) else None


def build_source(subset: Any, full: Any = None, *, rng: np.random.Generator,
                 n_boot: int = N_BOOT, router_states: int = 40,
                 relabelling: Relabelling | str | None = None) -> Source:
    """A build's side of the ledger from its subset and (optional) full-set results
    (:class:`pear.paper.study.Results`, or bare :class:`pear.store.view.View` objects), and
    its relabelling study (:class:`Relabelling`) or why it has none (None:
    :data:`NO_RELABELLING`)."""
    sv = getattr(subset, "view", subset)
    fv = getattr(full, "view", full) if full is not None else None
    cells = from_view(sv, rng=rng, n_boot=n_boot)
    fcells = from_view(fv, rng=rng, n_boot=n_boot, quantities=("accuracy",)) \
        if fv is not None else {}
    deb = sv.debates
    names = [m for m in OPEN_MODELS] + ["GPT-5.4-nano", "Claude-Haiku-4.5"]
    models = sorted(set(deb["model"]) | (set(fv.debates["model"]) if fv is not None else set()))
    exp = getattr(subset, "exp", None)
    sig = None
    if fv is not None and len(fv.debates):
        seeds = exp.full_seeds if exp is not None else sorted(set(fv.debates["seed"]))
        sig = _significance(fv.debates, min(seeds))
    src = Source(cells, fcells, sig=sig,
                 spearman=_rank_rows(cells["accuracy"], fcells["accuracy"]) if fcells else None,
                 models={m: paper_model(m, names) for m in models},
                 design=_design(deb, fv.debates if fv is not None else None),
                 n=_protocol_n(deb, exp),
                 k=exp.debate.k if exp is not None else None,
                 states=_states(sv, router_states),
                 router=exp.router if exp is not None else RouterConfig(),
                 simulated=bool((deb["backend"] == SIMULATED).any()),
                 smoke="pipeline check" in getattr(subset, "mark", ""),
                 imported=bool((deb["backend"] == "imported").any()),
                 description=getattr(subset, "label", "in-memory records"),
                 relabelling=NO_RELABELLING if relabelling is None else relabelling)
    root = getattr(sv, "root", None)
    if root is not None:
        man = read_manifest(root / VIEW_DIR)
        found = Findings.from_dict(man.findings if man else {})
        src.graphs_checked = (Checker(root).debate is not None, found.counts.get("graph", 0))
    return src


def paper_source() -> Source:
    """The study's side: its printed tables (:func:`from_paper`), significance table (N =
    the full set's size) and the rank agreement recomputed from its two accuracy tables."""
    cells = from_paper()
    sig = to_internal(load_paper("significance"))
    size = {"truthfulqa": 817, "math500": 500}
    sig["n_pairs"] = sig["dataset"].map(size)
    sig["pear_acc"] = sig["pear_acc"] / 100
    sig["best_baseline_acc"] = sig["best_baseline_acc"] / 100
    sig["p_printed"] = sig["p_exact"]
    tests = [stats.mcnemar(b, c) for b, c in zip(sig["b"], sig["c"])]
    sig["p_exact"] = [t.pvalue_exact for t in tests]
    bounds = [stats.wilson(b, b + c) for b, c in zip(sig["b"], sig["c"])]
    sig["wilson_low"], sig["wilson_high"] = [lo for lo, _ in bounds], [hi for _, hi in bounds]
    sig["power"] = [stats.mcnemar_power(b, c).normal for b, c in zip(sig["b"], sig["c"])]
    main = cells["subset"]["accuracy"]
    names = sorted({s[0] for s in main.settings})
    return Source(dict(cells["subset"]), dict(cells["full"]), paper=True, sig=sig,
                  spearman=_rank_rows(main, cells["full"]["accuracy"]),
                  models={m: m for m in names} | {_OPEN[0]: _OPEN[0], _ALL[0]: _ALL[0]},
                  design={"datasets": len({s[1] for s in main.settings}),
                          "models": len(names),
                          "full_models": {s[0] for s in cells["full"]["accuracy"].settings}},
                  n=5, k=2, description="the study's printed tables")
