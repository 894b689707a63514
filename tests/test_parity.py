"""Backend parity (pear.runs.parity, `pear parity`) on hand-made records with known answers."""
from __future__ import annotations

import pytest
from record_factory import make_record

from pear.cli import main
from pear.runs.parity import compare, parity_table, phase_stats
from pear.store.records import RecordWriter


def _pair(backend: str, second_answer: str, prompt: int, *, parse_error: str | None = None):
    deb = make_record([["4", "4", "5"], ["4", second_answer, "4"]], "4", method="clique",
                      critiques={1: [(0, 1, "ACCEPT"), (1, 2, "ACCEPT")]},
                      tokens=(900, 100, 0), truncated_calls=1)
    deb["rounds_data"][1]["agents"][1]["truncated"] = True
    deb["rounds_data"][1]["critiques"][0]["parse_error"] = parse_error
    cot = make_record([["4"]], "4", method="cot", tokens=(prompt, 20, 0))
    for r in (deb, cot):
        r["backend"] = backend
    return [deb, cot]


def test_phase_stats_count_calls_failures_and_truncations():
    stats = phase_stats(_pair("a", "4", 120, parse_error="bad json"))
    assert (stats["initial"].calls, stats["initial"].parse_failures) == (4, 0)
    assert (stats["revision"].calls, stats["revision"].truncated) == (3, 1)
    assert (stats["critique"].calls, stats["critique"].parse_failures) == (2, 1)
    assert stats["critique"].truncated == 0  # the one truncated call was an answer
    assert stats["critique"].parse_rate == 0.5


def test_compare_pairs_debates_and_reports_per_phase():
    c = compare(_pair("llamacpp", "4", 120), _pair("vllm", "7", 121))
    assert c["paired"] == 2 and c["backends"] == ("llamacpp", "vllm")
    assert c["cot_prompt_tokens_equal"] == (0, 1)
    assert c["phases"]["initial"]["answer_agreement"] == 1.0
    assert c["phases"]["revision"]["answer_agreement"] == pytest.approx(2 / 3)
    assert c["phases"]["critique"]["answer_agreement"] == 1.0
    assert c["accuracy"] == (1.0, 1.0)


def test_runs_sharing_no_debate_are_one_clear_error():
    a = _pair("a", "4", 120)
    b = [dict(r, question_id="other") for r in _pair("b", "4", 120)]
    with pytest.raises(ValueError, match="share no debate"):
        compare(a, b)


def test_pear_parity_writes_markdown_and_latex(tmp_path, capsys):
    for name, prompt in (("llamacpp", 120), ("vllm", 120)):
        writer = RecordWriter(tmp_path / name)
        for rec in _pair(name, "4", prompt):
            writer.write(rec)
        writer.close()
    out = tmp_path / "fig" / "parity"
    assert main(["parity", f"llama.cpp={tmp_path / 'llamacpp'}", f"vLLM={tmp_path / 'vllm'}",
                 "--out", str(out)]) == 0
    md = (tmp_path / "fig" / "parity.md").read_text()
    assert "| vLLM | initial | 1/1 (CoT calls) | 100% |" in md
    assert "\\toprule" in (tmp_path / "fig" / "parity.tex").read_text()
    assert main(["parity", str(tmp_path / "llamacpp"), str(tmp_path / "missing")]) == 2


def test_pear_parity_run_writes_a_valid_run_of_the_grid_that_pear_parity_compares(tmp_path,
                                                                                  capsys):
    """`pear parity-run` on the simulated backend (a fraction of a second): the parity grid's 9
    debates (GSM8K, 3 questions, CoT, Clique and PEAR), a run `pear validate` accepts; two such
    runs (seeded, greedy) agree everywhere."""
    for side in ("a", "b"):
        assert main(["parity-run", "simulated", str(tmp_path / side)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == \
        f"{tmp_path / 'a'}: 9 debates written, complete=True"
    assert main(["validate", str(tmp_path / "a")]) == 0
    assert "no problem found" in capsys.readouterr().out
    out = tmp_path / "parity"
    assert main(["parity", f"A={tmp_path / 'a'}", f"B={tmp_path / 'b'}", "--out", str(out)]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| B | initial | 3/3 (CoT calls) | 100% | 100% |" in md
    assert "| B | final |  | 100% |  |" in md and "9 debates" in md
