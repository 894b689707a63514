"""The reviewer's checklist page of the results site (pear.paper.checklist): NeurIPS Q5-Q8
and ACL C1-C4 answered for a small simulated build from its manifests, the intervals'
methods and levels from the code that computes them, compute per run and in total, and
every link resolving (the site check knows the page)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from pear.analysis.stats import ALPHA, BOOTSTRAP_RESAMPLES
from pear.claims.evidence import N_BOOT
from pear.paper import checklist, provenance, site
from pear.paths import beside
from pear.runs import compute
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.store.manifest import read as read_manifest
from pear.sim.backend import SimulatedBackend

NOTEBOOKS = ("00_run_experiments", "01_main_results", "06_significance", "13_claims")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A simulated run, one study variant beside it, executed-notebook stand-ins and the
    figures folder's build manifest; then the site."""
    root = tmp_path_factory.mktemp("build")
    exp = preset("smoke", datasets=("gsm8k",), methods=("cot", "ring", "pear"), seeds=(0, 1),
                 n_questions=2, full_datasets=(), rounds=2)
    runs = root / "runs" / "smoke-simulated"
    run(exp, SimulatedBackend(answer_key(exp), seed=0), runs, progress=False)
    variant = preset("smoke", datasets=("gsm8k",), methods=("pear",), seeds=(0,),
                     n_questions=2, full_datasets=(), rounds=1)
    run(variant, SimulatedBackend(answer_key(variant), seed=0), beside(runs, "studies") / "tau-0",
        progress=False)
    fig_dir, nb_dir = root / "figures", root / "nb"
    nb_dir.mkdir()
    for name in NOTEBOOKS:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {name}")])
        nbformat.write(nb, nb_dir / f"{name}.ipynb")
    params = {"backend": "simulated", "preset": "smoke", "runs_dir": str(runs), "model": "",
              "seeds": "0,1", "n_questions": 2, "base_url": "", "commit": "abc123"}
    provenance.start(fig_dir, params, "abc123")
    out = root / "site"
    summary = site.write_site(out, figures_dir=fig_dir, notebooks_dir=nb_dir, runs_dir=runs,
                              notebooks={n: () for n in NOTEBOOKS}, meta={}, params=params)
    return out, runs, params, summary


def _row(page: str, row_id: str) -> str:
    """One answer's row (answers hold tables of their own, whose rows have no id)."""
    part = page[page.index(f'<tr id="{row_id}">'):]
    end = part.find('<tr id="', 1)
    return part if end < 0 else part[:end]


def test_the_page_is_written_linked_and_checked(build):
    out, runs, params, summary = build
    page = (out / checklist.PAGE).read_text()
    assert summary.pages[1] == out / checklist.PAGE
    assert f'href="{checklist.PAGE}"' in (out / "index.html").read_text()
    assert [q for q in re.findall(r"<th>((?:NeurIPS|ACL) [QC]\d)</th>", page)] == [
        "NeurIPS Q5", "NeurIPS Q6", "NeurIPS Q7", "NeurIPS Q8", "ACL C1", "ACL C2", "ACL C3",
        "ACL C4"]
    links = [h for h in re.findall(r'href="([^"#]+)', page)]
    assert len(links) >= 12 and all((out / h).is_file() for h in links), links
    assert site.check_site(out) == []
    copied = json.loads((out / "provenance" / "runs" / "smoke-simulated.manifest.json")
                        .read_text())
    assert copied == read_manifest(runs)
    (out / "provenance" / "build.json").unlink()
    try:
        assert site.check_site(out) == [
            "checklist.html links a missing file: provenance/build.json"]
    finally:
        (out / "provenance" / "build.json").write_text("{}")


def test_commands_settings_and_error_bars_come_from_the_build(build):
    out, runs, params, _ = build
    page = (out / checklist.PAGE).read_text()
    q5 = _row(page, "neurips-q5")
    assert "pear paper --backend simulated --preset smoke --runs " in q5
    assert read_manifest(runs)["command"].split()[0] in q5
    assert 'href="provenance/data/benchmarks/SOURCES.md"' in q5
    q6 = _row(page, "neurips-q6")
    assert "<code>debate.n_agents</code></td><td>3</td>" in q6  # the smoke preset's
    assert "<code>debate.rounds</code></td><td>2</td>" in q6  # as the build asked
    assert "simulated: seed=0, simulated=deterministic" in q6
    q7 = _row(page, "neurips-q7")
    assert "mean over the 2 seeds ([0, 1])" in q7
    assert f"Wilson {1 - ALPHA:.0%} interval" in q7
    assert f"{BOOTSTRAP_RESAMPLES} resamples" in q7 and f"({N_BOOT} replicates)" in q7
    assert 'href="notebooks/06_significance.html"' in q7
    assert "round curves (notebook <code>04_round_curves</code> is not in this build)" in q7


def test_compute_per_run_and_in_total(build):
    out, runs, _, _ = build
    page = (out / checklist.PAGE).read_text()
    q8 = _row(page, "neurips-q8")
    mans = [read_manifest(runs), read_manifest(beside(runs, "studies") / "tau-0")]
    whole = compute.total(a for m in mans for a in m["attempts"])
    assert whole["attempts"] == 2 and whole["debates"] == 12 + 2
    rows = re.findall(r"<tr><td><a href=\"(provenance/runs/[^\"]+)\">([^<]+)</a></td>"
                      r"<td>[^<]*</td>(.*?)</tr>", q8)
    assert [r[1] for r in rows] == ["smoke-simulated", "smoke-simulated-studies/tau-0"]
    cells = [re.findall(r'<td class="num">([^<]*)</td>', r[2]) for r in rows]
    assert [int(c[5]) for c in cells] == [m["compute"]["debates"] for m in mans]
    assert [int(c[3]) for c in cells] == [m["compute"]["calls"] for m in mans]
    total = re.search(r"<tr><th>Total</th><td></td>(.*?)</tr>", q8).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', total) == [
        "2", compute.clock(whole["wall_s"]), f"{whole['gpu_hours']:.4g}",
        str(whole["calls"]), str(whole["tokens"]), "14"]
    c1 = _row(page, "acl-c1")
    assert "none: simulated agents, no model" in c1
    assert f"{whole['calls']} model calls" in c1


def test_the_parameters_of_a_model_come_from_the_catalog_or_its_name():
    assert checklist._params_b("Qwen/Qwen2.5-14B-Instruct", "vllm") == "14.7 B (model card)"
    gguf = "SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "b1" * 32
    assert checklist._params_b(gguf, "llamacpp") == "135 M (from its name)"
    assert checklist._params_b("my-model", "openai") == "unknown"
    assert checklist._params_b("simulated-0a1b-s0", "simulated") == \
        "none: simulated agents, no model"


def test_a_copied_run_manifest_names_no_path_of_the_builders_machine(tmp_path):
    """The site's copy of a run manifest shows each absolute path as ``pear.paths.shown``
    does (a llama.cpp run's cache and model paths); the run's own manifest keeps them (a
    resume needs them)."""
    run_dir = tmp_path / "secret-home" / "r1"
    run_dir.mkdir(parents=True)
    man = {"backend_settings": [{"cache_path": str(run_dir / "cache.sqlite"),
                                 "model_path": "/opt/models/m.gguf", "n_ctx": 2048}],
           "seeds": [0, 1]}
    (run_dir / "manifest.json").write_text(json.dumps(man))
    copied = checklist.copy_provenance(tmp_path / "site", [("r1", run_dir, man)],
                                       tmp_path / "figures", tmp_path)
    page = (tmp_path / "site" / copied["run:r1"]).read_text()
    assert "secret-home" not in page and "/opt/models" not in page
    got = json.loads(page)["backend_settings"][0]
    assert got == {"cache_path": "…/cache.sqlite", "model_path": "…/m.gguf", "n_ctx": 2048}
    assert json.loads((run_dir / "manifest.json").read_text()) == man
