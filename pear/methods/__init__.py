"""Methods are plug-ins: the router protocol and method registry of :mod:`pear.core.methods`
(re-exported here, the public name), and the study's related work as plug-ins, one file each.

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
>>> [n for n in methods.names() if methods.spec(n).origin == "related work"]
['clique_reconcile', 'dar', 'group', 'pear_reconcile', 'static']
"""
from __future__ import annotations

from pear.core.methods import (BUNDLED_PLUGINS, ENTRY_POINT_GROUP, PLUGINS_ENV, Decision,
                               MethodSpec, RouterState, aggregate, call_route, check_edges,
                               describe, initial_agents, is_self_consistency, load_plugins,
                               method, names, order_key,
                               ordered, pear_route, plugin_names, provenance, register,
                               route_debates, spec, unregister)
from pear.methods import dar, group, reconcile, static  # noqa: F401 - each registers itself

__all__ = [
    "RouterState", "Decision", "MethodSpec", "register", "unregister", "spec", "names",
    "method", "ordered", "order_key", "plugin_names", "describe", "load_plugins",
    "check_edges", "call_route", "route_debates", "aggregate", "initial_agents",
    "provenance", "pear_route", "ENTRY_POINT_GROUP", "PLUGINS_ENV", "BUNDLED_PLUGINS",
    "RELATED_WORK", "is_self_consistency",
]

RELATED_WORK = ("dar", "pear_reconcile", "clique_reconcile", "group", "static")
"""The related-work plug-ins that ship with pear, in the order notebook 15 shows them."""
