"""The notebooks: short, outputs only through the library's writers, one parameters cell with the common parameters, no
output folder passed (the library's :func:`pear.analysis.report.figures_dir`), one producer per output
(showyourwork), the case-study transcript, and (slow) the whole build on simulated agents."""
from __future__ import annotations

import ast
import gzip
import json
import os
import re
from pathlib import Path

import jupytext
import pytest

from pear.cli import main
from pear.paper import build as paper, registry
from pear.paper.times import TIMES_FILE
from pear.paths import REPO_ROOT
from pear.paper import site
from pear.analysis import report, transcript
from pear.store import view
from pear.store.validate import validate
from pear.tasks.benchmarks import FILES, data_dir
from record_factory import make_record

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
COMMON = {"backend", "preset", "runs_dir", "model", "seeds", "n_questions"}
SAVERS = {"save_ledger": (".json",), "save_figure": (".pdf", ".png"), "save_table": (".tex", ".md"),
          "save_markdown": (".md",), "save_html": (".html",)}


STACK = {"pear", "IPython", "numpy", "pandas", "scipy", "statsmodels", "matplotlib", "seaborn"}


def _code(name: str) -> ast.Module:
    nb = jupytext.read(NOTEBOOK_DIR / f"{name}.py")
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return ast.parse(source, filename=f"{name}.py")


# -- (a) notebooks hold only library calls and one parameters cell -------------------------

def test_the_notebook_folder_is_the_ordered_build():
    on_disk = sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
    assert on_disk == list(registry.NOTEBOOKS)
    assert list(registry.NOTEBOOKS) == sorted(registry.NOTEBOOKS)
    assert set(registry.EXPECTED_OUTPUTS) == set(registry.NOTEBOOKS)


LONGEST = 400
"""A notebook is read whole: it holds what serves only it (its table shaping, captions, its grid's
parameters, small helper functions) in visible cells, and stays short enough to read."""

WRITES = {"savefig", "to_csv", "to_latex", "to_markdown", "to_parquet", "to_json", "to_html",
          "write_text", "write_bytes", "open", "dump"}
"""What would write a file behind the library's writers (``report.save_*``), which name each output
once, put it in the build's folder and keep the one-producer rule checkable."""


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_is_short_enough_to_read(name):
    lines = (NOTEBOOK_DIR / f"{name}.py").read_text().count("\n")
    assert lines <= LONGEST, f"{name} has {lines} lines (at most {LONGEST}): split it"


def _writes(tree: ast.Module) -> list[str]:
    return sorted({n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
                   for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and (getattr(n.func, "attr", None) in WRITES
                        or getattr(n.func, "id", None) in WRITES)})


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_writes_outputs_only_through_the_library(name):
    assert _writes(_code(name)) == [], f"{name} writes a file itself: use pear.analysis.report.save_*"


def test_the_write_check_reads_calls():
    """A cell that saves a figure or a table itself is caught; a library writer is not."""
    assert _writes(ast.parse("plt.savefig(name)\nopen(p)\ndf.to_latex()")) == \
        ["open", "savefig", "to_latex"]
    assert _writes(ast.parse("report.save_figure(fig, 'x')\nreport.save_table(df, 'y')")) == []


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_has_one_parameters_cell_with_the_common_parameters(name):
    nb = jupytext.read(NOTEBOOK_DIR / f"{name}.py")
    tagged = [i for i, c in enumerate(nb.cells)
              if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    params = paper.notebook_parameters(NOTEBOOK_DIR / f"{name}.py")
    assert COMMON <= set(params), f"{name} lacks {COMMON - set(params)}"
    assert params["n_questions"] == 0 and params["seeds"] == "" and params["runs_dir"] == ""
    # parameters come first: no code cell before them
    assert all(c.cell_type != "code" for c in nb.cells[:tagged[0]])


ANNOTATIONS = {"str": str, "int": int, "float": float, "bool": bool}


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_parameters_are_annotated_and_name_every_backend_and_preset(name):
    """``name: type = value`` with a plain type, so that ``papermill --help-notebook`` shows
    it; the ``backend`` and ``preset`` comments list every registered backend and preset."""
    from pear.backends.registry import BACKENDS
    from pear.runs.grid import PRESETS
    nb = jupytext.read(NOTEBOOK_DIR / f"{name}.py")
    cell = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    for node in ast.parse(cell.source).body:
        assert isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name), \
            f"{name}: {ast.unparse(node)!r} is not an annotated assignment"
        assert isinstance(node.annotation, ast.Name) and node.annotation.id in ANNOTATIONS, \
            f"{name}: {node.target.id} is annotated {ast.unparse(node.annotation)}"
        assert type(ast.literal_eval(node.value)) is ANNOTATIONS[node.annotation.id], \
            f"{name}: {node.target.id}'s default is not a {node.annotation.id}"
    comments = {m.group(1): m.group(2) for m in
                re.finditer(r"^(\w+):[^#\n]*#(.*)$", cell.source, flags=re.M)}
    listed = {k: {w.strip() for w in re.split(r"[|(]", comments[k])} for k in ("backend", "preset")}
    assert set(BACKENDS) <= listed["backend"], f"{name}: {set(BACKENDS) - listed['backend']}"
    assert set(PRESETS) <= listed["preset"], f"{name}: {set(PRESETS) - listed['preset']}"


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_holds_no_path_string(name):
    paths = [n.value for n in ast.walk(_code(name))
             if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and (re.search(r"[/\\]", n.value)
                  or re.search(r"\.(csv|md|tex|png|pdf|json|jsonl|ipynb)$", n.value))]
    assert paths == [], f"{name} spells paths {paths}: use runs_dir; outputs go to " \
        "pear.analysis.report.figures_dir()"


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_passes_no_output_folder(name):
    calls = [n.func.attr for n in ast.walk(_code(name)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and any(k.arg == "out_dir" for k in n.keywords)]
    assert calls == [], f"{name} passes out_dir to {calls}: the library picks the folder"


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_notebook_imports_only_pear_and_the_scientific_stack(name):
    """pear, IPython.display and the scientific stack the project ships; nothing else."""
    mods = set()
    for n in ast.walk(_code(name)):
        if isinstance(n, ast.Import):
            mods |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            mods.add(n.module)
    assert {m.split(".")[0] for m in mods} <= STACK, mods - {m for m in mods
                                                             if m.split(".")[0] in STACK}


# -- (b) every output has exactly one producer, and the list covers the study -------------

def _saved_files(name: str) -> set[str]:
    out = set()
    for n in ast.walk(_code(name)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "write_numbers":
                names = [k.value for k in n.keywords if k.arg == "name"]
                assert all(isinstance(v, ast.Constant) for v in names), f"{name}: literal name"
                out.add((names[0].value if names else "numbers") + ".tex")
            elif n.func.attr in SAVERS:
                arg = n.args[1]
                assert isinstance(arg, ast.Constant), f"{name}: output name must be a literal"
                out |= {arg.value + ext for ext in SAVERS[n.func.attr]}
    return out


@pytest.mark.parametrize("name", registry.NOTEBOOKS)
def test_expected_outputs_list_what_each_notebook_saves(name):
    assert _saved_files(name) == set(registry.EXPECTED_OUTPUTS[name])


def test_the_notebooks_readme_lists_every_notebook_and_its_outputs():
    """notebooks/README.md's table: one row per notebook, in build order, whose last column
    names its outputs (``name.{tex,md}`` for several extensions) as EXPECTED_OUTPUTS has them."""
    rows = {}
    for line in (NOTEBOOK_DIR / "README.md").read_text().splitlines():
        m = re.match(r"\| `(\d\d_\w+)` \|.*\| ([^|]*) \|$", line)
        if m:
            files = set()
            for tok in re.findall(r"`([^`]+)`", m.group(2)):
                b = re.match(r"(.*)\.\{(.*)\}$", tok)
                files |= {f"{b.group(1)}.{e}" for e in b.group(2).split(",")} if b else {tok}
            rows[m.group(1)] = files
    assert list(rows) == list(registry.NOTEBOOKS)
    for name, files in rows.items():
        assert files == set(registry.EXPECTED_OUTPUTS[name]), name


def test_each_output_has_one_producer_and_the_study_is_covered():
    files = [f for n in registry.NOTEBOOKS for f in registry.EXPECTED_OUTPUTS[n]]
    assert len(files) == len(set(files))
    for needed in ("main_results.tex", "main_results.md", "main_results_vs_paper.md",
                   "numbers.tex", "full_dataset.tex", "full_dataset_vs_paper.md",
                   "ablation.pdf", "ablation.png", "ablation.tex", "round_curves.pdf",
                   "round_curves.png", "diagnostics.tex", "diagnostics_vs_paper.md",
                   "significance.tex", "significance_vs_paper.md", "spearman.tex",
                   "pareto.pdf", "pareto.png", "tokens.tex", "cost_vs_paper.md",
                   "numbers_cost.tex", "case_study.md"):
        assert needed in files, needed


def test_check_reports_missing_outputs(tmp_path, capsys):
    assert main(["check", "outputs", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "main_results.tex (from 01_main_results)" in err and "case_study.md" in err
    for f in registry.EXPECTED_OUTPUTS["08_case_study"]:
        (tmp_path / f).write_text("x")
    # present, but of no known run: the folder has no build manifest
    assert main(["check", "outputs", str(tmp_path), "--only", "08"]) == 1
    assert "no build manifest" in capsys.readouterr().err
    from pear.paper import provenance
    run = tmp_path / "run"
    run.mkdir()
    params = {"runs_dir": str(run), "preset": "smoke", "backend": "simulated"}
    provenance.record(tmp_path, "08_case_study", registry.EXPECTED_OUTPUTS["08_case_study"],
                      params, "c0")
    assert main(["check", "outputs", str(tmp_path), "--only", "08"]) == 0
    (tmp_path / "case_study.md").write_text("")  # empty counts as missing
    assert main(["check", "outputs", str(tmp_path), "--only", "08"]) == 1


# -- (d) the case-study transcript ----------------------------------------------------------

def _debate() -> dict:
    """Agents 0,1 wrong (5), agent 2 right (2); agent 2's critiques flip agent 0, agent 1
    rejects; the minority answer wins."""
    return make_record(
        [["5", "5", "4"], ["4", "5", "4"], ["4", "4", "4"]], "4",
        confidences=[[3, 3, 4], [4, 3, 4], [4, 4, 5]],
        critiques={1: [(2, 0, "ACCEPT"), (2, 1, "REJECT"), (0, 2, None)],
                   2: [(0, 1, "ACCEPT")]},
        influence=[[0, 0, 0], [0.0, 0.0, 0.25], [0.5, 0.0, 0.125]],
        question_id="q-minority")


def test_render_transcript_shows_rounds_decisions_and_the_final_answer():
    text = transcript.render_transcript(_debate())
    assert "### Round 0 (initial answers)" in text and "### Round 2" in text
    assert re.search(r"Agent 3 → Agent 1: .*\*\*ACCEPT\*\*", text)
    assert re.search(r"Agent 3 → Agent 2: .*\*\*REJECT\*\*", text)
    assert "NOT DELIVERED" in text  # agent 1's critique of agent 3 never reached it
    assert "Graph (source→target): 3→1, 3→2, 1→3" in text
    assert "| 3 | 4 | 5 | ✓ | 0.12 |" in text  # agent, answer, confidence, correct, influence
    assert text.rstrip().endswith("**Final answer: 4** — correct (gold 4)")


def test_render_transcript_shows_the_papers_review_fields():
    text = transcript.render_transcript(_debate())
    assert re.search(r"Agent 3 → Agent 1: .*assessment \*\*Flawed\*\*, at step 1: “use 4”"
                     r" → \*\*ACCEPT\*\* \(agent 0's reason\)", text)
    # a critique whose source gave no review shows none (only the decision)
    rec = make_record([["5", "4"], ["4", "4"]], "4", critiques={1: [(1, 0, None)]})
    rec["rounds_data"][1]["critiques"][0].update(step_loc="", correction="", assessment="",
                                                  reason="")
    line = next(x for x in transcript.render_transcript(rec).splitlines()
                if x.startswith("- Agent 2 → Agent 1"))
    assert line.endswith("critiques 5 (conf 3) → **NOT DELIVERED**")


def test_case_study_picks_the_first_minority_win_or_the_named_debate():
    majority = make_record([["4", "4", "5"], ["4", "4", "4"]], "4", question_id="q-majority",
                           critiques={1: [(0, 2, "ACCEPT")]})
    lost = make_record([["4", "5", "5"], ["5", "5", "5"]], "4", question_id="q-lost",
                       critiques={1: [(1, 0, "ACCEPT")]})
    records = view.from_records([majority, lost, _debate()])
    rec, why = transcript.case_study(records)
    assert rec["question_id"] == "q-minority" and "minority" in why
    rec, _ = transcript.case_study(records, debate_id=lost["debate_id"])
    assert rec == lost
    with pytest.raises(ValueError, match="no debate 'nope'"):
        transcript.case_study(records, debate_id="nope")
    # no minority win: the first PEAR debate
    rec, why = transcript.case_study(view.from_records([majority, lost]))
    assert rec == majority and "no debate has a minority" in why


# -- (c) the whole build on simulated agents ------------------------------------------------

def _tiny_benchmarks(root: Path, n: int = 12) -> Path:
    """The first ``n`` questions of every benchmark (full sets become n questions)."""
    root.mkdir()
    for name, file in FILES.items():
        src = data_dir() / file
        opener = gzip.open if file.endswith(".gz") else open
        with opener(src, "rt", encoding="utf-8") as fh:
            lines = [next(fh) for _ in range(n)]
        with opener(root / file, "wt", encoding="utf-8") as fh:
            fh.writelines(lines)
    return root


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_build_on_simulated_agents_produces_every_output(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PEAR_DATA_DIR", str(_tiny_benchmarks(tmp_path / "bench")))
    monkeypatch.delenv(report.FIGURES_ENV, raising=False)
    figures = tmp_path / "figures"
    rc = paper.build(backend="simulated", preset="sim", seeds="0,1", n_questions=4,
                     runs=str(tmp_path / "runs"), figures=figures, build_dir=tmp_path / "build",
                     site_dir=tmp_path / "site")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert registry.check_outputs(figures) == []
    # what CI once checked in a build of its own: every record of the run valid from scratch,
    # the results site with every page and link
    assert validate(tmp_path / "runs").findings.ok
    assert site.check_site(tmp_path / "site") == []
    assert all(f"ok {n} in" in out for n in registry.NOTEBOOKS)
    times = json.loads((tmp_path / "build" / TIMES_FILE).read_text())["notebooks"]
    assert list(times) == [*registry.NOTEBOOKS, "results site"]
    assert {e["status"] for e in times.values()} == {"ok"}
    assert times["00_run_experiments"]["grid"]["debates"] > 0
    assert "simulated agents" in (figures / "main_results.md").read_text()
    # what notebooks 13 and 18 compute in their own cells: the power table's discordant pairs
    # and sample sizes, each claim at the study's size, the family's words on the ledger's page
    power = (figures / "your_model_power.md").read_text()
    assert "| b | c | Questions needed |" in power and "Pooled" in power
    assert "At the study's size (200 questions x 5 seeds)" in (
        figures / "your_model_claims.md").read_text()
    assert "family: holds in " in (figures / "claims.html").read_text()
    assert "ACCEPT" in (figures / "case_study.md").read_text()
    # 07 quotes the study's tokens per example (data/paper/cost.csv) beside the reproduced
    cost = (figures / "numbers_cost.tex").read_text()
    assert r"\newcommand{\PaperTokensPEAR}{32300}" in cost and r"\TokensCoTSC}" in cost
    assert r"\newcommand{\PaperMeanAccPEAR}{0.748}" in (figures / "numbers.tex").read_text()
    assert os.environ.get(report.FIGURES_ENV) is None  # the build restores the environment
    # replay: rerun two notebooks on the recorded runs, nothing is run again
    rc = paper.build(backend="replay", preset="sim", seeds="0,1", n_questions=4,
                     runs=str(tmp_path / "runs"), figures=tmp_path / "replayed",
                     build_dir=tmp_path / "build", only="00,08")
    assert rc == 0
    assert (tmp_path / "replayed" / "case_study.md").read_text().count("ACCEPT") >= 1
