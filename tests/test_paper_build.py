"""The glue of pear.paper the notebooks call, and the build's argument checks."""
from __future__ import annotations

import re

import matplotlib
import pandas as pd
import pytest

from pear import paper, report
from pear.experiment import preset, run
from pear.records import RecordWriter


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    """A tiny simulated grid: GSM8K and TruthfulQA, 3 methods, 2 seeds, 3 questions, and
    TruthfulQA's full set for CoT only."""
    from pear.cli import make_backend
    exp = preset("smoke", datasets=("gsm8k", "truthfulqa"), methods=("cot", "ring", "pear"),
                 seeds=(0, 1), n_questions=3, full_datasets=())
    out = tmp_path_factory.mktemp("runs")
    run(exp, make_backend("simulated", exp=exp), out, progress=False)
    return exp, out


def test_experiment_takes_the_notebook_parameters():
    e = paper.experiment("sim", seeds="2, 3", n_questions=7, model="org/m", backend="vllm")
    assert (e.seeds, e.n_questions, e.models) == ((2, 3), 7, ("org/m",))
    assert paper.experiment("sim").seeds == preset("sim").seeds  # "" / 0 = the preset's
    assert paper.experiment("sim", model="x.gguf", backend="llamacpp").models == ()
    with pytest.raises(ValueError, match="invalid seeds '0,a'"):
        paper.experiment("sim", seeds="0,a")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        paper.experiment("sim", backend="gpu")


def test_build_rejects_bad_arguments_before_starting_a_kernel():
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        paper.build(backend="nope")
    with pytest.raises(ValueError, match="unknown preset 'big'"):
        paper.build(backend="simulated", preset="big")
    with pytest.raises(ValueError, match="--only '42' matches no notebook"):
        paper.build(backend="simulated", only="01,42")
    assert paper._notebooks("0") == list(paper.NOTEBOOKS)
    assert paper._notebooks("03_abl, 01") == ["01_main_results", "03_ablation"]


def test_runs_path_defaults_under_the_repository():
    assert paper.runs_path("", "sim", "simulated") == paper.REPO_ROOT / "data/runs/sim-simulated"
    assert paper.runs_path("/tmp/x", "sim", "simulated").as_posix() == "/tmp/x"


def test_load_results_selects_the_grid_and_names_missing_cells(sim_run, tmp_path):
    exp, out = sim_run
    res = paper.load_results(out, exp)
    assert len(res.debates) == 2 * 3 * 3 * 2  # datasets x methods x seeds x questions
    assert res.simulated and res.label.startswith("simulated agents (backend simulated")
    assert "3 questions per dataset (question seed 0) x 2 seeds" in res.caption("T.")
    # a narrower grid reads a subset of the same records
    one = paper.load_results(out, preset("smoke", datasets=("gsm8k",), methods=("pear",),
                                         seeds=(1,), n_questions=3, full_datasets=()))
    assert set(one.debates["method"]) == {"pear"} and set(one.debates["seed"]) == {1}
    # texts are dropped unless asked for
    assert all(a["reasoning"] == "" for a in res.records[0]["rounds_data"][0]["agents"])
    # a method never run is an error naming the cell
    wider = preset("smoke", datasets=("gsm8k",), methods=("cot", "star"), seeds=(0,),
                   n_questions=3, full_datasets=())
    with pytest.raises(FileNotFoundError, match=r"x gsm8k x star"):
        paper.load_results(out, wider)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        paper.load_results(tmp_path / "none", exp)
    with pytest.raises(ValueError, match="runs no full dataset"):
        paper.load_results(out, exp, scope="full")


def test_run_experiments_replay_needs_records(tmp_path, sim_run):
    with pytest.raises(FileNotFoundError, match="backend 'replay' needs recorded debates"):
        paper.run_experiments("replay", sim_run[0], tmp_path)
    assert paper.run_experiments("replay", *sim_run) is None


def test_with_average_adds_the_mean_over_datasets():
    df = pd.DataFrame({"model": "m", "dataset": ["gsm8k", "math500"] * 2, "method": "pear",
                       "round": [0, 0, 1, 1], "accuracy": [0.4, 0.6, 0.6, 1.0],
                       "std": [0.1] * 4})
    avg = paper.with_average(df).query("dataset == 'Average'")
    assert avg["round"].tolist() == [0, 1]
    assert avg["accuracy"].round(6).tolist() == [0.5, 0.8] and avg["std"].isna().all()


def test_beside_paper_matches_model_names_or_pools_over_models():
    acc = pd.DataFrame({"dataset": "truthfulqa", "method": ["pear", "cot"], "accuracy": 0.5,
                        "model": "meta-llama/Llama-3.1-8B-Instruct"})
    table, note = paper.beside_paper(acc, "full_dataset", ["accuracy"])
    assert note == ""
    row = table.loc[("TruthfulQA", "Llama-3.1-8B", "PEAR")]
    assert row["paper"] == 0.824 and row["diff"] == pytest.approx(0.5 - 0.824)
    table, note = paper.beside_paper(acc.assign(model="sim-1"), "full_dataset", ["accuracy"])
    assert "averaged over its 2 models" in note
    assert table.loc[("TruthfulQA", "PEAR"), "paper"] == pytest.approx((0.868 + 0.824) / 2)


def test_headline_numbers_recompute_the_papers_quoted_numbers():
    from pear import metrics
    pap = metrics.to_internal(metrics.load_paper("main_results"))
    numbers = paper.headline_numbers(pap.assign(std=0.0))
    assert (numbers["diff"].dropna().abs() < 1e-9).all()  # the table against itself
    macros = paper.number_macros(numbers)
    # data/paper/README.md: the table gives PEAR 0.748, gain 4.2, over Random 5.7, Chain 6.6
    assert macros["PaperMeanAccPEAR"] == "0.748" and macros["PaperGainBestFixed"] == "4.2"
    assert macros["GainOverRandom"] == "5.7" and macros["GainOverChain"] == "6.6"
    assert macros["GainBestFixedMATHFiveZeroZero"] == "5.3"
    assert all(re.fullmatch(r"[A-Za-z]+", k) for k in macros)


def test_rank_agreement_over_shared_methods():
    sub = pd.DataFrame({"model": "m", "dataset": "math500", "method": ["a", "b", "c", "d"],
                        "accuracy": [0.1, 0.2, 0.3, 0.4]})
    full = sub.assign(accuracy=[0.2, 0.1, 0.3, 0.5]).iloc[:3]
    out = paper.rank_agreement(sub, full)
    assert out[["n_methods", "rho"]].values.tolist() == [[3, 0.5]]
    assert pd.isna(paper.rank_agreement(sub, full.iloc[:2])["rho"]).all()


def test_facet_draws_one_panel_per_model_and_dataset_with_provenance():
    report.set_style()
    df = pd.DataFrame({"model": ["m1"] * 4 + ["m2"] * 4, "dataset": ["gsm8k", "math500"] * 4,
                       "method": (["pear"] * 2 + ["random"] * 2) * 2, "accuracy": 0.5,
                       "std": 0.0})
    fig = paper.facet(report.plot_ablation, df, rows="model", cols="dataset", title="T",
                      source="backend simulated; model m", simulated=True)
    visible = [a for a in fig.axes if a.get_visible()]
    assert len(visible) == 4
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    assert sum("simulated agents" in t for t in texts) >= 4
    footer = "simulated agents | backend simulated; model m"
    assert [t.get_text() for t in fig.texts] == ["T", footer]  # suptitle and one footer
    assert len(fig.legends) == 1


def test_save_markdown_refuses_paths(tmp_path):
    assert paper.save_markdown("# x", "case", out_dir=tmp_path).read_text() == "# x"
    with pytest.raises(ValueError, match="bare name"):
        paper.save_markdown("# x", "a/b", out_dir=tmp_path)


def test_case_study_from_simulated_records_renders(sim_run):
    exp, out = sim_run
    res = paper.load_results(out, exp, keep_text=True)
    rec, why = paper.case_study(res.records)
    text = paper.render_transcript(rec)
    assert "Simulated agents" in text and "**Final answer:" in text
    assert re.search(r"\*\*(ACCEPT|REJECT)\*\*", text)
