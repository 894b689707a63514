"""Untrusted records: ``pear validate`` on a clean simulated run, then on copies with each
kind of damage -> the right problem named (count and first example), analysis stopped with
one clear error and nothing half-written, ``--drop-invalid`` leaving out exactly the
damaged records, model text escaped wherever a page shows it."""
from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from pear.analysis import transcript
from pear.store import view
from pear.sim.backend import SimulatedBackend
from pear.cli import main
from pear.paths import RUN_MANIFEST as MANIFEST
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.core.hashing import hex_id
from pear.store.records import IDENTITY, RECORDS_FILE
from pear.store.findings import MAX_LINE_BYTES, KINDS, ValidationError, escape, scan_lines
from pear.store.validate import validate

EXP = dict(datasets=("gsm8k", "truthfulqa"), methods=("cot", "clique", "random", "pear"),
           n_questions=3, seeds=(0,), full_datasets=(), rounds=2, chunk_questions=3)
N_DEBATES = 2 * 4 * 3


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean")
    exp = preset("sim", **EXP)
    run(exp, SimulatedBackend(answer_key(exp)), out, progress=False)
    return out


def _copy(clean: Path, dest: Path) -> tuple[Path, list[dict]]:
    """A copy of the clean run without its view, with its record file and records."""
    shutil.copytree(clean, dest, ignore=shutil.ignore_patterns("view", "cache.sqlite"))
    path = next(dest.rglob(RECORDS_FILE))
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs))


def _first(recs, method):
    return next(i for i, r in enumerate(recs) if r["method"] == method)


def _flip_correct(recs):
    recs[0]["correct"] = not recs[0]["correct"]


def _edit_seed(recs):
    recs[_first(recs, "cot")]["seed"] = 7


def _wrong_config_hash(recs):
    """A record of another configuration (its id consistent with its identity)."""
    r = recs[2]
    r["config_hash"] = "0123456789abcdef"
    r["debate_id"] = hex_id(*(r[k] for k in sorted(IDENTITY)), n=20)


def _confidence(recs):
    recs[_first(recs, "pear")]["rounds_data"][1]["agents"][2]["confidence"] = 9


def _agent_outside_n(recs):
    rd = recs[_first(recs, "pear")]["rounds_data"][1]
    rd["critiques"][0]["source"] = rd["edges"][0][0] = 7


def _not_a_relabelling(recs):
    rd = recs[_first(recs, "pear")]["rounds_data"][2]
    for e, c in zip(rd["edges"], rd["critiques"]):  # every critique aimed at agent 0 or 1
        target = 0 if e[0] != 0 else 1
        e[1] = c["target"] = target
    rd["edges"] = [list(p) for p in dict.fromkeys(map(tuple, rd["edges"]))]
    rd["critiques"] = list({(c["source"], c["target"]): c for c in rd["critiques"]}.values())


def _not_the_topology(recs):
    rd = recs[_first(recs, "clique")]["rounds_data"][1]
    rd["edges"], rd["critiques"] = rd["edges"][1:], rd["critiques"][1:]


def _gold(recs):
    recs[3]["gold"] = "not the answer"


def _unknown_question(recs):  # a CoT record (no graph), its debate_id re-hashed: only the
    from pear.core.hashing import debate_id  # gold check can object
    from pear.core.record import IDENTITY
    rec = recs[_first(recs, "cot")]
    rec["question_id"] = "no-such-question"
    rec["debate_id"] = debate_id({k: rec[k] for k in IDENTITY})


def _schema(recs):
    del recs[4]["tokens"]


def _big_reasoning(recs):
    recs[0]["rounds_data"][0]["agents"][0]["reasoning"] = "x" * (10 << 20)


RECORD_DAMAGE = [  # (name, edit, problem named, records left out)
    ("edited record", _flip_correct, "inconsistent", 1),
    ("edited identity", _edit_seed, "identity", 1),
    ("wrong config hash", _wrong_config_hash, "config_hash", 1),
    ("confidence out of range", _confidence, "out_of_range", 1),
    ("agent outside n", _agent_outside_n, "out_of_range", 1),
    ("routed edges not a relabelling", _not_a_relabelling, "graph", 1),
    ("fixed edges not the topology", _not_the_topology, "graph", 1),
    ("gold answer", _gold, "gold", 1),
    ("question not in its dataset", _unknown_question, "gold", 1),
    ("missing field", _schema, "schema", 1),
    ("10 MB reasoning field", _big_reasoning, "oversized_field", 1),
]


def test_a_clean_run_is_valid(clean, capsys):
    result = validate(clean)
    assert result.findings.ok and result.findings.counts == {}
    assert result.debates == N_DEBATES and result.files == 1
    assert main(["validate", str(clean)]) == 0
    assert "valid; 24 valid records" in capsys.readouterr().out


def test_a_directory_that_is_no_run_is_an_error_not_valid(tmp_path, capsys):
    """A mistyped path (an empty or unrelated folder) is exit 2 with one line, never "valid"."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("not a record")
    for where in ("empty", "notes"):
        assert main(["validate", str(tmp_path / where)]) == 2
        captured = capsys.readouterr()
        assert "not a run directory" in captured.err and where in captured.err
        assert "valid" not in captured.out
    with pytest.raises(ValueError, match="neither a manifest.json nor a record file"):
        validate(tmp_path / "empty")


@pytest.mark.parametrize("name, edit, kind, dropped", RECORD_DAMAGE,
                         ids=[d[0] for d in RECORD_DAMAGE])
def test_each_damage_is_named_stops_the_analysis_and_can_be_dropped(
        clean, tmp_path, capsys, name, edit, kind, dropped):
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    edit(recs)
    _write(path, recs)
    # the analysis stops with one clear error naming the problem; nothing is written
    with pytest.raises(ValidationError) as err:
        view.load(run_dir)
    assert f"1 {kind}" in str(err.value) and f"{path}:" in str(err.value)
    assert not (run_dir / "view" / "manifest.json").exists()
    assert not list((run_dir / "view").rglob("*.parquet"))
    assert main(["show", str(run_dir)]) == 2
    assert kind in capsys.readouterr().err
    # validate names it with its count and first example; the CLI exits 1
    result = validate(run_dir)
    assert result.findings.errors() == {kind: 1}
    assert result.findings.examples[kind][0].startswith(f"{path}:")
    assert main(["validate", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert f"error {kind}: 1" in out and "DAMAGED" in out
    # --drop-invalid keeps going, says what it left out, and leaves out only that
    with pytest.raises(ValidationError):
        view.load(run_dir)   # still damaged for a strict analysis
    with pytest.warns(RuntimeWarning, match=f"left out {dropped} damaged records"):
        kept = view.load(run_dir, drop_invalid=True)
    assert len(kept.debates) == N_DEBATES - dropped


def test_a_wrong_manifest_protocol_fails_every_config_hash(clean, tmp_path):
    run_dir = tmp_path / "run"
    _copy(clean, run_dir)
    m = json.loads((run_dir / MANIFEST).read_text())
    m["protocol"]["router"]["tau"] = 0.5
    (run_dir / MANIFEST).write_text(json.dumps(m))
    result = validate(run_dir)
    assert result.findings.errors() == {"config_hash": N_DEBATES}
    m["protocol"]["router"]["tau"] = "hot"
    (run_dir / MANIFEST).write_text(json.dumps(m))
    assert "manifest" in validate(run_dir).findings.errors()


def test_duplicate_and_conflicting_ids(clean, tmp_path):
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    _write(path, recs + [recs[0]])
    result = validate(run_dir)
    assert result.findings.ok and result.findings.counts == {"duplicate_id": 1}
    assert len(view.load(run_dir).debates) == N_DEBATES   # the first is used
    other = json.loads(json.dumps(recs[0]))
    other["latency_s"] = 99.0          # timing differs between runs: still the same debate
    _write(path, recs + [other])
    assert validate(run_dir).findings.counts == {"duplicate_id": 1}
    other["tokens"]["prompt"] += 1    # different contents under one id
    _write(path, recs + [other])
    assert validate(run_dir).findings.errors() == {"conflicting_id": 1}
    with pytest.raises(ValidationError, match="recorded 2 times with different contents"):
        view.load(run_dir)


def test_torn_and_cut_lines(clean, tmp_path):
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:100])    # a write under way
    result = validate(run_dir)
    assert result.findings.ok and result.findings.counts == {"torn_line": 1}
    assert len(view.load(run_dir).debates) == N_DEBATES
    lines = text.splitlines(keepends=True)
    lines[5] = lines[5][: len(lines[5]) // 2] + "\n"     # a line cut in the middle
    path.write_text("".join(lines))
    assert validate(run_dir).findings.errors() == {"corrupt_line": 1}


def test_an_oversized_line_is_skipped_in_bounded_memory(clean, tmp_path):
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    recs[0]["rounds_data"][0]["agents"][0]["reasoning"] = "y" * (MAX_LINE_BYTES + 10)
    _write(path, recs)
    lines = list(scan_lines(path))
    assert lines[0][2] is None and lines[0][3] > MAX_LINE_BYTES and lines[1][2] is not None
    assert validate(run_dir).findings.errors() == {"oversized_line": 1}


def test_html_in_model_text_is_named_and_escaped(clean, tmp_path):
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    i = _first(recs, "pear")
    script = '<script>alert("pwned")</script>'
    recs[i]["rounds_data"][1]["agents"][0]["reasoning"] = f"I think {script}"
    recs[i]["rounds_data"][1]["critiques"][0]["correction"] = '<img src=x onerror="alert(1)">'
    recs[i]["rounds_data"][1]["critiques"][0]["reason"] = "a < b & c > d"
    _write(path, recs)
    result = validate(run_dir)
    assert result.findings.ok and result.findings.counts == {"markup": 1}   # one record
    assert "round 1 agent 0 reasoning" in result.findings.examples["markup"][0]
    v = view.load(run_dir)                  # a warning only: the analysis runs
    page = transcript.render_transcript(v.record(recs[i]["debate_id"]))
    assert "<script" not in page and "<img" not in page
    assert "&lt;img src=x onerror=\"alert(1)\"&gt;" in page and "a &lt; b &amp; c &gt; d" in page
    assert escape(script) == "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;"


def test_every_kind_is_documented_and_severities_are_known():
    assert {s for s, _ in KINDS.values()} == {"error", "warning"}
    assert all(meaning for _, meaning in KINDS.values())


def test_replay_checks_the_records_first(clean, tmp_path, capsys):
    from pear.paper.experiments import run_experiments
    run_dir = tmp_path / "run"
    path, recs = _copy(clean, run_dir)
    exp = preset("sim", **EXP)
    assert run_experiments("replay", exp, run_dir) is None
    assert "no problem found" in capsys.readouterr().out
    _confidence(recs)
    _write(path, recs)
    with pytest.raises(ValidationError, match="1 out_of_range"):
        run_experiments("replay", exp, run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PEAR_DROP_INVALID", "1")
            run_experiments("replay", exp, run_dir)
    assert "error out_of_range: 1" in capsys.readouterr().out


def test_a_nested_run_with_its_own_manifest_is_another_run(clean, tmp_path):
    run_dir = tmp_path / "run"
    _copy(clean, run_dir)
    _copy(clean, run_dir / "studies" / "variant")       # e.g. an open study's variant
    m = json.loads((run_dir / "studies" / "variant" / MANIFEST).read_text())
    m["protocol"]["router"]["tau"] = 0.7                 # another protocol: its own run
    (run_dir / "studies" / "variant" / MANIFEST).write_text(json.dumps(m))
    result = validate(run_dir)
    assert result.findings.counts == {} and result.debates == N_DEBATES
    assert validate(run_dir / "studies" / "variant").findings.errors() == {
        "config_hash": N_DEBATES}
