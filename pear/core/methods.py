"""Methods are plug-ins: the router protocol and the method registry (public as
:mod:`pear.methods`).

A **router** is a function ``route(state, rng) -> edges``:

* ``state`` (:class:`~pear.core.router.RouterState`) is what the router may see after a round:
  per-agent canonical answer class, confidence 1..5 and influence rho, the debate's base role
  graph, the round being routed, n and k (and the run's PEAR settings, which other routers may
  ignore);
* ``rng`` is the debate's own :class:`numpy.random.Generator` (the only source of randomness a
  router may use);
* ``edges`` is an int array of shape (m, 2), one ``(source, target)`` row per critique, agents
  0-indexed; a router may instead return a :class:`~pear.core.router.Decision` (edges plus the
  statistics the record keeps, as the PEAR router does).

:func:`register` adds a method: a router (None for a method without debate rounds), an optional
aggregation ``aggregate(answers, confidences, rng) -> answer`` of each round's answers
(default: the majority vote, :func:`pear.core.vote.vote`), and ``params`` that are passed to
both as keyword arguments, enter the config hash and are written into every record.  The
study's 14 methods are registered below exactly this way; the engine has no case of its own
for any of them.  Outside packages register from a module named in the entry-point group
``pear.methods``, in ``PEAR_PLUGINS=mod1,mod2`` or by ``--plugin MODULE``
(:func:`load_plugins`); the related work that ships with pear is such a module
(:data:`BUNDLED_PLUGINS`).  :mod:`pear.testing` checks that a router is fit to run.

>>> spec("pear").kind, spec("cot").route is None, spec("clique").equivariant
('routed', True, True)
>>> method("pear_T").router.alpha_I
0.0
>>> ordered(["x_plugin", "pear", "cot", "a_plugin"])
['cot', 'pear', 'a_plugin', 'x_plugin']
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np

from pear.core.config import (ABLATIONS, FIXED_TOPOLOGIES, METHOD_LABELS, METHODS,
                              ROUTED_METHODS, Method, RouterConfig, derived_router)
from pear.core.graphs import fixed_topology
from pear.core.router import Decision, RouteItem, RouterState, route, route_batch
from pear.core.vote import vote

__all__ = [
    "RouterState", "Decision", "MethodSpec", "register", "unregister", "spec", "names",
    "method", "ordered", "order_key", "plugin_names", "describe", "load_plugins",
    "check_edges", "route_debates", "aggregate", "call_route", "initial_agents", "provenance",
    "pear_route", "sc_k", "is_self_consistency", "SC_SIZES", "SC_MAX", "ENTRY_POINT_GROUP",
    "PLUGINS_ENV", "BUNDLED_PLUGINS",
]

ENTRY_POINT_GROUP = "pear.methods"
"""Entry-point group of outside plug-in packages: each entry names a module that registers."""
PLUGINS_ENV = "PEAR_PLUGINS"
"""Environment variable: comma-separated plug-in modules to import (``--plugin`` sets it)."""
BUNDLED_PLUGINS = ("pear.methods",)
"""Plug-in modules that ship with pear (the study's related work, one file each)."""

Graphs = Literal["fixed", "relabelling", "free"]
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
_SC = re.compile(r"sc@([1-9][0-9]?)")
SC_MAX = 64
"""The largest K of self-consistency ``sc@K``."""
SC_SIZES = (10, 20, 40, 64)
"""The ``sc@K`` the ``paper`` and ``sim`` presets add to the study's methods (equal-compute
self-consistency; ``sc@5`` is the study's CoT-SC at n = 5).  64 reaches past a debate's cost
(the study quotes 32.3k tokens for PEAR, about 52 CoT answers), so the comparison at a
debate's tokens interpolates instead of holding the last K (our choice)."""


@dataclass(frozen=True)
class MethodSpec:
    """A registered method.  Build it with :func:`register`."""

    name: str
    route: Callable[..., Any] | None
    """``route(state, rng, **params) -> edges``; None: no debate rounds (CoT, CoT-SC)."""
    aggregate: Callable[..., str] | None = None
    """``aggregate(answers, confidences, rng, **params) -> answer``; None: majority vote."""
    params: tuple[tuple[str, Any], ...] = ()
    """Default parameters (sorted ``(name, value)`` pairs), passed to route and aggregate."""
    description: str = ""
    label: str = ""
    """Display name in tables and figures (default: the name)."""
    agents: Literal["one", "all"] | int = "all"
    """How many agents answer: ``one`` (CoT: agent 1 alone), ``all`` n, or a fixed number of
    independent samples (``sc@K``: K, whatever n is)."""
    graphs: Graphs = "free"
    """What every round's graph is, checked by the validator: ``fixed`` (the study topology of
    the same name), ``relabelling`` (a relabelling of the debate's base role graph) or
    ``free`` (any valid edge set)."""
    in_degree: int | Literal["k"] | None = "k"
    """The edge budget the router declares: every target hears exactly this many sources
    (``k``: the base graph's in-degree); None declares none."""
    equivariant: bool = True
    """Whether the router claims permutation equivariance (the study's index-based fixed
    topologies Star, Chain and Ring do not)."""
    derive: Callable[[RouterConfig], RouterConfig] | None = None
    """How the method's router settings follow from the run's (Random, the ablations)."""
    origin: str = "module"
    """``built-in`` (the study), ``related work`` (bundled plug-ins), ``entry point`` or
    ``module``."""
    module: str = ""
    version: str = ""

    @property
    def study(self) -> bool:
        """One of the study's 14 methods (or ``sc@K``, its CoT-SC at another K)."""
        return self.origin == "built-in"

    @property
    def kind(self) -> str:
        """``single``, ``sample``, ``fixed``, ``routed`` (relabellings) or ``plugin``."""
        if self.route is None:
            return "single" if self.agents == "one" else "sample"
        return {"fixed": "fixed", "relabelling": "routed"}.get(self.graphs, "plugin")


_REGISTRY: dict[str, MethodSpec] = {}
_LOADING: list[tuple[str, str, str]] = []  # (origin, module, version) while a plug-in loads
_LOADED: set[str] = set()


def _plain(value: Any, where: str) -> Any:
    """``value`` if it is JSON-plain (numbers, strings, booleans, None, lists of them)."""
    try:
        back = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        back = None
    if back is None and value is not None or isinstance(value, dict):
        raise ValueError(f"invalid parameter {where}={value!r}: parameters must be numbers, "
                         "strings, booleans, None or lists of them (they are hashed and "
                         "recorded as JSON)")
    return tuple(value) if isinstance(value, list) else value


def _params(params: Mapping[str, Any] | None, method_name: str) -> tuple[tuple[str, Any], ...]:
    if params is None:
        return ()
    if not isinstance(params, Mapping):
        raise ValueError(f"invalid params={params!r} for method {method_name!r}: give a mapping "
                         "{name: value}")
    for key in params:
        if not (isinstance(key, str) and key.isidentifier()):
            raise ValueError(f"invalid parameter name {key!r} for method {method_name!r}: use a "
                             "Python identifier")
    return tuple(sorted((k, _plain(v, k)) for k, v in params.items()))


def _version(module: str) -> str:
    top = module.split(".")[0]
    try:
        from importlib import metadata
        for dist in metadata.packages_distributions().get(top, []):
            return metadata.version(dist)
    except Exception:  # noqa: BLE001 - a version is provenance, not a requirement
        pass
    mod = sys.modules.get(top)
    return str(getattr(mod, "__version__", "")) if mod is not None else ""


def register(name: str, route: Callable[..., Any] | None, *,
             aggregate: Callable[..., str] | None = None,
             params: Mapping[str, Any] | None = None, description: str = "",
             label: str | None = None, agents: Literal["one", "all"] | int = "all",
             graphs: Graphs = "free", in_degree: int | Literal["k"] | None = "k",
             equivariant: bool = True,
             derive: Callable[[RouterConfig], RouterConfig] | None = None,
             _origin: str = "") -> MethodSpec:
    """Register a method named ``name`` (letters, digits, underscores) and return it.

    ``route(state, rng, **params) -> edges`` chooses each round's graph (None: no debate
    rounds, the answer is the aggregate of the initial answers); ``aggregate(answers,
    confidences, rng, **params)`` turns each round's canonical answers into the method's
    answer (None: majority vote, ties broken with ``rng``).  ``params`` are JSON-plain values;
    they enter the config hash and the records.  ``in_degree`` and ``equivariant`` declare what
    :func:`pear.testing.check_router` holds the router to.  Registering a name again from the
    same module replaces it (a re-run notebook cell); the study's names are never replaced.
    """
    if not isinstance(name, str) or not (_NAME.fullmatch(name) or _SC.fullmatch(name)):
        raise ValueError(f"invalid method name {name!r}: use letters, digits and "
                         "underscores, starting with a letter (at most 40 characters)")
    if route is not None and not callable(route):
        raise ValueError(f"invalid route {route!r} for method {name!r}: give a function "
                         "route(state, rng) -> edges, or None")
    if aggregate is not None and not callable(aggregate):
        raise ValueError(f"invalid aggregate {aggregate!r} for method {name!r}: give a "
                         "function aggregate(answers, confidences, rng) -> answer, or None")
    if agents not in ("one", "all") and not (isinstance(agents, int) and route is None
                                             and 1 <= agents <= SC_MAX):
        raise ValueError(f"invalid agents={agents!r} for method {name!r}: use 'one', 'all' "
                         f"or (a method without debate rounds) a number 1..{SC_MAX}")
    if graphs not in ("fixed", "relabelling", "free"):
        raise ValueError(f"invalid graphs={graphs!r} for method {name!r}: use 'fixed', "
                         "'relabelling' or 'free'")
    if not (in_degree is None or in_degree == "k" or isinstance(in_degree, int)
            and not isinstance(in_degree, bool) and in_degree >= 1):
        raise ValueError(f"invalid in_degree={in_degree!r} for method {name!r}: use 'k', an "
                         "integer >= 1 or None")
    if graphs == "fixed" and name not in FIXED_TOPOLOGIES:
        raise ValueError(f"invalid graphs='fixed' for method {name!r}: only the study's "
                         f"topologies ({', '.join(FIXED_TOPOLOGIES)}) are checked as fixed; "
                         "use graphs='free'")
    module = sys._getframe(1).f_globals.get("__name__") or "__main__"  # the registering module
    if _LOADING:
        origin, loading, version = _LOADING[-1]
        module = module if module.startswith(loading) else loading
    elif module.startswith("pear.core."):
        origin, version = "built-in", _version("pear")
    elif module.startswith("pear.methods"):
        origin, version = "related work", _version("pear")
    else:
        origin, version = "module", _version(module)
    old = _REGISTRY.get(name)
    if old is not None and (old.study or old.module != module):
        raise ValueError(f"method {name!r} is already registered by {old.module} "
                         f"({old.origin}): choose another name")
    for key, _ in _params(params, name):
        takers = [_accepts(f) for f in (route, aggregate) if f is not None]
        if not any(t is None or key in t for t in takers):
            raise ValueError(f"invalid parameter {key!r} of method {name!r}: neither its route "
                             "nor its aggregate takes it as a keyword argument")
    if origin == "built-in" and name not in METHODS:
        origin = "module"
    if _origin == "built-in" and module == __name__:  # sc@K: the study's CoT-SC at other K
        origin = "built-in"
    out = MethodSpec(name=name, route=route, aggregate=aggregate, params=_params(params, name),
                     description=str(description), label=label or METHOD_LABELS.get(name, name),
                     agents=agents, graphs=graphs, in_degree=in_degree,
                     equivariant=bool(equivariant), derive=derive, origin=origin,
                     module=module, version=version)
    _REGISTRY[name] = out
    return out


def unregister(name: str) -> None:
    """Remove a plug-in method (the study's methods stay)."""
    old = _REGISTRY.get(name)
    if old is None:
        raise ValueError(f"unknown method {name!r}: nothing to unregister")
    if old.study:
        raise ValueError(f"method {name!r} is one of the study's and stays registered")
    del _REGISTRY[name]


# ----------------------------------------------------------------- loading plug-ins

def _load(module: str, origin: str, version: str = "", source: str = "") -> None:
    if module in _LOADED:
        return
    _LOADING.append((origin, module, version or _version(module)))
    try:
        importlib.import_module(module)
    except Exception as err:  # noqa: BLE001 - one clear message naming the module
        raise ValueError(f"could not load plug-in module {module!r}{source}: "
                         f"{type(err).__name__}: {err}") from err
    finally:
        _LOADING.pop()
    _LOADED.add(module)


def load_plugins(modules: Iterable[str] = (), *, entry_points: bool = True,
                 env: bool = True) -> list[str]:
    """Import the plug-in modules (each registers its methods) and return the names of every
    plug-in method: the bundled related work (:data:`BUNDLED_PLUGINS`), the entry points of
    group :data:`ENTRY_POINT_GROUP`, the modules in ``$PEAR_PLUGINS`` and ``modules``.
    A module is imported once; one that fails raises a message naming it."""
    for mod in BUNDLED_PLUGINS:
        _load(mod, "related work")
    if entry_points:
        from importlib import metadata
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            _load(ep.value.split(":")[0].strip(), "entry point",
                  getattr(dist, "version", "") if dist is not None else "",
                  f" (entry point {ep.name!r} of {getattr(dist, 'name', '?')})")
    wanted = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()] \
        if env else []
    for mod in [*wanted, *modules]:
        _load(mod, "module", source=f" (from {PLUGINS_ENV} or --plugin)")
    return plugin_names()


def _accepts(fn: Callable[..., Any] | None) -> set[str] | None:
    """The keyword parameters ``fn`` accepts beyond its first three positional ones (None:
    any, it takes ``**kwargs``)."""
    if fn is None:
        return set()
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {p.name for p in list(sig.parameters.values())
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _kwargs(fn: Callable[..., Any], params: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The parameters ``fn`` takes (route and aggregate each get their own)."""
    ok = _accepts(fn)
    return {k: v for k, v in params if ok is None or k in ok}


def _self_consistency(name: str) -> MethodSpec | None:
    """``sc@K`` (1 <= K <= 64): K independent initial answers, majority vote.  Made on first
    use; the engine samples agent i's initial answer with the same seed for every method of
    a question, so ``sc@K`` holds the first K of any larger ``sc@K'`` and ``sc@n`` the
    answers of ``cot_sc``."""
    m = _SC.fullmatch(name)
    if m is None or int(m.group(1)) > SC_MAX:
        return None
    k = int(m.group(1))
    return _REGISTRY.get(name) or register(
        name, None, agents=k, label=f"SC@{k}", _origin="built-in",
        description=f"Self-consistency at K = {k}: majority vote of {k} independent answers.")


def _lookup(name: str) -> MethodSpec:
    if name not in _REGISTRY and _self_consistency(str(name)) is None:
        load_plugins()
    if name not in _REGISTRY:
        raise ValueError(f"unknown method {name!r}: choose one of {', '.join(names())} "
                         f"(plug-ins: entry points of {ENTRY_POINT_GROUP!r}, {PLUGINS_ENV} or "
                         "--plugin MODULE)")
    return _REGISTRY[name]


def spec(name: str) -> MethodSpec:
    """The registered method ``name`` (plug-ins are loaded when the name is not known yet)."""
    return _lookup(name)


def order_key(name: str) -> tuple[int, int, str]:
    """Sort key of a method: the study's in table order, ``sc@K`` by K after CoT-SC, then
    every other name alphabetically (a stable order whatever loaded first)."""
    if name in METHODS:
        return (0, METHODS.index(name), name)
    k = sc_k(name)
    if k is not None:
        return (0, METHODS.index("cot_sc"), f"~{k:03d}")
    return (1, 0, str(name))


def ordered(method_names: Iterable[str]) -> list[str]:
    """``method_names`` without repeats, the study's first in table order, plug-ins after
    them alphabetically."""
    return sorted(dict.fromkeys(method_names), key=order_key)


def sc_k(name: str) -> int | None:
    """K of a method named ``sc@K``; None for any other name.

    >>> sc_k("sc@20"), sc_k("cot_sc")
    (20, None)
    """
    m = _SC.fullmatch(str(name))
    return int(m.group(1)) if m else None


def is_self_consistency(name: str) -> bool:
    """Whether ``name`` is ``sc@K``.

    >>> is_self_consistency("sc@20"), is_self_consistency("cot_sc")
    (True, False)
    """
    return sc_k(name) is not None


def names() -> list[str]:
    """Every registered method (plug-ins loaded), in :func:`ordered` order."""
    load_plugins()
    return ordered(_REGISTRY)


def plugin_names(origins: Sequence[str] = ("related work", "entry point", "module")
                 ) -> list[str]:
    """The registered methods of these origins, in :func:`ordered` order."""
    return ordered(n for n, s in _REGISTRY.items() if s.origin in origins)


def describe() -> list[dict[str, Any]]:
    """One row per method (plug-ins loaded): name, label, origin, module, version, kind,
    parameters and description; what ``pear methods`` prints."""
    out = []
    for n in names():
        s = _REGISTRY[n]
        out.append({"method": n, "label": s.label, "origin": s.origin, "module": s.module,
                    "version": s.version, "kind": s.kind,
                    "params": ", ".join(f"{k}={v}" for k, v in s.params),
                    "description": s.description})
    return out


# ----------------------------------------------------------------- methods of a run

def method(name: str, router: RouterConfig | None = None,
           params: Mapping[str, Any] | None = None) -> Method:
    """The method ``name`` as a run uses it: its router settings derived from ``router``
    (default: the paper's), its parameters the registered ones updated by ``params``.

    >>> method("random").router.alpha_T, method("cot").kind
    (0.0, 'single')
    """
    s = _lookup(name)
    base = router if router is not None else RouterConfig()
    values = dict(s.params)
    if params:
        unknown = sorted(set(params) - set(values))
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r} of method {name!r}: it has "
                             f"{', '.join(values) or 'none'}")
        values.update(dict(_params(params, name)))
    return Method(name, s.kind, s.derive(base) if s.derive else base,
                  tuple(sorted(values.items())), s)


def _spec_of(m: Method) -> MethodSpec:
    return m.spec if m.spec is not None else _lookup(m.name)


def initial_agents(m: Method, n: int) -> int:
    """How many agents answer in ``m``: 1 (CoT), K (``sc@K``) or ``n``."""
    agents = _spec_of(m).agents
    return 1 if agents == "one" else n if agents == "all" else int(agents)


def provenance(m: Method) -> dict[str, Any] | None:
    """What a record and a manifest say about a plug-in method (origin, module, version,
    parameters); None for the study's methods (their records are unchanged)."""
    s = _spec_of(m)
    if s.study:
        return None
    return {"origin": s.origin, "module": s.module, "version": s.version,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in m.params}}


def check_edges(edges: Any, n: int, name: str = "router") -> np.ndarray:
    """``edges`` as a sorted int64 ``(m, 2)`` array, or ValueError naming what is wrong
    (shape, agents out of range, self-loops, duplicate edges)."""
    try:
        e = np.asarray(edges)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{name} returned {type(edges).__name__}: edges must be an int "
                         "array of shape (m, 2)") from None
    if e.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"{name} returned edges of shape {e.shape}: edges must be an int "
                         "array of shape (m, 2), one (source, target) row per critique")
    if not np.issubdtype(e.dtype, np.integer):
        if not (np.issubdtype(e.dtype, np.floating) and np.all(e == np.round(e))):
            raise ValueError(f"{name} returned edges of dtype {e.dtype}: agents are integers")
    e = e.astype(np.int64)
    out = (e < 0) | (e >= n)
    if out.any():
        raise ValueError(f"{name} returned edge {tuple(e[out.any(axis=1)][0].tolist())}: "
                         f"agents are 0..{n - 1}")
    loops = e[:, 0] == e[:, 1]
    if loops.any():
        raise ValueError(f"{name} returned the self-loop {tuple(e[loops][0].tolist())}: an "
                         "agent does not critique itself")
    e = e[np.lexsort((e[:, 1], e[:, 0]))]
    dup = np.all(e[1:] == e[:-1], axis=1)
    if dup.any():
        raise ValueError(f"{name} returned the edge {tuple(e[1:][dup][0].tolist())} twice: "
                         "each (source, target) at most once")
    return e


def _decision(out: Any, n: int, name: str) -> Decision:
    if isinstance(out, Decision):
        return replace(out, edges=check_edges(out.edges, n, f"method {name!r}"))
    return Decision(edges=check_edges(out, n, f"method {name!r}"))


def call_route(m: Method | MethodSpec, state: RouterState, rng: np.random.Generator
               ) -> Decision:
    """One routing decision of ``m`` (a method, or a spec with its default parameters),
    edges checked: what the engine does for one debate."""
    s = m if isinstance(m, MethodSpec) else _spec_of(m)
    params = s.params if isinstance(m, MethodSpec) else m.params
    if s.route is None:
        raise ValueError(f"method {s.name!r} has no debate rounds to route")
    return _decision(s.route(state, rng, **_kwargs(s.route, params)), state.n, s.name)


def route_debates(items: Sequence[tuple[Method, RouterState, np.random.Generator]]
                  ) -> list[Decision]:
    """Each debate's graph for its next round, from ``(method, state, rng)`` items: one call
    per debate, or one batched call for the debates of a router that offers ``route.batch``
    (a list of ``(state, rng)`` in, decisions out; PEAR's scores its debates in one pass).
    Every edge set is checked (:func:`check_edges`)."""
    out: list[Decision | None] = [None] * len(items)
    batched: dict[int, list[int]] = {}
    for j, (m, state, rng) in enumerate(items):
        s = _spec_of(m)
        if s.route is None:
            raise ValueError(f"method {m.name!r} has no debate rounds to route")
        kw = _kwargs(s.route, m.params)
        if getattr(s.route, "batch", None) is not None and not kw:
            batched.setdefault(id(s.route), []).append(j)
        else:
            out[j] = _decision(s.route(state, rng, **kw), state.n, m.name)
    for members in batched.values():
        fn = _spec_of(items[members[0]][0]).route.batch
        got = fn([(items[j][1], items[j][2]) for j in members])
        for j, d in zip(members, got):
            out[j] = _decision(d, items[j][1].n, items[j][0].name)
    return out  # type: ignore[return-value]


def aggregate(m: Method, answers: Sequence[str], confidences: Sequence[int],
              rng: np.random.Generator) -> str:
    """The method's answer from one round's canonical answers and confidences (majority
    vote unless the method registered its own aggregation, which must return one of the
    answers)."""
    s = _spec_of(m)
    if s.aggregate is None:
        return vote(answers, rng)
    got = s.aggregate(list(answers), list(confidences), rng, **_kwargs(s.aggregate, m.params))
    if got not in answers:
        raise ValueError(f"method {m.name!r}: aggregate returned {got!r}, which no agent "
                         "answered; return one of the answers")
    return got


# ----------------------------------------------------------------- the study's methods

def pear_route(state: RouterState, rng: np.random.Generator) -> Decision:
    """The PEAR router (:func:`pear.core.router.route`) with the state's router settings:
    score the relabellings of the base role graph, draw one from softmax(S / tau)."""
    return route(state, state.config, rng)


def _pear_batch(pairs: Sequence[tuple[RouterState, np.random.Generator]]) -> list[Decision]:
    return route_batch([RouteItem(s, s.config, r) for s, r in pairs])


pear_route.batch = _pear_batch  # type: ignore[attr-defined]


def _fixed_route(name: str) -> Callable[..., np.ndarray]:
    def fixed(state: RouterState, rng: np.random.Generator) -> np.ndarray:
        return fixed_topology(name, state.n)
    fixed.__qualname__ = f"fixed_route[{name}]"
    return fixed


def _register_study() -> None:
    register("cot", None, agents="one",
             description="Chain-of-thought: agent 1's initial answer (one call).")
    register("cot_sc", None, description="Self-consistency: majority vote of the n initial "
             "answers.")
    for name in FIXED_TOPOLOGIES:
        register(name, _fixed_route(name), graphs="fixed", in_degree=None,
                 equivariant=name == "clique",
                 description={"clique": "Every agent critiques every other",
                              "star": "Hub = agent 1, both directions",
                              "chain": "1 -> 2 -> ... -> n",
                              "ring": "i -> i+1 mod n"}[name] + " (fixed topology).")
    for name in ROUTED_METHODS:
        what = {"random": "a uniform relabelling of the base role graph every round (PEAR "
                          "with all weights 0)",
                "pear": "PEAR: the relabelling with the best T/I/L score (softmax)"}.get(name) \
            or f"PEAR ablation keeping {name.split('_')[1]} (the other weights 0)"
        register(name, pear_route, graphs="relabelling", derive=partial(derived_router, name),
                 description=what[0].upper() + what[1:] + ".")


_register_study()
assert tuple(_REGISTRY) == METHODS and set(ABLATIONS) <= set(_REGISTRY)
