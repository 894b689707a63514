"""The studies beyond the paper, four questions it leaves open (notebooks 09-12): theory
checks on router states, the routing temperature sweep, early stopping, and robustness to
adversarial or miscalibrated agents.  (The paper's own study, the debates of a scope that
notebooks 01-08 read, is :mod:`pear.paper.study`.)

Each study is a set of named *variants* of one grid (the ``beyond`` preset by default): the
same questions and seeds, with one setting changed (the router's temperature, the stop rule,
one agent's role).  A variant runs into its own directory ``<runs_dir>-studies/<variant>`` (runs of
different protocols never share a directory), resumably, through the same experiment runner
and columnar view as the study's own grid; ``backend="replay"`` only reads what is there.

>>> sorted(temperature_variants(preset_experiment()))[:3]
['Random', 'tau=0', 'tau=0.03']
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pear.core.router import RouterState
from pear.analysis import metrics, stats, theory
from pear.core.config import RouterConfig, roles_for
from pear.catalog.labels import METHOD_LABELS, method_order
from pear.methods import spec as method_spec
from pear.runs.grid import Experiment, preset
from pear.analysis.figures import METHOD_COLORS, annotate
from pear.paths import beside, cache_path, shown
from pear.store.records import iter_records
from pear.paper.study import Results, load_results, experiment
from pear.store import manifest, view
from pear.analysis.compare import load_paper
from pear.paper.experiments import run_experiments
from pear.runs import stopped
from pear.backends.registry import REPLAY
from pear.runs.factory import default_workers, grid_backend
from pear.runs.together import recorded_in, run_together

__all__ = [
    "TAUS", "STOP_RULES", "POPULATIONS", "preset_experiment", "temperature_variants",
    "stop_variants", "population_variants", "run_variants", "variant_dir", "theory_checks",
    "theory_summary", "temperature_table", "consistent_taus", "early_stop_table",
    "robustness_table", "study_gap_pear_random", "study_lifts",
    "plot_theory_checks", "plot_temperature_sweep",
    "plot_early_stop", "plot_robustness",
]

TAUS = (0.0, 0.03, 0.1, 0.3, 0.7, 3.0)
"""Routing temperatures swept: 0 (argmax), ..., 0.1 (our default), 0.7 (the authors' code)."""
STOP_RULES = ("none", "consensus", "stable:1", "stable:2")
STOP_METHODS = ("clique", "ring", "random", "pear")
ROBUST_METHODS = ("clique", "star", "ring", "random", "pear", "pear_T", "pear_L")
SMOKE_TAUS = (0.0, 0.1, 3.0)
SMOKE_METHODS = ("clique", "random", "pear")
"""The pipeline-check build (``smoke``: a 135M model, one question) runs the studies on three
temperatures and three methods only, so that the default ``make paper`` stays under ten
minutes on 2 cores; its studies show that every code path runs, not what the studies find
(our choice)."""
POPULATIONS = {"honest": {}, "adversarial": {2: "adversarial"},
               "overconfident": {2: "overconfident"}}
"""The populations of the robustness study: agent 2 (not Star's hub, inside Chain and Ring)
is the one with a role; our choice."""


def preset_experiment(name: str = "beyond", seeds: str | Sequence[int] = "",
                      n_questions: int = 0, methods: Sequence[str] = ()) -> Experiment:
    """The grid the studies vary, from the notebooks' parameters: the ``beyond`` preset, or
    another preset's protocol and questions with the studies' methods (``smoke``: one
    dataset, GSM8K, one seed and :data:`SMOKE_METHODS`, so that the CPU build stays short);
    ``seeds`` and ``n_questions`` override as in every notebook; ``methods`` (registered
    names, plug-ins loaded; an unknown one is an error naming it): these, in table order,
    instead of the studies'."""
    for m in methods:
        method_spec(m)
    exp = experiment(name, seeds=seeds, n_questions=n_questions)
    if name == "smoke":
        exp = dataclasses.replace(exp, datasets=("gsm8k",), methods=SMOKE_METHODS,
                                  seeds=exp.seeds if seeds else exp.seeds[:1],
                                  full_datasets=())
    else:
        exp = dataclasses.replace(exp, methods=ROBUST_METHODS, full_datasets=())
    return dataclasses.replace(exp, methods=tuple(method_order(methods))) if methods else exp


def _variant(exp: Experiment, methods: Sequence[str], **debate: Any) -> Experiment:
    """``exp`` with the ``methods`` it has (a smoke grid has fewer) and debate settings."""
    methods = tuple(m for m in methods if m in exp.methods) or tuple(methods)
    return dataclasses.replace(exp, methods=methods, full_datasets=(),
                               debate=dataclasses.replace(exp.debate, **debate))


def temperature_variants(exp: Experiment) -> dict[str, Experiment]:
    """PEAR at every temperature of :data:`TAUS` (a smoke grid: :data:`SMOKE_TAUS`), and
    Random (the same base graphs)."""
    taus = SMOKE_TAUS if exp.name == "smoke" else TAUS
    out = {f"tau={t:g}": dataclasses.replace(_variant(exp, ("pear",)),
                                             router=dataclasses.replace(exp.router, tau=t))
           for t in taus}
    out["Random"] = _variant(exp, ("random",))
    return out


def stop_variants(exp: Experiment) -> dict[str, Experiment]:
    """Clique, Ring, Random and PEAR under every stop rule of :data:`STOP_RULES`."""
    return {rule: _variant(exp, STOP_METHODS, stop=rule) for rule in STOP_RULES}


def population_variants(exp: Experiment) -> dict[str, Experiment]:
    """The robustness methods with an honest population, one adversarial agent, one
    overconfident agent (:data:`POPULATIONS`)."""
    n = exp.debate.n_agents
    return {name: _variant(exp, ROBUST_METHODS, roles=roles_for(n, roles) if roles else ())
            for name, roles in POPULATIONS.items()}


def variant_dir(runs_dir: str | Path, name: str) -> Path:
    """Where variant ``name`` is recorded when it runs: ``<runs_dir>-studies/<name>``."""
    return beside(runs_dir, "studies") / name.replace("=", "-").replace(":", "-")


def run_variants(backend: str, variants: Mapping[str, Experiment], runs_dir: str | Path, *,
                 model: str = "", progress: bool = False) -> dict[str, Results]:
    """Every variant's debates, loaded (``runs_dir``: the main run).

    A variant whose every debate the main run already recorded under the same setting
    (:func:`pear.runs.together.recorded_in`: same protocol, backend, model and data, every
    debate id present; e.g. PEAR at the default temperature, the stop rule ``none``, the
    honest population of a grid the main run covers) is read from the main run: those
    records are exactly its debates.  The others run (or resume) together in one pass
    (:func:`pear.runs.together.run_together`, on every core for the simulated backend:
    :func:`pear.runs.factory.default_workers`) into ``<runs_dir>-studies/<variant>``, with
    the main run's records of their debates copied there rather than run again (e.g. the
    reference methods of notebook 15).  A variant with a stop rule whose debates the main
    run (or the variant without a stop rule) holds run whole is cut from them at its rule
    (:mod:`pear.runs.stopped`: the same records the engine would write), not run;
    ``backend="replay"`` only reads what is there."""
    main = Path(runs_dir)
    be, ident = None, None  # the backend and its (model id, name): the debates' identity
    if backend == REPLAY:  # the main run's identity: what its records were run with
        old = manifest.read(main) if main.is_dir() else None
        if old and len(old.get("model_ids") or []) == 1:
            ident = (old["model_ids"][0], old["backend"])
    else:
        be = grid_backend(backend, next(iter(variants.values())), model_path=model or None,
                          cache_path=cache_path(runs_dir))
        ident = (be.model_id, be.name) if hasattr(be, "generate") else None
    main_view = view.load(main) if ident and manifest.read(main) else None
    have = set(main_view.debates["debate_id"]) if main_view is not None else set()
    reused = {name: ids for name, exp in variants.items()
              if ident and (ids := recorded_in(exp, main, *ident, recorded=have))}
    cut = _cut_from(variants, reused, main, ident, have) \
        if be is not None and hasattr(be, "generate") else {}
    to_run = {variant_dir(runs_dir, name): exp for name, exp in variants.items()
              if name not in reused and name not in cut}
    if be is not None and hasattr(be, "generate") and to_run:
        s = run_together(to_run, be, progress=progress,
                         reuse=main if main_view is not None else None,
                         workers=default_workers(backend))
        print(f"{len(to_run)} variants run: {s.line()} (already done: recorded or copied "
              f"from the main run); {len(reused)} variants read from the main run "
              f"({', '.join(reused) or 'none'})")
        s.raise_if_incomplete("the studies' run")
    elif be is not None:  # a backend per model: each variant through the runner in turn
        for rdir, exp in to_run.items():
            run_experiments(backend, exp, rdir, model=model, progress=progress,
                            cache=cache_path(runs_dir))
    _derive(cut, variants, runs_dir, be, ident, progress=progress,
            workers=default_workers(backend), recorded=have)
    out: dict[str, Results] = {}
    for name, exp in variants.items():
        if name in reused:
            keep = main_view.debates["debate_id"].isin(set(reused[name])).to_numpy()
            out[name] = Results(main_view.select(keep), exp, "subset", main)
        else:
            out[name] = load_results(variant_dir(runs_dir, name), exp, "subset")
    return out


def _cut_from(variants: Mapping[str, Experiment], reused: Mapping[str, Any], main: Path,
              ident: tuple[str, str] | None, have: set[str]) -> dict[str, Path | str]:
    """The stop-rule variants whose debates are cut from debates run whole
    (:mod:`pear.runs.stopped`) rather than run: ``{variant: the main run}`` where the main
    run holds them whole, ``{variant: the name of the variant run whole}`` where another
    variant is that grid (it runs first)."""
    out: dict[str, Path | str] = {}
    for name, exp in variants.items():
        if name in reused or ident is None or (whole := stopped.unstopped(exp)) is None:
            continue
        if stopped.derivable(exp, main, *ident, recorded=have):
            out[name] = main
        elif twin := next((n for n, e in variants.items() if e == whole), None):
            out[name] = twin
    return out


def _derive(cut: Mapping[str, Path | str], variants: Mapping[str, Experiment],
            runs_dir: str | Path, be: Any, ident: tuple[str, str] | None, *,
            progress: bool, workers: int, recorded: set[str]) -> None:
    """Write the variants of :func:`_cut_from` from the runs they are cut from (``recorded``:
    the main run's ids); one whose source cannot give them (a variant directory written
    before rounds carried their cost) runs instead."""
    if not cut:
        return
    by_source: dict[Path, dict[Path, Experiment]] = {}
    late: dict[Path, Experiment] = {}
    for name, src in cut.items():
        source = src if isinstance(src, Path) else variant_dir(runs_dir, src)
        if isinstance(src, Path) or stopped.derivable(variants[name], source, *ident):
            by_source.setdefault(source, {})[variant_dir(runs_dir, name)] = variants[name]
        else:
            late[variant_dir(runs_dir, name)] = variants[name]
    for source, grids in by_source.items():
        n = stopped.derive(grids, source, *ident,
                           recorded=recorded if source == Path(runs_dir) else None)
        print(f"{len(grids)} variants cut at their stop rules from {shown(source)!r}: {n} "
              "debates written")
    if late:
        run_together(late, be, progress=progress, workers=workers).raise_if_incomplete(
            "the stop-rule variants' run")


# --------------------------------------------------------------------------- 09 theory

def theory_checks(runs: Results | str | Path, cfg: RouterConfig = RouterConfig(), *,
                  n_states: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per router state taken from routed records (PEAR and Random): equivariance
    deviations (score, probability), the influence-monotonicity derivative (numeric vs
    closed form, worst agent), the I/L spread over the pool for the in-regular base graph and
    for a circulant one, and the largest routing lift over uniform routing."""
    rng = np.random.default_rng(seed)
    root = runs.runs_dir if isinstance(runs, Results) else Path(runs)
    records = runs.records() if isinstance(runs, Results) else iter_records(root)
    circulant = dataclasses.replace(cfg, base_graph="circulant")
    rows = []
    for st in theory.states_from_records(records, limit=n_states):
        eq = theory.equivariance_deviation(st, cfg, rng, n_perms=4)
        soft = cfg if cfg.tau > 0 else dataclasses.replace(cfg, tau=0.1)
        der = [theory.influence_derivative(st, soft, j) for j in range(st.n)]
        reg = theory.term_spread(st, cfg)
        circ_state = RouterState(st.answers, st.confidences, st.influence,
                                  theory.base_graph(st.n, len(st.base_edges) // st.n,
                                                    rng, "circulant"))
        circ = theory.term_spread(circ_state, circulant)
        lift = theory.routing_lift(st)
        rows.append({
            "equivariance_score": eq["score"], "equivariance_probability": eq["probability"],
            "derivative_error": max(abs(d["numeric"] - d["formula"]) for d in der),
            "derivative_scale": max(abs(d["formula"]) for d in der),
            "I_spread_in_regular": reg["I"], "L_spread_in_regular": reg["L"],
            "I_spread_circulant": circ["I"], "L_spread_circulant": circ["L"],
            "lift_source_confidence": lift["source_confidence"],
            "lift_cross_answer": lift["cross_answer"]})
    if not rows:
        raise ValueError(f"no routed debate rounds under {str(root)!r} to take states from")
    return pd.DataFrame(rows)


def theory_summary(checks: pd.DataFrame, study_lifts: Mapping[str, float]) -> pd.DataFrame:
    """The checks in one table: per quantity the maximum (deviations, errors) or mean and
    maximum (spreads, lifts) over states, beside what the theory or the study says.

    ``study_lifts``: the study's reported lift of PEAR over Random in source confidence and
    cross-answer rate (from its diagnostics table)."""
    n = len(checks)
    rows = [
        ("score change under relabelling (max)", checks["equivariance_score"].max(), 0.0),
        ("choice-probability change under relabelling (max)",
         checks["equivariance_probability"].max(), 0.0),
        ("|dE[D_j]/drho_j - (-alpha_I/(tau m) Var D_j)| (max)",
         checks["derivative_error"].max(), 0.0),
        ("|dE[D_j]/drho_j| (max, scale of the above)", checks["derivative_scale"].max(), np.nan),
        ("I spread over the pool, in-regular (mean)", checks["I_spread_in_regular"].mean(), np.nan),
        ("L spread over the pool, in-regular (mean)", checks["L_spread_in_regular"].mean(), np.nan),
        ("I spread over the pool, circulant (max)", checks["I_spread_circulant"].max(), 0.0),
        ("L spread over the pool, circulant (max)", checks["L_spread_circulant"].max(), 0.0),
        ("largest source-confidence lift over uniform (mean)",
         checks["lift_source_confidence"].mean(), study_lifts.get("source_confidence", np.nan)),
        ("largest cross-answer lift over uniform (mean)",
         checks["lift_cross_answer"].mean(), study_lifts.get("cross_answer", np.nan)),
    ]
    out = pd.DataFrame(rows, columns=["check", "measured", "theory or study"])
    out["states"] = n
    return out.set_index("check")


def study_lifts() -> dict[str, float]:
    """The study's PEAR-minus-Random difference in source confidence and cross-answer rate,
    computed from its diagnostics table (``data/paper/diagnostics.csv``)."""
    d = load_paper("diagnostics").set_index("method")
    return {q: float(d.loc["PEAR", q] - d.loc["Random", q])
            for q in ("source_confidence", "cross_answer")}


# --------------------------------------------------------------------------- 10 temperature

def temperature_table(runs: Mapping[str, Results], cfg: RouterConfig = RouterConfig(), *,
                      n_states: int = 100) -> pd.DataFrame:
    """Per variant (tau or Random) and dataset: accuracy, W2R, R2W (per query), and the mean
    normalised entropy of the router's choice distribution over router states taken from
    the variant's own records (1 = uniform, like Random)."""
    frames = []
    for name, res in runs.items():
        acc = metrics.accuracy(res.debates)
        rates = metrics.update_rates(res.debates, res.agent_rounds)
        df = acc.merge(rates[["model", "dataset", "method", "w2r", "r2w"]],
                       on=["model", "dataset", "method"])
        tau = res.exp.router.tau if name != "Random" else np.nan
        ent_cfg = dataclasses.replace(res.exp.router, alpha_T=0, alpha_I=0, alpha_L=0) \
            if name == "Random" else res.exp.router
        states = list(theory.states_from_records(res.records(), limit=n_states))
        entropy = float(np.mean([theory.choice_entropy(s, ent_cfg) for s in states])) \
            if states else np.nan
        frames.append(df.assign(variant=name, tau=tau, entropy=entropy))
    out = pd.concat(frames, ignore_index=True)
    return out[["variant", "tau", "dataset", "accuracy", "std", "w2r", "r2w", "entropy"]]


def consistent_taus(runs: Mapping[str, Results], study_gap: float, *,
                    seed: int = 0) -> pd.DataFrame:
    """PEAR minus Random accuracy per temperature, with a paired bootstrap 95% CI over
    (dataset, seed, question); ``consistent`` when the study's gap lies inside the CI."""
    rng = np.random.default_rng(seed)
    base = runs["Random"].debates
    rows = []
    for name, res in runs.items():
        if name == "Random":
            continue
        both = pd.concat([res.debates, base], ignore_index=True)
        pair = metrics.paired(both, "pear", "random")
        e = stats.paired_effect(pair["correct_a"], pair["correct_b"], 2000, rng=rng)
        rows.append({"variant": name, "tau": res.exp.router.tau, "gap": e.diff, "low": e.low,
                     "high": e.high, "study_gap": study_gap,
                     "consistent": e.low <= study_gap <= e.high})
    return pd.DataFrame(rows)


def study_gap_pear_random() -> float:
    """The study's mean accuracy of PEAR minus Random over its main-results settings
    (``data/paper/main_results.csv``), in accuracy units."""
    t = load_paper("main_results")
    m = t.groupby("method")["accuracy"].mean()
    return float(m["PEAR"] - m["Random"])


# --------------------------------------------------------------------------- 11 early stop

def early_stop_table(runs: Mapping[str, Results]) -> pd.DataFrame:
    """Per stop rule and method (averaged over datasets): accuracy, tokens and calls per
    example, mean rounds run, whether the point is on the accuracy-tokens Pareto frontier,
    and the exact McNemar p of the rule against the full protocol (``none``) on the same
    questions and seeds."""
    full = runs["none"].debates
    rows = []
    for rule, res in runs.items():
        deb = res.debates
        for m in STOP_METHODS:
            part = deb[deb["method"] == m]
            if part.empty:
                continue
            p = np.nan
            if rule != "none":
                tagged = pd.concat([part.assign(method="stopped"),
                                    full[full["method"] == m]], ignore_index=True)
                pair = metrics.paired(tagged, "stopped", m)
                p = stats.mcnemar_table(pair["correct_a"], pair["correct_b"])[1].pvalue_exact
            rows.append({"stop": rule, "method": METHOD_LABELS[m],
                         "accuracy": float(part["correct"].mean()),
                         "tokens_per_example": float(part["tokens"].mean()),
                         "calls_per_example": float(part["calls"].mean()),
                         "rounds": float(part["rounds"].mean()), "mcnemar_p_vs_full": p})
    out = pd.DataFrame(rows)
    out["pareto"] = metrics.pareto_front(out["tokens_per_example"], out["accuracy"])
    return out


# --------------------------------------------------------------------------- 12 robustness

def robustness_table(runs: Mapping[str, Results], *, seed: int = 0) -> pd.DataFrame:
    """Per population and method: accuracy, the drop against the honest population, its
    paired bootstrap 95% CI and the exact McNemar p (same questions and seeds)."""
    rng = np.random.default_rng(seed)
    honest = runs["honest"].debates
    rows = []
    for pop, res in runs.items():
        for m in ROBUST_METHODS:
            part = res.debates[res.debates["method"] == m]
            if part.empty:
                continue
            row = {"population": pop, "method": METHOD_LABELS[m],
                   "accuracy": float(part["correct"].mean())}
            if pop != "honest":
                tagged = pd.concat([part.assign(method="with_role"),
                                    honest[honest["method"] == m]], ignore_index=True)
                pair = metrics.paired(tagged, "with_role", m)
                e = stats.paired_effect(pair["correct_a"], pair["correct_b"], 2000, rng=rng)
                row.update(drop=e.diff, low=e.low, high=e.high, mcnemar_p=e.p_exact)
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- plots

def plot_theory_checks(checks: pd.DataFrame, study: Mapping[str, float], *, source: str = "",
                       mark: str = "", simulated: bool = False) -> Figure:
    """Left: the term spreads over the pool (in-regular vs circulant); right: the largest
    routing lifts over uniform routing per state, with the study's PEAR-over-Random lifts."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(6.8, 2.6))
    cols = ["I_spread_in_regular", "I_spread_circulant", "L_spread_in_regular",
            "L_spread_circulant"]
    axes[0].boxplot([checks[c] for c in cols], showfliers=False)
    axes[0].set_xticks(range(1, 5), ["I in-reg.", "I circ.", "L in-reg.", "L circ."])
    axes[0].set_ylabel("max - min over the pool")
    for i, (col, key, label) in enumerate((("lift_source_confidence", "source_confidence",
                                            "source conf."),
                                           ("lift_cross_answer", "cross_answer",
                                            "cross-answer"))):
        axes[1].boxplot([checks[col]], positions=[i], widths=0.5, showfliers=False)
        if key in study:
            axes[1].plot([i - 0.3, i + 0.3], [study[key]] * 2, color="#b2182b", lw=2,
                         label="study: PEAR - Random" if i == 0 else None)
    axes[1].set_xticks([0, 1], ["source conf.", "cross-answer"])
    axes[1].set_ylabel("best relabelling - uniform")
    axes[1].legend(loc="upper right", fontsize=6)
    fig.tight_layout()
    return annotate(fig, axes, source=source, mark=mark, simulated=simulated)


def plot_temperature_sweep(table: pd.DataFrame, *, source: str = "",
                           mark: str = "", simulated: bool = False) -> Figure:
    """Accuracy, W2R/R2W and choice entropy against the routing temperature (one tick per
    swept tau, 0 = argmax), averaged over datasets; Random as a dashed black line."""
    import matplotlib.pyplot as plt
    avg = table.groupby(["variant", "tau"], dropna=False)[
        ["accuracy", "w2r", "r2w", "entropy"]].mean().reset_index()
    pear = avg[avg["variant"] != "Random"].sort_values("tau")
    rnd = avg[avg["variant"] == "Random"].iloc[0]
    x = np.arange(len(pear))
    ticks = [("0\n(argmax)" if t == 0 else f"{t:g}") for t in pear["tau"]]
    fig, axes = plt.subplots(1, 3, figsize=(7.0, 2.3))
    specs = ((("accuracy",), "accuracy"), (("w2r", "r2w"), "rate per query"),
             (("entropy",), "choice entropy / log M"))
    styles = {"accuracy": "o-", "w2r": "o-", "r2w": "s--", "entropy": "o-"}
    for ax, (cols, ylabel) in zip(axes, specs):
        for col in cols:
            name = col.upper() if col in ("w2r", "r2w") else ""
            ax.plot(x, pear[col], styles[col], ms=3, color=METHOD_COLORS.get("pear"),
                    label=f"PEAR {name}".strip())
            ax.axhline(rnd[col], ls=":" if col == "r2w" else "--", lw=1, color="k",
                       label=f"Random {name}".strip())
        ax.set_xticks(x, ticks, fontsize=6)
        ax.set_xlabel("routing temperature tau")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=5, loc="lower right")
    fig.tight_layout()
    return annotate(fig, axes, source=source, mark=mark, simulated=simulated)


def plot_early_stop(table: pd.DataFrame, *, source: str = "", mark: str = "",
                    simulated: bool = False) -> Figure:
    """Accuracy against tokens per example for every (stop rule, method); the Pareto
    frontier joined; marker shape by stop rule, colour by method."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(4.2, 2.8))
    markers = dict(zip(STOP_RULES, "osD^"))
    colour = {METHOD_LABELS[m]: METHOD_COLORS.get(m) for m in STOP_METHODS}
    for _, r in table.iterrows():
        ax.scatter(r["tokens_per_example"], r["accuracy"], marker=markers[r["stop"]],
                   color=colour[r["method"]], s=30, zorder=3,
                   edgecolor="k" if r["pareto"] else "none")
    front = table[table["pareto"]].sort_values("tokens_per_example")
    ax.plot(front["tokens_per_example"], front["accuracy"], "k-", lw=0.8, zorder=2)
    for rule, mk in markers.items():
        ax.scatter([], [], marker=mk, color="0.5", label=rule)
    for name, c in colour.items():
        ax.scatter([], [], marker="s", color=c, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("tokens per example (log)")
    ax.set_ylabel("accuracy")
    lo = max(0.0, table["accuracy"].min() - 0.05)
    ax.set_ylim(lo, min(1.0, table["accuracy"].max() + 0.05))
    ax.legend(fontsize=5, ncol=2, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return annotate(fig, [ax], source=source, mark=mark, simulated=simulated)


def plot_robustness(table: pd.DataFrame, *, source: str = "", mark: str = "",
                    simulated: bool = False) -> Figure:
    """Accuracy per method for each population (grouped bars), honest first."""
    import matplotlib.pyplot as plt
    pops = list(dict.fromkeys(table["population"]))
    methods = list(dict.fromkeys(table["method"]))
    fig, ax = plt.subplots(figsize=(5.6, 2.5))
    width = 0.8 / len(pops)
    shades = ("0.25", "#b2182b", "#ef8a62", "#67a9cf")
    for i, pop in enumerate(pops):
        part = table[table["population"] == pop].set_index("method").reindex(methods)
        ax.bar(np.arange(len(methods)) + (i - (len(pops) - 1) / 2) * width, part["accuracy"],
               width, label=pop, color=shades[i % len(shades)])
    ax.set_xticks(range(len(methods)), methods, fontsize=7)
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=6, ncol=len(pops), loc="upper center", bbox_to_anchor=(0.5, 1.18))
    fig.tight_layout()
    return annotate(fig, [ax], source=source, mark=mark, simulated=simulated)
