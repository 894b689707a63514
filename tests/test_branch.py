"""Counterfactual branching: rounds 0..R copied from the parent, R+1.. rerun under a method."""
import json

import pytest

from pear.sim.backend import SimulatedBackend
from pear.cli import main
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.core.methods import method
from pear.runs.branch import branch
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.store.records import RECORDS_FILE, read_records
from pear.store.validate import validate
from record_factory import arithmetic_questions

QS = arithmetic_questions(6)
KEY = {(q.dataset, q.id): q.gold for q in QS}
CFG = DebateConfig(n_agents=5, rounds=4, k=2)
SAME = ("latency_s", "finished_at", "debate_id", "branched_from", "tokens", "calls",
        "truncated_calls")


def _body(rec):
    return {k: v for k, v in rec.items() if k not in SAME}


def _parents(name="pear"):
    eng = Engine(SimulatedBackend(KEY, seed=1), CFG)
    return {r["question_id"]: r for r in eng.run([Job(q, method(name), 0) for q in QS])}


def _branches(parents, name, r):
    eng = Engine(SimulatedBackend(KEY, seed=1), CFG)
    return list(eng.branch([(Job(q, method(name), 0), parents[q.id]) for q in QS], r))


@pytest.mark.parametrize("r", [0, 2, 3])
def test_a_branch_under_the_parents_method_reproduces_it(r):
    parents = _parents()
    for b in _branches(parents, "pear", r):
        p = parents[b["question_id"]]
        assert _body(b) == _body(p)
        assert b["branched_from"]["debate_id"] == p["debate_id"]
        # the copied rounds' calls plus the branch's calls are the parent's calls
        assert b["branched_from"]["calls_copied"] + b["calls"] == p["calls"]
        assert b["debate_id"] != p["debate_id"]


def test_a_branch_under_another_method_differs_only_after_the_round():
    parents = _parents("random")
    full = {r["question_id"]: r for r in Engine(SimulatedBackend(KEY, seed=1), CFG).run(
        [Job(q, method("clique"), 0) for q in QS])}
    for b in _branches(parents, "clique", 2):
        p = parents[b["question_id"]]
        assert b["rounds_data"][:3] == p["rounds_data"][:3]
        assert all(rd["edges"] != p_rd["edges"]
                   for rd, p_rd in zip(b["rounds_data"][3:], p["rounds_data"][3:]))
        assert len(b["rounds_data"]) == 5 and b["method"] == "clique"
    # branching after round 0 (the shared initial answers) is a full run of the method
    for b in _branches(parents, "clique", 0):
        assert _body(b) == _body(full[b["question_id"]])


@pytest.fixture(scope="module")
def parent_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("parent")
    exp = preset("sim", datasets=("gsm8k",), methods=("random", "pear"), seeds=(0,),
                 n_questions=6, full_datasets=(), rounds=3)
    run(exp, SimulatedBackend(answer_key(exp)), out, progress=False)
    return out


def test_branch_run_validates_and_a_tampered_copy_is_named(parent_run, tmp_path):
    out = tmp_path / "b"
    s = branch(parent_run, 1, ["pear", "clique"], out, progress=False)
    assert s.written == 12 and s.skipped_stopped == 0
    parents = [r for r in read_records(parent_run) if r["method"] == "random"]
    # round 0: 5 answers; round 1: one call per critic and 5 revisions; for two methods
    per_parent = [5 + len({s for s, _ in r["rounds_data"][1]["edges"]}) + 5 for r in parents]
    assert s.calls_copied == 2 * sum(per_parent)
    result = validate(out)
    assert result.findings.ok, result.report()
    again = branch(parent_run, 1, ["pear", "clique"], out, progress=False)
    assert again.written == 0 and again.already_done == 12  # resumed, nothing re-asked
    path = next(out.rglob(RECORDS_FILE))
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    recs[0]["rounds_data"][1]["agents"][0]["reasoning"] += " (edited)"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    found = validate(out).findings
    assert found.counts.get("branch") == 1


def test_bad_branches_are_refused_with_one_error(parent_run, tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["branch", str(parent_run), "--from-round", "3", "--methods", "pear",
                 "--out", str(out)]) == 2
    assert "--from-round 3" in capsys.readouterr().err
    assert main(["branch", str(parent_run), "--from-round", "1", "--methods", "cot",
                 "--out", str(out)]) == 2
    assert "no debate rounds" in capsys.readouterr().err
    assert not out.exists() or not any(out.rglob(RECORDS_FILE))
    assert main(["branch", str(parent_run), "--from-round", "1", "--methods", "pear",
                 "--parent-method", "random", "--out", str(out), "--quiet"]) == 0
    # the same directory for a branch after another round: refused, nothing written
    assert main(["branch", str(parent_run), "--from-round", "2", "--methods", "pear",
                 "--parent-method", "random", "--out", str(out)]) == 2
    assert "holds another run" in capsys.readouterr().err
    assert len(read_records(out)) == 6


def test_a_run_of_another_protocol_is_refused(parent_run, tmp_path):
    import shutil
    other = tmp_path / "other"
    shutil.copytree(parent_run, other, ignore=shutil.ignore_patterns("view"))
    man = json.loads((other / "manifest.json").read_text())
    man["experiments"][-1]["debate"]["rounds"] = 4  # the manifest no longer says how they ran
    (other / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match="another protocol"):
        branch(other, 1, ["pear"], tmp_path / "b", progress=False)


def test_branches_on_several_processes_are_those_of_one(tmp_path):
    """The branch's chunks (two parents each) in worker processes: the records of one
    process, line for line in the same order (timing fields aside), and the same counts."""
    from pear.store.manifest import read as read_manifest
    from pear.store.records import TIMING_FIELDS
    exp = preset("sim", datasets=("gsm8k",), methods=("random",), seeds=(0,), n_questions=6,
                 full_datasets=(), rounds=3, chunk_questions=1)
    parent = tmp_path / "parent"
    run(exp, SimulatedBackend(answer_key(exp)), parent, progress=False)
    done = {}
    for workers in (1, 2):
        s = branch(parent, 1, ["pear", "clique"], tmp_path / str(workers), progress=False,
                   workers=workers)
        lines = next((tmp_path / str(workers)).rglob(RECORDS_FILE)).read_text().splitlines()
        done[workers] = (s.written, s.calls, s.calls_copied,
                         read_manifest(tmp_path / str(workers))["compute"]["calls"],
                         [{k: v for k, v in json.loads(x).items() if k not in TIMING_FIELDS}
                          for x in lines])
    assert done[1][0] == 12 and done[1][1] == done[1][3] > 0
    assert done[2] == done[1]
    with pytest.raises(ValueError, match="workers=0"):
        branch(parent, 1, ["pear"], tmp_path / "0", workers=0)


def test_the_parents_are_the_parent_methods_records_in_file_order(parent_run):
    """check() reads the parents' rows through the view (only those lines parsed): the
    records are exactly the parent method's, in the order the run's file holds them."""
    from pear.runs.branch import check
    parents = check(parent_run, 1, ["clique"], "random")
    want = [r for r in read_records(parent_run) if r["method"] == "random"]
    assert parents.method == "random" and len(want) > 1
    assert parents.records == want
