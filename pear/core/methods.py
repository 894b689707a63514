"""The method table: what a method is, the study's 14 methods, and how the engine routes and
votes with them (public as :mod:`pear.methods`, which adds plug-in registration above the core).

A **router** is ``route(state, rng) -> edges``: ``state`` (:class:`~pear.core.router.
RouterState`) is what it may see after a round, ``rng`` the round's generator (its only
randomness), ``edges`` an int ``(m, 2)`` array of ``(source, target)`` rows (agents 0-indexed)
or a :class:`~pear.core.router.Decision` (edges plus the statistics the record keeps).  A
method's answer each round is ``aggregate(answers, confidences, rng)`` (default: the majority
vote, :func:`pear.core.vote.vote`).  The study's methods are table entries like any plug-in's;
the engine has no case for any of them.  A lookup imports nothing: plug-ins are loaded
explicitly (:func:`pear.methods.load_plugins`).

>>> lookup("pear").kind, lookup("cot").route is None, lookup("clique").equivariant
('routed', True, True)
>>> method("pear_T").router.alpha_I
0.0
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from pear.core.config import RouterConfig
from pear.core.graphs import TOPOLOGIES as FIXED_TOPOLOGIES
from pear.core.graphs import fixed_topology
from pear.core.hashing import orbit_seed
from pear.core.router import Decision, RouteItem, RouterState, route, route_batch
from pear.core.vote import vote

__all__ = [
    "Method", "RouterState", "Decision", "lookup", "method", "names", "add", "remove",
    "check_edges", "route_debates", "aggregate", "call_route", "initial_agents", "pear_route",
    "pear_route_batch",
    "sc_k", "is_self_consistency", "SC_MAX", "keeping", "ORBIT", "orbit", "orbit_base",
    "orbit_relabelling",
    "METHODS", "DEBATE_METHODS", "ROUTED_METHODS", "ABLATIONS", "FIXED_TOPOLOGIES",
]

Graphs = Literal["fixed", "relabelling", "free"]
SC_MAX = 64
"""The largest K of self-consistency ``sc@K``."""
_SC = re.compile(r"sc@([1-9][0-9]?)")
ORBIT = "~orbit"  # an orbit average's suffix: star~orbit (:func:`orbit`)


@dataclass(frozen=True)
class Method:
    """A method: how it routes and aggregates, what it declares of its graphs, where it came
    from, and (as a run uses it, :func:`method`) its router settings and parameters."""

    name: str
    route: Callable[..., Any] | None = None
    """``route(state, rng, **params) -> edges``; None: no debate rounds (CoT, CoT-SC)."""
    aggregate: Callable[..., str] | None = None
    """``aggregate(answers, confidences, rng, **params) -> answer``; None: majority vote."""
    params: tuple[tuple[str, Any], ...] = ()
    """Sorted ``(name, value)`` pairs passed to route and aggregate (in the config hash)."""
    agents: Literal["one", "all"] | int = "all"
    """How many answer: ``one`` (CoT), ``all`` n, or K independent samples (``sc@K``)."""
    graphs: Graphs = "free"
    """Every round's graph, as the validator checks it: ``fixed`` (the topology of that name),
    ``relabelling`` (of the base role graph) or ``free``."""
    in_degree: int | Literal["k"] | None = "k"
    """Sources every target hears (``k``: the base graph's in-degree; None: not declared)."""
    equivariant: bool = True
    """Claims permutation equivariance (Star, Chain and Ring do not)."""
    derive: Callable[[RouterConfig], RouterConfig] | None = None
    """How the method's router settings follow from the run's (Random, the ablations)."""
    router: RouterConfig = field(default_factory=RouterConfig)
    """The router settings a run uses (:func:`method` derives them)."""
    route_batch: Callable[..., Any] | None = None
    """Optional ``route_batch([(state, rng), ...])``: ``route``'s decisions for many debates
    in one pass (PEAR's vectorized scoring; methods without parameters)."""
    origin: str = "built-in"  # built-in (the study), related work, entry point or module
    module: str = ""
    version: str = ""
    description: str = ""
    label: str = ""  # a plug-in's display name ("": its name; pear.catalog.labels)
    orbit_of: str = ""  # an orbit average's method (:func:`orbit`)

    @property
    def study(self) -> bool:
        """One of the study's 14 methods (or ``sc@K``, its CoT-SC at another K)."""
        return self.origin == "built-in"

    @property
    def is_debate(self) -> bool:
        """Whether the method runs debate rounds."""
        return self.route is not None

    @property
    def kind(self) -> str:
        """``single``, ``sample``, ``fixed``, ``routed`` (relabellings) or ``plugin``."""
        if self.route is None:
            return "single" if self.agents == "one" else "sample"
        return {"fixed": "fixed", "relabelling": "routed"}.get(self.graphs, "plugin")

    def hash_parts(self) -> tuple[Any, ...]:
        """What identifies its protocol beside the debate config: router settings, and
        parameters when it has any (the study's methods keep their hashes)."""
        return (self.router,) + (({"method_params": dict(self.params)},) if self.params else ())

    def provenance(self) -> dict[str, Any] | None:
        """A plug-in's origin, module, version and parameters (None for the study's)."""
        if self.study:
            return None
        return {"origin": self.origin, "module": self.module, "version": self.version,
                "params": {k: list(v) if isinstance(v, tuple) else v for k, v in self.params}}


# ----------------------------------------------------------------- the table

_TABLE: dict[str, Method] = {}


def add(m: Method) -> Method:
    """Put ``m`` in the table (:func:`pear.methods.register` after its checks)."""
    _TABLE[m.name] = m if m.module else replace(m, module=__name__)
    return _TABLE[m.name]


def remove(name: str) -> None:
    """Take a method out of the table (the study's stay)."""
    if name in METHODS:
        raise ValueError(f"method {name!r} is one of the study's and stays registered")
    if _TABLE.pop(name, None) is None:
        raise ValueError(f"unknown method {name!r}: nothing to unregister")


def names() -> list[str]:
    """The names in the table, in the order they were added (the study's first)."""
    return list(_TABLE)


def sc_k(name: str) -> int | None:
    """K of a method named ``sc@K`` (1 <= K <= 64); None for any other name.

    >>> sc_k("sc@20"), sc_k("cot_sc"), sc_k("sc@65")
    (20, None, None)
    """
    m = _SC.fullmatch(str(name))
    return int(m.group(1)) if m and int(m.group(1)) <= SC_MAX else None


def is_self_consistency(name: str) -> bool:
    """Whether ``name`` is ``sc@K``.

    >>> is_self_consistency("sc@20"), is_self_consistency("cot_sc")
    (True, False)
    """
    return sc_k(name) is not None


def orbit_base(name: str) -> str | None:
    """The method an orbit average ``NAME~orbit`` averages; None for any other name.

    >>> orbit_base("star~orbit"), orbit_base("star")
    ('star', None)
    """
    name = str(name)
    return name[:-len(ORBIT)] if name.endswith(ORBIT) and len(name) > len(ORBIT) else None


def lookup(name: str) -> Method:
    """The method ``name`` as registered; ``sc@K`` (K initial answers: the first K of any
    larger ``sc@K'``, ``sc@n`` those of ``cot_sc``) and ``NAME~orbit`` (:func:`orbit`) are
    made on first use."""
    if name not in _TABLE and (k := sc_k(name)) is not None:
        add(Method(name, agents=k, description=f"Self-consistency at K = {k}: majority vote "
                   f"of {k} independent answers."))
    if name not in _TABLE and (base := orbit_base(name)) is not None:
        if base in _TABLE or sc_k(base) is not None or orbit_base(base) is not None:
            add(orbit(lookup(base)))
    if name not in _TABLE:
        raise ValueError(f"unknown method {name!r}: choose one of {', '.join(_TABLE)} "
                         "(plug-ins: load them with --plugin MODULE, $PEAR_PLUGINS or "
                         "pear.methods.load_plugins())")
    return _TABLE[name]


def method(name: str, router: RouterConfig | None = None,
           params: Mapping[str, Any] | None = None) -> Method:
    """The method ``name`` as a run uses it: router settings derived from ``router`` (default:
    the paper's), parameters the registered ones updated by ``params``.

    >>> method("random").router.alpha_T, method("cot").kind
    (0.0, 'single')
    """
    m = lookup(name)
    base = router if router is not None else RouterConfig()
    values = dict(m.params)
    if params:
        unknown = sorted(set(params) - set(values))
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r} of method {name!r}: it has "
                             f"{', '.join(values) or 'none'}")
        values.update(params)
    return replace(m, router=m.derive(base) if m.derive else base,
                   params=tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                       for k, v in values.items())))


def initial_agents(m: Method, n: int) -> int:
    """How many agents answer in ``m``: 1 (CoT), K (``sc@K``) or ``n``."""
    return 1 if m.agents == "one" else n if m.agents == "all" else int(m.agents)


# ----------------------------------------------------------------- routing and voting

def check_edges(edges: Any, n: int, name: str = "router") -> np.ndarray:
    """``edges`` as a sorted int64 ``(m, 2)`` array, or ValueError naming what is wrong; an
    int64 array checked before is answered from a memo (read-only; edge sets recur)."""
    key = None
    if isinstance(edges, np.ndarray) and edges.dtype == np.int64 and edges.ndim == 2 \
            and edges.shape[1] == 2:
        key = (n, edges.tobytes())
        if (done := _CHECKED.get(key)) is not None:
            return done
    e = _checked(edges, n, name)
    if key is not None:
        if len(_CHECKED) >= 1 << 14:  # our choice: bounded
            _CHECKED.clear()
        e.flags.writeable = False
        _CHECKED[key] = e
    return e


_CHECKED: dict[tuple[int, bytes], np.ndarray] = {}


def _checked(edges: Any, n: int, name: str) -> np.ndarray:
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


def accepts(fn: Callable[..., Any] | None) -> frozenset[str] | None:
    """The keyword parameters ``fn`` accepts (None: any), read once per function."""
    try:
        return _ACCEPTS[fn]
    except KeyError:
        taken = _ACCEPTS[fn] = _accepts(fn)
        return taken
    except TypeError:  # an unhashable callable
        return _accepts(fn)


_ACCEPTS: dict[Any, frozenset[str] | None] = {}


def _accepts(fn: Callable[..., Any] | None) -> frozenset[str] | None:
    if fn is None:
        return frozenset()
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return frozenset(p.name for p in sig.parameters.values()
                     if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def _kwargs(fn: Callable[..., Any], params: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The parameters ``fn`` takes (route and aggregate each get their own)."""
    ok = accepts(fn)
    return {k: v for k, v in params if ok is None or k in ok}


def _decision(out: Any, n: int, name: str) -> Decision:
    if isinstance(out, Decision):
        return replace(out, edges=check_edges(out.edges, n, f"method {name!r}"))
    return Decision(edges=check_edges(out, n, f"method {name!r}"))


def call_route(m: Method, state: RouterState, rng: np.random.Generator) -> Decision:
    """One routing decision of ``m``, edges checked: what the engine does for one debate."""
    if m.route is None:
        raise ValueError(f"method {m.name!r} has no debate rounds to route")
    return _decision(m.route(state, rng, **_kwargs(m.route, m.params)), state.n, m.name)


def route_debates(items: Sequence[tuple[Method, RouterState, np.random.Generator]]
                  ) -> list[Decision]:
    """Each debate's next graph from ``(method, state, rng)`` items: one call per debate, or
    one ``route_batch`` call per method that has it; every edge set checked."""
    out: list[Decision | None] = [None] * len(items)
    batched: dict[int, list[int]] = {}
    for j, (m, state, rng) in enumerate(items):
        if m.route is None:
            raise ValueError(f"method {m.name!r} has no debate rounds to route")
        kw = _kwargs(m.route, m.params)
        if m.route_batch is not None and not kw:
            batched.setdefault(id(m.route_batch), []).append(j)
        else:
            out[j] = _decision(m.route(state, rng, **kw), state.n, m.name)
    for members in batched.values():
        got = items[members[0]][0].route_batch([(items[j][1], items[j][2]) for j in members])
        for j, d in zip(members, got):
            out[j] = _decision(d, items[j][1].n, items[j][0].name)
    return out  # type: ignore[return-value]


def aggregate(m: Method, answers: Sequence[str], confidences: Sequence[int],
              rng: np.random.Generator) -> str:
    """The method's answer of a round (majority vote, or its own aggregate: one of them)."""
    if m.aggregate is None:
        return vote(answers, rng)
    got = m.aggregate(list(answers), list(confidences), rng, **_kwargs(m.aggregate, m.params))
    if got not in answers:
        raise ValueError(f"method {m.name!r}: aggregate returned {got!r}, which no agent "
                         "answered; return one of the answers")
    return got


# ----------------------------------------------------------------- the study's methods

def pear_route(state: RouterState, rng: np.random.Generator) -> Decision:
    """The PEAR router (:func:`pear.core.router.route`) with the state's settings."""
    return route(state, rng)


def pear_route_batch(pairs: Sequence[tuple[RouterState, np.random.Generator]]
                     ) -> list[Decision]:
    """:func:`pear_route` for many debates in one pass (:func:`pear.core.router.route_batch`)."""
    return route_batch([RouteItem(s, r) for s, r in pairs])


def keeping(weights: tuple[str, ...], base: RouterConfig) -> RouterConfig:
    """``base`` with the PEAR weights not in ``weights`` set to 0 (Random, the ablations).

    >>> keeping(("alpha_T",), RouterConfig()).alpha_I, keeping((), RouterConfig()).alpha_T
    (0.0, 0.0)
    """
    unknown = set(weights) - set(_WEIGHTS)
    if unknown:
        raise ValueError(f"unknown PEAR weight {sorted(unknown)[0]!r}: choose from "
                         f"{', '.join(_WEIGHTS)}")
    return replace(base, **{w: 0.0 for w in _WEIGHTS if w not in weights})


_WEIGHTS = ("alpha_T", "alpha_I", "alpha_L")  # the PEAR score's weights


# ----------------------------------------------------------------- orbit averages

def orbit_relabelling(debate_seed: int, n: int) -> tuple[int, ...]:
    """An orbit average's relabelling in the debate of seed ``debate_seed``: uniform over
    the n!, drawn once from that seed, the same in every round."""
    rng = np.random.default_rng(orbit_seed(debate_seed))
    return tuple(int(i) for i in rng.permutation(n))


def _orbit_route(route: Callable[..., Any], name: str) -> Callable[..., Any]:
    def orbit_route(state: RouterState, rng: np.random.Generator, **params: Any) -> Any:
        perm = np.asarray(state.orbit if state.orbit is not None
                          else rng.permutation(state.n), dtype=np.int64)
        seen = replace(state.relabelled(perm), orbit=None)  # agent i shown as perm[i]
        out = route(seen, rng, **params)
        back = np.argsort(perm)  # the router's agent j is agent back[j]
        if isinstance(out, Decision):
            e = check_edges(out.edges, state.n, f"method {name!r}")
            return replace(out, edges=back[e] if len(e) else e)
        e = check_edges(out, state.n, f"method {name!r}")
        return back[e] if len(e) else e
    orbit_route.__qualname__ = orbit_route.__name__ = f"orbit_route[{name}]"
    orbit_route.__module__ = getattr(route, "__module__", __name__)
    return orbit_route


def orbit(m: Method) -> Method:
    """The orbit average ``m.name~orbit``: every debate relabels the agents by a uniform
    permutation (:func:`orbit_relabelling`; a state without one draws it from ``rng``),
    ``m`` routes the relabelled state, its edges are named back.  Equivariant by construction
    (Star's hub becomes a random agent, fixed per debate), with ``m``'s budget, parameters,
    settings and aggregation; under exchangeable agents, ``m``'s expected accuracy.

    >>> lookup("star~orbit").equivariant, lookup("star").equivariant
    (True, False)
    """
    if m.route is None:
        raise ValueError(f"method {m.name!r} has no debate rounds: it has no orbit average "
                         "(choose a debate method)")
    return replace(m, name=m.name + ORBIT, route=_orbit_route(m.route, m.name),
                   route_batch=None, graphs="free" if m.graphs == "fixed" else m.graphs,
                   equivariant=True, orbit_of=m.name, label="",
                   description=f"Orbit average of {m.name}: a fresh uniform relabelling of "
                               f"the agents per debate. {m.description}".strip())


def _fixed_route(name: str) -> Callable[..., np.ndarray]:
    def fixed(state: RouterState, rng: np.random.Generator) -> np.ndarray:
        return fixed_topology(name, state.n)
    fixed.__qualname__ = f"fixed_route[{name}]"
    return fixed


def _routed(name: str, keeps: tuple[str, ...] | None, description: str) -> None:
    """A study method routing with PEAR's router, keeping the weights ``keeps`` (None: all)."""
    add(Method(name, pear_route, route_batch=pear_route_batch, graphs="relabelling",
               derive=None if keeps is None else partial(keeping, keeps),
               description=description))


_FIXED = {"clique": "Every agent critiques every other", "star": "Hub = agent 1, both directions",
          "chain": "1 -> 2 -> ... -> n", "ring": "i -> i+1 mod n"}

add(Method("cot", agents="one", description="Chain-of-thought: agent 1's initial answer "
           "(one call)."))
add(Method("cot_sc", description="Self-consistency: majority vote of the n initial answers."))
for _name in FIXED_TOPOLOGIES:
    add(Method(_name, _fixed_route(_name), graphs="fixed", in_degree=None,
               equivariant=_name == "clique", description=f"{_FIXED[_name]} (fixed topology)."))
# the routed methods; each row says which of the run's weights it keeps (paper: Random is
# PEAR with all weights 0, an ablation keeps the named terms and zeroes the others)
_routed("random", (), "A uniform relabelling of the base role graph every round (PEAR with "
        "all weights 0).")
_routed("pear", None, "PEAR: the relabelling with the best T/I/L score (softmax).")
_routed("pear_T", ("alpha_T",), "PEAR ablation keeping T (the other weights 0).")
_routed("pear_I", ("alpha_I",), "PEAR ablation keeping I (the other weights 0).")
_routed("pear_L", ("alpha_L",), "PEAR ablation keeping L (the other weights 0).")
_routed("pear_TI", ("alpha_T", "alpha_I"), "PEAR ablation keeping TI (the other weights 0).")
_routed("pear_TL", ("alpha_T", "alpha_L"), "PEAR ablation keeping TL (the other weights 0).")
_routed("pear_IL", ("alpha_I", "alpha_L"), "PEAR ablation keeping IL (the other weights 0).")

METHODS: tuple[str, ...] = tuple(_TABLE)  # the study's, in table order (plug-ins after them)
DEBATE_METHODS = tuple(n for n in METHODS if _TABLE[n].is_debate)  # fixed, then routed
ROUTED_METHODS = tuple(n for n in METHODS if _TABLE[n].graphs == "relabelling")
ABLATIONS = tuple(n for n in ROUTED_METHODS if n not in ("random", "pear"))
