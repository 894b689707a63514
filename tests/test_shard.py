"""Scale-out: `--shard i/N` partitions a grid deterministically, `pear merge` combines the
parts (with manifest checks), and N merged shards equal one unsharded run."""
from __future__ import annotations


import pytest

from pear import cli
from pear.runs.grid import preset
from pear.runs.jobs import jobs
from pear.runs.runner import run
from pear.store.manifest import read as read_manifest
from pear.core.methods import METHODS
from pear.runs.merge import merge
from pear.store.records import TIMING_FIELDS, read_records


def _grid(**over):
    base = dict(datasets=("gsm8k", "mmlu_pro"), methods=METHODS, n_questions=3, seeds=(0, 1),
                rounds=2, full_datasets=("truthfulqa",), full_n_questions=4, chunk_questions=2)
    return preset("sim", **{**base, **over})


def _key(j):
    return (j.seed, j.question.dataset, j.question.id, j.method.name)


def test_shards_partition_the_grid_by_question_groups():
    whole = jobs(_grid())
    parts = [jobs(_grid(shard=(i, 3))) for i in (1, 2, 3)]
    keys = [{_key(j) for j in p} for p in parts]
    assert sum(map(len, parts)) == len(whole) == len(set().union(*keys))  # disjoint, covering
    assert set().union(*keys) == {_key(j) for j in whole}
    for p in parts:  # whole (seed, question) groups: round 0 is never split
        groups = {(j.seed, j.question.dataset, j.question.id) for j in p}
        assert all(sum(1 for j in whole if (j.seed, j.question.dataset, j.question.id) == g)
                   == sum(1 for j in p if (j.seed, j.question.dataset, j.question.id) == g)
                   for g in groups)
    sizes = sorted(map(len, parts))
    assert sizes[-1] - sizes[0] <= 14  # balanced within one group of debates
    assert [_key(j) for j in jobs(_grid(shard=(2, 3)))] == [_key(j) for j in parts[1]]


def _records(path):
    return {r["debate_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_records(path)}


def test_merged_shards_equal_one_unsharded_run(tmp_path, capsys):
    common = ["run", "--preset", "sim", "--backend", "simulated", "--datasets",
              "gsm8k,mmlu_pro", "--n-questions", "3", "--seeds", "0,1", "--rounds", "2",
              "--quiet"]
    assert cli.main(common + ["--out", str(tmp_path / "whole"), "--no-full"]) == 0
    for i in (1, 2, 3):
        assert cli.main(common + ["--out", str(tmp_path / f"s{i}"), "--no-full",
                                  "--shard", f"{i}/3"]) == 0
    assert read_manifest(tmp_path / "s2")["shard"] == "2/3"
    capsys.readouterr()
    assert cli.main(["merge", str(tmp_path / "merged")]
                    + [str(tmp_path / f"s{i}") for i in (3, 1, 2)]) == 0
    # 2 datasets x 3 questions x 2 seeds x (14 methods + sc@10/20/40/64)
    assert "216 debates merged" in capsys.readouterr().out
    whole, merged = _records(tmp_path / "whole"), _records(tmp_path / "merged")
    assert len(whole) == 2 * 3 * 2 * (14 + 4)  # datasets x questions x seeds x methods
    assert merged == whole  # same records apart from timing
    m = read_manifest(tmp_path / "merged")
    assert m["shard"] is None and m["complete"] is True and m["missing_shards"] == []
    assert sorted(f["shard"] for f in m["merged_from"]) == ["1/3", "2/3", "3/3"]
    # the merged directory resumes like the unsharded run: nothing left to do
    capsys.readouterr()
    assert cli.main(common + ["--out", str(tmp_path / "merged"), "--no-full"]) == 0
    assert capsys.readouterr().out.startswith("0 debates written, 216 already done")


def test_missing_shard_is_reported_and_resuming_finishes_it(tmp_path, capsys):
    exp = _grid(full_datasets=(), seeds=(0,))
    from pear.runs.factory import make_backend
    for i in (1, 3):
        e = _grid(full_datasets=(), seeds=(0,), shard=(i, 3))
        run(e, make_backend("simulated", exp=e), tmp_path / f"s{i}", progress=False)
    s = merge(tmp_path / "m", [tmp_path / "s1", tmp_path / "s3"])
    assert s.missing_shards == [2] and not s.complete
    assert read_manifest(tmp_path / "m")["complete"] is False
    summary = run(exp, make_backend("simulated", exp=exp), tmp_path / "m", progress=False)
    assert summary.written == len(jobs(_grid(full_datasets=(), seeds=(0,), shard=(2, 3))))
    assert summary.complete


def test_merge_refuses_runs_of_different_settings(tmp_path, capsys):
    from pear.runs.factory import make_backend
    a, b = _grid(seeds=(0,), full_datasets=()), _grid(seeds=(0,), full_datasets=(), rounds=3)
    run(a, make_backend("simulated", exp=a), tmp_path / "a", progress=False)
    run(b, make_backend("simulated", exp=b), tmp_path / "b", progress=False)
    assert cli.main(["merge", str(tmp_path / "m"), str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different settings" in err and "rounds" in err
    assert not (tmp_path / "m").exists()  # nothing half-written


def test_merge_refuses_repeated_shards_and_a_non_empty_target(tmp_path):
    from pear.runs.factory import make_backend
    e = _grid(seeds=(0,), full_datasets=(), shard=(1, 2))
    run(e, make_backend("simulated", exp=e), tmp_path / "s1", progress=False)
    with pytest.raises(ValueError, match="shard 1/2 is given twice"):
        merge(tmp_path / "m", [tmp_path / "s1", tmp_path / "s1"])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(ValueError, match="not empty"):
        merge(tmp_path / "full", [tmp_path / "s1"])
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        merge(tmp_path / "m2", [tmp_path / "nothing-here"])


def test_a_shard_directory_cannot_be_resumed_as_another_shard(tmp_path):
    from pear.runs.factory import make_backend
    e1 = _grid(seeds=(0,), full_datasets=(), shard=(1, 2))
    run(e1, make_backend("simulated", exp=e1), tmp_path / "s", progress=False)
    e2 = _grid(seeds=(0,), full_datasets=(), shard=(2, 2))
    with pytest.raises(ValueError, match="shard: recorded '1/2', requested '2/2'"):
        run(e2, make_backend("simulated", exp=e2), tmp_path / "s", progress=False)


@pytest.mark.parametrize("bad", ["3/2", "0/2", "1/0", "a/b", "2"])
def test_bad_shard_is_one_line_exit_2(bad, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--backend", "simulated", "--out", str(tmp_path / "x"), "--shard", bad])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and repr(bad) in err
    assert not (tmp_path / "x").exists()
