"""Every metric of the study computed the former way (records in memory -> DataFrames ->
metrics) and from the columnar view give the same values on one simulated run."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import legacy_dictpath as old
from pear import metrics, stats, view
from pear.cli import make_backend
from pear.experiment import preset, run
from pear.records import read_records


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    exp = preset("sim", seeds=(0, 1), n_questions=5, full_datasets=("truthfulqa",),
                 full_n_questions=8, rounds=3)
    out = tmp_path_factory.mktemp("run")
    run(exp, make_backend("simulated", exp=exp), out, progress=False)
    recs = read_records(out)
    frames = old.debates_frame(recs), old.agent_rounds_frame(recs), old.critiques_frame(recs)
    return frames, view.load(out)


def same(a: pd.DataFrame, b: pd.DataFrame, cols, keys=metrics.GROUP) -> None:
    a = a.sort_values(list(keys)).reset_index(drop=True)
    b = b.sort_values(list(keys)).reset_index(drop=True)
    assert len(a) == len(b) > 0
    for k in keys:
        assert a[k].astype(str).tolist() == b[k].astype(str).tolist()
    for c_old, c_new in cols.items():
        x, y = a[c_old].to_numpy(float), b[c_new].to_numpy(float)
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-15, err_msg=c_old)


def test_accuracy_and_cost(both):
    (deb, _, _), v = both
    assert len(v.debates) == len(deb)
    same(old.accuracy(deb), metrics.accuracy(v.debates),
         {c: c for c in ("accuracy", "std", "n_seeds", "n_questions")})
    same(old.seed_accuracy(deb), metrics.seed_accuracy(v.debates), {"accuracy": "accuracy"},
         keys=[*metrics.GROUP, "seed"])
    cols = ("tokens_per_example", "prompt_tokens", "completion_tokens", "cached_tokens",
            "calls_per_example", "parse_failure_rate", "n_debates")
    same(old.costs(deb), metrics.costs(v.debates), {c: c for c in cols})


def test_round_accuracy(both):
    (_, ar, _), v = both
    same(old.round_accuracy(ar), metrics.round_accuracy(v.debates, v.rounds),
         {c: c for c in ("accuracy", "std", "n_seeds", "n_questions")},
         keys=[*metrics.GROUP, "round"])


def test_diagnostics(both):
    (deb, ar, cr), v = both
    pooled = {"w2r": "w2r_pooled", "r2w": "r2w_pooled", "net": "net_pooled"}
    same(old.update_rates(ar), metrics.update_rates(v.debates, v.agent_rounds),
         {**pooled, **{c: c for c in ("updates", "from_wrong", "from_right", "w2r_count",
                                       "r2w_count")}})
    same(old.critique_rates(cr, ar), metrics.critique_rates(v.debates, v.edges),
         {c: c for c in ("edges", "decisions", "acceptance", "cross_answer",
                         "source_confidence")})
    same(old.mean_influence_entropy(deb), metrics.mean_influence_entropy(v.debates,
                                                                          v.agent_rounds),
         {"influence_entropy": "influence_entropy"})
    same(old.diagnostics(deb, ar, cr),
         metrics.diagnostics(v.debates, v.agent_rounds, v.edges),
         {**pooled, **{c: c for c in ("acceptance", "cross_answer", "source_confidence",
                                       "influence_entropy")}})


def test_paired_and_significance(both):
    (deb, _, _), v = both
    a = old.paired(deb, "pear", "ring")
    b = metrics.paired(v.debates, "pear", "ring")
    assert a.astype(str).values.tolist() == b.astype(str).values.tolist()
    x, y = stats.significance(deb), stats.significance(v.debates)
    pd.testing.assert_frame_equal(x, y)
