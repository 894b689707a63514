"""A simulated population held against a recorded run, in that run's setting (``pear population
sim-check``).

:func:`check` simulates the run's debates ``replicates`` times with agents of a population
(:mod:`pear.sim.population`: ``study``, ``grounded`` or a file) and sets the statistics of
:data:`pear.populations.debate_statistics.STATISTICS` of the simulated debates (their mean over the
replicates) beside the real run's, each with the real run's 95% percentile bootstrap interval
over debates and whether the simulated value lies inside it.

**The setting.**  The same questions (each debate's gold answer; for letter grading the number
of options: our benchmark's for our datasets, else the letters the record shows, at least A-D as
``pear import`` assumes), the same number of debates per question, and

* for an imported run (its manifest's ``imported.protocol``,
  :class:`pear.store.readers.protocols.Protocol`): the source's agents, rounds, order, who hears
  whom, stop rule and drop.  The population's decisions are driven directly, as the engine would
  ask them (:meth:`~pear.sim.backend.SimulatedBackend.solve` and ``confidence`` in round 0;
  later an agent hears the latest answers of every other agent still in the debate (or, for
  a protocol that ``hears="all_answered"``, every other agent that answered, dropped ones
  too): the previous round's (``simultaneous``) or, for those before it in this round, this round's
  (``sequential``), each heard answer given to the population as a critique pointing to it, with
  its source's confidence and whether it was given in this round (``fresh``: the revision
  model's term of that name) (the ``study`` population accepts or rejects each, then revises:
  ``accept``/``revise``; a population with a revision model chooses among the candidates:
  ``revise_choice``)).  A :class:`~pear.store.readers.protocols.Quorum` is checked after each
  answer of a round from its ``after``-th on (missed as often as the source's check missed
  one, on the right answer and on a wrong one apart: ``miss_right``, ``miss``), and the agents
  that had not answered leave the record, as in the source's records.  A
  :class:`~pear.store.readers.protocols.Drop`'s judge (DyLAN's LLM ranker reads the four
  answers and keeps two) is simulated as keeping agents uniformly at random (:data:`JUDGE`):
  no real log says how well the ranker tells right answers from wrong, and the kept agents'
  last-round accuracy in DyLAN's MMLU teams is what random keeping gives (team of seven: 0.621
  real, 0.641 random, 0.666 by confidence); ``judge="confidence"`` keeps the agents whose
  latest answers the population states with the highest confidence (its only signal of
  being right; ties at random) instead.  If the kept agents give one answer, the debate ends
  there.
* for one of our runs (a manifest without ``imported``): PEAR's engine itself, with the run's
  methods, router and :class:`~pear.core.config.DebateConfig` from its manifest and a
  :class:`~pear.sim.backend.SimulatedBackend` of the population ("heard" = the sources of
  the critiques an agent received).

**Only the skill is matched.**  Per replicate (its own seed: other latents) and per model and
dataset, the population's ``skill_mean`` alone is shifted
(:meth:`~pear.sim.backend.SimulatedBackend.matched`) so that the expected round-0
accuracy of the simulated agents (every agent a simulated debate starts with, each debate
weighted alike) equals the run's round-0 agent accuracy; nothing is fitted on the run.

**Predictive intervals.**  Beside each simulated value, ``predictive``: the 2.5% and 97.5%
points of the replicates' values.  Given ``draws`` (one population per replicate: a twin's
effects drawn from their fitted uncertainty, :func:`pear.populations.twin.draws`), that is the
twin's predictive interval for a run of this size: wide when the twin was fitted on few
debates.  Without draws it is the spread of runs of this size of a population known exactly.

>>> SimCheck.JSON_KEYS
('statistic', 'real', 'lo', 'hi', 'debates', 'simulated', 'inside', 'predictive')
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.paths import shown
from pear.populations import debate_statistics
from pear.core.config import whole_number
from pear.core.hashing import int_seed
from pear.core.vote import vote
from pear.sim.population import Population, load as load_population
from pear.store.readers.protocols import Protocol
from pear.core.engine import Engine, Job
from pear.core.methods import method
from pear.runs.branch import parent_experiment
from pear.runs.grid import grid_questions
from pear.sim.backend import SimulatedBackend
from pear.store import manifest as manifest_io
from pear.store.records import read_records
from pear.store.view import from_records
from pear.tasks.benchmarks import DATASETS, get_question
from pear.tasks.grading import get

__all__ = ["check", "SimCheck", "summary", "JUDGE", "JUDGES", "REPLICATES", "simulate_protocol"]

REPLICATES = 20
"""Simulated replicates per check (each with its own seed: other latents)."""
JUDGES = ("confidence", "random")
JUDGE = "random"
"""How a :class:`~pear.store.readers.protocols.Drop`'s judge keeps agents (see the module
docstring)."""


@dataclass(frozen=True)
class SimCheck:
    """The outcome of :func:`check`."""

    run: str
    """The run directory: relative to the checkout when inside it (an import in
    ``build/imported``), else as given (:func:`pear.paths.shown` with ``elide=False``)."""
    population: Population
    setting: dict[str, Any]
    """What was simulated: ``kind`` (``protocol`` or ``engine``), the protocol or debate
    config, debates, replicates, seed, judge, the matched round-0 accuracy and skill_mean."""
    statistics: list[dict[str, Any]]
    """One entry per statistic of :data:`pear.populations.debate_statistics.STATISTICS`, in its
    order:
    ``statistic``, ``real``, ``lo``, ``hi`` (95% bootstrap over debates), ``debates`` (real
    debates that define it), ``simulated`` (mean over replicates), ``inside``; None where the
    run or the simulation does not define it."""
    real: pd.DataFrame
    """:func:`pear.populations.debate_statistics.summarize` of the real debates."""
    simulated: pd.DataFrame
    """Per statistic: ``value`` (mean over replicates), ``low``/``high`` (2.5% and 97.5% of
    the replicates' values), ``n`` (replicates that define it)."""
    real_curve: pd.DataFrame
    simulated_curve: pd.DataFrame
    """:func:`pear.populations.debate_statistics.round_curve` of the real and of every simulated
    debate
    (up to the real run's longest debate)."""
    per_debate: pd.DataFrame = field(repr=False)
    """:func:`pear.populations.debate_statistics.per_debate` of the real debates."""
    simulated_agent_rounds: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    """Every simulated agent's answer (``debate, agent, round, correct, canonical``; the
    replicates' debates numbered one after another)."""
    replicate_values: dict[str, list[float]] = field(repr=False, default_factory=dict)
    """Per statistic, each replicate's value (NaN where a replicate does not define it)."""

    JSON_KEYS = ("statistic", "real", "lo", "hi", "debates", "simulated", "inside",
                 "predictive")

    def to_json(self) -> dict[str, Any]:
        """``{"run", "population": {"name", "fingerprint"}, "setting", "statistics"}``."""
        return {"run": self.run, "population": self.population.manifest(),
                "setting": self.setting, "statistics": self.statistics}

    def outside(self) -> list[tuple[str, str]]:
        """The statistics whose simulated value falls outside the real interval, each with
        its direction: ``+`` (simulated above the interval) or ``-`` (below)."""
        return [(s["statistic"], "+" if s["simulated"] > s["hi"] else "-")
                for s in self.statistics if s["inside"] is False]

    def table(self) -> str:
        """A readable table: statistic, real [lo, hi], debates, simulated, inside."""
        def num(x: Any) -> str:
            return "n/a" if x is None else f"{x:.3f}"
        rows = [("statistic", "real [95% CI]", "debates", "simulated", "inside",
                 "predictive 95%" if self.setting.get("draws") else "replicates 95%")]
        for s in self.statistics:
            real = "n/a" if s["real"] is None else \
                f"{num(s['real'])} [{num(s['lo'])}, {num(s['hi'])}]"
            pred = "n/a" if s["predictive"] is None else \
                f"[{num(s['predictive'][0])}, {num(s['predictive'][1])}]"
            rows.append((s["statistic"], real, str(s["debates"]), num(s["simulated"]),
                         {True: "yes", False: "NO", None: "n/a"}[s["inside"]], pred))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        inside = [s["inside"] for s in self.statistics if s["inside"] is not None]
        st = self.setting
        head = (f"sim-check of {self.run}: population {self.population.name} "
                f"({self.population.fingerprint[:12]}), {st['replicates']} replicates, "
                f"{st['debates']} debates, {st['kind']} setting"
                + (f" ({st['protocol']['name']})" if st["kind"] == "protocol" else "")
                + (f"; each replicate a draw of the twin's effects ({st['draws']} draws)"
                   if st.get("draws") else ""))
        return "\n".join([head, *lines, f"{sum(inside)} of {len(inside)} simulated values "
                          "inside the real 95% interval"])


def summary(checks: Sequence[SimCheck]) -> str:
    """One row per check (run, debates, statistics inside / defined, those outside with their
    direction: ``+`` simulated above the real interval, ``-`` below), then the total and,
    per statistic that falls outside anywhere, in how many runs and which way.

    >>> summary([])
    'no runs'
    """
    if not checks:
        return "no runs"
    rows = [("run", "debates", "inside", "outside (+ simulated above, - below)")]
    total_in = total_defined = 0
    per_stat: dict[str, Counter] = defaultdict(Counter)
    for c in checks:
        defined = [s for s in c.statistics if s["inside"] is not None]
        inside = sum(bool(s["inside"]) for s in defined)
        total_in, total_defined = total_in + inside, total_defined + len(defined)
        out = c.outside()
        for stat, sign in out:
            per_stat[stat][sign] += 1
        rows.append((c.run, str(c.setting["debates"]), f"{inside}/{len(defined)}",
                     " ".join(f"{stat}{sign}" for stat, sign in out) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    pops = sorted({f"{c.population.name} ({c.population.fingerprint[:12]})" for c in checks})
    lines.insert(0, f"sim-check summary: population {', '.join(pops)}, {len(checks)} runs")
    lines.append(f"total: {total_in} of {total_defined} statistics inside the real 95% "
                 f"interval over {len(checks)} runs")
    for stat in debate_statistics.STATISTICS:
        if per_stat.get(stat):
            n = per_stat[stat]
            lines.append(f"  {stat}: outside in {sum(n.values())} runs "
                         f"({n['+']} simulated above, {n['-']} below)")
    return "\n".join(lines)


def check(run_dir: str | os.PathLike[str], population: str | os.PathLike[str] | Population
          = "grounded", replicates: int = REPLICATES, seed: int = 0, *,
          records: Iterable[Mapping[str, Any]] | None = None, n_resamples: int = 2000,
          judge: str = JUDGE, draws: Sequence[Population] | None = None) -> SimCheck:
    """The population ``population`` (a shipped name, a file or a :class:`Population`) held
    against the run ``run_dir`` in its setting (see the module docstring): ``replicates``
    simulations, seeds derived from ``seed`` (also the bootstrap's).  ``records``: the run's
    debates to use (default: all of them; e.g. one subject of an import).  Bad input (not a
    run, a run with one agent per debate, an unknown population, no replicates) is one
    ValueError naming the bad value.  ``draws``: one population per replicate (replicate k
    simulates ``draws[k]``, e.g. :func:`pear.populations.twin.draws` of ``population``), so
    that the replicates' spread is a predictive interval."""
    run_dir = Path(run_dir)
    man = manifest_io.read(run_dir) if run_dir.is_dir() else None
    if man is None:
        raise ValueError(f"not a run directory: {str(run_dir)!r} (no manifest.json)")
    replicates = whole_number(replicates, "replicates", 1, fix="an integer >= 1")
    if judge not in JUDGES:
        raise ValueError(f"invalid judge {judge!r}: one of {', '.join(JUDGES)}")
    pop = load_population(population)
    if draws is not None and len(draws) != replicates:
        raise ValueError(f"invalid draws: {len(draws)} populations for {replicates} replicates")
    pops = list(draws) if draws is not None else [pop] * replicates
    recs = list(read_records(run_dir) if records is None else records)
    if not recs:
        raise ValueError(f"run {str(run_dir)!r} holds no debates")
    if max(int(r["n_agents"]) for r in recs) < 2:
        raise ValueError(f"run {str(run_dir)!r} has one agent per debate: nothing to simulate "
                         "of a debate")
    view = from_records(recs)
    per = debate_statistics.per_debate(view.debates, view.agent_rounds, view.rounds)
    real = debate_statistics.summarize(per, rng=np.random.default_rng(seed), n_resamples=n_resamples)
    horizon = int(view.debates["rounds"].max())
    real_curve = debate_statistics.round_curve(view.debates, view.agent_rounds, view.rounds, horizon)

    imported = man.get("imported")
    frames: list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = []
    skills: list[float] = []
    targets = _targets(view.debates, per)
    if imported:
        if not imported.get("protocol"):
            raise ValueError(f"run {str(run_dir)!r} was imported without its source's protocol "
                             "(an older import): import it again")
        proto = Protocol.from_dict(imported["protocol"])
        for k in range(replicates):
            f, s = _simulate_imported(recs, proto, pops[k], _replicate_seed(seed, k), targets,
                                      judge, imported.get("grading") or "")
            frames.append(f)
            skills += s
        setting: dict[str, Any] = {"kind": "protocol", "protocol": proto.to_dict(),
                                   "judge": judge if proto.drop else None,
                                   "grading": imported.get("grading")}
    else:
        exp = _experiment(man, run_dir)
        for k in range(replicates):
            sim_recs, s = _simulate_engine(recs, exp, pops[k], _replicate_seed(seed, k),
                                           targets)
            v = from_records(sim_recs)
            frames.append((v.debates, v.agent_rounds, v.rounds))
            skills += s
        setting = {"kind": "engine", "debate": dataclasses.asdict(exp.debate),
                   "methods": sorted({r["method"] for r in recs})}
    setting.update({"debates": len(recs), "replicates": replicates, "seed": seed,
                    "draws": replicates if draws is not None else 0,
                    "round0_accuracy": {f"{m}/{d}": t for (m, d), t in targets.items()},
                    "skill_mean": float(np.mean(skills))})
    sim_per = [debate_statistics.per_debate(*f) for f in frames]
    values = _replicate_values(sim_per)
    sim = _replicate_summary(values)
    deb, ar, ro = _stack(frames)
    sim_curve = debate_statistics.round_curve(deb, ar, ro, horizon)
    return SimCheck(shown(run_dir, elide=False), pop, setting, _entries(real, sim), real, sim,
                    real_curve, sim_curve, per, ar,
                    {k: [float(x) for x in v] for k, v in values.items()})


# ----------------------------------------------------------------- statistics

def _finite(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _replicate_values(pers: Sequence[pd.DataFrame]) -> dict[str, np.ndarray]:
    """Per statistic, each replicate's value (its mean over the debates that define it)."""
    return {stat: np.array([np.nanmean(p[stat].to_numpy(float)) if np.isfinite(
        p[stat].to_numpy(float)).any() else np.nan for p in pers])
        for stat in debate_statistics.STATISTICS}


def _replicate_summary(values: Mapping[str, np.ndarray]) -> pd.DataFrame:
    rows = []
    for stat, label in debate_statistics.STATISTICS.items():
        vals = values[stat]
        ok = vals[np.isfinite(vals)]
        lo, hi = (np.quantile(ok, [0.025, 0.975]) if ok.size else (np.nan, np.nan))
        rows.append({"statistic": stat, "label": label,
                     "value": float(ok.mean()) if ok.size else math.nan,
                     "low": float(lo), "high": float(hi), "n": int(ok.size)})
    return pd.DataFrame(rows)


def _entries(real: pd.DataFrame, sim: pd.DataFrame) -> list[dict[str, Any]]:
    s = sim.set_index("statistic")
    out = []
    for _, r in real.iterrows():
        value, lo, hi = _finite(r["value"]), _finite(r["low"]), _finite(r["high"])
        simulated = _finite(s.loc[r["statistic"], "value"])
        inside = None if None in (lo, hi, simulated) else bool(lo <= simulated <= hi)
        plo, phi = _finite(s.loc[r["statistic"], "low"]), _finite(s.loc[r["statistic"], "high"])
        out.append({"statistic": r["statistic"], "real": value, "lo": lo, "hi": hi,
                    "debates": int(r["n"]), "simulated": simulated, "inside": inside,
                    "predictive": None if None in (plo, phi) else [plo, phi]})
    return out


def _stack(frames: Sequence[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]]
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The replicates' frames as one run (debate keys made distinct)."""
    parts: list[list[pd.DataFrame]] = [[], [], []]
    offset = 0
    for deb, ar, ro in frames:
        for i, t in enumerate((deb, ar, ro)):
            parts[i].append(t[[c for c in t.columns if c in _COLUMNS[i]]].assign(
                debate=t["debate"].to_numpy(np.int64) + offset))
        offset += int(deb["debate"].max()) + 1
    deb, ar, ro = (pd.concat(p, ignore_index=True) for p in parts)
    return deb, ar, ro


_COLUMNS = (("debate", "rounds", "n_agents", "correct"),
            ("debate", "agent", "round", "correct", "canonical"),
            ("debate", "round", "vote_correct"))


# ----------------------------------------------------------------- the setting

def _replicate_seed(seed: int, k: int) -> int:
    return int_seed("sim-check", seed, k, nbytes=4, bits=31)


def _targets(debates: pd.DataFrame, per: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(model, dataset) -> the run's round-0 agent accuracy (``agent_acc_first`` of
    :func:`pear.populations.debate_statistics.per_debate`, averaged over the group's debates)."""
    acc = per["agent_acc_first"].groupby([debates["model"].astype(str).to_numpy(),
                                          debates["dataset"].astype(str).to_numpy()]).mean()
    return {(str(m), str(d)): float(v) for (m, d), v in acc.items()}


def _clip(rate: float, n: int) -> float:
    """A target rate inside (0, 1) (a run whose agents are all right or all wrong in round
    0: half an agent from the end)."""
    eps = 0.5 / max(n, 1)
    return min(max(rate, eps), 1 - eps)


def _matched(pop: Population, key: Mapping[tuple[str, str], str], dataset: str,
             agents: Sequence[tuple[str, int]], weights: Sequence[float], rate: float,
             seed: int, n_agents: int) -> Any:
    base = SimulatedBackend(key, seed=seed, n_agents=n_agents, population=pop)
    return base.matched(dataset, agents, _clip(rate, len(agents)), weights)


def n_choices(rec: Mapping[str, Any], grading: str) -> int:
    """The options of a question with a closed answer space (0: open-ended): for letter
    grading those its import recorded (``imported.extra.options``: the letters its text
    lists), else our benchmark's, else the letters its record shows (at least A-D, as
    ``pear import`` assumes); 2 for a yes/no question."""
    if grading == "yesno":
        return 2
    if grading != "letters":
        return 0
    listed = ((rec.get("imported") or {}).get("extra") or {}).get("options")
    if listed:
        return int(listed)
    if rec["dataset"] in DATASETS:
        try:
            return len(get_question(rec["dataset"], rec["question_id"]).choices or ()) or 4
        except ValueError:
            pass
    seen = [str(rec.get("gold") or "")] + [a.get("canonical") or "" for rd in rec["rounds_data"]
                                           for a in rd["agents"]]
    top = max((ord(s) - 64 for s in seen if len(s) == 1 and "A" <= s <= "Z"), default=0)
    return max(4, top)


YES_NO = {"yes": "A", "no": "B"}
"""A yes/no question simulated as two options (its answers as the letters A and B)."""


def _sim_answer(answer: str, grading: str) -> str:
    """An answer of the record as the simulation writes it (a yes/no answer as its letter)."""
    return YES_NO.get(answer, answer) if grading == "yesno" else answer


def _simulate_imported(recs: Sequence[Mapping[str, Any]], proto: Protocol, pop: Population,
                       seed: int, targets: Mapping[tuple[str, str], float], judge: str,
                       grading: str) -> tuple[tuple[pd.DataFrame, ...], list[float]]:
    """One replicate of an imported run's debates under its source's protocol: the frames
    :func:`pear.populations.debate_statistics.per_debate` reads, and the matched skill_mean per
    group."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(recs):
        groups[(str(r["model"]), str(r["dataset"]))].append(i)
    rows_d: list[tuple] = []
    rows_a: list[tuple] = []
    rows_r: list[tuple] = []
    skills = []
    for (model, dataset), idx in groups.items():
        key = {(dataset, str(recs[i]["question_id"])): _sim_answer(str(recs[i]["gold"]), grading)
               for i in idx}
        agents = [(str(recs[i]["question_id"]), a) for i in idx for a in range(proto.agents)]
        weights = [1.0 / proto.agents] * len(agents)
        be = _matched(pop, key, dataset, agents, weights, targets[(model, dataset)], seed,
                      proto.agents)
        skills.append(float(be.params.skill_mean))
        for i in idx:
            rec = recs[i]
            meta = {"dataset": dataset, "question_id": str(rec["question_id"]),
                    "n_choices": n_choices(rec, grading)}
            rng = np.random.default_rng([seed, i])
            rounds = simulate_protocol(be, proto, meta, rng, judge)
            gold = be.question(meta).gold
            votes = []
            for r, agents_r in enumerate(rounds):
                answers = [ans for _, ans, _ in agents_r]
                top = vote(answers, rng)
                votes.append(top == gold)
                rows_r.append((i, r, top == gold))
                rows_a += [(i, a, r, ok, ans) for a, ans, ok in agents_r]
            rows_d.append((i, len(rounds) - 1, len(rounds[0]), votes[-1]))
    deb = pd.DataFrame(rows_d, columns=list(_COLUMNS[0]))
    ar = pd.DataFrame(rows_a, columns=list(_COLUMNS[1]))
    ro = pd.DataFrame(rows_r, columns=list(_COLUMNS[2]))
    return (deb, ar, ro), skills


def simulate_protocol(backend: Any, proto: Protocol, meta: Mapping[str, Any],
                      rng: np.random.Generator, judge: str = JUDGE
                      ) -> list[list[tuple[int, str, bool]]]:
    """One debate of ``backend``'s population (a
    :class:`~pear.sim.backend.SimulatedBackend`) on the question of ``meta``
    (``dataset``, ``question_id``, ``n_choices``) under ``proto``: per recorded round, the
    recorded agents' ``(agent, answer, correct)`` in answer order (agents that left or had
    not answered when the debate stopped are not recorded, as in the source's records)."""
    q = backend.question(meta)
    active = list(range(proto.agents))
    prev: dict[int, tuple[str, int]] = {}
    history: list[dict[int, tuple[str, int]]] = []
    for r in range(proto.rounds):
        if proto.drop is not None and r == proto.drop.before_round:
            active = _judge(active, prev, proto.drop.keep, rng, judge)
            if proto.stop is not None and len({prev[a][0] for a in active}) == 1:
                break  # the kept agents agree: the debate ends here
        this: dict[int, tuple[str, int]] = {}
        stopped = False
        for i in active:
            m = {**meta, "phase": "initial" if r == 0 else "revision", "round": r, "agent": i,
                 "missed_quorum": proto.stop is not None}
            if r == 0:
                u = rng.random(3)
                answer, ok = backend.solve(q, m, u[:2])
                this[i] = (answer, backend.confidence(ok, m, u[2]))
            else:
                own = {"answer": prev[i][0], "canonical": prev[i][0], "confidence": prev[i][1]}
                peers = prev if proto.hears == "all_answered" else active  # dropped ones too
                heard = [(j, this[j] if proto.order == "sequential" and j in this else prev[j])
                         for j in peers if j != i]
                m.update(own=own, critiques=[
                    {"source": j, "source_answer": a, "source_confidence": c,
                     "fresh": proto.order == "sequential" and j in this}
                    for j, (a, c) in heard])
                if backend.revision is not None:
                    this[i] = backend.revise_choice(q, m, rng.random(3))
                else:
                    accepted = [c for c in m["critiques"]
                                if backend.accept(own, c, q.gold, rng.random())]
                    this[i] = backend.revise(q, m, accepted, rng.random(5))
            if proto.stop is not None:
                top, agreeing = Counter(a for a, _ in this.values()).most_common(1)[0]
                miss = proto.stop.missed(top == q.gold)
                if proto.stop.reached(answered=len(this), agreeing=agreeing) and not (
                        miss and rng.random() < miss):
                    stopped = True  # (a source whose check misses some quorums misses as often)
                    break
        history.append(this)
        prev = {**prev, **this}
        if stopped:
            break
    kept = list(history[-1]) if len(history[-1]) < len(active) else active
    return [[(a, rd[a][0], rd[a][0] == q.gold) for a in kept] for rd in history]


def _judge(active: Sequence[int], latest: Mapping[int, tuple[str, int]], keep: int,
           rng: np.random.Generator, judge: str) -> list[int]:
    """The agents a drop's judge keeps (in their order): the ``keep`` whose latest answers
    carry the highest confidence, ties at random (``confidence``), or ``keep`` at random."""
    tie = rng.random(len(active))
    if judge == "random":
        order = np.argsort(tie)
    else:
        order = np.lexsort((tie, [-latest[a][1] for a in active]))
    chosen = {active[int(j)] for j in order[:keep]}
    return [a for a in active if a in chosen]


def _experiment(man: Mapping[str, Any], run_dir: Path) -> Any:
    if not man.get("experiments"):
        raise ValueError(f"not a run directory: {str(run_dir)!r} (its manifest records no "
                         "experiment and no import)")
    return parent_experiment(run_dir)[1]


def _simulate_engine(recs: Sequence[Mapping[str, Any]], exp: Any, pop: Population, seed: int,
                     targets: Mapping[tuple[str, str], float]
                     ) -> tuple[list[dict[str, Any]], list[float]]:
    """One replicate of one of our runs: its jobs through PEAR's engine with the run's
    debate config and router, the population's agents matched per model and dataset."""
    questions = {(q.dataset, q.id): q for q, _ in grid_questions(exp)}
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in recs:
        groups[(str(r["model"]), str(r["dataset"]))].append(r)
    out: list[dict[str, Any]] = []
    skills = []
    n = exp.debate.n_agents
    for (model, dataset), rs in groups.items():
        jobs = []
        for r in rs:
            q = questions.get((dataset, r["question_id"]))
            if q is None:
                raise ValueError(f"question {r['question_id']!r} of {dataset} is not in the "
                                 "run's grid")
            jobs.append(Job(q, method(r["method"], exp.router), int(r["seed"])))
        key = {(dataset, j.question.id): j.question.gold for j in jobs}
        agents = [(j.question.id, a) for j, r in zip(jobs, rs) for a in range(r["n_agents"])]
        weights = [1.0 / r["n_agents"] for r in rs for _ in range(r["n_agents"])]
        be = _matched(pop, key, dataset, agents, weights, targets[(model, dataset)], seed, n)
        skills.append(float(be.params.skill_mean))
        out += list(Engine(be, exp.debate, task_for=get).run(jobs))
    return out, skills
