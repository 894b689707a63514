"""Methods are plug-ins: the core's method table (:mod:`pear.core.methods`), registration
and discovery above it (:mod:`pear.methods.registry`), and the study's related work as
plug-ins, one file each (each registers itself when this package is imported).

A router is ``route(state, rng) -> edges``; ``register(name, route, aggregate=...,
params=...)`` adds a method; :func:`pear.testing.check_router` checks it.  The related work
below registers itself the same way an outside package does (``docs/methods.md``):

======================  =====================================================================
``dar``                 disagreement-aware retention (:mod:`pear.methods.dar`)
``pear_reconcile``      PEAR with ReConcile's confidence-weighted vote
``clique_reconcile``    Clique with ReConcile's confidence-weighted vote
                        (:mod:`pear.methods.reconcile`)
``group``               group debate (:mod:`pear.methods.group`)
``static``              the static sparse topology (:mod:`pear.methods.static`)
======================  =====================================================================

>>> from pear import methods
>>> sorted(n for n in methods.names() if methods.spec(n).origin == "related work")
['clique_reconcile', 'dar', 'group', 'pear_reconcile', 'static']
"""
from __future__ import annotations

from pear.core.methods import (Decision, Method, RouterState, aggregate, call_route,
                               check_edges, initial_agents, is_self_consistency, method,
                               pear_route, route_debates, sc_k)
from pear.methods.registry import (ENTRY_POINT_GROUP, PLUGINS_ENV, load_plugins, names,
                                   plugin_names, register, spec, unregister)
from pear.methods import dar, group, reconcile, static  # noqa: F401 - each registers itself

__all__ = [
    "Method", "RouterState", "Decision", "register", "unregister", "spec", "names",
    "method", "plugin_names", "load_plugins", "check_edges", "call_route", "route_debates",
    "aggregate", "initial_agents", "pear_route", "ENTRY_POINT_GROUP", "PLUGINS_ENV",
    "RELATED_WORK", "is_self_consistency", "sc_k",
]

RELATED_WORK = ("dar", "pear_reconcile", "clique_reconcile", "group", "static")
"""The related-work plug-ins that ship with pear, in the order notebook 15 shows them."""
