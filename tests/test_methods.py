"""Methods are plug-ins: the registry, the router conformance checks, plug-ins in the engine
and the records, the CLI, and an outside package installed through the entry point."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pear import methods, testing
from pear.sim.backend import SimulatedBackend
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.tasks import benchmarks, grading

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def registered():
    """Names registered by a test, removed afterwards."""
    names: list[str] = []
    yield names
    for n in names:
        if n in methods.plugin_names():
            methods.unregister(n)


# -- routers for the conformance checks ---------------------------------------------------

def lowest_index(state, rng):
    """Reads the agent index: every target hears the k lowest-numbered other agents."""
    return [(s, t) for t in range(state.n) for s in [x for x in range(state.n) if x != t][:state.k]]


def one_too_many(state, rng):
    """Breaks the budget: every target hears k + 1 sources (chosen equivariantly)."""
    out = []
    for t in range(state.n):
        others = [s for s in range(state.n) if s != t]
        out += [(int(s), t) for s in rng.choice(others, size=state.k + 1, replace=False)]
    return out


_GLOBAL = np.random.default_rng(123)


def global_rng(state, rng):
    """Nondeterministic: draws from a generator of its own, not the debate's."""
    out = []
    for t in range(state.n):
        others = [s for s in range(state.n) if s != t]
        out += [(int(s), t) for s in _GLOBAL.choice(others, size=state.k, replace=False)]
    return out


def self_loops(state, rng):
    return [(t, t) for t in range(state.n)]


def uniform_k(state, rng, k=None):
    """Equivariant, on budget, seeded: k uniformly drawn sources per target."""
    out = []
    for t in range(state.n):
        others = [s for s in range(state.n) if s != t]
        out += [(int(s), t) for s in rng.choice(others, size=k or state.k, replace=False)]
    return out


def test_conformance_catches_a_router_that_reads_the_agent_index():
    with pytest.raises(AssertionError, match="not permutation-equivariant.*read the agent index"):
        testing.check_router(lowest_index)
    testing.check_router(lowest_index, equivariant=False)  # valid, on budget, deterministic


def test_conformance_catches_a_router_that_breaks_its_edge_budget():
    with pytest.raises(AssertionError, match=r"edge budget broken.*3 sources.*in-degree 2"):
        testing.check_router(one_too_many)
    testing.check_router(one_too_many, in_degree=3)  # what it does, declared


def test_conformance_catches_a_nondeterministic_router():
    with pytest.raises(AssertionError, match="not deterministic under a seed"):
        testing.check_router(global_rng)


def test_conformance_catches_invalid_edges():
    with pytest.raises(AssertionError, match=r"invalid edges.*self-loop \(0, 0\)"):
        testing.check_router(self_loops)


def test_a_conforming_router_passes_and_star_fails_if_it_claims_equivariance():
    testing.check_router(uniform_k)
    star = methods.spec("star").route
    with pytest.raises(AssertionError, match="not permutation-equivariant"):
        testing.check_router(star, in_degree=None)


@pytest.mark.parametrize("name", methods.names())
def test_every_registered_method_passes_its_declared_checks(name):
    testing.check_method(name, samples=100)


# -- the registry ---------------------------------------------------------------------------

def test_the_study_methods_are_registered_in_table_order_and_plugins_follow():
    from pear.core.methods import METHODS
    study = [m for m in methods.names() if not methods.is_self_consistency(m)]
    assert study[:14] == list(METHODS)
    from pear.catalog.labels import method_label, method_order, sort_rows
    # sc@K (registered on first use) sits beside CoT-SC, by K: the one table order
    assert method_order(["pear", "sc@20", "cot_sc", "sc@5"]) == \
        ["cot_sc", "sc@5", "sc@20", "pear"]
    assert all(methods.spec(m).origin == "built-in" for m in METHODS)
    assert method_order(["zeta", "pear", "dar", "cot"]) == ["cot", "pear", "dar", "zeta"]
    import pandas as pd
    rows = sort_rows(pd.DataFrame({"method": ["zeta", "dar", "pear", "cot"]}), ["method"])
    assert rows["method"].tolist() == ["cot", "pear", "dar", "zeta"]
    assert method_label("pear_reconcile") == "PEAR + ReConcile vote"


def test_bad_registrations_and_lookups_name_the_bad_value(registered):
    with pytest.raises(ValueError, match="invalid method name 'my router'"):
        methods.register("my router", uniform_k)
    with pytest.raises(ValueError, match="'pear' is already registered"):
        methods.register("pear", uniform_k)
    with pytest.raises(ValueError, match="invalid parameter 'weights'.*neither"):
        methods.register("tmp_bad", uniform_k, params={"weights": 1})
    with pytest.raises(ValueError, match=r"invalid parameter k=\{"):
        methods.register("tmp_bad", uniform_k, params={"k": {"a": 1}})
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        methods.method("nope")
    registered.append("tmp_ok")
    methods.register("tmp_ok", uniform_k, params={"k": 2})
    with pytest.raises(ValueError, match="unknown parameter 'q' of method 'tmp_ok'"):
        methods.method("tmp_ok", params={"q": 1})
    with pytest.raises(ValueError, match="unknown preset|invalid methods: unknown method 'nope'"):
        from pear.runs.grid import preset
        preset("beyond", methods=("pear", "nope"))


def _questions(n=2):
    return benchmarks.load("gsm8k", n=n)


def _engine(rounds=2):
    qs = _questions()
    backend = SimulatedBackend(answer_key={("gsm8k", q.id): q.gold for q in qs})
    return Engine(backend, DebateConfig(rounds=rounds), task_for=grading.get), qs


def test_a_plugin_with_params_gets_a_config_hash_per_param_value(registered):
    registered.append("tmp_k")
    methods.register("tmp_k", uniform_k, params={"k": 1})
    eng, qs = _engine()
    one = eng.identity(Job(qs[0], methods.method("tmp_k"), 0))["config_hash"]
    two = eng.identity(Job(qs[0], methods.method("tmp_k", params={"k": 2}), 0))["config_hash"]
    again = eng.identity(Job(qs[0], methods.method("tmp_k", params={"k": 1}), 0))["config_hash"]
    study = eng.identity(Job(qs[0], methods.method("random"), 0))["config_hash"]
    assert one == again and len({one, two, study}) == 3
    rec1, rec2 = eng.run([Job(qs[0], methods.method("tmp_k"), 0),
                          Job(qs[0], methods.method("tmp_k", params={"k": 2}), 0)])
    assert rec1["plugin"] == {"origin": "module", "module": __name__, "version": "",
                              "params": {"k": 1}}
    assert rec2["plugin"]["params"] == {"k": 2}
    # the parameter is what the router ran with: in-degree 1 against 2
    assert all(len(rd["edges"]) == 5 for rd in rec1["rounds_data"][1:])
    assert all(len(rd["edges"]) == 10 for rd in rec2["rounds_data"][1:])


def test_plugin_records_validate_and_study_records_carry_no_plugin_field(tmp_path):
    from pear.runs.grid import preset
    from pear.runs.runner import run
    from pear.store.validate import validate
    exp = preset("beyond", methods=("pear", "dar", "pear_reconcile", "group", "static"),
                 datasets=("gsm8k",), seeds=(0,), n_questions=3, rounds=2)
    from pear.runs.grid import answer_key
    run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    checked = validate(tmp_path)
    assert checked.findings.ok, checked.report()
    import json
    recs = [json.loads(line) for f in tmp_path.rglob("*.jsonl") for line in f.open()]
    by = {}
    for r in recs:
        by.setdefault(r["method"], []).append(r)
    assert set(by) == {"pear", "dar", "pear_reconcile", "group", "static"}
    assert all("plugin" not in r for r in by["pear"])
    assert {r["plugin"]["module"] for r in by["dar"]} == {"pear.methods.dar"}
    # group debate: cross-group critiques only on even rounds
    rd = by["group"][0]["rounds_data"]
    assert len(rd[2]["edges"]) > len(rd[1]["edges"]) == 8


def test_a_router_returning_bad_edges_fails_naming_the_method(registered):
    registered.append("tmp_loop")
    methods.register("tmp_loop", self_loops, in_degree=None)
    eng, qs = _engine(rounds=1)
    with pytest.raises(ValueError, match="method 'tmp_loop' returned the self-loop"):
        list(eng.run([Job(qs[0], methods.method("tmp_loop"), 0)]))


def test_reconcile_vote_weighs_confidence():
    from pear.methods import reconcile
    rng = np.random.default_rng(0)
    # two confident-4 agents (0.5 each) lose to one confidence-5 agent (1.0) ... on a tie
    # the draw is uniform; three 4s (1.5) beat one 5 (1.0)
    assert reconcile.aggregate(["a", "a", "a", "b"], [4, 4, 4, 5], rng) == "a"
    assert reconcile.aggregate(["a", "a", "b"], [3, 3, 5], rng) == "b"  # 0.2 < 1.0
    got = {reconcile.aggregate(["a", "a", "b"], [4, 4, 5], np.random.default_rng(s))
           for s in range(20)}
    assert got == {"a", "b"}  # 1.0 against 1.0: a tie, broken by the generator


# -- the CLI and outside packages -------------------------------------------------------------

def test_one_spelling_of_register_in_the_docs():
    """The docs and notebooks write ``pear.methods.register``; ``pear.register`` is the same
    function, kept for plug-ins that import it."""
    import re
    import pear
    from pear.paths import REPO_ROOT
    assert pear.register is methods.register
    files = [REPO_ROOT / "README.md", *(REPO_ROOT / "docs").glob("*.md"),
             *(REPO_ROOT / "notebooks").glob("*.py")]
    other = [f.name for f in files
             if re.search(r"\bpear\.register\(|from pear import[^\n]*\bregister\b",
                          f.read_text())]
    assert other == [], f"{other} spell pear.register: write pear.methods.register"


def test_pear_methods_lists_origins_and_loads_plugin_modules(tmp_path, monkeypatch, capsys):
    (tmp_path / "tmp_cli_router.py").write_text(textwrap.dedent('''
        from pear.methods import register
        def route(state, rng):
            return [(s, t) for t in range(state.n) for s in range(state.n) if s != t]
        register("tmp_cli", route, in_degree=None, description="every pair")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PEAR_PLUGINS", "")  # restored (unset) afterwards
    from pear.cli import main
    try:
        assert main(["methods", "--plugin", "tmp_cli_router"]) == 0
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if x.startswith("tmp_cli "))
        assert "module" in line and "tmp_cli_router" in line
        assert any(x.startswith("dar ") and "related work" in x for x in out.splitlines())
        assert os.environ["PEAR_PLUGINS"] == "tmp_cli_router"
        assert main(["methods", "--plugin", "no_such_module_xyz"]) == 2
        assert "could not load plug-in module 'no_such_module_xyz'" in capsys.readouterr().err
    finally:
        methods.unregister("tmp_cli")


PACKAGE = {  # an outside plug-in package; its build backend (stdlib only) is in the tree
    "pyproject.toml": """
        [build-system]
        requires = []
        build-backend = "tiny_backend"
        backend-path = ["."]

        [project]
        name = "pear-outside-router"
        version = "0.3.1"

        [project.entry-points."pear.methods"]
        outside = "outside_router"
    """,
    "tiny_backend.py": """
        import base64, hashlib, zipfile
        NAME, VERSION = "pear_outside_router", "0.3.1"
        FILES = {
            "outside_router.py": open("outside_router.py").read(),
            f"{NAME}-{VERSION}.dist-info/METADATA":
                f"Metadata-Version: 2.1\\nName: pear-outside-router\\nVersion: {VERSION}\\n",
            f"{NAME}-{VERSION}.dist-info/WHEEL":
                "Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
            f"{NAME}-{VERSION}.dist-info/entry_points.txt":
                "[pear.methods]\\noutside = outside_router\\n",
        }

        def get_requires_for_build_wheel(config_settings=None):
            return []

        def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
            name = f"{NAME}-{VERSION}-py3-none-any.whl"
            record = []
            with zipfile.ZipFile(f"{wheel_directory}/{name}", "w") as whl:
                for path, text in FILES.items():
                    data = text.encode()
                    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                    record.append(f"{path},sha256={digest.decode()},{len(data)}")
                    whl.writestr(path, data)
                record.append(f"{NAME}-{VERSION}.dist-info/RECORD,,")
                whl.writestr(f"{NAME}-{VERSION}.dist-info/RECORD", "\\n".join(record) + "\\n")
            return name
    """,
    "outside_router.py": """
        from pear.methods import register

        def route(state, rng):
            edges = []
            for t in range(state.n):
                noise = rng.random(state.n)
                ranked = sorted(((state.answers[s] != state.answers[t], noise[s], s)
                                 for s in range(state.n) if s != t), reverse=True)
                edges += [(s, t) for *_, s in ranked[:state.k]]
            return edges

        register("outside", route, label="Outside router", description="from a package")
    """,
}


@pytest.mark.slow
def test_an_installed_package_shows_in_pear_methods_and_the_main_table(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name, text in PACKAGE.items():
        (src / name).write_text(textwrap.dedent(text))
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                          "--no-build-isolation", "--no-index", "--quiet", "--target",
                          str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]),
           "PEAR_FIGURES_DIR": str(tmp_path / "figures"), "PEAR_PLUGINS": ""}
    listed = subprocess.run([sys.executable, "-m", "pear", "methods"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    line = next(x for x in listed.stdout.splitlines() if x.startswith("outside "))
    assert "entry point" in line and "outside_router 0.3.1" in line
    build = subprocess.run([sys.executable, "-m", "pear", "paper", "--backend", "simulated",
                            "--preset", "smoke", "--runs", str(tmp_path / "runs"),
                            "--only", "00,01"], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=600)
    assert build.returncode == 0, (build.stdout + build.stderr)[-3000:]
    table = (tmp_path / "figures" / "main_results.md").read_text()
    header = next(x for x in table.splitlines() if "PEAR" in x)
    assert header.index("PEAR") < header.index("Outside router"), header


@pytest.mark.parametrize("n, k", [(3, 1), (4, 2)])
def test_every_method_runs_a_small_debate(n, k):
    """The smoke preset's shape (3 agents, k = 1) and another: every registered method, the
    related work included, runs two rounds and gives each agent a valid answer."""
    from pear.sim.backend import SimulatedBackend
    from pear.core.config import DebateConfig
    from pear.core.engine import Engine, Job
    from record_factory import arithmetic_questions
    qs = arithmetic_questions(2)
    eng = Engine(SimulatedBackend({(q.dataset, q.id): q.gold for q in qs}, n_agents=n),
                 DebateConfig(n_agents=n, rounds=2, k=k))
    names = [m for m in methods.names() if not methods.is_self_consistency(m)]
    recs = list(eng.run([Job(q, methods.method(m), 0) for q in qs for m in names]))
    assert len(recs) == 2 * len(names) and not eng.failed
    for r in recs:
        assert all(0 <= s < n and 0 <= t < n for rd in r["rounds_data"] for s, t in rd["edges"])


def _lowest_first(state, seed=0):
    """Reads the agent index: each agent critiques the next one (not equivariant)."""
    return [(i, (i + 1) % state.n) for i in range(state.n)][: state.n * state.k]


def test_check_methods_in_workers_checks_plugins_and_names_the_one_that_fails(registered):
    registered.append("tmp_by_index")
    methods.register("tmp_by_index", _lowest_first, in_degree=None, equivariant=True)
    testing.check_methods(["pear", "random"], workers=2)  # conforming: nothing raised
    with pytest.raises(AssertionError, match="not permutation-equivariant.*tmp_by_index"):
        testing.check_methods(["random", "tmp_by_index", "clique"], workers=2)
