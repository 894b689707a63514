"""Reviewer-ready outputs: model display names and the evidence mark in tables and captions,
figure quality (no overlapping labels at single and double column widths, accuracy inside
[0, 1], readable log ticks), Holm-adjusted p-values and the paired bootstrap, the static
results site and its debate browser (pear.paper.site), and ``pear show RUN --debate ID``."""
from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from pear.analysis import stats
from pear import cli
from pear.analysis import figures, report, stats, transcript
from pear.catalog import labels
from pear.paper import site, study
from pear.store import view
from pear.runs.grid import preset
from pear.runs.runner import run
from pear.runs.factory import make_backend
from pear.store.records import RecordWriter
from record_factory import make_record

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "b179c95e" * 8


@pytest.fixture(scope="module")
def smoke_like(tmp_path_factory):
    """A simulated smoke-preset grid (3 methods, 2 datasets, 2 seeds, 4 questions) plus
    hand-made debates whose texts carry HTML, under one run directory."""
    exp = preset("smoke", datasets=("gsm8k", "truthfulqa"), methods=("cot", "ring", "pear"),
                 seeds=(0, 1), n_questions=4, full_datasets=())
    out = tmp_path_factory.mktemp("runs")
    run(exp, make_backend("simulated", exp=exp), out, progress=False)
    right = "4</script><b>"  # the gold answer, and as a listing cell the final answer, too
    evil = make_record([["<script>alert(1)</script>", right, "5"], [right, right, "</script>"]],
                       right, model=GGUF, question_id="q-evil",
                       critiques={1: [(1, 0, "ACCEPT")]})
    evil["rounds_data"][1]["agents"][0]["reasoning"] = "<img src=x onerror=alert(2)> " * 20
    stopped = make_record([["4", "4", "4"]], "4", model=GGUF, question_id="q-stop")
    stopped.update(max_rounds=3, stop_reason="consensus")
    with RecordWriter(out / "handmade") as w:
        w.write(evil)
        w.write(stopped)
    return exp, out, evil, stopped


# -- display names and marks ----------------------------------------------------------------

def test_tables_and_captions_name_models_by_display_name_and_smoke_is_marked(smoke_like):
    exp, out, *_ = smoke_like
    res = study.load_results(out, exp, "subset")
    sim = res.view.select(res.debates["backend"] == "simulated")
    res = study.Results(sim, exp, "subset", out)
    acc = study.accuracy(res.debates)
    assert res.mark == ("simulated agents; pipeline check (4 questions per dataset): "
                        "not evidence")
    assert res.caption("Accuracy.").startswith("Accuracy. 4 questions per dataset")
    assert "pipeline check" in res.caption("Accuracy.")
    mine = acc.assign(model=GGUF)
    table = report.table_main(mine)
    assert set(table.index.get_level_values("Model")) - {""} == {"SmolLM2-135M (Q4_1)"}
    real = study.Results(sim, exp, "subset", out)
    real.models, real.backends = (GGUF,), ("llamacpp",)
    assert real.mark == "pipeline check (135M model, 4 questions per dataset): not evidence"
    assert real.source == "backend llamacpp; model SmolLM2-135M (Q4_1)"
    assert "sha256" not in real.caption("x")


def test_the_mark_reaches_every_panel_and_the_footer():
    df = pd.DataFrame({"model": GGUF, "dataset": ["gsm8k", "math500"], "method": "pear",
                       "accuracy": [0.5, 0.7]})
    mark = labels.evidence_mark(simulated=False, preset="smoke", models=[GGUF], n_questions=1)
    fig = figures.facet(figures.plot_ablation, figures.with_average(df), rows="model",
                        cols="dataset", mark=mark, source="backend llamacpp")
    texts = [t.get_text() for a in fig.axes for t in a.texts] + [t.get_text() for t in fig.texts]
    assert sum("pipeline check:\nnot evidence" in t for t in texts) == 3  # every panel
    assert f"{mark} | backend llamacpp" in texts


# -- figure quality -------------------------------------------------------------------------

def _crowded_points() -> pd.DataFrame:
    """Eight methods within a factor of 3 in tokens and 5 points of accuracy per panel."""
    rng = np.random.default_rng(3)
    methods = ["cot", "cot_sc", "clique", "star", "chain", "ring", "random", "pear"]
    rows = [{"model": "m", "dataset": ds, "method": m,
             "tokens_per_example": float(rng.uniform(1500, 4200)),
             "accuracy": float(rng.uniform(0.56, 0.61))}
            for ds in ("mmlu_pro", "truthfulqa", "gsm8k", "math500") for m in methods]
    return pd.DataFrame(rows)


def _overlaps(boxes: list) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


@pytest.mark.parametrize("width", ["single", "double"])
def test_pareto_labels_and_log_ticks_do_not_overlap(width):
    fig = figures.facet(figures.plot_pareto, _crowded_points(), rows="model", cols="dataset",
                        width=width, source="s")
    assert fig.get_figwidth() == pytest.approx(figures.COLUMN_WIDTHS[width])
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    fig.draw_without_rendering()
    for ax in [a for a in fig.axes if a.get_visible()]:
        ticks = [t for t in ax.get_xticklabels(which="both") if t.get_text()]
        assert 2 <= len(ticks) <= 5 and all(re.fullmatch(r"[\d.]+k?", t.get_text())
                                             for t in ticks)
        assert not any(t.get_text() for t in ax.get_xticklabels(minor=True))
        boxes = [t.get_window_extent(renderer) for t in ticks]
        assert _overlaps(boxes) == []
        names = [t for t in ax.texts if t.get_gid() != "pear-mark"]
        assert len(names) == 8
        shrunk = [t.get_window_extent(renderer).shrunk(0.9, 0.8) for t in names]
        assert _overlaps(shrunk) == [], [names[i].get_text() for p in _overlaps(shrunk)
                                         for i in p]
        lo, hi = ax.get_ylim()
        assert 0 <= lo < hi <= 1


def test_round_curve_bands_and_axes_stay_inside_zero_one():
    rows = [{"model": "m", "dataset": "gsm8k", "method": m, "round": r,
             "accuracy": acc, "std": 0.3}
            for m, acc in (("pear", 0.95), ("random", 0.05)) for r in range(3)]
    fig = figures.plot_round_curves(pd.DataFrame(rows))
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert (lo, hi) == (0.0, 1.0)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = np.concatenate([p.vertices[:, 1] for b in bands for p in b.get_paths()])
    assert ys.min() >= 0.0 and ys.max() <= 1.0


def test_ablation_error_bars_stop_at_one_and_colours_follow_the_method():
    acc = pd.DataFrame({"dataset": "gsm8k", "method": ["random", "pear"],
                        "accuracy": [0.3, 0.95], "std": [0.1, 0.2]})
    ax = figures.plot_ablation(acc).axes[0]
    segments = [seg for c in ax.collections for seg in c.get_segments()]
    assert max(seg[:, 1].max() for seg in segments) == pytest.approx(1.0)
    assert ax.get_ylim()[1] <= 1.0
    assert [p.get_facecolor()[:3] for p in ax.patches] == [
        pytest.approx(tuple(int(figures.METHOD_COLORS[m][i:i + 2], 16) / 255
                            for i in (1, 3, 5))) for m in ("random", "pear")]


# -- Holm-adjusted p and the paired bootstrap -----------------------------------------------

def test_adjusted_significance_holm_and_bootstrap(smoke_like):
    exp, out, *_ = smoke_like
    deb = view.load(out).debates
    deb = deb[(deb["backend"] == "simulated") & (deb["seed"] == 0)]
    sig = stats.adjusted_significance(deb, n_resamples=2000)
    assert len(sig) == 2  # GSM8K and TruthfulQA
    ok = sig["p_exact"].notna()
    assert np.allclose(sig.loc[ok, "p_holm"], stats.holm(sig.loc[ok, "p_exact"]))
    assert (sig.loc[ok, "p_holm"] >= sig.loc[ok, "p_exact"]).all()
    assert np.allclose(sig["diff"], sig["pear_acc"] - sig["best_baseline_acc"])
    assert ((sig["diff_low"] <= sig["diff"] + 1e-12) & (sig["diff"] <= sig["diff_high"] + 1e-12)).all()
    again = stats.adjusted_significance(deb, n_resamples=2000)
    assert again[["diff_low", "diff_high"]].equals(sig[["diff_low", "diff_high"]])
    table = report.table_significance(sig)
    assert "p (Holm-adjusted)" in table.columns
    cell = table["PEAR - best fixed [95% bootstrap CI]"].iloc[0]
    assert re.fullmatch(r"[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]", cell)


# -- the debate flags -----------------------------------------------------------------------

def test_debate_flags_read_stop_reason_and_round_zero(smoke_like):
    *_, evil, stopped = smoke_like
    v = view.from_records([evil, stopped])
    flags = transcript.debate_flags(v.debates, v.agent_rounds)
    assert flags["stopped_early"].tolist() == [False, True]
    # round 0: agent 1 right alone; the final vote right
    assert flags["minority_won"].tolist() == [True, False]


# -- the results site -----------------------------------------------------------------------

def _fake_build(root: Path) -> tuple[Path, Path, dict]:
    """A figures folder and executed notebooks as a build leaves them."""
    fig_dir, nb_dir = root / "figures", root / "notebooks"
    fig_dir.mkdir()
    nb_dir.mkdir()
    df = _crowded_points()
    figures.save_figure(figures.facet(figures.plot_pareto, df, source="s"), "pareto", fig_dir)
    report.save_table(pd.DataFrame({"PEAR": [0.5]}, index=["GSM8K"]), "main_results",
                      caption="Accuracy <b>caption</b>.", out_dir=fig_dir)
    report.save_table(pd.DataFrame({"paper": [0.7]}, index=["GSM8K"]),
                      "main_results_vs_paper", caption="Beside the study.", out_dir=fig_dir)
    report.write_numbers({"MeanAccPEAR": 0.5}, fig_dir)
    for name, title in (("01_main_results", "01 · Main results"),
                        ("07_cost_pareto", "07 · Cost")):
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_markdown_cell(f"# {title}\n\nWhat it does."),
            nbformat.v4.new_code_cell("1 + 1", outputs=[nbformat.v4.new_output(
                "execute_result", {"text/plain": "2"}, execution_count=1)])])
        nbformat.write(nb, nb_dir / f"{name}.ipynb")
    outputs = {"01_main_results": ("main_results.md", "main_results_vs_paper.md",
                                   "numbers.tex"),
               "07_cost_pareto": ("pareto.pdf", "pareto.png")}
    return fig_dir, nb_dir, outputs


def test_write_site_index_notebooks_browser_and_escaping(smoke_like, tmp_path):
    exp, out, evil, stopped = smoke_like
    fig_dir, nb_dir, outputs = _fake_build(tmp_path)
    (fig_dir / "claims.md").write_text("| Claim | Holds |\n|---|---|\n| PEAR wins | no |\n")
    meta = {"Backend": "simulated", "Models": "simulated agents"}
    s = site.write_site(tmp_path / "site", figures_dir=fig_dir, notebooks_dir=nb_dir,
                        runs_dir=out, notebooks=outputs, meta=meta,
                        mark="simulated agents; pipeline check: not evidence")
    index = (tmp_path / "site" / "index.html").read_text()
    assert s.pages[0].name == "index.html"
    assert index.index("Claims") < index.index("What was built")  # the ledger comes first
    assert '<p class="mark">simulated agents; pipeline check: not evidence</p>' in index
    assert "<td>PEAR wins</td>" in index
    assert '<img src="figures/pareto.png"' in index and 'href="figures/pareto.pdf"' in index
    assert (tmp_path / "site" / "figures" / "pareto.png").stat().st_size > 1000
    assert "Accuracy &lt;b&gt;caption&lt;/b&gt;." in index  # captions escaped
    assert re.search(r'class="pair"><div><h3>main_results</h3>.*main_results_vs_paper',
                     index, re.S)  # the study's numbers beside ours
    assert r"<code>\MeanAccPEAR</code>" in index
    assert 'href="notebooks/01_main_results.html"' in index and "01 · Main results" in index
    nb_html = (tmp_path / "site" / "notebooks" / "01_main_results.html").read_text()
    assert "What it does." in nb_html and not re.search(r"<script[^>]+src=\"http", nb_html)
    # the browser: every debate listed; all have pages (a small run)
    data = (tmp_path / "site" / "debates" / "data.js").read_text()
    assert "</script>" not in data and "4<\\/script><b>" in data
    payload = json.loads(data.removeprefix("window.PEAR_DEBATES = ").rstrip().rstrip(";"))
    n = len(view.load(out).debates)
    assert len(payload["rows"]) == n == s.debates == s.transcripts
    col = {c: i for i, c in enumerate(payload["columns"])}
    by_q = {r[col["question_id"]]: r for r in payload["rows"]}
    assert by_q["q-stop"][col["stopped_early"]] == 1 and by_q["q-evil"][col["stopped_early"]] == 0
    assert "SmolLM2-135M (Q4_1)" in payload["models"]
    page = (tmp_path / "site" / "debates" / "d" / by_q["q-evil"][col["page"]]).read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "SmolLM2-135M (Q4_1)" in page and "ACCEPT" in page
    # the CI check: complete, then a figure goes missing
    assert site.check_site(tmp_path / "site") == []
    (tmp_path / "site" / "figures" / "pareto.png").unlink()
    assert site.check_site(tmp_path / "site") == [
        "index.html links a missing file: figures/pareto.png"]
    assert site.check_site(str(tmp_path / "site"))  # as `pear check site DIR` passes it


class _Visible(HTMLParser):
    """The text a reader sees on a page as it opens: no <style>/<script>, nothing inside a
    closed <details> but its <summary>."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden, self.summary, self.skip, self.text = 0, 0, 0, []

    def handle_starttag(self, tag, attrs):
        self.hidden += tag == "details"
        self.summary += tag == "summary"
        self.skip += tag in ("style", "script")

    def handle_endtag(self, tag):
        self.hidden -= tag == "details"
        self.summary -= tag == "summary"
        self.skip -= tag in ("style", "script")

    def handle_data(self, data):
        if not self.skip and (not self.hidden or self.summary):
            self.text.append(data)


def _visible(page: str) -> str:
    parser = _Visible()
    parser.feed(page)
    return " ".join(parser.text)


def test_the_first_page_names_models_by_display_name_and_folds_long_text(smoke_like, tmp_path):
    """A build on a GGUF model (its id carries the file's 64-hex hash): the index shows the
    display name, the full id only under "Build details"; the claims rows are quote, verdict
    and a one-line reason with the rest in a <details>; a table longer than FOLD_ROWS folds
    (the study's numbers beside ours do not); the case study links its transcript page
    instead of pasting the Markdown (which names the model by its id)."""
    from pear.paper import ledger
    exp, out, evil, _ = smoke_like
    fig_dir, nb_dir, outputs = _fake_build(tmp_path)
    long = pd.DataFrame({"row": range(site.FOLD_ROWS + 5)})
    report.save_table(long, "calibration", caption="A long table.", out_dir=fig_dir)
    report.save_table(long, "main_results_vs_paper", caption="Beside.", out_dir=fig_dir)
    case = transcript.render_transcript(evil)
    assert GGUF in case  # the Markdown transcript names the model by its full id
    report.save_markdown(f"*Case study: the first one.*\n\n{case}", "case_study", fig_dir)
    outputs = {**outputs, "08_case_study": ("case_study.md",),
               "14_calibration": ("calibration.md",)}
    reason = "because " * 40
    claims = pd.DataFrame([{
        "id": "c1", "quote": "PEAR <wins>", "printed": "+4", "table_finding": "holds",
        "reproduced": "gain 1.0", "finding": "supported", "verdict": "not evidence",
        "not_evidence": "simulated", "reason": reason, "evidence": ["table:main_results"],
        "debates": [f"{GGUF}|gsm8k|pear"]}])
    models = sorted(view.load(out).debates["model"].unique())
    assert GGUF in models
    meta = site.build_meta(backend="llamacpp", preset="smoke", models=models, grid="g",
                           debates=3, started=0.0, seconds=1.0, repo=tmp_path)
    site.write_site(tmp_path / "site", figures_dir=fig_dir, notebooks_dir=nb_dir,
                    runs_dir=out, notebooks=outputs, meta=meta, case_study=evil["debate_id"],
                    ledger=ledger.ledger_html(claims, title="", link=lambda k, n: (
                        "debates/index.html" if k == "debates" else None)),
                    claims_diff="<p>1 claims moved between previous and this build</p>")
    page = (tmp_path / "site" / "index.html").read_text()
    # given a previous build, the moved claims follow the ledger on the first page
    assert page.index('id="claims"') < page.index('id="claims-diff"') < page.index('id="built"')
    assert "Changes since the previous build" in page
    seen = _visible(page)
    assert not re.search(r"[0-9a-f]{64}", seen) and "sha256" not in seen
    assert "SmolLM2-135M (Q4_1)" in seen
    details = re.search(r"<details class=\"build-details\">.*?</details>", page, re.S).group(0)
    assert GGUF in details and page.count(GGUF) == 1  # the full id: once, under Build details
    # the claims row: quote, verdict, one line of reason; everything else behind the click
    row = re.search(r'<tr id="claim-c1"[^>]*>(.*?)</tr>', page, re.S).group(1)
    cells = re.findall(r"<td>(.*?)</td>", row, re.S)
    assert cells[:2] == ["PEAR &lt;wins&gt;", "not evidence (supported)"]
    summary = re.fullmatch(r"<details><summary>([^<]*)</summary>(.*)</details>", cells[2], re.S)
    assert summary and len(summary.group(1)) <= 110 and summary.group(1).startswith("because")
    assert "simulated agents: the finding (supported) is a statement about the simulated " \
        "mechanism, not about the study's models; " + "because " * 40 \
        in html_unescape(summary.group(2))  # the not-evidence field, said before the reason
    assert "SmolLM2-135M (Q4_1) / GSM8K / PEAR" in summary.group(2)
    # a long table folds, the study's printed numbers beside ours do not
    assert re.search(r"A long table\.</p><details class=\"fold\"><summary>Show the table "
                     rf"\({site.FOLD_ROWS + 5} rows\)</summary><table>", page)
    assert re.search(r"Beside\.</p><table>", page)
    # the case study: its caption and a link to the transcript page, which exists
    href = re.search(r'<a href="(debates/d/[^"]+)">The debate, round by round</a>', page)
    assert href and (tmp_path / "site" / href.group(1)).is_file()
    assert "<em>Case study: the first one.</em>" in page
    assert site.check_site(tmp_path / "site") == []


def test_a_large_run_gets_a_bounded_documented_selection_of_pages(smoke_like, monkeypatch):
    exp, out, *_ = smoke_like
    v = view.load(out)
    deb = v.debates
    flags = transcript.debate_flags(deb, v.agent_rounds)
    monkeypatch.setattr(site, "ALL_PAGES_UP_TO", 5)
    chosen = site.chosen_debates(deb, flags, extra=[deb["debate_id"].iloc[-1]])
    cells = deb.set_index("debate_id").loc[chosen, ["model", "dataset", "method"]]
    per_cell = cells.value_counts()
    assert per_cell.max() <= len(site.KINDS) + 1 and len(chosen) < len(deb)
    assert deb["debate_id"].iloc[-1] in chosen
    # every cell shows a right and (where there is one) a wrong debate
    for (m, ds, me), part in deb.groupby(["model", "dataset", "method"]):
        picked = part[part["debate_id"].isin(chosen)]
        assert picked["correct"].any() == part["correct"].any()
        assert (~picked["correct"]).any() == (~part["correct"]).any()


def test_a_sites_pages_are_the_pages_written_one_at_a_time(smoke_like, tmp_path):
    # the site computes every debate's flags once; a page written alone computes its own
    exp, out, evil, stopped = smoke_like
    fig_dir, nb_dir, outputs = _fake_build(tmp_path)
    site.write_site(tmp_path / "site", figures_dir=fig_dir, notebooks_dir=nb_dir,
                    runs_dir=out, notebooks=outputs, meta={"Backend": "simulated"})
    v = view.load(out)
    ids = list(v.debates["debate_id"])
    assert len(ids) > 40 and stopped["debate_id"] in ids
    for did in ids:
        alone = site.write_debate_page(v, did, tmp_path / "alone" / "page.html")
        assert site.page_path(tmp_path / "site", did).read_text() == alone.read_text()
    assert "stopped early" in site.page_path(tmp_path / "site", stopped["debate_id"]).read_text()
    with pytest.raises(ValueError, match="no debate 'nope'"):
        site.write_debate_page(v, "nope", tmp_path / "nope.html")


# -- pear show RUN --debate ID --------------------------------------------------------------

def test_pear_show_debate_markdown_and_html(smoke_like, tmp_path, capsys):
    exp, out, evil, _ = smoke_like
    assert cli.main(["show", str(out), "--debate", evil["debate_id"]]) == 0
    assert "### Round 1" in capsys.readouterr().out
    target = tmp_path / "one.html"
    assert cli.main(["show", str(out), "--debate", evil["debate_id"], "--html",
                     "--out", str(target)]) == 0
    assert "&lt;script&gt;" in target.read_text()
    assert cli.main(["show", str(out), "--debate", "nope", "--html", "--out",
                     str(tmp_path / "x.html")]) == 2
    assert "no debate 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
    assert cli.main(["show", str(out), "--html"]) == 2
