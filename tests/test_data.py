"""Offline benchmark loading: sizes, seeded subsets, seeded option shuffles, errors."""
from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from pear.tasks import benchmarks as data
from pear.core.prompts import problem_block

BENCH = Path(__file__).resolve().parent.parent / "data" / "benchmarks"


def _source(file: str) -> dict[str, dict]:
    """The raw records of a benchmark file, read without pear.tasks.benchmarks."""
    opener = gzip.open if file.endswith(".gz") else open
    with opener(BENCH / file, "rt", encoding="utf-8") as fh:
        return {str(r["id"]): r for r in map(json.loads, fh)}


@pytest.mark.parametrize("name, size", [("gsm8k", 1319), ("math500", 500), ("truthfulqa", 817),
                                        ("mmlu_pro", 12032)])
def test_full_load_sizes_and_unique_ids(name: str, size: int) -> None:
    qs = data.load(name)
    assert len(qs) == size
    assert len({q.id for q in qs}) == size
    assert {q.dataset for q in qs} == {name}
    assert all(q.gold for q in qs), "every question has a gold answer"
    assert all(q.gold == q.gold_raw.strip() for q in qs if q.choices is None)
    assert all(q.question.strip() in problem_block(q) for q in qs)


def test_full_load_is_source_order() -> None:
    src = list(_source(data.FILES["math500"]))
    assert [q.id for q in data.load("math500")] == src


def test_sample_is_seeded_stable_and_in_source_order() -> None:
    a = data.load("gsm8k", n=200, seed=0)
    b = data.load("gsm8k", n=200, seed=0)
    c = data.load("gsm8k", n=200, seed=1)
    assert [q.id for q in a] == [q.id for q in b]
    assert [q.id for q in a] != [q.id for q in c]
    assert len(a) == 200 and len({q.id for q in a}) == 200
    index = [q.meta["source_index"] for q in a]
    assert index == sorted(index)
    assert index != list(range(200)), "a sample, not the first 200"
    # the same ids on every machine (sha256-derived seed, numpy Generator)
    assert [q.id for q in a[:5]] == PINNED_GSM8K_SEED0


PINNED_GSM8K_SEED0 = ["gsm8k-0002", "gsm8k-0005", "gsm8k-0019", "gsm8k-0025", "gsm8k-0029"]


def test_sample_spreads_over_the_set() -> None:
    index = [q.meta["source_index"] for q in data.load("gsm8k", n=200, seed=3)]
    assert index[0] < 100 and index[-1] > 1200  # uniform over 0..1318, not a block


def test_sample_of_the_full_size_is_the_full_set() -> None:
    full = [q.id for q in data.load("math500")]
    assert [q.id for q in data.load("math500", n=500, seed=7)] == full


@pytest.mark.parametrize("kwargs, named", [
    (dict(name="gsm8k_typo"), "'gsm8k_typo'"),
    (dict(name="gsm8k", n=1320), "n=1320"),
    (dict(name="gsm8k", n=0), "n=0"),
    (dict(name="gsm8k", n=-3), "n=-3"),
    (dict(name="gsm8k", n=2.5), "n=2.5"),
    (dict(name="math500", n=10, seed="x"), "seed='x'"),
])
def test_bad_arguments_raise_naming_the_value(kwargs: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        data.load(**kwargs)


def test_truthfulqa_gold_letter_points_at_the_correct_choice() -> None:
    src = _source(data.FILES["truthfulqa"])
    qs = data.load("truthfulqa")
    for q in qs:
        rec = src[q.id]
        correct = rec["choices"][rec["answer_index"]]
        assert q.gold_raw == correct
        assert q.choices[ord(q.gold) - ord("A")] == correct
        assert sorted(q.choices) == sorted(rec["choices"])
        assert q.choices == tuple(rec["choices"][i] for i in q.permutation)
        assert f"{q.gold}. {correct}" in problem_block(q)
    letters = Counter(q.gold for q in qs)
    assert len(letters) >= 4
    assert max(letters.values()) / len(qs) < 0.4, letters  # not all "A" as in the source


def test_mmlu_pro_gold_letter_points_at_the_source_answer_text() -> None:
    src = _source(data.FILES["mmlu_pro"])
    qs = data.load("mmlu_pro", n=600, seed=0)
    for q in qs:
        rec = src[q.id]
        correct = rec["choices"][ord(rec["answer"]) - ord("A")]
        assert q.choices[ord(q.gold) - ord("A")] == correct
        assert q.choices == tuple(rec["choices"][i] for i in q.permutation)
        assert q.gold_raw == rec["answer"]
    assert len(Counter(q.gold for q in qs)) >= 8


def test_mmlu_pro_keeps_the_benchmarks_option_order() -> None:
    src = _source(data.FILES["mmlu_pro"])
    for q in data.load("mmlu_pro", n=300, seed=1):
        assert q.choices == tuple(src[q.id]["choices"])
        assert q.gold == src[q.id]["answer"].strip().upper()


def test_mmlu_pro_letter_wins_over_answer_index_quirk() -> None:
    q = data.get_question("mmlu_pro", "3983")  # source: answer "C", answer_index 1
    assert q.choices[ord(q.gold) - ord("A")] == "N—H"


def test_option_shuffle_depends_on_question_not_run_seed() -> None:
    a = {q.id: q for q in data.load("truthfulqa", n=400, seed=0)}
    b = {q.id: q for q in data.load("truthfulqa", n=400, seed=1)}
    common = set(a) & set(b)
    assert len(common) > 100
    assert all(a[i].choices == b[i].choices and a[i].gold == b[i].gold for i in common)
    assert data.get_question("truthfulqa", "truthfulqa-005") == a.get("truthfulqa-005",
                                                                    b.get("truthfulqa-005"))


def test_open_ended_questions() -> None:
    q = data.get_question("math500", "test/precalculus/807.json")
    assert q.choices is None and q.permutation is None
    assert q.gold_raw == r"\left( 3, \frac{\pi}{2} \right)"
    assert q.gold == q.gold_raw  # as written: grading and equivalence live in pear.tasks.grading
    assert q.meta["level"] == 2 and q.meta["subject"] == "Precalculus"
    assert problem_block(q).endswith("Problem:\n" + q.question.strip())
    g = data.load("gsm8k")[0]
    assert (g.id, g.gold, g.gold_raw) == ("gsm8k-0000", "18", "18")


def test_question_is_frozen() -> None:
    q = data.load("gsm8k")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.gold = "19"  # type: ignore[misc]
    assert hash(q) == hash(data.load("gsm8k")[0])


def test_get_question_unknown_id() -> None:
    with pytest.raises(ValueError, match="'nope-1'"):
        data.get_question("gsm8k", "nope-1")
    with pytest.raises(ValueError, match="'mmlu'"):
        data.get_question("mmlu", "70")


def test_sha256_files_match_sources_md() -> None:
    assert data.sha256_files() == {
        "gsm8k.jsonl": "ec5b6f708c61f9fa1a95677c0a8753463d2299545389ebbc1878ffca0daa7b35",
        "math500.jsonl": "2cb78cfe1f54189f6b5f79536b84147f8c226f4065fe2e676bcc457fc4c3772c",
        "truthfulqa_mc1.jsonl": "3f6577356a15d495bd653ab61649a3e05d9c166d35f658a0408fa2635744e13e",
        "mmlu_pro.jsonl.gz": "40e44771f1f6d0b972ccea0b8396a63a46bfb10ac70101981647727fdcab5dbc",
    }


def test_data_dir_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"id": f"g{i}", "question": f"What is {i}+1?", "choices": None, "answer": str(i + 1),
             "meta": {"source_index": i}} for i in range(3)]
    (tmp_path / "gsm8k.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("PEAR_DATA_DIR", str(tmp_path))
    assert data.data_dir() == tmp_path.resolve()
    assert [q.gold for q in data.load("gsm8k")] == ["1", "2", "3"]
    with pytest.raises(FileNotFoundError, match="math500.jsonl"):
        data.load("math500")
    monkeypatch.delenv("PEAR_DATA_DIR")
    assert len(data.load("gsm8k")) == 1319


def test_stable_seed_is_sha256_of_the_parts() -> None:
    assert data.stable_seed("gsm8k", 0) == 0x79D25BC32B9E5F51  # sha256(b"gsm8k:0")[:8]
    assert data.stable_seed("gsm8k", 1) != data.stable_seed("gsm8k", 0)


def test_benchmark_files_read_the_same_without_msgspec(monkeypatch):
    path = str(data._path("math500"))
    fast = data._records(path)
    monkeypatch.setitem(sys.modules, "msgspec.json", None)  # as in the numpy-only layers
    assert data._records(path) == fast and len(fast) == 500
    assert fast[0]["id"] and isinstance(fast[0]["answer"], str)


def test_a_sample_makes_only_its_own_questions(monkeypatch):
    """A grid's few questions of MMLU-Pro's 12,032 are the only ones made (in every forked
    worker too); the sample and the id lookup give the full set's very questions."""
    data._source.cache_clear()
    data._questions.cache_clear()
    made, real = [], data._question
    monkeypatch.setattr(data, "_question", lambda name, rec: made.append(str(rec["id"]))
                        or real(name, rec))
    picked = data.load("mmlu_pro", n=3, seed=0)
    assert [q.id for q in picked] == made and len(made) == 3
    assert data.get_question("mmlu_pro", picked[1].id) is picked[1] and len(made) == 3
    full = data.load("mmlu_pro")
    assert len(made) == len(full) == 12032
    assert all(full[full.index(q)] is q for q in picked)
    assert data.load("mmlu_pro", n=3, seed=0) == picked


def test_a_gzip_file_reads_as_its_text(tmp_path):
    rows = [{"id": f"g{i}", "question": f"What is {i}+1?\r\nSay it.", "choices": None,
             "answer": str(i + 1)} for i in range(3)]
    text = "".join(json.dumps(r) + "\n" for r in rows) + "\n"
    (tmp_path / "plain.jsonl").write_text(text)
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert data._records(str(tmp_path / "packed.jsonl.gz")) \
        == data._records(str(tmp_path / "plain.jsonl")) == tuple(rows)
