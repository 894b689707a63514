"""One registry entry per backend (pear.backends.registry) and per import format
(pear.store.readers.FORMATS): the command line, the run factory and the notebook build read
them, and nothing else spells a name out."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from pear import backends
from pear.backends.registry import BACKENDS, REPLAY, SIMULATED, names, spec
from pear.cli import _parser
from pear.runs.factory import default_workers, make_backend
from pear.runs.grid import MODEL_BACKENDS, preset
from pear.store.readers import FORMATS, READERS, Reader


def _action(argv: list[str], dest: str):
    sub = next(a for a in _parser()._actions if a.dest == "command").choices[argv[0]]
    return next(a for a in sub._actions if a.dest == dest)


def test_every_backend_that_runs_is_a_choice_of_pear_run_plan_and_branch():
    runnable = names(runs=True)
    assert runnable == ("llamacpp", "openai", "vllm", "vllm-cpu", "simulated")
    for command in ("run", "plan", "branch"):
        assert tuple(_action([command], "backend").choices) == runnable
    for name in runnable:
        a = _parser().parse_args(["run", "--out", "x", "--backend", name])
        assert a.backend == name
    assert set(names()) - set(runnable) == {REPLAY}


def test_pear_run_refuses_an_unknown_or_replay_backend_in_one_line(capsys):
    for bad, needle in (("gpt", "unknown backend 'gpt'"),
                        (REPLAY, f"backend {REPLAY!r} runs nothing")):
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_args(["run", "--out", "x", "--backend", bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert needle in err and "choose one of llamacpp, openai, vllm, vllm-cpu, simulated" \
            in err and len(err.strip().splitlines()) == 1


def test_every_entry_names_a_class_and_the_help_lists_every_name():
    for s in BACKENDS.values():
        if s.runs:  # the module path and class resolve (the module is only found, not run)
            assert importlib.util.find_spec(s.module) is not None, s
            source = open(importlib.util.find_spec(s.module).origin).read()
            assert re.search(rf"^class {s.cls}\b", source, re.M), s
        assert s.model in ("", "model", "model_path") and s.summary
    assert spec(SIMULATED).simulator and not spec(REPLAY).runs
    help_run = _action(["run"], "backend").help
    help_paper = _action(["paper"], "backend").help
    assert all(n in help_run for n in names(runs=True)) and REPLAY not in help_run
    assert all(f"{n}:" in help_paper for n in names())


def test_the_factory_builds_the_simulated_backend_from_the_registry():
    be = make_backend(SIMULATED, exp=preset("smoke"))
    assert type(be).__name__ == spec(SIMULATED).cls == "SimulatedBackend"
    assert type(be).__module__ == spec(SIMULATED).module
    assert be.name == SIMULATED


def test_an_unknown_backend_is_one_error_listing_the_known_names():
    known = ", ".join(names())
    for build in (lambda: make_backend("gpt", exp=preset("smoke")), lambda: backends.get("gpt"),
                  lambda: default_workers("gpt")):
        with pytest.raises(ValueError, match=f"^unknown backend 'gpt': choose one of {known}$"):
            build()
    with pytest.raises(ValueError, match=f"backend '{REPLAY}' runs nothing"):
        make_backend(REPLAY, exp=preset("smoke"))


def test_the_registry_says_which_backends_take_a_model_and_how_many_workers():
    assert MODEL_BACKENDS == ("openai", "vllm", "vllm-cpu")
    assert default_workers("openai") == default_workers("vllm-cpu") == 1
    assert 1 <= default_workers("llamacpp") <= spec("llamacpp").workers_max
    with pytest.raises(ValueError, match="the openai backend needs --model NAME"):
        make_backend("openai", exp=preset("smoke"))


def test_the_notebook_build_takes_every_registry_name():
    from pear.paper.study import BACKENDS as BUILD_BACKENDS, experiment
    assert BUILD_BACKENDS == names()
    assert experiment("smoke", backend=REPLAY).name == "smoke"
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        experiment("smoke", backend="gpu")


def test_every_import_format_has_a_reader_or_an_importer():
    assert tuple(_action(["import"], "format").choices) == tuple(FORMATS)
    assert list(FORMATS) == ["du", "dylan", "dylan-mmlu", "inspect"]
    for name, f in FORMATS.items():
        assert f.name == name and f.summary and f.files
        if f.reader is not None:
            assert isinstance(f.reader, Reader) and READERS[name] is f.reader
            assert f.reader.name == name
        else:  # its importer (an optional extra) is named by path: the module exists
            module, _, function = f.importer.partition(":")
            source = importlib.util.find_spec(module).origin
            assert re.search(rf"^def {function}\(", open(source).read(), re.M) and f.extra
    assert set(READERS) == {n for n, f in FORMATS.items() if f.reader is not None}


def test_the_registries_import_no_runtime():
    code = ("import sys; import pear.backends.registry, pear.store.readers, pear.cli; "
            "heavy = [m for m in ('vllm', 'llama_cpp', 'openai', 'pandas', 'inspect_ai') "
            "if m in sys.modules]; assert not heavy, heavy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
