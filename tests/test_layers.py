"""The layout: every module imports only its own layer and the layers below it (function-level
imports included), there is no import cycle, and the core loads with numpy alone."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PEAR = Path(__file__).resolve().parents[1] / "pear"

LAYERS = {  # package -> floor; a module may import its own floor and the floors below
    "paths": 0,      # where things are (standard library only)
    "parallel": 0,   # the usable cores and the fork map (standard library only)
    "core": 1,       # the protocol, numpy only, with the interface it calls (core.backend)
    "backends": 2,   # LLM runtimes implementing the core's Backend.generate
    "sim": 2,        # the simulator beside them: populations, the revision model, its backend
    "methods": 3,    # pear.methods: the registry's public face and the related-work plug-ins
    "testing": 3,    # pear.testing: router conformance checks (core only)
    "tasks": 3,      # benchmarks and grading (use the core's seeds)
    "catalog": 4,    # the study's names: models, labels
    "store": 5,      # records on disk, validation, the columnar view, the manifest
    "runs": 6,       # grids, runs, merge, plan
    "harness": 6,    # PEAR inside Inspect (beside runs: core, methods, tasks, catalog, store,
                     # and runs' grid and run layout); only the CLI's import command loads it
    "analysis": 7,   # metrics, stats, tables, figures
    "claims": 8,     # the claims ledger
    "populations": 8,  # fitting and checking simulated populations against recorded runs
    "paper": 9,      # the notebook build, studies, calibration, site
    "cli": 10, "__main__": 10,
}
PEERS_APART: set[tuple[str, str]] = {
    (a, b) for a in ("tasks", "methods", "testing") for b in ("tasks", "methods", "testing")
    if a != b} | {("backends", "sim"), ("claims", "populations"), ("populations", "claims")}
"""(importer, imported) packages on one floor where the import is refused (routers see answer
classes, never a benchmark; the checks see only the core's protocol; the LLM runtimes know
nothing of the simulator, which the backend registry names by module path only)."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(PEAR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported pear module) for every import statement in ``path``, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("pear")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("pear"):
            if node.module == "pear" or node.module.count(".") == 1 and \
                    (PEAR / node.module.split(".")[1]).is_dir():
                out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, node.module))
    return out


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PEAR.rglob("*.py")}


def test_every_package_has_a_floor():
    packages = {_package(m) for m in _modules()} - {None}
    assert packages <= set(LAYERS), f"packages without a floor: {sorted(packages - set(LAYERS))}"


def test_the_design_page_lists_the_floors_of_this_map():
    """docs/design.md's numbered list of layers: floor ``n.``, then its packages in backticks,
    the same packages on the same floors as :data:`LAYERS`."""
    import re
    text = (PEAR.parent / "docs" / "design.md").read_text()
    block = text.split("one floor a line):", 1)[1].strip().split("\n\n", 1)[0]
    listed = {}
    for m in re.finditer(r"^(\d+)\. (.*)$", block, flags=re.M):
        for name in re.findall(r"`([\w.]+)`", m.group(2)):
            if name in LAYERS:
                listed[name] = int(m.group(1))
    assert listed == LAYERS


def test_no_module_imports_a_higher_layer():
    bad = []
    for name, path in _modules().items():
        src = _package(name)
        if src is None:  # the facade pear/__init__.py: imports the core, the rest lazily
            continue
        for line, target in _imports(path):
            dst = _package(target)
            if dst is None or dst == src:
                continue
            if LAYERS[dst] > LAYERS[src] or (src, dst) in PEERS_APART:
                bad.append(f"{path.relative_to(PEAR.parent)}:{line} ({src}, floor "
                           f"{LAYERS[src]}) imports {target} ({dst}, floor {LAYERS[dst]})")
    assert not bad, "imports that point up:\n" + "\n".join(bad)


def test_no_import_cycle():
    mods = _modules()
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        for _, target in _imports(path):
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name and target != "pear":
                graph[name].add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


BLOCKED = ("pandas", "scipy", "pyarrow", "matplotlib", "seaborn", "statsmodels", "msgspec",
           "jinja2", "openai", "math_verify", "tqdm")

THIN = r"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
import pear.core
from pear import DebateConfig, Engine, Job, method
from pear.sim.backend import SimulatedBackend
from pear.tasks import benchmarks, grading
q = benchmarks.load("gsm8k", n=1)[0]
backend = SimulatedBackend(answer_key={("gsm8k", q.id): q.gold})
engine = Engine(backend, DebateConfig(rounds=2), task_for=grading.get)
(rec,) = list(engine.run([Job(q, method("pear"), 0)]))
assert rec["method"] == "pear" and len(rec["rounds_data"]) == 3, rec.keys()
from pear import methods, testing
(dar,) = list(engine.run([Job(q, method("dar"), 0)]))
assert dar["plugin"]["module"] == "pear.methods.dar", dar.get("plugin")
testing.check_method("dar")
assert all(len(r["agents"]) == 5 for r in rec["rounds_data"])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
assert not heavy, heavy
print("final", rec["final_answer"], rec["correct"])
""".replace("BLOCKED", repr(BLOCKED))


def test_core_runs_a_simulated_debate_with_numpy_only():
    out = subprocess.run([sys.executable, "-c", THIN], capture_output=True, text=True,
                         cwd=PEAR.parent, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("final ")
