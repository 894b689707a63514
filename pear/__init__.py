"""PEAR: Permutation-Equivariant Adaptive Routing multi-agent debate.

The public facade, what notebooks and users import.  The protocol (:mod:`pear.core`) loads with
numpy alone; the names from the layers above are imported on first use, so ``import pear``
stays light, and heavy runtimes (vllm, llama_cpp) are imported only inside their backend
modules.  What each name is:

* ``DebateConfig``, ``RouterConfig``: a debate's settings and its router's.
* ``method(name)``: the :class:`Method` (a routing rule and an aggregation) a name stands
  for; ``Method`` is its class.
* ``Engine``, ``Job``: the debate engine and one debate it runs (a question, a method, a seed).
* ``SimulatedBackend``: simulated agents, no model (:mod:`pear.sim.backend`).
* ``benchmarks``, ``grading``: the datasets' questions and their graders (modules:
  :mod:`pear.tasks.benchmarks`, :mod:`pear.tasks.grading`).
* ``register``: add a routing method from your own code, a plug-in: the same function as
  :func:`pear.methods.register`, the spelling the docs use; ``testing``: the checks a registered method passes
  (the module :mod:`pear.testing`, e.g. ``testing.check_method(name)``).
* ``preset(name, ...)``: a grid of debates (:func:`pear.runs.grid.preset`); ``run(exp,
  backend, out)``: run it into a run directory (:func:`pear.runs.runner.run`).

The subpackages keep their own names (``pear.methods``: plug-ins and the method registry;
``pear.runs``: grids and runs; ``pear.backends``: LLM backends by name), none of which the
facade re-exports under another.

>>> import pear
>>> pear.DebateConfig().n_agents, pear.method("pear").name
(5, 'pear')
"""
from __future__ import annotations

import importlib
from typing import Any

from pear.core.config import DebateConfig, RouterConfig
from pear.core.methods import Method, method
from pear.core.engine import Engine, Job

__version__ = "0.1.0"
__all__ = ["DebateConfig", "RouterConfig", "Method", "method", "Engine", "Job",
           "SimulatedBackend", "benchmarks", "grading", "register", "testing", "preset", "run",
           "__version__"]

_LAZY = {  # name -> module that defines it (imported on first use: pandas, msgspec, ...)
    "SimulatedBackend": "pear.sim.backend", "register": "pear.methods",
    "preset": "pear.runs.grid", "run": "pear.runs.runner",
}
_LAZY_MODULES = {  # name -> the module it is (imported on first use)
    "benchmarks": "pear.tasks.benchmarks", "grading": "pear.tasks.grading",
    "testing": "pear.testing",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(_LAZY_MODULES[name])
    raise AttributeError(f"module 'pear' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))
