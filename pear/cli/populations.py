"""Commands that fit simulated populations to recorded runs: ``pear fit`` (a twin) and
``pear family`` (the shipped family of real twins: write, check, split-half)."""
from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_fit", "add_family"]


def add_fit(sub: Any) -> None:
    f = sub.add_parser("fit", help="fit a twin population to recorded runs",
                       description="A population fitted to recorded runs (ours, imported, "
                                   "Inspect): the corpus fit (grounded) with run-level effects "
                                   "(keep, follow, follow_right, invent) pooled toward it by the "
                                   "prior the licensed runs set (data/populations/family/"
                                   "prior.json), and the runs' initial answers (strength per "
                                   "dataset, how correlated and how spread the errors are). "
                                   "Bad input (no revision round, one agent, nothing graded) "
                                   "is one line naming it (exit 2) and nothing is written.")
    f.add_argument("runs", nargs="+", metavar="RUN", help="run directories (pear run, pear "
                   "import)")
    f.add_argument("--out", required=True, metavar="FILE.json", help="the population file")
    f.add_argument("--name", default=None, help="the population's name (default: twin-<run>)")
    f.add_argument("--prior", default=None, metavar="FILE",
                   help="a prior file (default: data/populations/family/prior.json)")
    f.set_defaults(handler=_cmd_fit)


def _cmd_fit(a: argparse.Namespace) -> int:
    # start-up: only this command loads it (`pear --help` stays fast)
    from pear.populations.twin import EFFECTS, fit_twin, load_prior
    if not a.out.endswith(".json"):
        raise ValueError(f"invalid --out {a.out!r}: a population file ends in .json")
    tw = fit_twin(a.runs, name=a.name, prior=load_prior(a.prior))
    path = tw.population.write(a.out)
    d = tw.population.info["diagnostics"]
    effects = ", ".join(f"{k} {d['effects'][k]['estimate']:+.3f} "
                        f"(se {d['effects'][k]['se']:.3f})" for k in EFFECTS)
    print(f"{tw.population.name}: {d['debates']} debates, {d['choices']} choice sets, "
          f"log-likelihood {d['base_log_likelihood']:.1f} -> {d['log_likelihood']:.1f}; "
          f"{effects}; round-0 accuracy {d.get('round0_accuracy')}; {tw.seconds:.1f} s")
    print(f"wrote {path}")
    return 0


def add_family(sub: Any) -> None:
    f = sub.add_parser("family", help="the family of real twins: write, check, split-half",
                       description="The family (data/populations/family/): a twin of each "
                                   "licensed run (DyLAN's MATH subjects and MMLU teams) and the "
                                   "prior they are pooled with.")
    f.add_argument("action", choices=("list", "write", "check", "split-half"),
                   help="list: the members and their effects; write: fit and write them again "
                        "(imports DyLAN's debates first); check: fail when the shipped files "
                        "differ from a fit now; split-half: each member's twin fitted on half "
                        "its questions, checked on the other half")
    f.add_argument("--replicates", type=int, default=20, metavar="K",
                   help="split-half: simulations per check (default 20)")
    f.set_defaults(handler=_cmd_family)


def _cmd_family(a: argparse.Namespace) -> int:
    from pear.populations import family  # heavy: pandas, scipy, only for this command
    if a.action == "list":
        for p in family.load():
            d = p.info["diagnostics"]
            eff = " ".join(f"{k} {v['estimate']:+.3f}" for k, v in d["effects"].items())
            print(f"{p.name:<36} {d['debates']:>5} debates  {eff}  ({p.info['describes']})")
        return 0
    from pear.populations.grounding import corpus_run, mmlu_runs  # the licensed runs, imported
    ms = family.members(corpus_run(), mmlu_runs())
    if a.action == "write":
        for path in family.write(ms):
            print(f"wrote {path}")
        return 0
    if a.action == "check":
        problems = family.check_shipped(ms)
        for p in problems:
            print(p)
        print(f"family: {len(family.load())} members, " + ("as shipped" if not problems else
                                                f"{len(problems)} differences"))
        return 1 if problems else 0
    from pear.populations.holdout import split_half
    rows = [split_half(m.runs[0], keep=m.keep, name=m.name, replicates=a.replicates).row()
            for m in ms]
    import pandas as pd
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0
