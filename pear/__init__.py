"""PEAR: Permutation-Equivariant Adaptive Routing multi-agent debate.

The public facade, what notebooks and users import.  The protocol (:mod:`pear.core`) loads with
numpy alone; names from the layers above (``run``, ``preset``, ``load``) are imported on first
use, so ``import pear`` stays light, and heavy runtimes (vllm, llama_cpp) are imported only
inside their backend modules.

>>> import pear
>>> pear.DebateConfig().n_agents, pear.method("pear").name
(5, 'pear')
"""
from __future__ import annotations

import importlib
from typing import Any

from pear.core.config import DebateConfig, RouterConfig
from pear.core.methods import METHODS, Method, method
from pear.core.engine import Engine, Job

__version__ = "0.1.0"
__all__ = ["DebateConfig", "RouterConfig", "Method", "METHODS", "method", "Engine", "Job",
           "run", "preset", "Experiment", "load", "validate", "__version__"]

_LAZY = {  # name -> module that defines it (imported on first use: pandas, msgspec, ...)
    "run": "pear.runs.runner", "preset": "pear.runs.grid",
    "Experiment": "pear.runs.grid", "load": "pear.store.view",
    "validate": "pear.store.validate",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pear' has no attribute {name!r}")
