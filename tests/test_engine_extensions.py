"""Protocol extensions (issue 14): early stopping, agent roles, mixed-model panels, and
their bad inputs on the command line."""
import json

import pytest

from pear.core.backend import Completion
from pear.sim.backend import SimulatedBackend
from pear.core.config import DebateConfig, config_hash
from pear.core.methods import DEBATE_METHODS
from pear.core.methods import method
from pear.core.engine import Engine, Job
from record_factory import arithmetic_questions


QS = arithmetic_questions(12)
KEY = {(q.dataset, q.id): q.gold for q in QS}


class ByRound:
    """Agent i of question q answers ``script[q][r][i]`` in round r (initial = round 0),
    whatever the critiques; every critique is reviewed and accepted; confidence 3.  Records
    every request it sees."""

    name = "byround"

    def __init__(self, script, model_id="byround-1"):
        self.script, self.model_id, self.seen, self.calls = script, model_id, [], 0

    def settings(self):
        return {}

    def generate(self, requests):
        self.calls += 1
        self.seen.append(list(requests))
        out = []
        for r in requests:
            m = r.meta
            rows = self.script[m["question_id"]]
            if m["phase"] == "critique":
                obj = {"reviews": [{"target": t["agent"] + 1, "step_loc": "s",
                                    "correction": f"it is {m['own']['answer']}",
                                    "assessment": "Flawed"} for t in m["targets"]]}
            else:
                row = rows[min(m["round"], len(rows) - 1)]
                obj = {"answer": row[m["agent"]], "confidence": 3, "reasoning": "r"}
                if m["phase"] == "revision":
                    obj["critique_response"] = {str(c["source"] + 1): {"decision": "ACCEPT",
                                                                       "reason": "x"}
                                                for c in m["critiques"]}
            out.append(Completion(json.dumps(obj), prompt_tokens=10, completion_tokens=5))
        return out


def _run(backend, jobs, **debate):
    eng = Engine(backend, DebateConfig(**debate))
    return eng, {(r["question_id"], r["method"]): r for r in eng.run(jobs)}


# early stopping ------------------------------------------------------------------------------

def test_consensus_never_runs_a_round_after_unanimity():
    script = {
        "q0": [list("11112"), list("11111")],            # unanimous after round 1
        "q1": [list("33333")],                          # unanimous from the start
        "q2": [list("12345"), list("12344")],            # never unanimous
    }
    be = ByRound(script)
    jobs = [Job(q, method(m), 0) for q in QS[:3] for m in ("ring", "pear")]
    eng, recs = _run(be, jobs, rounds=4, stop="consensus")
    for m in ("ring", "pear"):
        assert (recs[("q0", m)]["rounds"], recs[("q0", m)]["stop_reason"]) == (1, "consensus")
        assert (recs[("q1", m)]["rounds"], recs[("q1", m)]["stop_reason"]) == (0, "consensus")
        assert (recs[("q2", m)]["rounds"], recs[("q2", m)]["stop_reason"]) == (4, "max_rounds")
        assert {recs[(q, m)]["max_rounds"] for q in ("q0", "q1", "q2")} == {4}
        assert len(recs[("q0", m)]["rounds_data"]) == 2
        assert recs[("q1", m)]["calls"] == 5 and recs[("q1", m)]["final_answer"] == "3"
    # no request of a stopped debate after its last round: round r's critique batch holds
    # only the debates still going (q1 never debates, q0 leaves after round 1)
    asked = {}
    for batch in be.seen:
        for r in batch:
            if r.meta["phase"] != "initial":
                asked.setdefault(r.meta["round"], set()).add(r.meta["question_id"])
    assert asked == {1: {"q0", "q2"}, 2: {"q2"}, 3: {"q2"}, 4: {"q2"}}
    ring_q0 = recs[("q0", "ring")]
    assert ring_q0["calls"] == 5 + 5 + 5  # round 0, one critique + one update round
    assert ring_q0["tokens"]["prompt"] == 10 * ring_q0["calls"]


SCRIPT_VOTES = {"q0": [list("aaabb"), list("bbbaa"), list("bbbaa"), list("bbbba"),
                       list("aaaab"), list("aaaab")]}  # votes a, b, b, b, a, a


@pytest.mark.parametrize("stop, rounds, reason", [
    ("none", 5, "max_rounds"), ("consensus", 5, "max_rounds"), ("stable:1", 2, "stable"),
    ("stable:2", 3, "stable"), ("stable:3", 5, "max_rounds"),
])
def test_stable_k_stops_when_the_vote_is_unchanged_for_k_rounds(stop, rounds, reason):
    be = ByRound(SCRIPT_VOTES)
    _, recs = _run(be, [Job(QS[0], method("ring"), 0)], rounds=5, stop=stop)
    rec = recs[("q0", "ring")]
    assert (rec["rounds"], rec["stop_reason"]) == (rounds, reason)
    assert [rd["vote"] for rd in rec["rounds_data"]] == list("abbbaa")[: rounds + 1]
    assert rec["calls"] == 5 + rounds * (5 + 5)
    assert be.calls == 1 + 2 * rounds


def test_stop_rule_is_part_of_the_identity_and_cot_records_have_no_stop_reason():
    be = SimulatedBackend(KEY)
    jobs = [Job(QS[0], method(m), 0) for m in ("cot", "cot_sc", "pear")]
    _, a = _run(be, jobs, rounds=2)
    _, b = _run(be, jobs, rounds=2, stop="consensus")
    assert a[("q0", "pear")]["config_hash"] != b[("q0", "pear")]["config_hash"]
    assert a[("q0", "cot")]["stop_reason"] is None and a[("q0", "pear")]["stop_reason"] == \
        "max_rounds"
    assert (a[("q0", "cot")]["max_rounds"], a[("q0", "pear")]["max_rounds"]) == (0, 2)
    assert config_hash(DebateConfig()) == config_hash(DebateConfig(stop="none"))


def test_early_stopping_saves_calls_on_the_simulated_backend():
    jobs = [Job(q, method(m), 0) for q in QS for m in DEBATE_METHODS]
    full, _ = _run(SimulatedBackend(KEY), jobs, rounds=5)
    early, recs = _run(SimulatedBackend(KEY), jobs, rounds=5, stop="consensus")
    assert early.requests < full.requests and early.tokens < full.tokens
    stopped = [r for r in recs.values() if r["stop_reason"] == "consensus"]
    assert stopped and all(r["rounds"] < 5 for r in stopped)
    for r in stopped:  # the last round is unanimous, and no earlier one was
        last = [a["canonical"] for a in r["rounds_data"][-1]["agents"]]
        assert len(set(last)) == 1
        assert all(len({a["canonical"] for a in rd["agents"]}) > 1 for rd in r["rounds_data"][:-1])


# roles ---------------------------------------------------------------------------------------

ADV = ("honest", "adversarial", "honest", "honest", "honest")


def test_adversarial_agent_is_wrong_confident_and_recommends_a_wrong_answer():
    jobs = [Job(q, method(m), 0) for q in QS[:6] for m in ("cot_sc", "clique", "ring", "pear")]
    _, recs = _run(SimulatedBackend(KEY), jobs, rounds=3, roles=ADV)
    recommended = 0
    for rec in recs.values():
        assert rec["gold_shown_to"] == [1]
        for rd in rec["rounds_data"]:
            assert [a["role"] for a in rd["agents"]] == list(ADV)
            adv = rd["agents"][1]
            assert not adv["correct"] and adv["canonical"] != rec["gold"]
            assert adv["confidence"] == 5
            for c in rd["critiques"]:
                if c["source"] == 1:
                    assert c["source_answer"] != rec["gold"]
                    if c["target_answer"] != c["source_answer"]:
                        assert c["correction"] == f"the answer should be {c['source_answer']}"
                        recommended += 1
    assert recommended > 10


def test_roles_are_part_of_the_identity_and_change_the_simulated_run():
    jobs = [Job(q, method("clique"), 0) for q in QS]
    _, honest = _run(SimulatedBackend(KEY), jobs, rounds=2)
    _, adv = _run(SimulatedBackend(KEY), jobs, rounds=2, roles=ADV)
    key = ("q0", "clique")
    assert honest[key]["config_hash"] != adv[key]["config_hash"]
    assert honest[key]["debate_id"] != adv[key]["debate_id"]
    assert all(a["role"] == "honest" for r in honest.values() for rd in r["rounds_data"]
               for a in rd["agents"])
    assert honest[key]["gold_shown_to"] == []
    acc = [sum(r["correct"] for r in x.values()) for x in (honest, adv)]
    assert acc[1] <= acc[0]  # an adversary never helps (on these easy questions it may not hurt)
    liar = [i for i, role in enumerate(ADV) if role == "adversarial"][0]
    assert all(not rd["agents"][liar]["correct"] for r in adv.values()
               for rd in r["rounds_data"])  # the adversary is wrong in every round
    assert adv != honest
    assert DebateConfig(roles=("honest",) * 5).roles == ()  # all honest = the default


def test_confidence_roles_override_the_stated_confidence():
    roles = ("overconfident", "underconfident", "honest", "honest", "honest")
    be = ByRound({"q0": [list("12345")]})
    _, recs = _run(be, [Job(QS[0], method("clique"), 0)], rounds=2, roles=roles)
    for rd in recs[("q0", "clique")]["rounds_data"]:
        assert [a["confidence"] for a in rd["agents"]] == [5, 1, 3, 3, 3]
        crit = {(c["source"], c["target"]): c for c in rd["critiques"]}
        if crit:
            assert crit[(0, 2)]["source_confidence"] == 5 and crit[(2, 1)]["target_confidence"] == 1


def test_real_backends_get_the_role_in_the_system_prompt_and_only_the_adversary_sees_gold():
    be = ByRound({"q3": [list("12345")]})
    _run(be, [Job(QS[3], method("ring"), 0)], rounds=1,
         roles=("adversarial", "underconfident", "honest", "honest", "honest"))
    for batch in be.seen:
        for r in batch:
            system = r.messages[0]["content"]
            assert r.meta["role"] == ("adversarial", "underconfident", "honest", "honest",
                                      "honest")[r.meta["agent"]]
            if r.meta["agent"] == 0:
                assert "the correct answer to this problem is 13." in system
                assert "argue for it" in system
            else:
                assert "correct answer to this problem" not in system
            assert ("Always state confidence 1" in system) == (r.meta["agent"] == 1)
            assert "ROLE" not in system or r.meta["agent"] in (0, 1)


# mixed-model panels -------------------------------------------------------------------------

def test_mixed_models_make_one_generate_call_per_model_per_phase():
    a = ByRound({q.id: [list("11111")] for q in QS[:3]}, model_id="model-a")
    b = ByRound({q.id: [list("22222")] for q in QS[:3]}, model_id="model-b")
    names = ("A", "B", "A", "B", "A")
    eng = Engine({"A": a, "B": b}, DebateConfig(rounds=2, agent_models=names))
    jobs = [Job(q, method(m), 0) for q in QS[:3] for m in ("cot", "cot_sc", "ring", "pear")]
    recs = list(eng.run(jobs))
    assert len(recs) == 12
    # initial, then critique + update per round: 5 phases, one call per model each
    assert a.calls == b.calls == 5 and eng.generate_calls == 10
    assert [{r.meta["phase"] for r in batch} for batch in a.seen] == \
        [{"initial"}, {"critique"}, {"revision"}, {"critique"}, {"revision"}]
    assert all(r.meta["agent"] in (0, 2, 4) for batch in a.seen for r in batch)
    assert all(r.meta["agent"] in (1, 3) for batch in b.seen for r in batch)
    for rec in recs:
        assert rec["model"] == "model-a+model-b+model-a+model-b+model-a"
        r0 = rec["rounds_data"][0]["agents"]
        # completions merged back in order: agent i's answer comes from its own model
        assert [x["answer"] for x in r0] == ["1", "2", "1", "2", "1"][: len(r0)]
        assert [x["model"] for x in r0] == ["model-a", "model-b", "model-a", "model-b",
                                            "model-a"][: len(r0)]
    single = Engine(a, DebateConfig(rounds=2))
    assert single.identity(jobs[2])["config_hash"] != eng.identity(jobs[2])["config_hash"]
    assert single.identity(jobs[2])["model"] == "model-a"


def test_mixed_models_need_one_backend_per_model():
    a = ByRound({}, model_id="model-a")
    with pytest.raises(ValueError, match="one backend per model"):
        Engine(a, DebateConfig(n_agents=2, k=1, agent_models=("A", "B")))
    with pytest.raises(ValueError, match="no backend for agent model 'B'"):
        Engine({"A": a}, DebateConfig(n_agents=2, k=1, agent_models=("A", "B")))
    with pytest.raises(ValueError, match="agent_models"):
        DebateConfig(agent_models=("A", "B"))


def test_experiment_runs_a_mixed_population_as_one_unit(tmp_path):
    from pear.runs.grid import preset
    from pear.runs.runner import model_dir, run
    from pear.store.manifest import read as read_manifest
    from pear.store.records import read_records
    exp = preset("smoke", datasets=("gsm8k",), n_questions=2, seeds=(0,), full_datasets=(),
                 methods=("cot_sc", "ring"), agent_models=("A", "B", "A"))
    made = {}

    def factory(name):
        made[name] = ByRound(_AnyQuestion(list("777")), model_id=f"id-{name}")
        return made[name]
    summary = run(exp, factory, tmp_path, progress=False)
    assert summary.complete and summary.written == 4 and sorted(made) == ["A", "B"]
    recs = read_records(model_dir(tmp_path, "id-A+id-B+id-A"))
    assert len(recs) == 4 and {r["model"] for r in recs} == {"id-A+id-B+id-A"}
    manifest = read_manifest(tmp_path)
    assert manifest["models"] == ["id-A+id-B+id-A"]
    assert manifest["protocol"]["debate"]["agent_models"] == ["A", "B", "A"]


class _AnyQuestion(dict):
    def __init__(self, row):
        super().__init__()
        self.row = row

    def __missing__(self, key):
        return [self.row]


# bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["--stop", "sometimes"], "'sometimes'"),
    (["--role", "9=adversarial"], "agent 9"),
    (["--role", "1=saboteur"], "'saboteur'"),
    (["--role", "adversarial"], "AGENT=ROLE"),
    (["--agent-models", "a,b"], "one model per agent"),
    (["--agents", "3", "--agent-models", "a,b,c,d,e"], "got 5"),
    (["--backend", "vllm", "--agent-models", "a,b,a,b,a"], "vllm serve"),
    (["--backend", "openai", "--model", "m", "--agent-models", "a,b,a,b,a"], "not both"),
    (["--agent-models", "a,b,a,b,a"], "one population"),
    (["--agent-temperatures", "0.2,1.2"], "one temperature in [0, 2] per agent"),
    (["--agent-temperatures", "0.2,0.2,0.2,0.2,9"], "agent_temperatures=(0.2, 0.2, 0.2, 0.2, 9.0)"),
    (["--agent-temperatures", "0.2,hot"], "invalid value in '0.2,hot'"),
])
def test_cli_bad_extension_input_one_line_exit_2(tmp_path, capsys, args, needle):
    from pear.cli import main
    out = tmp_path / "out"
    base = ["run", "--out", str(out), "--preset", "sim", "--quiet"]
    if "--backend" not in args:
        base += ["--backend", "simulated"]
    try:
        code = main(base + args)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert not out.exists()  # nothing written


def test_cli_runs_with_stop_and_roles(tmp_path, capsys):
    from pear.cli import main
    from pear.store.records import read_records
    out = tmp_path / "run"
    code = main(["run", "--preset", "sim", "--backend", "simulated", "--out", str(out),
                 "--datasets", "gsm8k", "--methods", "ring,pear", "--seeds", "0",
                 "--n-questions", "3", "--no-full", "--quiet", "--stop", "stable:2",
                 "--role", "2=adversarial", "--role", "5=underconfident"])
    assert code == 0, capsys.readouterr().err
    recs = read_records(out)
    assert len(recs) == 6
    assert all(r["stop_reason"] in ("stable", "max_rounds") and r["gold_shown_to"] == [1]
               for r in recs)
    assert all(rd["agents"][4]["confidence"] == 1 for r in recs for rd in r["rounds_data"])


def test_cli_runs_a_panel_of_one_model_at_two_temperatures(tmp_path, capsys):
    """--agent-temperatures reaches the manifest's protocol and the run resumes from it."""
    from pear.cli import main
    from pear.store import manifest
    out = tmp_path / "run"
    args = ["run", "--preset", "sim", "--backend", "simulated", "--out", str(out),
            "--datasets", "gsm8k", "--methods", "pear", "--seeds", "0", "--n-questions", "2",
            "--no-full", "--quiet", "--agents", "3", "--agent-temperatures", "1.2,0.2,0.2"]
    assert main(args) == 0, capsys.readouterr().err
    debate, _ = manifest.protocol(manifest.read(out))
    assert debate.agent_temperatures == (1.2, 0.2, 0.2)
    assert [debate.temperature_of(p) for p in range(3)] == [1.2, 0.2, 0.2]
    assert main(args) == 0  # resumes: nothing to run, same protocol
