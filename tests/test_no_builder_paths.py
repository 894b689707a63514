"""Nothing of the builder's machine in what a build writes (issue 74): a small simulated build
(notebooks 00, 01, 04, 13 and 17: the run, tables, a figure, the claims ledger, imported real
debates, the results site with its checklist) into a folder with a distinctive name, then every file it wrote (executed notebooks, site pages,
tables, figures, the build's and the run's manifests) searched for that folder's absolute
path, the checkout's, the virtualenv's, the home directory's and the temporary folder's."""
from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from pear.analysis import report
from pear.paper import build as paper, checklist, site
from pear.paths import REPO_ROOT
from test_notebooks import _tiny_benchmarks

DISTINCT = "zqxBuilderPathsCheck"


def _builder_paths(root: Path) -> dict[str, str]:
    """Path -> what it is, of this machine's absolute paths that no output may name (each as
    given and resolved; a generic one, such as a home of ``/`` or a system Python's ``/usr``,
    left out: it names no builder)."""
    found = {"the build's folder": str(root), "the checkout": str(REPO_ROOT),
             "the virtualenv": sys.prefix, "the home directory": os.path.expanduser("~"),
             "the temporary folder": tempfile.gettempdir()}
    generic = {"/", "/usr", "/usr/local", "/opt", ""}
    out: dict[str, str] = {}
    for what, p in found.items():
        for form in (p.rstrip("/"), os.path.realpath(p)):
            if form not in generic:
                out.setdefault(form, what)
    return out


def _leaks(folders: list[Path], needles: dict[str, str]) -> list[str]:
    """``file: what (context)`` for every needle (path -> what it is) found in a file under
    ``folders`` (the bytes of every file, binary ones included); a needle counts as a path
    (``/tmp``, not ``/tmpfoo``)."""
    pats = [(what, re.compile(re.escape(p.encode()) + rb"(?![\w.-])"))
            for p, what in needles.items()]
    out = []
    for folder in folders:
        for f in sorted(folder.rglob("*")):
            if not f.is_file():
                continue
            data = f.read_bytes()
            for what, pat in pats:
                if (m := pat.search(data)) is not None:
                    ctx = data[max(0, m.start() - 60):m.end() + 40].decode("utf-8", "replace")
                    out.append(f"{f.relative_to(folder.parent)}: {what} ({ctx!r})")
    return out


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_build_writes_no_path_of_the_builders_machine(tmp_path, monkeypatch):
    root = tmp_path / DISTINCT
    root.mkdir()
    monkeypatch.setenv("PEAR_DATA_DIR", str(_tiny_benchmarks(root / "bench")))
    monkeypatch.delenv(report.FIGURES_ENV, raising=False)
    runs, figures, nb, site_dir = root / "runs", root / "figures", root / "nb", root / "site"
    rc = paper.build(backend="simulated", preset="sim", seeds="0", n_questions=2,
                     runs=str(runs), figures=figures, build_dir=nb, site_dir=site_dir,
                     only="00,01,04,13,17")
    assert rc == 0
    assert (site_dir / checklist.PAGE).is_file() and site.check_site(site_dir) == []
    assert len(list(nb.glob("*.ipynb"))) == 5 and (figures / "round_curves.pdf").is_file()
    leaks = _leaks([runs, figures, nb, site_dir], _builder_paths(root))
    assert leaks == [], "\n".join(leaks)
    # what is shown instead: paths in the checkout relative to it, others by their name
    q5 = (site_dir / checklist.PAGE).read_text()
    assert "--runs …/runs" in q5
    executed = nbformat.read(nb / "01_main_results.ipynb", as_version=4)
    assert "PosixPath('…/numbers.tex')" in str(executed.cells[-1].outputs)
    (injected,) = [c.source for c in executed.cells
                   if "injected-parameters" in c.metadata.get("tags", [])]
    assert 'runs_dir = "…/runs"' in injected
    assert executed.metadata.papermill.parameters["runs_dir"] == "…/runs"
