"""``make lab``: JupyterLab on the notebooks, where the jupytext ``.py`` notebooks open as
notebooks, run on the ``pear`` kernel.  The fast test runs the Makefile's own recipe
(``make -n lab``) for what it sets up, with a throwaway virtual environment that sees this one's
packages: the viewer setting it writes, the kernel it installs, the notebooks the server opens
on and the lock it installs JupyterLab from.  The slow one starts the server and asks it over
its REST API; it needs JupyterLab in this environment (``make lab`` installs the locked ``lab``
profile, requirements/lab.txt)."""
from __future__ import annotations

import json
import os
import re
import shlex
import site
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _recipe(venv: Path) -> list[str]:
    out = subprocess.run(["make", "-n", "lab", f"VENV={venv}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return out.replace("\\\n", " ").splitlines()


def _venv_seeing_this_one(venv: Path) -> Path:
    """A virtual environment (no pip) whose Python imports this environment's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    Path(purelib, "_this_env.pth").write_text(
        "\n".join([*site.getsitepackages(), str(ROOT)]) + "\n")
    return venv / "bin" / "python"


def test_make_lab_sets_the_jupytext_viewer_and_the_pear_kernel_on_the_notebooks(tmp_path):
    pytest.importorskip("ipykernel", reason="the notebooks' kernel needs ipykernel")
    venv = tmp_path / "venv"
    python = _venv_seeing_this_one(venv)
    lines = _recipe(venv)
    # the recipe's own steps after the installs, as make would run them (not the server);
    # kernels found only in this venv (no user-wide 'pear' kernel of another Python)
    env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "user"), "JUPYTER_PATH": ""}
    steps = [x for x in lines if x.startswith(("mkdir", "echo", f"{python} -c"))]
    assert len(steps) == 3, lines
    for line in steps:
        subprocess.run(line, shell=True, check=True, cwd=ROOT, env=env)

    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    viewers = json.loads(overrides.read_text())["@jupyterlab/docmanager-extension:plugin"]
    assert viewers == {"defaultViewers": {"python": "Jupytext Notebook"}}

    kernel = venv / "share" / "jupyter" / "kernels" / "pear" / "kernel.json"
    spec = json.loads(kernel.read_text())
    assert Path(spec["argv"][0]) == python and "ipykernel_launcher" in spec["argv"]
    assert spec["env"] == {"MPLBACKEND": "agg"} and spec["display_name"] == "Python (pear)"
    run = subprocess.run([spec["argv"][0], "-c", "import ipykernel, pear; print(pear.__file__)"],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0 and Path(run.stdout.strip()).parent == ROOT / "pear", run.stderr
    before = kernel.stat().st_mtime_ns
    subprocess.run(steps[-1], shell=True, check=True, cwd=ROOT, env=env)
    assert kernel.stat().st_mtime_ns == before  # installed once: a second `make lab` keeps it

    # the server opens on the notebooks, whose .py files jupytext reads as notebooks
    lab = shlex.split(next(x for x in lines if "jupyter lab" in x))
    assert lab[0] == str(venv / "bin" / "jupyter") and lab[1] == "lab"
    opts = dict(o.split("=", 1) for o in lab[2:] if "=" in o)
    tree = opts["--LabApp.default_url"].removeprefix("/lab/tree/")
    folder = Path(opts["--ServerApp.root_dir"]) / tree
    assert folder == ROOT / "notebooks" and sorted(folder.glob("[0-9]*.py"))
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(folder / "01_main_results.py")
    assert ["parameters"] in [c.metadata.get("tags") for c in nb.cells]

    # JupyterLab itself comes from the lab profile's lock, hash-checked
    install = next(x for x in lines if "-r requirements/lab.txt" in x)
    assert install.startswith(f"{python} -m pip install") and "--require-hashes" in install
    lock = (ROOT / "requirements" / "lab.txt").read_text()
    for dist in ("jupyterlab", "jupytext", "ipykernel"):
        assert re.search(rf"^{dist}==[\w.]+ \\\n\s+--hash=sha256:", lock, re.M), dist


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
