"""Plug-in registration and discovery, above the core's method table
(:mod:`pear.core.methods`).

:func:`register` checks a method and adds it to the table; :func:`load_plugins` imports the
modules that register (entry points of :data:`ENTRY_POINT_GROUP`, ``$PEAR_PLUGINS``,
``--plugin MODULE``).  Nothing here runs as a side effect of a lookup: a caller that takes
method names from a user (the CLI, the notebook build) loads plug-ins first, once.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
from functools import lru_cache
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from pear.core import methods as table
from pear.core.config import RouterConfig
from pear.core.methods import FIXED_TOPOLOGIES, Graphs, Method, accepts

__all__ = ["register", "unregister", "load_plugins", "spec", "names", "plugin_names",
           "ENTRY_POINT_GROUP", "PLUGINS_ENV"]

ENTRY_POINT_GROUP = "pear.methods"
"""Entry-point group of outside plug-in packages: each entry names a module that registers."""
PLUGINS_ENV = "PEAR_PLUGINS"
"""Environment variable: comma-separated plug-in modules to import (``--plugin`` sets it)."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
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


@lru_cache(maxsize=None)
def _version(module: str) -> str:
    """The installed version of the distribution that holds ``module`` ("" if unknown);
    asked once per top-level package (reading every distribution's file list is slow)."""
    top = module.split(".")[0]
    try:
        from importlib import metadata
        if top == "pear":
            return metadata.version("pear")
        for dist in metadata.packages_distributions().get(top, []):
            return metadata.version(dist)
    except Exception:  # noqa: BLE001 - a version is provenance, not a requirement
        pass
    mod = sys.modules.get(top)
    return str(getattr(mod, "__version__", "")) if mod is not None else ""


def _home(route: Callable[..., Any] | None, aggregate: Callable[..., Any] | None) -> str:
    """The module a method comes from: the one defining its own code (its aggregate or
    route, the first that is not the core's), else ``__main__`` (a notebook)."""
    mods = [getattr(f, "__module__", None) for f in (aggregate, route) if f is not None]
    own = [m for m in mods if m and not m.startswith("pear.core")]
    return own[0] if own else "__main__"


def _check(name: str, route: Any, aggregate: Any, agents: Any, graphs: Any,
           in_degree: Any) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"invalid method name {name!r}: use letters, digits and "
                         "underscores, starting with a letter (at most 40 characters)")
    if route is not None and not callable(route):
        raise ValueError(f"invalid route {route!r} for method {name!r}: give a function "
                         "route(state, rng) -> edges, or None")
    if aggregate is not None and not callable(aggregate):
        raise ValueError(f"invalid aggregate {aggregate!r} for method {name!r}: give a "
                         "function aggregate(answers, confidences, rng) -> answer, or None")
    if agents not in ("one", "all") and not (isinstance(agents, int) and route is None
                                             and 1 <= agents <= table.SC_MAX):
        raise ValueError(f"invalid agents={agents!r} for method {name!r}: use 'one', 'all' "
                         f"or (a method without debate rounds) a number 1..{table.SC_MAX}")
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


def register(name: str, route: Callable[..., Any] | None, *,
             aggregate: Callable[..., str] | None = None,
             params: Mapping[str, Any] | None = None, description: str = "",
             label: str | None = None, agents: Literal["one", "all"] | int = "all",
             graphs: Graphs = "free", in_degree: int | Literal["k"] | None = "k",
             equivariant: bool = True,
             derive: Callable[[RouterConfig], RouterConfig] | None = None,
             module: str | None = None) -> Method:
    """Register a method named ``name`` (letters, digits, underscores) and return it.

    ``route(state, rng, **params) -> edges`` chooses each round's graph (None: no debate
    rounds, the answer is the aggregate of the initial answers); ``aggregate(answers,
    confidences, rng, **params)`` turns each round's canonical answers into the method's
    answer (None: majority vote, ties broken with ``rng``).  ``params`` are JSON-plain values;
    they enter the config hash and the records.  ``in_degree`` and ``equivariant`` declare what
    :func:`pear.testing.check_router` holds the router to.  ``module`` (default: the module
    defining the aggregate or route) is the provenance records carry; ``label`` its display
    name in tables (:func:`pear.catalog.labels.method_label`).  Registering a name
    again from the same module replaces it (a re-run notebook cell); the study's names are
    never replaced.
    """
    _check(name, route, aggregate, agents, graphs, in_degree)
    if _LOADING:
        origin, loading, version = _LOADING[-1]
        module = module or loading
    else:
        module = module or _home(route, aggregate)
        origin = "related work" if module.startswith("pear.methods") else "module"
        version = _version(module)
    old = table.lookup(name) if name in table.names() else None
    if old is not None and (old.study or old.module != module):
        raise ValueError(f"method {name!r} is already registered by "
                         f"{old.module or 'pear.core.methods'} ({old.origin}): choose another "
                         "name")
    values = _params(params, name)
    for key, _ in values:
        takers = [accepts(f) for f in (route, aggregate) if f is not None]
        if not any(t is None or key in t for t in takers):
            raise ValueError(f"invalid parameter {key!r} of method {name!r}: neither its route "
                             "nor its aggregate takes it as a keyword argument")
    return table.add(Method(name, route, aggregate, values, agents, graphs, in_degree,
                            bool(equivariant), derive, origin=origin, module=module,
                            version=version, description=str(description),
                            label=str(label or "")))


def unregister(name: str) -> None:
    """Remove a plug-in method (the study's methods stay)."""
    table.remove(name)


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
    plug-in method: the entry points of group :data:`ENTRY_POINT_GROUP`, the modules in
    ``$PEAR_PLUGINS`` and ``modules`` (the bundled related work registers when
    :mod:`pear.methods` is imported).  A module is imported once; one that fails raises a
    message naming it."""
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


def spec(name: str) -> Method:
    """The registered method ``name`` (nothing is loaded: see :func:`load_plugins`)."""
    return table.lookup(name)


def names() -> list[str]:
    """Every registered method: the study's in table order, then plug-ins as registered
    (tables sort them with :func:`pear.catalog.labels.method_order`)."""
    return table.names()


def plugin_names(origins: Sequence[str] = ("related work", "entry point", "module")
                 ) -> list[str]:
    """The registered methods of these origins, in registration order."""
    return [n for n in names() if table.lookup(n).origin in origins]
