"""The family of real twins (``--population family``): one twin
(:func:`pear.populations.twin.fit_twin`) of each licensed run, shipped in
``data/populations/family/`` with the prior they are pooled with (``prior.json``).

Members, each named after its source (none made up to widen the range): DyLAN's gpt-3.5 debates
(MIT licence, ``data/real-debates/``), one per MATH subject of its MATH corpus and one per team
size of its MMLU debates; and a moment-matched twin of each published model and task
(:mod:`pear.populations.published_gains`) whose figure the base with one effect reaches (within
:data:`MATCH_TOLERANCE`).  The prior's spread of ``follow_right`` counts the published members'
values too: the licensed debates are of one model, the published figures of several.  :func:`check` holds every member against a run in the run's setting
and gives, per statistic, the range ``[min, max]`` of the members' simulated values.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pear.populations.simcheck import REPLICATES, SimCheck, check as simcheck
from pear.paths import write_json
from pear.populations import published_gains, reading, twin
from pear.sim.population import Population, load as load_population
from pear.sim.revision import subject

__all__ = ["FAMILY", "FAMILY_DIR", "Member", "members", "groups", "fit_members", "write",
           "check_shipped", "load", "FamilyCheck", "check"]

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
    prior = prior or twin.estimate_prior(groups(ms), matched={  # the effect each matched
        p.name: {k: v["estimate"] for k, v in p.info["diagnostics"]["effects"].items()
                 if v["se"] is None and v["estimate"]} for p in pub})
    twins = [twin.fit_twin(m.runs, name=m.name, prior=prior, keep=m.keep,
                           describe=m.describes).population for m in ms]
    return twins + pub, prior, left


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
    out += [p.write(where / f"{p.name}.json") for p in pops]
    return out


def load(where: Path = FAMILY_DIR) -> list[Population]:
    """The shipped members, by name."""
    files = sorted(p for p in Path(where).glob("*.json") if p.name != "prior.json")
    if not files:
        raise ValueError(f"no family members in {str(where)!r} (pear family write)")
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


@dataclass(frozen=True)
class FamilyCheck:
    """Every member held against one run (:attr:`checks`, in member order) and, per statistic,
    the range of the members' simulated values."""

    run: str
    checks: list[SimCheck]

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
            out.append(entry)
        return out

    def to_json(self) -> dict[str, Any]:
        """``{"run", "population": "family", "members": [each member's check], "statistics"}``
        (each entry of ``statistics`` with its ``range``)."""
        return {"run": self.run, "population": FAMILY,
                "members": [{**c.to_json(), "describes": c.population.info.get("describes")}
                            for c in self.checks],
                "statistics": self.statistics}

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
        rows = [("statistic", "real [95% CI]", "family range", "meets", "members inside")]
        for s in self.statistics:
            real = "n/a" if s["real"] is None else \
                f"{num(s['real'])} [{num(s['lo'])}, {num(s['hi'])}]"
            rng = "n/a" if s["range"] is None else f"[{num(s['range'][0])}, {num(s['range'][1])}]"
            rows.append((s["statistic"], real, rng,
                         {True: "yes", False: "NO", None: "n/a"}[s["meets"]],
                         f"{s['members_inside']}/{len(self.checks)}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        body.insert(1, "  ".join("-" * w for w in widths))
        met = [s["meets"] for s in self.statistics if s["meets"] is not None]
        return "\n".join(lines + body + [f"the family's range meets the real interval of "
                                         f"{sum(met)} of {len(met)} statistics"])


def check(run: str | os.PathLike[str], family: Sequence[Population] | None = None,
          replicates: int = REPLICATES, seed: int = 0,
          records: Sequence[Mapping[str, Any]] | None = None) -> FamilyCheck:
    """Every member of ``family`` (default: the shipped one) held against ``run``
    (:func:`pear.populations.simcheck.check`, the same seed for each)."""
    fam = list(family) if family is not None else load()
    return FamilyCheck(str(run), [simcheck(run, p, replicates, seed, records=records)
                                  for p in fam])
