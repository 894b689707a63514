"""Tables, the output folder and number macros (pear.analysis.report); figure style, saving, plots
and layout (pear.analysis.figures)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure

from pear.analysis import compare, figures, metrics, report, stats
from pear.core.methods import METHODS
from pear.store.view import from_records
from record_factory import make_record, make_simple


@pytest.fixture(scope="module", autouse=True)
def style():
    figures.set_style()


@pytest.fixture(scope="module")
def paper_acc():
    return compare.to_internal(compare.load_paper("main_results"))


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


# -- style and saving ----------------------------------------------------------------------

def test_style_settings():
    rc = matplotlib.rcParams
    assert matplotlib.get_backend().lower() == "agg"
    assert (rc["pdf.fonttype"], rc["ps.fonttype"], rc["svg.hashsalt"]) == (42, 42, "pear")
    assert rc["font.size"] == pytest.approx(9.6)   # seaborn "paper" context (0.8 x 12)


def test_every_method_has_its_own_colour():
    assert set(figures.METHOD_COLORS) == set(METHODS)
    assert len({figures.METHOD_COLORS[m] for m in METHODS}) == len(METHODS)


def _figure() -> Figure:
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.plot([0, 1, 2], [0.5, 0.6, 0.7], label="PEAR")
    ax.set_title("round curves")
    return fig


def test_save_figure_writes_pdf_and_png_byte_stable(tmp_path):
    pdf, png = figures.save_figure(_figure(), "curves", out_dir=tmp_path / "a")
    assert (pdf.name, png.name) == ("curves.pdf", "curves.png")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and png.read_bytes().startswith(b"\x89PNG")
    assert len(data) > 1000 and png.stat().st_size > 1000
    assert b"CreationDate" not in data
    pdf2, _ = figures.save_figure(_figure(), "curves", out_dir=tmp_path / "b")
    assert pdf2.read_bytes() == data


@pytest.mark.parametrize("name", ["sub/fig", "..\\fig", "", ".."])
def test_save_figure_refuses_paths(tmp_path, name):
    with pytest.raises(ValueError, match="invalid figure name"):
        figures.save_figure(_figure(), name, out_dir=tmp_path)


def test_figures_dir_is_the_env_or_the_repositorys_never_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(report.FIGURES_ENV, raising=False)
    repo = Path(report.__file__).resolve().parents[2]
    assert report.figures_dir() == repo / "figures"
    monkeypatch.setenv(report.FIGURES_ENV, str(tmp_path / "out"))
    assert report.figures_dir() == tmp_path / "out"
    assert report.figures_dir(tmp_path / "given") == tmp_path / "given"


def test_every_saver_writes_into_the_figures_dir_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv(report.FIGURES_ENV, str(tmp_path / "env"))
    table = pd.DataFrame({"Accuracy": [0.75]}, index=pd.Index(["PEAR"], name="Method"))
    written = [*figures.save_figure(_figure(), "fig"), *report.save_table(table, "tab"),
               report.save_markdown("# Case\n", "case"),
               report.write_numbers({"PearAcc": 0.75}, name="numbers_extra")]
    assert [p.parent for p in written] == [tmp_path / "env"] * 6
    assert [p.name for p in written] == ["fig.pdf", "fig.png", "tab.tex", "tab.md", "case.md",
                                         "numbers_extra.tex"]
    assert (tmp_path / "env" / "case.md").read_text() == "# Case\n"
    assert "| PEAR | 0.750 |" in (tmp_path / "env" / "tab.md").read_text()


@pytest.mark.parametrize("name", ["a/b", "..", ""])
def test_save_markdown_and_write_numbers_refuse_paths(tmp_path, name):
    with pytest.raises(ValueError, match="bare file name"):
        report.save_markdown("# x", name, out_dir=tmp_path)
    with pytest.raises(ValueError, match="bare file name"):
        report.write_numbers({"X": 1}, tmp_path, name=name)


# -- tables --------------------------------------------------------------------------------

def test_main_table_shape_and_order(paper_acc):
    t = report.table_main(paper_acc)
    assert t.shape == (25, 16)                    # 24 settings + average, 8 methods x mean/std
    assert list(dict.fromkeys(t.columns.get_level_values(0))) == [
        "CoT", "CoT-SC", "Clique", "Star", "Chain", "Ring", "Random", "PEAR"]
    assert list(dict.fromkeys(t.index.get_level_values(0))) == [
        "MMLU-Pro", "TruthfulQA", "GSM8K", "MATH-500", "Average"]
    # display names (pear.catalog.models), not the study's two spellings
    assert list(t.loc["MMLU-Pro"].index) == ["Gemma-3-12B", "Llama-3.1-8B", "Qwen2.5-14B",
                                             "Qwen3-30B-A3B", "GPT-5.4-nano", "Claude-Haiku-4.5"]
    assert t.loc[("MMLU-Pro", "Gemma-3-12B"), ("PEAR", "std")] == pytest.approx(0.013)
    assert t.loc[("Average", ""), ("PEAR", "mean")] == pytest.approx(0.7475)


def test_save_table_latex_and_markdown(tmp_path, paper_acc):
    t = report.table_main(paper_acc)
    tex, md = report.save_table(t, "main", caption="Main results.", bold_best="max",
                                out_dir=tmp_path)
    latex = tex.read_text()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert latex.count(rule) == 1
    assert r"\caption{Main results.}" in latex and r"\label{tab:main}" in latex
    assert r"\textbf{0.645}$_{\pm 0.013}$" in latex          # MMLU-Pro, Gemma, PEAR
    assert r"0.375$_{\pm 0.018}$" in latex and r"\textbf{0.375}" not in latex
    # one bold cell per row: PEAR is the best of every setting in the printed table
    values = t.xs("mean", axis=1, level=1).round(3)
    assert latex.count(r"\textbf{") == int(values.eq(values.max(axis=1), axis=0).sum().sum()) == 25
    markdown = md.read_text()
    assert "**0.645** ± 0.013" in markdown and "0.375 ± 0.018" in markdown
    assert markdown.startswith("Main results.")
    assert markdown.count("**") == 2 * 25
    header = [line for line in markdown.splitlines() if line.startswith("| Dataset")][0]
    assert header.split("|")[3].strip() == "CoT"


def test_main_table_without_std_prints_means_only(tmp_path):
    full = compare.to_internal(compare.load_paper("full_dataset"))
    t = report.table_main(full, average=False)
    assert t.shape == (4, 14) and t.xs("std", axis=1, level=1).isna().all().all()
    latex = report.save_table(t, "full", bold_best="max", out_dir=tmp_path)[0].read_text()
    assert r"\pm" not in latex and r"\textbf{0.868}" in latex   # TruthfulQA x Qwen, PEAR


def test_save_table_best_per_column_min_and_missing_values(tmp_path):
    df = pd.DataFrame({"Tokens": [800.0, 32300.0, np.nan], "Calls": [1, 26, 31]},
                      index=pd.Index(["CoT", "PEAR", "Clique"], name="Method"))
    tex, md = report.save_table(df, "cost", bold_best="min", best_axis="column",
                                digits=1, out_dir=tmp_path)
    latex = tex.read_text()
    assert r"\textbf{800.0}" in latex and r"\textbf{1}" in latex
    assert latex.count(r"\textbf{") == 2
    assert "Clique & -- & 31" in latex
    assert "| CoT | **800.0** | **1** |" in md.read_text()
    assert "| Clique | -- | 31 |" in md.read_text()
    with pytest.raises(ValueError, match="bold_best='best'"):
        report.save_table(df, "x", bold_best="best", out_dir=tmp_path)
    with pytest.raises(ValueError, match="invalid table name"):
        report.save_table(df, "a/b", out_dir=tmp_path)


def test_save_table_escapes_latex_in_labels_and_text(tmp_path):
    df = pd.DataFrame({"share_%": ["a & b"]}, index=pd.Index(["m_1"], name="model"))
    latex = report.save_table(df, "esc", out_dir=tmp_path)[0].read_text()
    assert r"share\_\%" in latex and r"a \& b" in latex and r"m\_1" in latex


def test_write_numbers(tmp_path):
    path = report.write_numbers({"PearMeanGain": 4.2, "NQuestions": 200, "BestFixed": "Clique",
                                 "PearAcc": 0.74751}, tmp_path, digits=None)
    lines = path.read_text().splitlines()
    assert path.name == "numbers.tex"
    assert lines[1:] == [r"\newcommand{\PearMeanGain}{4.2}", r"\newcommand{\NQuestions}{200}",
                         r"\newcommand{\BestFixed}{Clique}", r"\newcommand{\PearAcc}{0.74751}"]
    rounded = report.write_numbers({"PearAcc": 0.74751}, tmp_path, digits=3).read_text()
    assert r"\newcommand{\PearAcc}{0.748}" in rounded
    for bad in ("Pear1", "pear_gain", "", "\\Pear"):
        with pytest.raises(ValueError, match="macro name"):
            report.write_numbers({bad: 1.0}, tmp_path)
    with pytest.raises(ValueError, match="'Gain'"):
        report.write_numbers({"Gain": float("nan")}, tmp_path)


def test_table_diagnostics_and_tokens_use_method_order_and_labels():
    diag = report.table_diagnostics(compare.to_internal(compare.load_paper("diagnostics")))
    assert list(diag.columns) == ["CoT", "CoT-SC", "Clique", "Star", "Chain", "Ring", "Random",
                                  "PEAR"]
    assert list(diag.index) == ["W2R (per query)", "R2W (per query)", "Net (per query)",
                                "Acceptance", "Cross-answer", "Source conf.",
                                "Influence entropy"]
    assert diag.loc["Net (per query)", "PEAR"] == pytest.approx(0.243)
    both = pd.DataFrame({"method": ["pear"], "w2r": [0.4], "w2r_pooled": [0.3],
                         "w2r_endpoints": [0.5]})
    named = report.table_diagnostics(both, quantities=metrics.UPDATE_RATES)
    assert named["PEAR"].to_dict() == {"W2R (per query)": 0.4, "W2R (pooled)": 0.3,
                                       "W2R (endpoints)": 0.5}
    assert np.isnan(diag.loc["Acceptance", "CoT"])
    cost = pd.DataFrame({"model": "m", "dataset": ["gsm8k", "math500"] * 2,
                         "method": ["pear", "pear", "cot", "cot"],
                         "tokens_per_example": [30000.0, 34000.0, 700.4, 900.0],
                         "cached_tokens": [0.0] * 4, "calls_per_example": [26.0] * 4,
                         "parse_failure_rate": [0.01, 0.03, 0.0, 0.0]})
    tok = report.table_tokens(cost)
    assert list(tok.columns) == ["CoT", "PEAR"]
    assert tok.loc["Tokens / example"].tolist() == [800, 32000]
    assert tok.loc["Parse failures", "PEAR"] == pytest.approx(0.02)
    assert "Truncated calls" not in tok.index   # records that do not say
    tok = report.table_tokens(cost.assign(truncation_rate=[0.1, 0.3, 0.0, 0.0]))
    assert tok.loc["Truncated calls", "PEAR"] == pytest.approx(0.2)


def test_table_significance_from_the_printed_table(tmp_path):
    sig = compare.to_internal(compare.load_paper("significance")).assign(best_baseline="clique")
    t = report.table_significance(sig)
    assert t.index[0] == ("TruthfulQA", "Qwen2.5-14B")
    row = t.loc[("TruthfulQA", "Qwen2.5-14B")]
    assert row["p (exact)"] == "0.0079**" and row["Win rate [95% CI]"] == "0.702 [0.560, 0.813]"
    assert (row["b"], row["c"], row["Best fixed"]) == (33, 14, "Clique")
    latex = report.save_table(t, "sig", out_dir=tmp_path)[0].read_text()
    assert "& 33 & 14 &" in latex and "0.0079**" in latex
    printed = report.table_significance(compare.to_internal(compare.load_paper("significance")))
    assert "Best fixed" not in printed.columns and printed.shape == (8, 7)


def test_table_significance_without_discordant_pairs_prints_a_dash(tmp_path):
    # PEAR and Ring agree on all 4 questions (3 right, 1 wrong): b = c = 0
    recs = [make_simple(q < 3, method=m, question_id=f"q{q}") for m in ("pear", "ring")
            for q in range(4)]
    sig = stats.significance(from_records(recs).debates)
    assert (sig["b"].item(), sig["c"].item()) == (0, 0) and np.isnan(sig["win_rate"].item())
    row = report.table_significance(sig).loc[("GSM8K", "m")]
    assert row["Win rate [95% CI]"] == "–" and row["p (exact)"] == "1.0000"
    assert (row["Acc. best"], row["Acc. PEAR"], row["Best fixed"]) == (0.75, 0.75, "Ring")
    tex, md = report.save_table(report.table_significance(sig), "sig0", out_dir=tmp_path)
    assert "nan" not in tex.read_text() + md.read_text()
    assert "| GSM8K | m | Ring | 0.750 | 0.750 | 0 | 0 | 1.0000 | – | -- |" in md.read_text()


# -- plots ---------------------------------------------------------------------------------

def _round_records():
    recs = []
    for ds in ("gsm8k", "math500"):
        for q in range(3):
            recs.append(make_record([["1", "0", "0"], ["1", "1", "0"], ["1", "1", "1"]], "1",
                                    dataset=ds, question_id=f"q{q}"))
            recs.append(make_simple(q == 0, method="cot", dataset=ds, question_id=f"q{q}"))
    return recs


def _round_accuracy():
    t = from_records(_round_records())
    return metrics.round_accuracy(t.debates, t.rounds)


def test_plot_round_curves_panels_source_and_simulated_mark():
    ra = _round_accuracy()
    fig = figures.plot_round_curves(ra, title="Round-wise accuracy",
                                   source="backend=simulated, model=sim-1", simulated=True)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    texts = _texts(fig)
    assert texts.count("simulated agents") == 2
    assert "simulated agents | backend=simulated, model=sim-1" in texts
    assert "Round-wise accuracy" in texts
    pear_line = [l for l in fig.axes[0].get_lines() if l.get_label() == "PEAR"][0]
    assert pear_line.get_xdata().tolist() == [0, 1, 2]
    assert pear_line.get_ydata().tolist() == [0.0, 1.0, 1.0]
    assert to_rgba(pear_line.get_color()) == to_rgba(figures.METHOD_COLORS["pear"])
    cot_line = [l for l in fig.axes[0].get_lines() if l.get_label() == "CoT"][0]
    assert cot_line.get_ydata().tolist() == pytest.approx([1 / 3] * 3)
    plain = _texts(figures.plot_round_curves(ra, source="backend=vllm, model=Qwen2.5-14B"))
    assert "backend=vllm, model=Qwen2.5-14B" in plain
    assert not any("simulated" in t for t in plain)


def test_plot_on_a_given_axis_needs_one_dataset():
    ra = _round_accuracy()
    fig = Figure()
    ax = fig.subplots()
    assert figures.plot_round_curves(ra[ra["dataset"] == "gsm8k"], ax=ax) is fig
    with pytest.raises(ValueError, match="2 panels"):
        figures.plot_round_curves(ra, ax=ax)
    with pytest.raises(ValueError, match="round"):
        figures.plot_round_curves(ra.drop(columns="round"))


def test_plot_ablation_bars_in_variant_order():
    methods = ["random", "pear_T", "pear_I", "pear_L", "pear_TI", "pear_TL", "pear_IL", "pear"]
    acc = pd.DataFrame({"model": "m", "dataset": np.repeat(["gsm8k", "math500"], 8),
                        "method": methods * 2, "accuracy": np.linspace(0.5, 0.8, 16),
                        "std": 0.01})
    fig = figures.plot_ablation(acc, simulated=True, source="sim")
    ax = fig.axes[0]
    assert len(ax.patches) == 16
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "Random", "PEAR-T", "PEAR-I", "PEAR-L", "PEAR-TI", "PEAR-TL", "PEAR-IL", "PEAR"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["GSM8K", "MATH-500"]
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights == pytest.approx(sorted(np.linspace(0.5, 0.8, 16)))
    assert "simulated agents" in _texts(fig)


def test_plot_pareto_marks_the_frontier():
    df = pd.DataFrame({"dataset": "gsm8k", "method": ["cot", "cot_sc", "clique", "chain", "pear"],
                       "tokens_per_example": [800, 3100, 36700, 24800, 32300],
                       "accuracy": [0.555, 0.586, 0.690, 0.681, 0.748]})
    fig = figures.plot_pareto(df, source="paper numbers")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    ringed = {c.get_label(): c.get_edgecolor().shape[0] > 0 and c.get_edgecolor()[0][3] > 0
              for c in ax.collections}
    assert ringed == {"CoT": True, "CoT-SC": True, "Clique": False, "Chain": True, "PEAR": True}
    frontier = [l for l in ax.get_lines() if l.get_linestyle() == "--"][0]
    assert frontier.get_xdata().tolist() == [800, 3100, 24800, 32300]


def test_plot_accuracy_bars(paper_acc):
    fig = figures.plot_accuracy_bars(paper_acc)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "PEAR"
    assert ax.patches[-1].get_height() == pytest.approx(0.7475)


# -- figure layout (pear.analysis.figures) ----------------------------------------------------------

def test_with_average_adds_the_mean_over_datasets():
    df = pd.DataFrame({"model": "m", "dataset": ["gsm8k", "math500"] * 2, "method": "pear",
                       "round": [0, 0, 1, 1], "accuracy": [0.4, 0.6, 0.6, 1.0],
                       "std": [0.1] * 4})
    out = figures.with_average(df)
    assert len(out) == 6 and out.iloc[:4].equals(df)
    avg = out.query("dataset == 'Average'")
    assert avg["round"].tolist() == [0, 1]
    assert avg["accuracy"].round(6).tolist() == [0.5, 0.8] and avg["std"].isna().all()


def test_facet_draws_one_panel_per_model_and_dataset_with_provenance():
    df = pd.DataFrame({"model": ["m1"] * 4 + ["m2"] * 4, "dataset": ["math500", "gsm8k"] * 4,
                       "method": (["pear"] * 2 + ["random"] * 2) * 2,
                       "accuracy": [0.5, 0.6, 0.4, 0.3, 0.7, 0.8, 0.2, 0.1], "std": 0.0})
    fig = figures.facet(figures.plot_ablation, figures.with_average(df), rows="model",
                        cols="dataset", title="T", source="backend simulated; model m",
                        simulated=True)
    visible = [a for a in fig.axes if a.get_visible()]
    assert len(visible) == 6   # 2 models x (GSM8K, MATH-500, Average)
    assert [a.get_xticklabels()[0].get_text() for a in visible[:3]] == [
        "GSM8K", "MATH-500", "Average"]   # the study's dataset order, Average last
    assert visible[0].get_title().startswith("m1") and visible[3].get_title().startswith("m2")
    # m1 on GSM8K: PEAR 0.6, Random 0.3; on the Average panel (0.55, 0.35)
    assert sorted(p.get_height() for p in visible[0].patches) == pytest.approx([0.3, 0.6])
    assert sorted(p.get_height() for p in visible[2].patches) == pytest.approx([0.35, 0.55])
    assert sum("simulated agents" in t for t in _texts(fig)) >= 6
    footer = "simulated agents | backend simulated; model m"
    assert [t.get_text() for t in fig.texts] == ["T", footer]  # suptitle and one footer
    assert len(fig.legends) == 1


@pytest.mark.parametrize("p, marker", [(0.0004, "***"), (0.001, "**"), (0.0079, "**"),
                                       (0.01, "*"), (0.0444, "*"), (0.05, ""), (0.2, ""),
                                       (float("nan"), "")])
def test_stars(p, marker):
    assert report.stars(p) == marker
