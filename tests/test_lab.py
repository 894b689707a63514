"""``make lab``: JupyterLab on the notebooks, where the jupytext ``.py`` notebooks open as
notebooks.  The test takes the settings and the server options from the Makefile's own
recipe (``make -n lab``), starts the server on a free port and asks it over its REST API.
It needs JupyterLab in this environment (``make lab`` installs the locked ``lab``
profile, requirements/lab.txt)."""
from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _recipe(venv: Path) -> list[str]:
    out = subprocess.run(["make", "-n", "lab", f"VENV={venv}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return out.replace("\\\n", " ").splitlines()


def test_make_lab_installs_the_locked_lab_profile_and_sets_the_jupytext_viewer(tmp_path):
    lines = _recipe(tmp_path / "venv")
    assert any("pip install" in x and "--require-hashes" in x and "-r requirements/lab.txt" in x
               for x in lines)
    echo = next(x for x in lines if "overrides.json" in x and x.startswith("echo"))
    assert '"python": "Jupytext Notebook"' in echo
    assert any("jupyter lab" in x and "default_url=/lab/tree/notebooks" in x for x in lines)


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_make_lab_serves_the_py_notebooks_as_notebooks(tmp_path):
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed here: `make lab` "
                                             "installs it (the lab extra)")
    venv = tmp_path / "venv"
    lines = _recipe(venv)
    for line in lines:  # the recipe's settings steps, as make would run them
        if line.startswith(("mkdir", "echo")):
            subprocess.run(line, shell=True, check=True, cwd=ROOT)
    settings = venv / "share" / "jupyter" / "lab" / "settings"
    assert (settings / "overrides.json").is_file()
    lab = shlex.split(next(x for x in lines if "jupyter lab" in x))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "jupyterlab", *lab[2:], "--no-browser", f"--port={port}",
           "--ServerApp.token=pear-test", f"--LabApp.app_settings_dir={settings}",
           "--ServerApp.open_browser=False"]
    server = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    base, token = f"http://127.0.0.1:{port}", "token=pear-test"
    try:
        for _ in range(120):
            try:
                _get(f"{base}/api/status?{token}")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-2000:]
                time.sleep(1)
        item = _get(f"{base}/api/contents/notebooks/01_main_results.py?content=1&{token}")
        assert item["type"] == "notebook"  # jupytext reads the .py as a notebook
        tags = [c["metadata"].get("tags", []) for c in item["content"]["cells"]]
        assert ["parameters"] in tags
        plugin = _get(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?{token}")
        viewers = plugin["schema"]["properties"]["defaultViewers"]["default"]
        assert viewers.get("python") == "Jupytext Notebook"  # a click opens it as a notebook
    finally:
        server.terminate()
        server.wait(timeout=30)
