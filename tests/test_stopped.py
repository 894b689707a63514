"""Early-stopped debates cut from the same debates run whole (pear.runs.stopped) are the
records the engine writes when it runs them under the stop rule, timing fields aside."""
import dataclasses
import json
from pathlib import Path

import pytest

from pear.sim.backend import SimulatedBackend
from pear.core.stopping import parse_stop
from pear.paper import beyond
from pear.paper.study import load_results
from pear.runs import stopped
from pear.runs.factory import sim_population
from pear.runs.grid import answer_key
from pear.runs.runner import identities, model_dir, run
from pear.store.manifest import read as read_manifest
from pear.store.records import TIMING_FIELDS, read_records, record_files


def _content(run_dir):
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_records(run_dir)}


def _backend(exp):
    return SimulatedBackend(answer_key(exp), n_agents=exp.debate.n_agents,
                            population=sim_population())


@pytest.fixture(scope="module")
def grid():
    """Three questions of GSM8K and MATH-500 x two seeds of the studies' grid, 3 rounds,
    with CoT and CoT-SC beside the debate methods."""
    exp = beyond.preset_experiment("beyond", seeds="0,1", n_questions=3)
    exp = dataclasses.replace(exp, datasets=("gsm8k", "math500"),
                              debate=dataclasses.replace(exp.debate, rounds=3))
    return dataclasses.replace(beyond.stop_variants(exp)["none"],
                               methods=("cot", "cot_sc", *beyond.STOP_METHODS))


@pytest.fixture(scope="module")
def whole(tmp_path_factory, grid):
    out = tmp_path_factory.mktemp("whole") / "none"
    run(grid, _backend(grid), out, progress=False)
    return out


def _with_stop(exp, rule):
    return dataclasses.replace(exp, debate=dataclasses.replace(exp.debate, stop=rule))


def test_cut_records_are_the_engines_for_every_rule_and_method(tmp_path, grid, whole):
    reasons = set()
    for rule in ("consensus", "stable:1", "stable:2"):
        exp = _with_stop(grid, rule)
        ran = tmp_path / "ran" / rule
        run(exp, _backend(exp), ran, progress=False)
        cut = tmp_path / "cut" / rule
        model = read_manifest(whole)["model_ids"][0]
        assert stopped.derivable(exp, whole, model, "simulated")
        n = stopped.derive({cut: exp}, whole, model, "simulated")
        engine, derived = _content(ran), _content(cut)
        assert n == len(engine) == 2 * 2 * 3 * 6  # seeds x datasets x questions x methods
        assert derived == engine, rule
        assert {r["method"] for r in derived.values()} == {"cot", "cot_sc",
                                                          *beyond.STOP_METHODS}
        reasons |= {(rule, r["stop_reason"], r["rounds"]) for r in derived.values()}
        m = read_manifest(cut)
        assert m["complete"] is True and m["protocol"] == read_manifest(ran)["protocol"]
        assert (cut / m["derived_from"]["run"]).resolve() == whole.resolve()
        assert not Path(m["derived_from"]["run"]).is_absolute()  # no builder's path
        assert stopped.derive({cut: exp}, whole, model, "simulated") == 0  # resumed: nothing
        assert len(read_records(cut)) == len(engine)
    # the rules cut debates at different rounds, and some run all three
    stops = {(rule, reason) for rule, reason, _ in reasons}
    assert {("consensus", "consensus"), ("stable:1", "stable"), ("stable:2", "stable"),
            ("stable:2", "max_rounds")} <= stops
    assert {r for _, reason, r in reasons if reason != "max_rounds"} >= {0, 1}


def test_a_debate_the_source_lacks_is_named_and_nothing_is_written(tmp_path, grid, whole):
    exp = _with_stop(grid, "consensus")
    model = read_manifest(whole)["model_ids"][0]
    partial = tmp_path / "partial"
    run(dataclasses.replace(grid, methods=("ring",)), _backend(grid), partial, progress=False)
    assert not stopped.derivable(exp, partial, model, "simulated")
    missing = identities(grid, model, "simulated")[0]["debate_id"]  # a CoT debate
    with pytest.raises(ValueError, match=f"lacks debate {missing}"):
        stopped.derive({tmp_path / "out": exp}, partial, model, "simulated")
    assert not (tmp_path / "out").exists() or not record_files(tmp_path / "out")
    with pytest.raises(ValueError, match="has no stop rule"):
        stopped.derive({tmp_path / "out": grid}, whole, model, "simulated")


def test_records_without_round_costs_are_not_cut(tmp_path, grid, whole):
    """Records written before rounds carried their tokens: the variant runs instead."""
    model = read_manifest(whole)["model_ids"][0]
    old = tmp_path / "old"
    (model_dir(old, model)).mkdir(parents=True)
    (old / "manifest.json").write_bytes((whole / "manifest.json").read_bytes())
    lines = []
    for rec in read_records(whole):
        for rd in rec["rounds_data"]:
            del rd["tokens"], rd["truncated_calls"]
        lines.append(json.dumps(rec))
    (model_dir(old, model) / "debates.jsonl").write_text("\n".join(lines) + "\n")
    exp = _with_stop(grid, "stable:1")
    assert stopped.derivable(exp, whole, model, "simulated")
    assert not stopped.derivable(exp, old, model, "simulated")
    rec = next(r for r in read_records(old) if r["max_rounds"])
    with pytest.raises(ValueError, match="does not record what each round cost"):
        stopped.stopped_record(rec, parse_stop("stable:1"), identities(exp, model, "simulated")[0])


def test_notebook_11s_table_is_the_same_cut_or_run(tmp_path, grid):
    """run_variants cuts the stop rules from the main run; the early-stopping table is the
    one of variants the engine ran."""
    main = tmp_path / "sim-simulated"
    run(grid, _backend(grid), main, progress=False)
    variants = beyond.stop_variants(dataclasses.replace(grid, methods=beyond.ROBUST_METHODS))
    runs = beyond.run_variants("simulated", variants, main)
    assert runs["none"].runs_dir == main
    ran = {"none": runs["none"]}
    for rule in ("consensus", "stable:1", "stable:2"):
        d = beyond.variant_dir(main, rule)
        assert runs[rule].runs_dir == d
        assert (d / read_manifest(d)["derived_from"]["run"]).resolve() == main.resolve()
        out = tmp_path / "ran" / rule
        run(variants[rule], _backend(grid), out, progress=False)
        ran[rule] = load_results(out, variants[rule], "subset")
    assert beyond.early_stop_table(runs).equals(beyond.early_stop_table(ran))
    assert (beyond.early_stop_table(runs)["rounds"] < 3).any()
