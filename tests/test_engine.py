"""Engine: one backend call per phase, determinism, shared round 0, scripted dynamics."""
import json

import numpy as np
import pytest

from pear.core.backend import Completion
from pear.sim.backend import SimParams, SimulatedBackend
from pear.core.config import DebateConfig
from pear.core.methods import METHODS
from pear.core.engine import Engine, Job
from pear.core.vote import vote
from pear.methods import method  # the public table: the study's methods and the plug-ins
from pear.store.records import TIMING_FIELDS
from record_factory import arithmetic_questions


QS = arithmetic_questions(12)
KEY = {(q.dataset, q.id): q.gold for q in QS}


class Scripted:
    """Agent i answers ``initial[i]``; every critic points to its own answer; every target
    accepts every critique and adopts the answer of its lowest-numbered critic."""

    name = "scripted"
    model_id = "scripted-1"

    def __init__(self, initial, accept=True, finish="stop"):
        self.initial, self.accept, self.batches, self.finish = initial, accept, [], finish

    def settings(self):
        return {}

    def generate(self, requests):
        self.batches.append([r.meta["phase"] for r in requests])
        out = []
        for r in requests:
            m = r.meta
            if m["phase"] == "initial":
                obj = {"reasoning": "r", "answer": self.initial[m["agent"]], "confidence": 3}
            elif m["phase"] == "critique":
                obj = {"reviews": [{"target": t["agent"] + 1, "step_loc": "step 1",
                                    "correction": f"it is {m['own']['answer']}",
                                    "assessment": "Flawed"} for t in m["targets"]]}
            else:
                crit = m["critiques"]
                dec = "ACCEPT" if self.accept else "REJECT"
                ans = min(crit, key=lambda c: c["source"])["source_answer"] \
                    if crit and self.accept else m["own"]["answer"]
                obj = {"answer": ans, "confidence": 3, "reasoning": "r",
                       "critique_response": {str(c["source"] + 1): {"decision": dec,
                                                                    "reason": "x"}
                                             for c in crit}}
            out.append(Completion(json.dumps(obj), prompt_tokens=10, completion_tokens=5,
                                  finish_reason=self.finish))
        return out


def _strip(rec):
    return {k: v for k, v in rec.items() if k not in TIMING_FIELDS}


@pytest.mark.parametrize("n_questions, methods", [(1, ["pear"]), (12, list(METHODS))])
def test_one_generate_call_per_phase(n_questions, methods):
    be = SimulatedBackend(KEY)
    eng = Engine(be, DebateConfig(rounds=3))
    recs = list(eng.run([Job(q, method(m), 0) for q in QS[:n_questions] for m in methods]))
    assert len(recs) == n_questions * len(methods)
    assert be.calls == eng.generate_calls == 1 + 2 * 3


def test_records_deterministic_for_a_fixed_seed_and_differ_across_seeds():
    jobs = [Job(q, method(m), 0) for q in QS for m in ("pear", "random", "clique")]

    def run(seed_shift=0):
        be = SimulatedBackend(KEY, seed=seed_shift)
        return [_strip(r) for r in Engine(be, DebateConfig(rounds=2)).run(jobs)]

    a, b, c = run(), run(), run(1)
    assert a == b
    assert a != c


def test_round0_shared_and_cot_cot_sc_derived_from_it():
    be = SimulatedBackend(KEY, params=SimParams(skill_mean=-0.5))
    recs = list(Engine(be, DebateConfig(rounds=1)).run(
        [Job(q, method(m), 7) for q in QS for m in ("cot", "cot_sc", "pear", "ring")]))
    by = {(r["question_id"], r["method"]): r for r in recs}
    for q in QS:
        r0 = [by[(q.id, m)]["rounds_data"][0]["agents"] for m in ("cot_sc", "pear", "ring")]
        assert r0[0] == r0[1] == r0[2]
        assert by[(q.id, "cot")]["rounds_data"][0]["agents"] == r0[0][:1]
        assert by[(q.id, "cot")]["final_answer"] == r0[0][0]["canonical"]
        counts = {}
        for a in r0[0]:
            counts[a["canonical"]] = counts.get(a["canonical"], 0) + 1
        assert counts[by[(q.id, "cot_sc")]["final_answer"]] == max(counts.values())
        assert by[(q.id, "cot")]["calls"] == 1 and by[(q.id, "cot_sc")]["calls"] == 5


def test_chain_dynamics_with_scripted_agents():
    # chain 0->1->2->3->4: each round every agent adopts its predecessor's answer
    be = Scripted(["10", "1", "2", "3", "4"])
    rec = next(Engine(be, DebateConfig(rounds=2)).run([Job(QS[0], method("chain"), 0)]))
    r1 = [a["canonical"] for a in rec["rounds_data"][1]["agents"]]
    r2 = [a["canonical"] for a in rec["rounds_data"][2]["agents"]]
    assert r1 == ["10", "10", "1", "2", "3"]
    assert r2 == ["10", "10", "10", "1", "2"]
    assert rec["final_answer"] == "10" and rec["correct"] is True
    # every chain source had 1 out-edge, all accepted: a = 1; rho = 0.5 after 1, 0.75 after 2
    assert rec["rounds_data"][1]["influence"] == [0.5, 0.5, 0.5, 0.5, 0.0]
    assert rec["rounds_data"][2]["influence"] == [0.75, 0.75, 0.75, 0.75, 0.0]
    assert [c["decision"] for c in rec["rounds_data"][1]["critiques"]] == ["ACCEPT"] * 4
    assert rec["calls"] == 5 + 2 * (4 + 5)
    assert rec["tokens"] == {"prompt": 10 * rec["calls"], "completion": 5 * rec["calls"],
                             "cached": 0}
    assert be.batches[1] == ["critique"] * 4 and be.batches[2] == ["revision"] * 5


def test_pear_round_records_router_terms_and_in_degree_k():
    be = Scripted(["10", "1", "2", "3", "4"], accept=False)
    rec = next(Engine(be, DebateConfig(rounds=2)).run([Job(QS[0], method("pear"), 0)]))
    from pear.core.graphs import distinct_relabellings
    n_distinct = len(distinct_relabellings(np.array(rec["rounds_data"][1]["edges"]), 5))
    for rd in rec["rounds_data"][1:]:
        assert rd["router"]["pool_size"] == min(100, n_distinct)
        assert rd["router"]["score_min"] <= rd["router"]["score"] <= rd["router"]["score_max"]
        indeg = np.bincount([t for _, t in rd["edges"]], minlength=5)
        assert indeg.tolist() == [2] * 5
        assert rd["influence"] == [0.0] * 5  # nothing accepted
    assert rec["rounds_data"][0]["router"] is None


def test_undelivered_critiques_are_flagged_not_fabricated():
    class Mute(Scripted):
        def generate(self, requests):
            out = super().generate(requests)
            return [Completion("no json", 1, 1) if r.meta["phase"] == "critique" else c
                    for r, c in zip(requests, out)]
    rec = next(Engine(Mute(["1", "2", "3", "4", "5"]), DebateConfig(rounds=1)).run(
        [Job(QS[0], method("ring"), 0)]))
    crit = rec["rounds_data"][1]["critiques"]
    assert len(crit) == 5 and not any(c["delivered"] for c in crit)
    assert all(c["decision"] is None and c["parse_error"] for c in crit)
    assert rec["parse_failures"] == 5  # the five critiques; every answer parsed


def test_failed_requests_drop_the_debate():
    class Flaky(Scripted):
        def generate(self, requests):
            out = super().generate(requests)
            return [Completion("", finish_reason="error", error="HTTP 503")
                    if r.meta["phase"] == "revision" and r.meta["agent"] == 0 else c
                    for r, c in zip(requests, out)]
    eng = Engine(Flaky(["1", "2", "3", "4", "5"]), DebateConfig(rounds=1))
    recs = list(eng.run([Job(QS[0], method(m), 0) for m in ("cot", "ring", "pear")]))
    assert [r["method"] for r in recs] == ["cot"]
    assert len(eng.failed) == 2 and all(e == "HTTP 503" for _, e in eng.failed)


def test_vote_tie_break_is_uniform_and_seeded():
    wins = {"a": 0, "b": 0}
    rng = np.random.default_rng(0)
    for _ in range(2000):
        wins[vote(["a", "b", "a", "b", ""], rng)] += 1
    assert abs(wins["a"] / 2000 - 0.5) < 0.05
    assert vote(["", "", "x"], rng) == "x" and vote(["", ""], rng) == ""
    assert [vote(["a", "b"], np.random.default_rng(5)) for _ in range(3)] == \
        [vote(["a", "b"], np.random.default_rng(5))] * 3


def test_routed_methods_of_one_question_share_their_base_graph():
    # the base graph shows as the multiset of in/out-degree pairs every relabelling keeps;
    # with one question and seed, Random and every PEAR variant route relabellings of it
    from pear.core.methods import ROUTED_METHODS

    def degrees(rec):
        shapes = set()
        for rd in rec["rounds_data"][1:]:
            out_degrees = np.bincount(np.array(rd["edges"])[:, 0], minlength=5)
            shapes.add(tuple(sorted(out_degrees.tolist())))
        return shapes

    for q in QS[:4]:
        recs = list(Engine(SimulatedBackend(KEY), DebateConfig(rounds=3)).run(
            [Job(q, method(m), 3) for m in ROUTED_METHODS]))
        routers = {r["method"]: r for r in recs}
        shapes = {m: degrees(r) for m, r in routers.items()}
        assert all(len(v) == 1 for v in shapes.values())  # one base graph per debate
        assert len(set(map(frozenset, shapes.values()))) == 1, shapes


def test_base_graph_drawn_from_seed_and_question_not_method():
    # the static plug-in routes the debate's base role graph as it is: its edges are the
    # graph drawn from (run seed, question) alone, the one every routed method relabels
    from pear.core.graphs import base_graph
    from pear.core.hashing import base_graph_seed
    q = QS[0]
    rec = next(Engine(SimulatedBackend(KEY), DebateConfig(rounds=2)).run(
        [Job(q, method("static"), 4)]))
    want = base_graph(5, 2, np.random.default_rng(base_graph_seed(4, q.dataset, q.id)))
    assert [rd["edges"] for rd in rec["rounds_data"][1:]] == [want.tolist()] * 2


def test_paper_style_prompts_reach_the_backend_and_records_name_the_style():
    be = Scripted(["10", "1", "2", "3", "4"])
    rec = next(Engine(be, DebateConfig(rounds=1)).run([Job(QS[0], method("ring"), 0)]))
    assert rec["prompt_style"] == "paper" and rec["truncated_calls"] == 0
    crit = rec["rounds_data"][1]["critiques"][0]
    assert (crit["step_loc"], crit["assessment"], crit["reason"]) == ("step 1", "Flawed", "x")
    assert "recommended_answer" not in crit and "critique" not in crit


def test_truncated_completions_are_counted():
    be = Scripted(["10", "1", "2", "3", "4"], finish="length")
    rec = next(Engine(be, DebateConfig(rounds=1)).run([Job(QS[0], method("ring"), 0)]))
    assert rec["truncated_calls"] == rec["calls"] == 5 + 5 + 5
    assert all(a["truncated"] for rd in rec["rounds_data"] for a in rd["agents"])


def test_revision_prompt_never_shows_the_critics_confidence():
    seen = []

    class Spy(Scripted):
        def generate(self, requests):
            seen.extend(r for r in requests if r.meta["phase"] == "revision")
            return super().generate(requests)
    next(Engine(Spy(["10", "1", "2", "3", "4"]), DebateConfig(rounds=1)).run(
        [Job(QS[0], method("clique"), 0)]))
    user = seen[0].messages[1]["content"]
    assert "[Critique from Agent 2]" in user and "assessment: Flawed" in user
    assert "Confidence: 3" in user  # the agent's own previous confidence only
    assert user.count("Confidence:") == 1
    props = seen[0].schema["properties"]
    assert list(props) == ["answer", "confidence", "reasoning", "critique_response"]
    assert sorted(props["critique_response"]["required"]) == ["2", "3", "4", "5"]


def test_records_are_written_in_the_schema_order():
    # the engine writes every part of a record in pear.core.record's order (one owner of the
    # fields): top level, rounds, agents, critiques, router entries
    from pear.core.record import (AGENT_KEYS, CRITIQUE_KEYS, RECORD_KEYS, ROUND_KEYS,
                                  ROUTER_KEYS)
    eng = Engine(SimulatedBackend(KEY), DebateConfig(rounds=2))
    recs = list(eng.run([Job(q, method(m), 0) for q in QS[:2] for m in ("cot", "pear", "ring")]))
    assert len(recs) == 6
    for rec in recs:
        assert list(rec) == [k for k in RECORD_KEYS if k in rec]
        assert {"schema", "debate_id", "prompt_style", "max_rounds", "latency_s"} <= set(rec)
        for rd in rec["rounds_data"]:
            assert tuple(rd) == ROUND_KEYS
            assert all(tuple(a) == AGENT_KEYS for a in rd["agents"])
            assert all(tuple(c) == CRITIQUE_KEYS for c in rd["critiques"])
            if rd["router"] is not None:
                assert tuple(rd["router"]) == ROUTER_KEYS
    debates = [r for r in recs if r["method"] != "cot"]
    assert all(len(r["rounds_data"]) == 3 and r["rounds_data"][1]["critiques"] for r in debates)
    assert sum(r["rounds_data"][1]["router"] is not None for r in debates) == 2  # PEAR's


@pytest.mark.parametrize("debate", [DebateConfig(rounds=3),
                                    DebateConfig(rounds=4, stop="stable:1",
                                                 roles=("adversarial",) + ("honest",) * 4)],
                         ids=["study", "early-stop-and-adversary"])
def test_each_debate_run_alone_equals_the_lockstep_batch(debate):
    # the one-debate path and the batched one: a debate's record does not depend on which
    # debates share its phases (its draws are its own: request seeds, round generators),
    # whether they stop early, fail to parse or hold an adversary
    be = SimulatedBackend(KEY, seed=3, params=SimParams(malformed_rate=0.15))
    jobs = [Job(q, method(m), s) for q in QS[:4] for m in METHODS for s in (0, 1)]
    together = {r["debate_id"]: _strip(r) for r in Engine(be, debate).run(jobs)}
    alone = {}
    for job in jobs:
        for r in Engine(be, debate).run([job]):
            alone[r["debate_id"]] = _strip(r)
    assert len(together) == len(jobs)
    assert alone == together
    reasons = {r["stop_reason"] for r in together.values()}
    assert debate.stop == "none" or len(reasons - {None}) >= 2  # early stops did happen
    assert any(c["parse_error"] for r in together.values() for rd in r["rounds_data"]
               for c in rd["critiques"])  # and so did unparsable critiques
