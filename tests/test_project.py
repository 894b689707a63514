"""Project hygiene: environment.yml mirrors pyproject.toml; the package imports no runtime."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=\[ ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_mirrors_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r): r for r in py["dependencies"] + py["optional-dependencies"]["analysis"]
              + py["optional-dependencies"]["openai"] + py["optional-dependencies"]["dev"]
              + py["optional-dependencies"]["cpu"] + py["optional-dependencies"]["notebooks"]
              + py["optional-dependencies"]["lab"]}
    env = (ROOT / "environment.yml").read_text()
    listed = {}
    deps = env.split("dependencies:", 1)[1]  # skip the channels list
    for line in deps.splitlines():
        m = re.match(r"^\s*-\s+([A-Za-z0-9_.\-\[\]]+.*)$", line)
        if m and not m.group(1).startswith(("-e", "python", "pip")):
            listed[_name(m.group(1))] = m.group(1).strip()
    assert set(wanted) == set(listed), set(wanted) ^ set(listed)
    for name, req in wanted.items():  # same version constraint
        assert req.replace(" ", "").split(name, 1)[-1].lstrip("]").split("]")[-1] in \
            listed[name].replace(" ", ""), (req, listed[name])


def test_importing_pear_loads_no_llm_runtime():
    code = ("import sys, pear, pear.backends, pear.backends.vllm, pear.backends.llamacpp, "
            "pear.backends.openai_compat, pear.core.engine, pear.runs.runner\n"
            "bad = [m for m in ('vllm', 'llama_cpp', 'torch') if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_data_sources_are_documented():
    """Every shipped benchmark's row in SOURCES.md gives the sha256 of the file as it is, and
    every file of the study's numbers is described in data/paper/README.md."""
    import hashlib
    from pear.tasks.benchmarks import DATASETS, FILES
    sources = (ROOT / "data/benchmarks/SOURCES.md").read_text()
    for name in DATASETS:
        path = ROOT / "data/benchmarks" / FILES[name]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        row = [line for line in sources.splitlines() if line.startswith(f"| `{FILES[name]}` |")]
        assert len(row) == 1 and f"`{digest}`" in row[0], name
    readme = (ROOT / "data/paper/README.md").read_text()
    shipped = sorted(p.name for p in (ROOT / "data/paper").iterdir() if p.name != "README.md")
    assert shipped and [n for n in shipped if n not in readme] == []
