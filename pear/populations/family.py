"""The family of real twins (``--population family``): one twin
(:func:`pear.populations.twin.fit_twin`) of each licensed run, shipped in
``data/populations/family/`` with the prior they are pooled with (``prior.json``).

Members, each named after its source (none made up to widen the range): DyLAN's gpt-3.5 debates
(MIT licence, ``data/real-debates/``), one per MATH subject of its MATH corpus and one per team
size of its MMLU debates; and a moment-matched twin of each published model and task
(:mod:`pear.populations.published_gains`) whose figure the base with one effect reaches (within
:data:`MATCH_TOLERANCE`); and a member of each model of DebateLedger's per-model table
(:func:`pear.populations.published_collapse.match`), matched on two figures at once (collapse
with ``keep``, recovery with the pull of a right answer) where both land inside the published
intervals.  The prior's spread adds how far the matched members spread an effect (models) to
how far the licensed runs do (one model's tasks): :func:`pear.populations.twin.estimate_prior`.
:func:`check` holds every member against a run in the run's setting and gives, per statistic,
the range ``[min, max]`` of the members' simulated values.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pear.populations.simcheck import REPLICATES, SimCheck, check as simcheck
from pear.paths import write_json
from pear.populations import published_collapse, published_gains, reading, twin
from pear.sim.population import Population, load as load_population
from pear.sim.revision import subject

__all__ = ["FAMILY", "FAMILY_DIR", "Member", "members", "groups", "fit_members", "write",
           "check_shipped", "load", "Pilot", "pilot", "FamilyCheck", "check"]

FAMILY = "family"
"""The name ``--population`` takes for the whole family."""
MATCH_TOLERANCE = 0.02  # our choice: about one simulated standard error of the final vote
"""How far a published member's simulated final vote may lie from the published one."""
FAMILY_DIR = twin.PRIOR_FILE.parent
"""Where the members (``<name>.json``) and the prior (``prior.json``) are shipped."""


@dataclass(frozen=True)
class Member:
    """A member: its name, the runs it is a twin of, which of their debates, and what it
    stands for."""

    name: str
    runs: tuple[Path, ...]
    keep: Callable[[Mapping[str, Any]], bool] | None
    describes: str


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def members(math_run: str | os.PathLike[str], mmlu_runs: Sequence[str | os.PathLike[str]]
            ) -> list[Member]:
    """The members of DyLAN's MATH import ``math_run`` (one per subject) and its MMLU team
    imports ``mmlu_runs`` (one per run)."""
    math_run = Path(math_run)
    subs = sorted({s for r in reading.records([math_run]) if (s := subject(r))})
    out = [Member(f"dylan-math-{_slug(s)}", (math_run,),
                  (lambda r, s=s: subject(r) == s),
                  f"DyLAN's gpt-3.5-turbo-0301 debates on MATH, subject {s} (MIT)")
           for s in subs]
    for run in map(Path, mmlu_runs):
        team = re.sub(r"-[0-9a-f]{8}$", "", run.name)
        out.append(Member(team, (run,), None,
                          f"DyLAN's gpt-3.5-turbo-0301 debates on MMLU, {team} (MIT)"))
    return out


def groups(ms: Sequence[Member]) -> dict[str, tuple[Sequence[Path], Any]]:
    """The members as :func:`pear.populations.twin.estimate_prior`'s groups."""
    return {m.name: (m.runs, m.keep) for m in ms}


def published_members() -> tuple[list[Population], list[str]]:
    """The published members that match their figure, and a line per row that does not."""
    kept, left = [], []
    for p in published_gains.members():
        d = p.info["diagnostics"]
        row = p.info["fitted_on"][0]
        if abs(d["simulated_debate"] - row["debate"]) <= MATCH_TOLERANCE:
            kept.append(p)
        else:
            left.append(f"{p.name}: the base with follow_right "
                        f"{d['effects']['follow_right']['estimate']:+.2f} ends at "
                        f"{d['simulated_debate']:.3f}, published {row['debate']:.3f}: left out")
    return kept, left


def fit_members(ms: Sequence[Member], prior: twin.Prior | None = None
                ) -> tuple[list[Population], twin.Prior, list[str]]:
    """Every member (each licensed run's twin pooled with ``prior``, default: estimated on the
    licensed runs and the published members' matched effects; then the published members),
    the prior, and the published rows left out."""
    pub, left = published_members()
    ledger, left_ledger = published_collapse.members()
    prior = prior or twin.estimate_prior(groups(ms), matched={  # the effects each matched,
        p.name: {k: p.info["diagnostics"]["effects"][k]["estimate"] for k in keys}  # 0 too
        for ps, keys in ((pub, published_gains.MATCHED), (ledger, published_collapse.MATCHED))
        for p in ps})
    twins = [twin.fit_twin(m.runs, name=m.name, prior=prior, keep=m.keep,
                           describe=m.describes).population for m in ms]
    return twins + pub + ledger, prior, left + left_ledger


def write(ms: Sequence[Member], where: Path = FAMILY_DIR) -> list[Path]:
    """Estimate the prior, fit every member and write them all (``where``: ``prior.json`` and
    ``<member>.json``; other member files there are removed)."""
    pops, prior, left = fit_members(ms)
    where.mkdir(parents=True, exist_ok=True)
    for old in where.glob("*.json"):
        if old.name != "prior.json" and old.stem not in {p.name for p in pops}:
            old.unlink()
    body = prior.to_json()
    body["published_left_out"] = left
    out = [write_json(where / "prior.json", body, newline=True)]
    for p in pops:
        p.info.setdefault("diagnostics", {})["du_protocol"] = du_profile_of(p)
        out.append(p.write(where / f"{p.name}.json"))
    return out


def du_profile_of(p: Population) -> dict[str, float]:
    """A member's change rate, W2R, R2W and vote gain under Du et al.'s protocol
    (:func:`pear.populations.published_gains.du_profile`), its agents as strong as in its
    source (a twin or a DebateLedger member: the mean round-0 accuracy its file records; a
    published member: the published single agent) on its source's answer space."""
    d = p.info.get("diagnostics") or {}
    row = next((r for r in published_gains.ROWS if r.name == p.name), None)
    if row is not None:
        single, options = row.single, row.options
    else:
        accs = list((d.get("round0_accuracy") or {}).values()) or [0.5]
        single, options = sum(accs) / len(accs), int(d.get("options") or 0)
    return published_gains.du_profile(p, single, options)


def load(where: Path = FAMILY_DIR) -> list[Population]:
    """The shipped members, by name."""
    files = sorted(p for p in Path(where).glob("*.json") if p.name != "prior.json")
    if not files:
        raise ValueError(f"no family members in {str(where)!r} (pear population family write)")
    return [load_population(p) for p in files]


def check_shipped(ms: Sequence[Member], where: Path = FAMILY_DIR) -> list[str]:
    """What differs between the shipped family and one fitted now (empty: the shipped files
    are what the data and code produce)."""
    pops, prior, _ = fit_members(ms)
    problems = []
    shipped_prior = json.loads((where / "prior.json").read_text()) \
        if (where / "prior.json").is_file() else None
    if shipped_prior is None or shipped_prior.get("sd") != prior.to_json()["sd"]:
        problems.append(f"prior.json: sd {None if shipped_prior is None else shipped_prior['sd']}"
                        f" shipped, {prior.to_json()['sd']} now")
    shipped = {p.name: p for p in load(where)}
    for p in pops:
        old = shipped.pop(p.name, None)
        if old is None:
            problems.append(f"{p.name}: not shipped")
        elif old.fingerprint != p.fingerprint:
            problems.append(f"{p.name}: fingerprint {old.fingerprint[:12]} shipped, "
                            f"{p.fingerprint[:12]} now")
    problems += [f"{n}: shipped but no longer a member" for n in shipped]
    return problems


UNLIKE_P = 0.01  # our choice: the run's own twin fits it better than any member at this level
"""A pilot is unlike every member when its own twin's likelihood beats the best member's by
more than the chi-square quantile ``1 - UNLIKE_P`` with one degree of freedom per effect."""


@dataclass(frozen=True)
class Pilot:
    """How well each member explains a pilot run's revision choices: ``loglik`` per member
    (:func:`pear.populations.twin.loglik`), ``weights`` (each member's posterior weight under a
    uniform prior over members: proportional to its likelihood), the pilot's ``choices`` and
    ``debates``, its own twin's log-likelihood (``twin_loglik``) and whether the pilot is
    ``unlike`` every member (its twin beats the best member by more than the chi-square
    bound of :data:`UNLIKE_P`)."""

    loglik: dict[str, float]
    weights: dict[str, float]
    choices: int
    debates: int
    twin_loglik: float
    unlike: bool

    @property
    def effective_members(self) -> float:
        """``1 / sum(w**2)``: how many members the weights spread over (1: one member)."""
        return float(1.0 / sum(w * w for w in self.weights.values()))

    def to_json(self) -> dict[str, Any]:
        return {"loglik": {k: round(v, 3) for k, v in self.loglik.items()},
                "weights": {k: round(v, 4) for k, v in self.weights.items()},
                "choices": self.choices, "debates": self.debates,
                "twin_loglik": round(self.twin_loglik, 3), "unlike": self.unlike,
                "effective_members": round(self.effective_members, 2)}


def pilot(run: str | os.PathLike[str], fam: Sequence[Population],
          records: Sequence[Mapping[str, Any]] | None = None) -> Pilot:
    """Each member's likelihood on ``run``'s revision choices (only ``records``' debates when
    given) and the weights it gives the members."""
    from scipy.stats import chi2  # heavy: only a weighted family check loads it
    ids = None if records is None else {str(r["debate_id"]) for r in records}
    tr, parts, _ = twin.design([run], None if ids is None else
                               (lambda r: str(r["debate_id"]) in ids))
    ll = {p.name: twin.loglik(tr, p.revision) for p in fam if p.revision is not None}
    top = max(ll.values())
    w = {k: float(np.exp(v - top)) for k, v in ll.items()}
    total = sum(w.values())
    prior = twin.load_prior()
    own = twin.fit_effects(tr, load_population(prior.base).revision, prior.sd)
    bound = float(chi2.ppf(1 - UNLIKE_P, len(twin.EFFECTS)))
    return Pilot(ll, {k: v / total for k, v in w.items()}, tr.n_choices,
                 sum(map(len, parts)), own.loglik, bool(2 * (own.loglik - top) > bound))


def _weighted_quantiles(values: Sequence[float], weights: Sequence[float],
                        qs: Sequence[float]) -> list[float]:
    """Quantiles ``qs`` of ``values`` drawn with probabilities ``weights``.

    >>> _weighted_quantiles([1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [0.025, 0.975])
    [2.0, 2.0]
    """
    v, w = np.asarray(values, float), np.asarray(weights, float)
    ok = np.isfinite(v) & (w > 0)
    v, w = v[ok], w[ok]
    order = np.argsort(v)
    v, c = v[order], np.cumsum(w[order]) / w.sum()
    return [float(v[min(int(np.searchsorted(c, q)), len(v) - 1)]) for q in qs]


@dataclass(frozen=True)
class FamilyCheck:
    """Every member held against one run (:attr:`checks`, in member order) and, per statistic,
    the range of the members' simulated values; with a :attr:`pilot`, the forecast of the
    members weighted by how well each explains the run."""

    run: str
    checks: list[SimCheck]
    pilot: Pilot | None = None

    @property
    def statistics(self) -> list[dict[str, Any]]:
        """The run's statistics (real, lo, hi, debates) with ``range`` ([min, max] of the
        members' simulated values, None where no member defines it), ``meets`` (the range
        meets the real interval) and ``members_inside`` (how many members lie inside)."""
        out = []
        for k, first in enumerate(self.checks[0].statistics):
            sims = [c.statistics[k]["simulated"] for c in self.checks
                    if c.statistics[k]["simulated"] is not None]
            entry = {key: first[key] for key in ("statistic", "real", "lo", "hi", "debates")}
            rng = [min(sims), max(sims)] if sims else None
            entry["range"] = rng
            entry["meets"] = None if rng is None or first["lo"] is None else \
                bool(rng[0] <= first["hi"] and rng[1] >= first["lo"])
            entry["members_inside"] = sum(bool(c.statistics[k]["inside"]) for c in self.checks)
            entry["forecast"] = entry["forecast_interval"] = None
            if self.pilot is not None:  # the members' replicates, each member at its weight
                vals, ws = [], []
                for c in self.checks:
                    reps = c.replicate_values.get(first["statistic"], [])
                    w = self.pilot.weights.get(c.population.name, 0.0)
                    vals += reps
                    ws += [w / max(len(reps), 1)] * len(reps)
                good = [(v, w) for v, w in zip(vals, ws) if v == v and w > 0]
                if good:
                    tot = sum(w for _, w in good)
                    entry["forecast"] = sum(v * w for v, w in good) / tot
                    entry["forecast_interval"] = _weighted_quantiles(
                        [v for v, _ in good], [w for _, w in good], [0.025, 0.975])
            out.append(entry)
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"run", "population": "family", "members": [each member's check], "statistics"}``
        (each entry of ``statistics`` with its ``range``)."""
        return {"run": self.run, "population": FAMILY,
                "members": [{**c.to_json(), "describes": c.population.info.get("describes")}
                            for c in self.checks],
                "statistics": self.statistics,
                "pilot": None if self.pilot is None else self.pilot.to_json()}

    def table(self) -> str:
        """Each member's count inside, then per statistic the real interval and the family's
        range."""
        def num(x: Any) -> str:
            return "n/a" if x is None else f"{x:.3f}"
        lines = [f"sim-check of {self.run}: the family ({len(self.checks)} members)"]
        for c in self.checks:
            defined = [s for s in c.statistics if s["inside"] is not None]
            lines.append(f"  {c.population.name:<36} {sum(bool(s['inside']) for s in defined)}"
                         f"/{len(defined)} inside")
        rows = [("statistic", "real [95% CI]", "family range", "meets", "members inside")
                + (("weighted forecast [95%]",) if self.pilot else ())]
        for s in self.statistics:
            real = "n/a" if s["real"] is None else \
                f"{num(s['real'])} [{num(s['lo'])}, {num(s['hi'])}]"
            rng = "n/a" if s["range"] is None else f"[{num(s['range'][0])}, {num(s['range'][1])}]"
            fc = () if not self.pilot else ("n/a" if s["forecast"] is None else
                                            f"{num(s['forecast'])} [{num(s['forecast_interval'][0])}"
                                            f", {num(s['forecast_interval'][1])}]",)
            rows.append((s["statistic"], real, rng,
                         {True: "yes", False: "NO", None: "n/a"}[s["meets"]],
                         f"{s['members_inside']}/{len(self.checks)}") + fc)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        body.insert(1, "  ".join("-" * w for w in widths))
        met = [s["meets"] for s in self.statistics if s["meets"] is not None]
        tail = [f"the family's range meets the real interval of {sum(met)} of {len(met)} "
                "statistics"]
        if self.pilot:
            pl = self.pilot
            best = sorted(pl.weights.items(), key=lambda kv: -kv[1])[:3]
            tail.append(f"weighted by each member's likelihood on the run's {pl.choices} "
                        f"revision choices ({pl.debates} debates): about "
                        f"{pl.effective_members:.1f} members carry the forecast ("
                        + ", ".join(f"{k} {w:.2f}" for k, w in best) + ")")
            if pl.unlike:
                tail.append("the run is unlike every member (its own twin explains it far "
                            "better than the best member): the weighted forecast leans on the "
                            "nearest member and the family's range is an extrapolation; "
                            "trust the run's own twin (pear population fit) instead")
            if pl.debates < twin.SMALL_PILOT:
                tail.append(f"a pilot of {pl.debates} debates (under {twin.SMALL_PILOT}) says "
                            "little: the weights are close to the members' prior")
        return "\n".join(lines + body + tail)


def check(run: str | os.PathLike[str], family: Sequence[Population] | None = None,
          replicates: int = REPLICATES, seed: int = 0,
          records: Sequence[Mapping[str, Any]] | None = None,
          weighted: bool = False) -> FamilyCheck:
    """Every member of ``family`` (default: the shipped one) held against ``run``
    (:func:`pear.populations.simcheck.check`, the same seed for each); ``weighted``: also
    the forecast of the members weighted by their likelihood on the run (:func:`pilot`)."""
    fam = list(family) if family is not None else load()
    return FamilyCheck(str(run), [simcheck(run, p, replicates, seed, records=records)
                                  for p in fam],
                       pilot(run, fam, records) if weighted else None)
