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


def default_workers(backend: str) -> int:
    """Processes a grid on ``backend`` runs in by default (:func:`pear.runs.runner.run`'s
    ``workers``): its registry entry's :attr:`~pear.backends.registry.BackendSpec.workers_max`,
    one per core: every core for the simulated backend (its agents are arithmetic); for the
    embedded llama.cpp model at most 4, each decoding on its share of the cores
    (:mod:`pear.backends.llamacpp`: two one-thread processes ran a grid of two equal parts
    1.38x faster than one of two threads; the smoke grid, whose last part runs alone, 7%); one
    for a server or engine (one engine serves the batch).  In a Slurm task, the CPUs Slurm gave
    it (``SLURM_CPUS_PER_TASK``): a launch's shards are its parallelism, each on what it asked.

    >>> default_workers("vllm")
    1
    """
    most = backends.spec(backend).workers_max
    if most == 1:
        return 1
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "")
    cores = int(slurm) if slurm.isdigit() and int(slurm) >= 1 else usable_cores()
    return cores if most is None else min(cores, most)


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
    spec = backends.spec(name)
    if not spec.runs:
        backends.get(name)  # the error: it runs nothing
    if spec.simulator:
        settings = _simulator_settings(exp, extra)
    elif spec.settings:
        settings = backends.hook(spec.settings)(model or model_path)
    elif spec.model == "model_path":
        settings = _model_path_settings(spec, model_path)
    else:
        settings = _model_settings(spec, model, base_urls)
    settings.update(extra or {})
    be = backends.get(name, **settings)
    if cache_path is not None and not spec.simulator:
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.backends.cache import CachedBackend
        be = CachedBackend(be, cache_path)
    return be


def _simulator_settings(exp: Any, extra: dict[str, Any] | None) -> dict[str, Any]:
    """The simulated backend's settings: the benchmarks' gold answers, the grid's agents and
    the population (:func:`sim_population`); :data:`SIM_LATENCY_ENV`'s wait per request."""
    # start-up: pear.cli imports this module (`pear --help` stays fast)
    from pear.tasks.benchmarks import GoldAnswers
    settings: dict[str, Any] = {"answer_key": GoldAnswers(), "n_agents": exp.debate.n_agents,
                                "population": sim_population((extra or {}).get("population"))}
    if os.environ.get(SIM_LATENCY_ENV):  # seconds per request: a grid that takes time
        settings["params"] = {"latency_s": float(os.environ[SIM_LATENCY_ENV])}
    return settings


def _model_path_settings(spec: Any, model_path: str | None) -> dict[str, Any]:
    """A backend that loads a model file (``--model-path``); a study model's name is refused
    (the study's models run on GPUs or APIs)."""
    # start-up: pear.cli imports this module (`pear --help` stays fast)
    from pear.catalog.models import GROUPS, lookup
    if model_path and (model_path.lower() in GROUPS or lookup(model_path)):
        first, *rest = [n for n, s in backends.BACKENDS.items()
                        if s.needs_model and s.takes_model_name]
        raise ValueError(f"{model_path!r} names the study's models, which run on GPUs or "
                         f"APIs: use --backend {first} (or {', '.join(rest)}), not {spec.name}")
    return {"model_path": model_path} if model_path else {}


def _model_settings(spec: Any, model: str | None,
                    base_urls: Sequence[str] | None) -> dict[str, Any]:
    """A backend that takes a model name: the study registry's settings for that model
    (:func:`pear.catalog.models.backend_settings`), and the servers where it talks to some."""
    # start-up: pear.cli imports this module (`pear --help` stays fast)
    from pear.catalog.models import backend_settings, check_vllm_model
    if not model:
        raise ValueError(f"the {spec.name} backend needs --model NAME")
    if spec.loads_weights:
        check_vllm_model(model)
    settings = {"model": model, **backend_settings(model, spec.name)}
    if spec.base_urls and base_urls:
        settings["base_url"] = list(base_urls)
    return settings


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
    if backends.spec(name).loads_weights:  # fail before anything is written, not at the n-th
        # start-up: pear.cli imports this module (`pear --help` stays fast)
        from pear.catalog.models import backend_settings, check_vllm_model
        for m in exp.models:
            check_vllm_model(m)
            backend_settings(m, name)
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
    spec = backends.spec(name)
    if spec.simulator:
        panels = [n for n, s in backends.BACKENDS.items()
                  if s.runs and not s.simulator and not s.one_model]
        raise ValueError(f"the {name} backend draws every agent from one population; "
                         f"--agent-models (a mixed-model panel) needs the {' or '.join(panels)} "
                         "backend")
    if spec.one_model and len(names) > 1:
        served = next(n for n, s in backends.BACKENDS.items() if s.base_urls)
        raise ValueError(f"one {name} process holds one engine: serve each model with `vllm "
                         f"serve MODEL` and use --backend {served} --base-url MODEL=URL per "
                         "model")
    own: dict[str, list[str]] = {}
    shared: list[str] = []
    for url in base_urls:
        model, sep, rest = url.partition("=")
        if sep and model in names:
            own.setdefault(model, []).append(rest)
        else:
            shared.append(url)

    def factory(m: str) -> Any:
        if spec.model == "model_path":
            return make_backend(name, exp=exp, model_path=m, cache_path=cache_path)
        return make_backend(name, exp=exp, model=m, base_urls=own.get(m) or shared,
                            cache_path=cache_path)
    return factory
