"""Runner: kill -9 and resume, manifest mismatch, torn last line, CLI exit codes."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from pear.sim.backend import SimulatedBackend
from pear.runs.grid import answer_key, preset
from pear.runs.jobs import jobs
from pear.runs.runner import model_dir, run
from pear.store.manifest import read as read_manifest
from pear.store.records import RECORDS_FILE, TIMING_FIELDS, RecordWriter, read_records
from pear.store.view import load as load_view
from record_factory import make_record

EXP = dict(datasets=("gsm8k", "truthfulqa"), n_questions=6, seeds=(0, 1), full_datasets=(),
           rounds=2, chunk_questions=2)

RUNNER = """
import sys
from pear.sim.backend import SimulatedBackend, SimParams
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
exp = preset("sim", datasets=("gsm8k", "truthfulqa"), n_questions=6, seeds=(0, 1),
             full_datasets=(), rounds=2, chunk_questions=2)
be = SimulatedBackend(answer_key(exp), params=SimParams(latency_s=float(sys.argv[2])))
run(exp, be, sys.argv[1], progress=False, workers=int(sys.argv[3]))
"""


def _content(run_dir):
    recs = read_records(run_dir)
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in recs}


def _lines(run_dir):
    return [json.loads(l)["debate_id"] for p in Path(run_dir).rglob(RECORDS_FILE)
            for l in p.read_text().splitlines() if l.strip()]


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_minus_9_then_resume_equals_uninterrupted_run(tmp_path, workers):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(killed), "0.002", str(workers)],
                            env=env)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until some, but not all, debates are written
        n = sum(1 for p in killed.rglob(RECORDS_FILE) for _ in open(p)) if killed.exists() else 0
        if n >= 40:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    total = len(jobs(preset("sim", **EXP)))
    partial = len(_lines(killed))
    assert 0 < partial < total, "the kill must land mid-run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a torn last line may be dropped
        subprocess.run([sys.executable, "-c", RUNNER, str(killed), "0", str(workers)],
                       check=True, env=env)
    subprocess.run([sys.executable, "-c", RUNNER, str(clean), "0", "1"], check=True, env=env)
    ids = _lines(killed)
    assert len(ids) == len(set(ids)) == total  # no debate lost or duplicated
    assert _content(killed) == _content(clean)
    assert read_manifest(killed)["complete"] is True


def test_workers_write_the_records_of_one_process(tmp_path):
    """Three worker processes write the records one process writes (timing fields aside;
    each once; their order follows the chunks, smaller with workers), and the same
    manifest."""
    exp = preset("sim", **EXP)
    one, three = tmp_path / "one", tmp_path / "three"
    s1 = run(exp, SimulatedBackend(answer_key(exp)), one, progress=False, workers=1)
    s3 = run(exp, SimulatedBackend(answer_key(exp)), three, progress=False, workers=3)
    total = len(jobs(exp))
    assert s1.written == s3.written == total and s3.complete
    assert (s1.requests, s1.tokens) == (s3.requests, s3.tokens)
    # workers take smaller chunks (runner.CHUNKS_PER_WORKER each), so more backend calls
    assert s3.generate_calls > s1.generate_calls
    strip = lambda d: {r["debate_id"]: {k: v for k, v in r.items()  # noqa: E731
                                        if k not in TIMING_FIELDS} for r in read_records(d)}
    assert len(read_records(three)) == len(strip(three)) == total  # none twice
    assert strip(one) == strip(three) and len(strip(one)) == total
    timing = ("at", "wall_s", "gpu_hours")

    def untimed(value):  # the manifest without its clock readings
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items()
                    if not k.endswith("_at") and k not in timing}
        return [untimed(v) for v in value] if isinstance(value, list) else value
    m1, m3 = untimed(read_manifest(one)), untimed(read_manifest(three))
    assert m1 == m3 and m1["complete"] is True and m1["compute"]["calls"] == s1.requests


def test_workers_must_be_a_positive_count(tmp_path):
    with pytest.raises(ValueError, match="invalid workers=0"):
        run(preset("sim", **EXP), SimulatedBackend(answer_key(preset("sim", **EXP))),
            tmp_path / "r", progress=False, workers=0)
    assert not (tmp_path / "r").exists()


def test_mismatched_manifest_refuses_to_append(tmp_path):
    exp = preset("sim", **EXP)
    be = SimulatedBackend(answer_key(exp))
    run(exp, be, tmp_path, progress=False)
    before = (model_dir(tmp_path, be.model_id) / RECORDS_FILE).read_text()
    other = preset("sim", **{**EXP, "rounds": 3})
    with pytest.raises(ValueError, match=r"protocol\.debate\.rounds: recorded 2, requested 3"):
        run(other, be, tmp_path, progress=False)
    assert (model_dir(tmp_path, be.model_id) / RECORDS_FILE).read_text() == before
    s = run(exp, be, tmp_path, progress=False)  # the same setting resumes: nothing to do
    assert s.written == 0 and s.already_done == s.total


def test_manifest_contents(tmp_path):
    exp = preset("sim", **EXP)
    run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    m = read_manifest(tmp_path)
    assert m["backend"] == "simulated" and m["protocol"]["debate"]["rounds"] == 2
    assert set(m["data_sha256"]) >= {"gsm8k.jsonl", "truthfulqa_mc1.jsonl"}
    assert m["versions"]["pear"] and m["git_commit"] and m["finished_at"]
    assert m["backend_settings"][0]["params"]["skill_mean"] > -10  # simulation parameters


def test_torn_last_line_is_ignored_then_repaired(tmp_path):
    exp = preset("sim", **EXP)
    be = SimulatedBackend(answer_key(exp))
    run(exp, be, tmp_path, progress=False)
    path = model_dir(tmp_path, be.model_id) / RECORDS_FILE
    full = path.read_text()
    n = len(full.splitlines())
    lines = full.splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # torn write
    with pytest.warns(RuntimeWarning, match="torn"):
        assert len(read_records(tmp_path)) == n - 1
    with pytest.warns(RuntimeWarning):
        s = run(exp, be, tmp_path, progress=False)
    assert s.written == 1
    assert len(read_records(tmp_path)) == n
    assert path.read_text().count("\n") == n


def test_corrupt_line_in_the_middle_is_an_error(tmp_path):
    with RecordWriter(tmp_path) as w:
        w.write(make_record([["1"]], "1", question_id="a"))
    with open(tmp_path / RECORDS_FILE, "a") as fh:
        fh.write("{broken\n")
        fh.write('{"debate_id": "b"}\n')
    with pytest.raises(ValueError, match=r"debates.jsonl:2: corrupt record"):
        read_records(tmp_path)


def test_a_record_that_breaks_the_schema_is_an_error_naming_the_field(tmp_path):
    good = make_record([["1"]], "1", question_id="a")
    bad = make_record([["1"]], "1", question_id="b")
    bad["rounds_data"][0]["agents"][0]["confidence"] = "high"
    with RecordWriter(tmp_path) as w:
        w.write(good)
        with pytest.raises(ValueError, match=r"refusing to write .*confidence"):
            w.write(bad)   # the writer checks the schema too
    with open(tmp_path / RECORDS_FILE, "a") as fh:
        fh.write(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"debates.jsonl:2: not a debate record .*confidence"):
        read_records(tmp_path)


def test_view_tables_have_one_row_per_unit(tmp_path):
    exp = preset("sim", **EXP)
    run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    recs = read_records(tmp_path)
    v = load_view(tmp_path)
    deb, ar, ed = v.debates, v.agent_rounds, v.edges
    assert len(deb) == len(recs) == len(jobs(exp))
    expected_agent_rows = sum(len(rd["agents"]) for r in recs for rd in r["rounds_data"])
    assert len(ar) == expected_agent_rows
    assert len(v.rounds) == sum(len(r["rounds_data"]) for r in recs)
    ring = deb[deb.method == "ring"]
    assert (ed[ed.debate.isin(ring.debate)].groupby("debate").size() == 5 * 2).all()
    assert len(ring) == 2 * 2 * 6


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "pear", *args], capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.mark.parametrize("args, needle", [
    (["run", "--out", "X", "--preset", "nope"], "unknown preset 'nope'"),
    (["run", "--out", "X", "--backend", "gpt"], "unknown backend 'gpt'"),
    (["run", "--out", "X", "--seeds", "a,b"], "--seeds"),
    (["run", "--out", "X", "--n-questions", "0"], "--n-questions"),
    (["run", "--out", "X", "--backend", "simulated", "--datasets", "imagenet"],
     "unknown 'imagenet'"),
    (["run", "--out", "X", "--backend", "simulated", "--methods", "pear,vote"], "'vote'"),
    (["run", "--out", "X", "--backend", "simulated", "--agents", "1"], "n_agents"),
    (["run", "--out", "X", "--backend", "llamacpp", "--model-path", "/no/such.gguf"],
     "/no/such.gguf"),
    (["run", "--out", "X", "--backend", "simulated", "--prompt-style", "fancy"], "'fancy'"),
    (["show", "/no/such/run"], "/no/such/run"),
    (["frobnicate"], "invalid choice"),
])
def test_cli_bad_input_one_line_exit_2(tmp_path, args, needle):
    args = [str(tmp_path / "out") if a == "X" else a for a in args]
    p = _cli(*args, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


HELP_SHOWS = {  # per command (its words after `pear`), a few of its own arguments its --help shows
    "run": ("--preset PRESET", "--backend BACKEND", "--out"),
    "plan": ("--preset PRESET", "--n-questions N_QUESTIONS"),
    "branch": ("--from-round R", "--parent-method PARENT_METHOD"),
    "show": ("--debate ID", "--html", "run_dir"),
    "index": ("--drop-invalid", "run_dir"),
    "validate": ("run_dir",),
    "grade-check": ("--examples EXAMPLES", "run_dir"),
    "parity": ("--out OUT", "RUN [RUN ...]"),
    "parity-run": ("--model-path PATH", "--base-url URL", "BACKEND OUT"),
    "models": (),  # no options: its usage is "pear models [-h]"
    "methods": ("--plugin MODULE",),
    "import": ("--out OUT", "--grading", "--skip-bad", "FILE [FILE ...]"),
    "population": ("fit", "sim-check", "family", "shipped", "published"),
    "ensemble": ("--k K", "--family", "--replay"),
    "paper": ("--only ONLY", "--previous DIR"),
    "check": ("outputs", "site"),
    "claims-diff": ("--seed SEED", "build_a build_b"),
    "launch": ("slurm", "status"),
    "merge": ("out runs [runs ...]",),
    "population fit": ("--out FILE.json", "--prior FILE"),
    "population sim-check": ("--population NAME|FILE", "--replicates K", "--summary"),
    "population family": ("--replicates K", "split-half"),
    "population shipped": ("check", "write-graded", "corpus-fit", "in-sample", "bootstrap"),
    "population published": ("--population NAME|FILE", "--questions N"),
}
HELP_GROUPS = ("run and inspect", "import and simulate", "build", "cluster")


def test_cli_help_lists_every_command_once_under_what_a_user_does():
    from pear.cli import GROUPS
    p = _cli("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: pear [-h] COMMAND ..."), p.stderr
    assert "{" not in p.stdout  # no flat line of every choice
    sections = re.findall(r"^([a-z ]+):\n((?:  .*\n?|                .*\n?)+)", p.stdout, re.M)
    groups = {title: re.findall(r"^  ([a-z-]+)(?: +\w|\n)", body, re.M)
              for title, body in sections if title != "options"}
    assert tuple(groups) == HELP_GROUPS == tuple(title for title, _ in GROUPS)
    listed = [cmd for cmds in groups.values() for cmd in cmds]
    assert listed == [c for c in HELP_SHOWS if " " not in c]  # each once, in the groups' order
    for cmd in listed:
        assert re.search(rf"^  {re.escape(cmd)} +\w", p.stdout, re.M), f"{cmd}: no help line"


@pytest.mark.parametrize("cmd", sorted(HELP_SHOWS))
def test_cli_help_of_each_command_shows_its_own_options(cmd, capsys, monkeypatch):
    from pear.cli import main
    monkeypatch.setenv("COLUMNS", "200")  # usage on one line: option and metavar together
    with pytest.raises(SystemExit) as done:
        main([*cmd.split(), "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    usage = out.splitlines()[0]
    assert usage.startswith(f"usage: pear {cmd} [-h]"), usage
    assert len(out.splitlines()) > 3  # a description, not the usage alone
    for shown in HELP_SHOWS[cmd]:
        assert shown in out, f"pear {cmd} --help lacks {shown!r}"
    if not HELP_SHOWS[cmd]:
        assert usage == f"usage: pear {cmd} [-h]"


@pytest.mark.parametrize("old", ["fit", "family", "populations", "sim-check"])
def test_the_population_commands_live_under_pear_population_only(old, capsys):
    from pear.cli import main
    with pytest.raises(SystemExit) as done:
        main([old, "--help"])
    assert done.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_cli_run_and_show(tmp_path):
    out = tmp_path / "run"
    p = _cli("run", "--preset", "sim", "--backend", "simulated", "--out", str(out),
             "--datasets", "gsm8k", "--methods", "cot,pear", "--seeds", "0", "--n-questions",
             "3", "--no-full", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "6 debates written" in p.stdout
    s = _cli("show", str(out))
    assert s.returncode == 0 and "pear" in s.stdout and "gsm8k" in s.stdout


def test_default_workers_take_the_cpus_slurm_gave_the_task(monkeypatch):
    from pear.runs.factory import default_workers
    monkeypatch.delenv("SLURM_CPUS_PER_TASK", raising=False)
    assert default_workers("simulated") == len(os.sched_getaffinity(0))
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1")  # a launch's simulated shard asks for 1
    assert default_workers("simulated") == 1 and default_workers("vllm") == 1


def test_the_writer_writes_what_json_would_and_refuses_what_json_cannot(tmp_path):
    import numpy as np
    rec = make_record([["1", "2"], ["2", "2"]], "2", question_id="a")
    rec["rounds_data"][1]["influence"] = [np.float64(0.1) + np.float64(0.2), 1e16]
    rec["gold"] = "é\u2028\"x\""
    with RecordWriter(tmp_path) as w:
        w.write(rec)
        bad = make_record([["1"]], "1", question_id="b")
        bad["rounds_data"][0]["agents"][0]["reasoning"] = object()
        with pytest.raises(ValueError, match=r"refusing to write .*type object"):
            w.write(bad)
    line = (tmp_path / RECORDS_FILE).read_bytes()
    assert line.count(b"\n") == 1 and b"1e16" in line  # only the good record, one line
    assert json.loads(line) == json.loads(json.dumps(rec, default=float))
    assert read_records(tmp_path)[0]["rounds_data"][1]["influence"] == [0.30000000000000004, 1e16]
