"""The ledger's relabelling claims (issue 73): abs-relabeling-preserves-accuracy,
thm-accuracy-preservation and the introduction's positional-bias and role-sensitivity claims
judged on notebook 19's seat variants (their tables computed by its own glue,
:func:`pear.paper.relabelling.tables`), naming the test; not covered, saying so, on a build
that did not run notebook 19; and the build running the ledger after notebook 19."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pear.claims import checks, evaluate as claims, evidence
from pear.paper import beyond, kernels, ledger, relabelling
from pear.store import view
from record_factory import make_simple

RELABELLING_CLAIMS = ("abs-relabeling-preserves-accuracy", "thm-accuracy-preservation",
                      "intro-fixed-positional-bias", "intro-fixed-role-sensitivity")
SEATS, QUESTIONS = 5, 80


def _main(backend: str = "llamacpp") -> evidence.Source:
    """A small main run (the rest of the ledger's build)."""
    recs = [make_simple(i % 3 != 0, method=m, question_id=f"q{i}", dataset="gsm8k", seed=0,
                        model="m") for m in ("pear", "star") for i in range(20)]
    for r in recs:
        r["backend"] = backend
    return evidence.build_source(view.from_records(recs), rng=np.random.default_rng(0),
                                 n_boot=50)


def _seat_runs(outcomes: dict[str, np.ndarray]) -> dict[str, SimpleNamespace]:
    """Seat variants as notebook 19 loads them (in seat order): per seat the debates of every
    method, ``outcomes[method]`` a (questions, seats) 0/1 array at matched seeds."""
    runs = {}
    for p in range(SEATS):
        rows = [{"dataset": "gsm8k", "seed": 0, "question_id": f"q{q}", "method": m,
                 "correct": bool(x[q, p])} for m, x in outcomes.items()
                for q in range(len(x))]
        runs[f"seat-{p}"] = SimpleNamespace(debates=pd.DataFrame(rows))
    return runs


def _study(star: np.ndarray, rng: np.random.Generator) -> evidence.Relabelling:
    """Star with the given outcomes, its orbit average and PEAR at 0.6 at every seat
    (independent draws: no effect of the seat), through notebook 19's own tables."""
    same = lambda acc: (rng.random((QUESTIONS, SEATS)) < acc).astype(int)  # noqa: E731
    runs = _seat_runs({"star": star, "star~orbit": same(star.mean()), "pear": same(0.6)})
    _, spread, orbit = relabelling.tables(runs)
    return evidence.Relabelling(spread, orbit, seats=SEATS, odd="adversarial")


def _rows(rel: evidence.Relabelling | str | None, backend: str = "llamacpp") -> pd.DataFrame:
    return claims.ledger(build=_main(backend), relabelling=rel).set_index("id")


def test_a_planted_positional_effect_is_found_and_the_test_named():
    rng = np.random.default_rng(1)
    star = (rng.random((QUESTIONS, SEATS)) < 0.8).astype(int)
    star[:, 0] = (rng.random(QUESTIONS) < 0.2).astype(int)  # the adversarial agent as hub
    rows = _rows(_study(star, rng))
    bias = rows.loc["intro-fixed-positional-bias"]
    assert bias["finding"] == bias["verdict"] == "supported"
    assert "randomisation test at matched seeds" in bias["reproduced"]
    assert "beyond sampling" in bias["reproduced"] and "Star" in bias["reproduced"]
    role = rows.loc["intro-fixed-role-sensitivity"]
    assert role["finding"] == "supported"      # about 0.6 between the hub seat and the others
    # PEAR: the same accuracy at every seat, within sampling (on 80 questions sampling alone
    # spreads it by more than the 0.05 margin: inconclusive, with the questions it needs)
    keep = rows.loc["abs-relabeling-preserves-accuracy"]
    assert keep["finding"] == "inconclusive" and "within sampling" in keep["reproduced"]
    assert keep["n_needed"] > QUESTIONS and "questions per setting" in keep["reason"]
    # the theorem: Star's mean over seats beside its orbit average, with its interval
    thm = rows.loc["thm-accuracy-preservation"]
    part = thm["parts"][0]
    assert part.test == "paired" and part.low < part.value < part.high
    assert abs(part.value) < 0.1 and thm["finding"] in ("supported", "inconclusive")
    assert "paired bootstrap" in thm["reproduced"] and "McNemar p" in thm["reproduced"]
    for cid in RELABELLING_CLAIMS:
        assert "table:relabelling_spread" in rows.loc[cid, "evidence"] \
            or "table:relabelling_orbit" in rows.loc[cid, "evidence"]


def test_no_positional_effect_is_within_sampling():
    rng = np.random.default_rng(2)
    star = (rng.random((QUESTIONS, SEATS)) < 0.7).astype(int)
    rows = _rows(_study(star, rng))
    bias = rows.loc["intro-fixed-positional-bias"]
    assert bias["finding"] == "inconclusive"
    assert "within sampling" in bias["reproduced"] and "within sampling" in bias["reason"]
    assert "randomisation test at matched seeds" in bias["reproduced"]
    assert rows.loc["intro-fixed-role-sensitivity", "finding"] == "inconclusive"


def test_pears_spread_within_a_sharp_sampling_is_supported_and_one_beyond_it_contradicts():
    rng = np.random.default_rng(3)
    same = np.repeat((rng.random((2000, 1)) < 0.6).astype(int), SEATS, axis=1)
    ok = _seat_runs({"pear": same})
    _, spread, orbit = relabelling.tables(ok)
    rows = _rows(evidence.Relabelling(spread, orbit, seats=SEATS))
    assert rows.loc["abs-relabeling-preserves-accuracy", "finding"] == "supported"
    # a router without its orbit average in the study: the theorem not covered, saying so
    assert rows.loc["thm-accuracy-preservation", "finding"] == "not covered"
    assert "orbit average" in rows.loc["thm-accuracy-preservation", "reason"]
    moved = same.copy()
    moved[:, 0] = (rng.random(2000) < 0.2).astype(int)
    _, spread, orbit = relabelling.tables(_seat_runs({"pear": moved}))
    rows = _rows(evidence.Relabelling(spread, orbit, seats=SEATS))
    assert rows.loc["abs-relabeling-preserves-accuracy", "finding"] == "contradicted"


def test_one_question_calls_nothing_preserved():
    """A pipeline check's one question: the same outcome at every seat is no evidence that
    accuracy is preserved or that a router equals its orbit average."""
    one = np.ones((1, SEATS), dtype=int)
    _, spread, orbit = relabelling.tables(_seat_runs({"star": one, "star~orbit": one,
                                                      "pear": one}))
    rows = _rows(evidence.Relabelling(spread, orbit, seats=SEATS))
    for cid in ("abs-relabeling-preserves-accuracy", "thm-accuracy-preservation"):
        assert rows.loc[cid, "finding"] == "inconclusive"
        assert rows.loc[cid, "n_needed"] == checks.MIN_PAIRS


def test_simulated_builds_state_the_simulated_mechanism():
    rng = np.random.default_rng(1)
    star = (rng.random((QUESTIONS, SEATS)) < 0.8).astype(int)
    star[:, 0] = 0
    row = _rows(_study(star, rng), backend="simulated").loc["intro-fixed-positional-bias"]
    assert (row["verdict"], row["finding"]) == ("not evidence", "supported")
    assert row["not_evidence"] == "simulated"
    assert "simulated mechanism" in ledger.why(row) and "simulated" not in row["reason"]


def test_without_notebook_19_the_claims_stay_not_covered_saying_so(tmp_path):
    rows = _rows(None)
    for cid in RELABELLING_CLAIMS:
        assert rows.loc[cid, "finding"] == "not covered"
        assert "notebook 19_relabelling was not run" in rows.loc[cid, "reason"]
    # the notebook's loader: a run without notebook 19's seat variants beside it
    (tmp_path / "runs").mkdir()
    why = ledger.load_relabelling("simulated", "smoke", str(tmp_path / "runs"))
    assert isinstance(why, str) and "notebook 19_relabelling was not run" in why
    rows = _rows(why)
    assert rows.loc["intro-fixed-positional-bias", "reason"] == why


def test_the_ledger_reads_notebook_19s_records(tmp_path):
    runs = tmp_path / "runs"
    exp = relabelling.experiment("smoke")
    beyond.run_variants("simulated", relabelling.variants(exp), runs)
    rel = ledger.load_relabelling("simulated", "smoke", str(runs))
    assert isinstance(rel, evidence.Relabelling) and rel.seats == len(relabelling.SMOKE_SEATS)
    assert list(rel.spread["method"]) == ["star", "star~orbit", "pear"]
    assert list(rel.orbit["router"]) == ["star"]
    rows = _rows(rel, backend="simulated")
    assert (rows.loc[list(RELABELLING_CLAIMS), "finding"] != "not covered").all()


def test_the_ledger_runs_after_notebook_19():
    names = ["00_run_experiments", "01_main_results", "13_claims", "19_relabelling"]
    for backend in kernels.SIDE_BY_SIDE:
        assert kernels.steps(names, backend) == [["00_run_experiments"],
                                                 ["01_main_results", "19_relabelling"],
                                                 ["13_claims"]]
    assert kernels.steps(names, "vllm") == [["00_run_experiments"], ["01_main_results"],
                                            ["19_relabelling"], ["13_claims"]]
    # without notebook 19 (e.g. --only 13) the ledger runs where it always did
    assert kernels.steps(names[:3], "llamacpp") == [["00_run_experiments"],
                                                    ["01_main_results", "13_claims"]]


@pytest.mark.parametrize("cid", RELABELLING_CLAIMS)
def test_the_relabelling_claims_are_in_the_ledger(cid):
    assert cid in set(claims.load_claims()["id"])
    assert claims.load_recompute()["claims"][cid]["parts"][0]["op"] == "relabelling"


def test_the_study_runs_the_presets_first_two_seeds_unless_seeds_are_given():
    assert relabelling.experiment("sim").seeds == (0, 1)
    assert relabelling.experiment("sim", seeds="3,4,5").seeds == (3, 4, 5)
    assert len(relabelling.variants(relabelling.experiment("sim"))) == 5  # every seat
