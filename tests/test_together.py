"""The studies' variants: run together in one pass, or read from the main run where they
coincide with it; either way the records are those separate runs write."""
import dataclasses
import json

import pytest

from pear.sim.backend import SimulatedBackend
from pear.paper import beyond
from pear.paper.study import load_results
from pear.runs.factory import sim_population
from pear.runs.grid import answer_key
from pear.runs.runner import debate_ids, run
from pear.runs.together import recorded_in, run_together
from pear.store.manifest import read as read_manifest
from pear.store.records import TIMING_FIELDS, read_records


def _content(run_dir):
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_records(run_dir)}


@pytest.fixture(scope="module")
def grid():
    """Two GSM8K questions x one seed of the studies' grid, 2 rounds (fast)."""
    exp = beyond.preset_experiment("beyond", seeds="0", n_questions=2)
    return dataclasses.replace(exp, datasets=("gsm8k",),
                               debate=dataclasses.replace(exp.debate, rounds=2))


def _backend(exp):
    """The population the studies' runs use (``run_variants`` builds its backend with it)."""
    return SimulatedBackend(answer_key(exp), n_agents=exp.debate.n_agents,
                            population=sim_population())


def test_one_pass_writes_what_separate_runs_write(tmp_path, grid):
    taus = beyond.temperature_variants(grid)
    variants = {"tau=0": taus["tau=0"], "tau=0.7": taus["tau=0.7"], "Random": taus["Random"],
                "consensus": beyond.stop_variants(grid)["consensus"],
                "adversarial": beyond.population_variants(grid)["adversarial"]}
    requests_apart = sum(run(exp, _backend(exp), tmp_path / "apart" / name,
                             progress=False).requests for name, exp in variants.items())
    together = {tmp_path / "together" / name: exp for name, exp in variants.items()}
    s = run_together(together, _backend(grid), progress=False)
    assert s.total == s.written == sum(len(_content(tmp_path / "apart" / n)) for n in variants)
    assert s.already_done == 0 and not s.failed
    for name in variants:
        apart, shared = _content(tmp_path / "apart" / name), _content(tmp_path / "together" / name)
        assert len(shared) == {"tau=0": 2, "tau=0.7": 2, "Random": 2, "consensus": 8,
                               "adversarial": 14}[name]
        assert shared == apart, name
        m = read_manifest(tmp_path / "together" / name)
        assert m["complete"] is True
        assert m["protocol"] == read_manifest(tmp_path / "apart" / name)["protocol"]
    # tau=0, tau=0.7 and Random differ only in the router: one engine, one round-0 request
    # per (seed, question, agent) for the three (2 questions x 5 agents, not 3 x that)
    assert requests_apart - s.requests == 2 * 2 * 5
    # the pass's compute is split among the directories and adds up to it
    parts = [read_manifest(tmp_path / "together" / n)["compute"] for n in variants]
    assert sum(c["calls"] for c in parts) == s.requests
    assert sum(c["tokens"] for c in parts) == s.tokens
    assert [c["debates"] for c in parts] == [len(_content(tmp_path / "together" / n))
                                             for n in variants]
    shares = [read_manifest(tmp_path / "together" / n)["attempts"][0]["share"]
              for n in variants]
    assert sum(shares) == pytest.approx(1.0, abs=1e-5) and shares[-1] == pytest.approx(14 / 28)
    again = run_together(together, _backend(grid), progress=False)
    assert (again.written, again.already_done) == (0, s.total)  # a resume runs nothing


def test_a_variant_the_main_run_recorded_is_read_from_it(tmp_path, grid):
    main = tmp_path / "sim-simulated"
    main_exp = dataclasses.replace(grid, methods=("cot",) + grid.methods)
    run(main_exp, _backend(main_exp), main, progress=False)
    recorded = _content(main)
    taus = beyond.temperature_variants(grid)
    variants = {k: taus[k] for k in ("tau=0.1", "tau=0.3", "Random")}
    runs = beyond.run_variants("simulated", variants, main)
    for name, method in (("tau=0.1", "pear"), ("Random", "random")):
        res = runs[name]
        assert res.runs_dir == main and not beyond.variant_dir(main, name).exists()
        ids = set(res.debates["debate_id"])
        assert ids == {i for i, r in recorded.items() if r["method"] == method}
        assert ids == set(debate_ids(variants[name], res.models[0], "simulated"))
        read = {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
                for r in res.records()}
        assert read == {i: recorded[i] for i in ids}  # the main run's records themselves
    other = runs["tau=0.3"]  # not in the main run: run into its own directory
    assert other.runs_dir == beyond.variant_dir(main, "tau=0.3")
    assert not set(other.debates["debate_id"]) & set(recorded)
    # the studies' results are those of separate runs: the temperature table, from the
    # main run's records or from a run of the variant alone
    alone = {"tau=0.1": load_results(_run_alone(tmp_path / "alone", variants["tau=0.1"]),
                                      variants["tau=0.1"]),
             "tau=0.3": other, "Random": runs["Random"]}
    assert beyond.temperature_table(runs, n_states=20).equals(
        beyond.temperature_table(alone, n_states=20))
    replay = beyond.run_variants("replay", variants, main)
    assert set(replay["tau=0.1"].debates["debate_id"]) == set(runs["tau=0.1"].debates["debate_id"])


def _run_alone(out, exp):
    run(exp, _backend(exp), out, progress=False)
    return out


def test_a_main_run_of_another_setting_is_never_read(tmp_path, grid):
    main = tmp_path / "main"
    other = dataclasses.replace(grid, debate=dataclasses.replace(grid.debate, rounds=1))
    run(other, _backend(other), main, progress=False)
    model_id = _backend(grid).model_id
    honest = beyond.population_variants(grid)["honest"]
    assert recorded_in(honest, main, model_id, "simulated") is None  # protocol differs
    assert recorded_in(beyond.population_variants(other)["honest"], main, model_id,
                       "simulated") is not None
    assert recorded_in(beyond.population_variants(other)["honest"], main, "another-model",
                       "simulated") is None
    more = dataclasses.replace(other, n_questions=3)  # a debate the main run lacks
    assert recorded_in(beyond.population_variants(more)["honest"], main, model_id,
                       "simulated") is None


def test_a_variant_takes_the_debates_it_shares_with_the_main_run(tmp_path, grid):
    main = tmp_path / "main"
    run(grid, _backend(grid), main, progress=False)  # clique, star, ring, random, pear, ...
    variant = dataclasses.replace(grid, methods=("clique", "chain", "pear"))
    out = tmp_path / "variant"
    s = run_together({out: variant}, _backend(grid), progress=False, reuse=main)
    assert (s.total, s.already_done, s.written) == (6, 4, 2)  # chain is not in the main run
    mine = _record_lines(out)
    assert len(mine) == 6
    copied = [line for line in mine if json.loads(line)["method"] != "chain"]
    assert len(copied) == 4 and set(copied) <= set(_record_lines(main))  # byte for byte
    alone = tmp_path / "alone"
    run(variant, _backend(grid), alone, progress=False)
    assert _content(out) == _content(alone)
    again = run_together({out: variant}, _backend(grid), progress=False, reuse=main)
    assert (again.already_done, again.written) == (6, 0) and len(_record_lines(out)) == 6


def _record_lines(run_dir):
    return [line for p in sorted(run_dir.rglob("debates.jsonl"))
            for line in p.read_text().splitlines() if line.strip()]


def test_a_pass_on_several_processes_writes_what_one_process_writes(tmp_path, grid):
    """run_together's chunks in worker processes (one question per chunk, so the four
    chunks spread over the workers): every directory's records are those of one process,
    line for line in the same order (timing fields aside), and the pass's counts agree."""
    more = dataclasses.replace(grid, n_questions=4, chunk_questions=1)
    taus = beyond.temperature_variants(more)
    variants = {"tau=0": taus["tau=0"], "Random": taus["Random"],
                "consensus": beyond.stop_variants(more)["consensus"]}
    summaries = {}
    for workers in (1, 2, 3):
        dirs = {tmp_path / str(workers) / n: exp for n, exp in variants.items()}
        summaries[workers] = run_together(dirs, _backend(more), progress=False,
                                          workers=workers)
    for name in variants:
        one = _ordered(tmp_path / "1" / name)
        assert len(one) == {"tau=0": 4, "Random": 4, "consensus": 16}[name]
        assert _ordered(tmp_path / "2" / name) == one, name
        assert _ordered(tmp_path / "3" / name) == one, name
    counts = {w: (s.total, s.written, s.requests, s.tokens, s.generate_calls, len(s.failed))
              for w, s in summaries.items()}
    assert counts[2] == counts[3] == counts[1] and counts[1][:2] == (24, 24)
    with pytest.raises(ValueError, match="workers=0"):
        run_together({tmp_path / "x": more}, _backend(more), workers=0)


def _ordered(run_dir):
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING_FIELDS}
            for line in _record_lines(run_dir)]
