"""Frozen, validated configuration: the debate protocol, the router, and the method presets.

Every default says where it comes from: ``# paper`` (the PEAR paper), ``# authors' code``
(the paper is silent, the authors' code sets it) or ``# our choice``.  Methods, their names
and how each derives its router settings from one ``RouterConfig`` (Random, the ablations)
are the method table's (:mod:`pear.core.methods`, public as :mod:`pear.methods`).

>>> DebateConfig().n_agents, RouterConfig().alpha_T
(5, 0.4)
"""
from __future__ import annotations

import dataclasses
import json
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from pear.core.hashing import config_digest
from pear.core.stopping import parse_stop

__all__ = ["DebateConfig", "RouterConfig", "config_hash", "CONFIDENCE_MIN", "CONFIDENCE_MAX",
           "ROLES", "ROLE_CONFIDENCE", "roles_for", "identity_dict", "whole_number"]

CONFIDENCE_MIN = 1  # paper: integer confidence scale 1..5
CONFIDENCE_MAX = 5  # paper


ROLES = ("honest", "adversarial", "overconfident", "underconfident")
"""Agent roles (our extension; the study has honest agents only): ``adversarial`` argues for
a wrong answer with confidence 5 and recommends it in critiques; ``overconfident`` always
states confidence 5, ``underconfident`` always 1."""

ROLE_CONFIDENCE = {"adversarial": 5, "overconfident": 5, "underconfident": 1}  # our choice
"""The confidence the engine records for an agent of these roles, whatever it stated."""

_OMIT_DEFAULT = {"identity": "omit_default"}
"""Field metadata: an extension left at its default is not part of a config's identity, so
adding it changed no existing hash or run directory."""


def _check(cond: bool, name: str, value: Any, fix: str) -> None:
    if not cond:
        raise ValueError(f"invalid {name}={value!r}: {fix}")


def whole_number(value: Any, name: str, minimum: int | None = 0, maximum: int | None = None,
                 fix: str = "") -> int:
    """``value`` as an ``int`` if it is a whole number (an int or numpy integer, never a bool)
    in ``minimum``..``maximum`` (None: unbounded), else one ValueError naming it and ``fix``
    (default: the bounds); every integer argument a user gives is checked here."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
            (minimum is None or value >= minimum) and (maximum is None or value <= maximum)):
        bounds = ([f">= {minimum}"] if minimum is not None else []) + \
            ([f"<= {maximum}"] if maximum is not None else [])
        raise ValueError(f"invalid {name}={value!r}: "
                         f"{fix or ' '.join(['use a whole number', ' and '.join(bounds)]).strip()}")
    return int(value)


@dataclass(frozen=True)
class DebateConfig:
    """The debate protocol shared by every debate method."""

    n_agents: int = 5  # paper
    """Number of agents n (>= 2)."""
    rounds: int = 5  # paper
    """Debate rounds R after the initial answers (round 0); 0 means initial answers only."""
    k: int = 2  # paper
    """In-degree of every role in the base role graph (1 <= k <= n_agents - 1)."""
    max_tokens: int = 512  # paper
    """Generated-token budget of every call."""
    temperature: float = 0.2  # authors' code; paper silent
    """Sampling temperature of every call."""
    json_mode: bool = True  # our choice
    """Ask backends for schema-constrained JSON when they support it."""
    prompt_style: Literal["paper", "compact"] = "paper"  # paper
    """``paper`` (the study's templates) or ``compact`` (tiny CPU models; :mod:`pear.core.prompts`)."""
    stop: str = field(default="none", metadata=_OMIT_DEFAULT)  # paper: every debate runs R rounds
    """Early stopping: ``none``, ``consensus`` or ``stable:K`` (see :mod:`pear.core.stopping`)."""
    roles: tuple[str, ...] = field(default=(), metadata=_OMIT_DEFAULT)  # paper: all honest
    """One role per agent (agent 1 first) from :data:`ROLES`; ``()`` = every agent honest
    (an all-honest tuple is stored as ``()``).  Build it from ``AGENT=ROLE`` assignments with
    :func:`roles_for`."""
    agent_models: tuple[str, ...] = field(default=(), metadata=_OMIT_DEFAULT)  # paper: one model
    """One model name per agent (a mixed-model panel); ``()`` = every agent is the engine's
    one model."""
    agent_temperatures: tuple[float, ...] = field(default=(), metadata=_OMIT_DEFAULT)  # paper: one
    """One sampling temperature per agent (a panel of one model at two temperatures, our
    extension); ``()`` = every agent at :attr:`temperature` (stored as ``()``)."""
    relabelling: tuple[int, ...] = field(default=(), metadata=_OMIT_DEFAULT)  # paper: none
    """Where the agents sit (our extension): ``relabelling[p]`` is the agent (the order of
    ``roles``, ``agent_models``) at position ``p``, the index router and prompts see; it keeps
    its role, model and request seeds.  ``()`` = the identity (stored as ``()``)."""

    def __post_init__(self) -> None:
        _check(isinstance(self.n_agents, int) and self.n_agents >= 2, "n_agents", self.n_agents,
               "a debate needs at least 2 agents")
        _check(isinstance(self.k, int) and 1 <= self.k <= self.n_agents - 1, "k", self.k,
               f"the base-graph in-degree k must lie in 1..n_agents-1 = 1..{self.n_agents - 1}")
        _check(isinstance(self.rounds, int) and self.rounds >= 0, "rounds", self.rounds,
               "use a non-negative integer")
        _check(isinstance(self.max_tokens, int) and self.max_tokens >= 16, "max_tokens",
               self.max_tokens, "use an integer >= 16")
        _check(isinstance(self.temperature, (int, float)) and 0.0 <= self.temperature <= 2.0,
               "temperature", self.temperature, "use a value in [0, 2]")
        _check(self.prompt_style in ("paper", "compact"), "prompt_style", self.prompt_style,
               "use 'paper' (the study's templates) or 'compact' (tiny CPU models)")
        parse_stop(self.stop)
        object.__setattr__(self, "roles", tuple(self.roles))
        object.__setattr__(self, "agent_models", tuple(self.agent_models))
        if self.roles:
            _check(len(self.roles) == self.n_agents, "roles", self.roles,
                   f"give one role per agent ({self.n_agents})")
            bad = [r for r in self.roles if r not in ROLES]
            _check(not bad, "role", bad[0] if bad else None, f"choose one of {', '.join(ROLES)}")
            if all(r == "honest" for r in self.roles):
                object.__setattr__(self, "roles", ())
        if self.agent_models:
            _check(len(self.agent_models) == self.n_agents, "agent_models",
                   ",".join(self.agent_models),
                   f"give one model per agent: {self.n_agents} names, got "
                   f"{len(self.agent_models)}")
            _check(all(isinstance(m, str) and m.strip() for m in self.agent_models),
                   "agent_models", self.agent_models, "model names must be non-empty")
        object.__setattr__(self, "agent_temperatures", tuple(self.agent_temperatures))
        if self.agent_temperatures:
            ts = self.agent_temperatures
            _check(len(ts) == self.n_agents and all(
                isinstance(t, (int, float)) and 0.0 <= t <= 2.0 for t in ts),
                "agent_temperatures", ts, f"give one temperature in [0, 2] per agent "
                f"({self.n_agents})")
            object.__setattr__(self, "agent_temperatures", tuple(float(t) for t in ts)
                               if any(t != self.temperature for t in ts) else ())
        object.__setattr__(self, "relabelling", tuple(self.relabelling))
        if self.relabelling:
            _check(sorted(self.relabelling) == list(range(self.n_agents))
                   and all(isinstance(a, int) for a in self.relabelling), "relabelling",
                   self.relabelling, f"give a permutation of 0..{self.n_agents - 1} (the "
                   "agent at each position)")
            if list(self.relabelling) == list(range(self.n_agents)):
                object.__setattr__(self, "relabelling", ())

    def member(self, position: int) -> int:
        """The agent sitting at ``position`` (:attr:`relabelling`; the extra samples of
        ``sc@K`` sit where they are).

        >>> DebateConfig(n_agents=3, relabelling=(2, 0, 1)).member(0)
        2
        """
        r = self.relabelling
        return r[position] if position < len(r) else position

    def temperature_of(self, agent: int) -> float:
        """The sampling temperature of the agent at position ``agent`` (it keeps its own
        wherever it sits; the extra samples of ``sc@K`` use :attr:`temperature`).

        >>> DebateConfig(n_agents=2, k=1, agent_temperatures=(0.2, 1.0),
        ...              relabelling=(1, 0)).temperature_of(0)
        1.0
        """
        a = self.member(agent)
        ts = self.agent_temperatures
        return ts[a] if a < len(ts) else self.temperature

    def role(self, agent: int) -> str:
        """The role of the agent at position ``agent`` (0-indexed; the extra samples of
        ``sc@K`` are honest)."""
        a = self.member(agent)
        return self.roles[a] if a < len(self.roles) else "honest"


def roles_for(n_agents: int, assignments: Mapping[int, str]) -> tuple[str, ...]:
    """Per-agent roles from ``{agent: role}`` assignments, agents numbered from 1; the others
    are honest.

    >>> roles_for(3, {2: "adversarial"})
    ('honest', 'adversarial', 'honest')
    >>> roles_for(5, {9: "adversarial"})
    Traceback (most recent call last):
    ...
    ValueError: invalid role agent 9: agents are numbered 1..5
    """
    out = ["honest"] * n_agents
    for agent, role in assignments.items():
        if not (isinstance(agent, int) and 1 <= agent <= n_agents):
            raise ValueError(f"invalid role agent {agent!r}: agents are numbered 1..{n_agents}")
        if role not in ROLES:
            raise ValueError(f"invalid role {role!r} for agent {agent}: choose one of "
                             f"{', '.join(ROLES)}")
        out[agent - 1] = role
    return tuple(out)


BaseGraph = Literal["in_regular", "circulant"]


@dataclass(frozen=True)
class RouterConfig:
    """The PEAR router: score weights, confidence thresholds, influence smoothing, choice rule."""

    alpha_T: float = 0.4  # paper
    """Weight of targeted diversity T~ (rewarded)."""
    alpha_I: float = 0.7  # paper
    """Weight of influence balancing I~ (penalised)."""
    alpha_L: float = 0.7  # paper
    """Weight of low-confidence filtering L~ (penalised)."""
    tau_src: int = 4  # paper
    """A source counts for T only with confidence >= tau_src."""
    tau_tgt: int = 3  # paper
    """A target counts for T only with confidence <= tau_tgt."""
    tau_low: int = 2  # paper
    """Low-confidence threshold: L(s) = max(0, tau_low + 1 - c_s); must lie in 1..4."""
    beta: float = 0.5  # paper
    """Influence smoothing: rho <- beta rho + (1 - beta) a, rho(0) = 0; in [0, 1)."""
    tau: float = 0.1  # our choice; paper gives no softmax temperature
    """Softmax temperature over the pool; 0 means argmax with uniform tie-break."""
    m_max: int = 100  # paper
    """Candidate budget: sample this many distinct relabellings when there are more."""
    base_graph: BaseGraph = "in_regular"  # paper
    """``in_regular`` (in-degree k, seeded random out-degrees) or ``circulant`` (in- and
    out-regular: the I and L terms are then equal over every relabelling and drop out)."""

    def __post_init__(self) -> None:
        for name in ("alpha_T", "alpha_I", "alpha_L"):
            v = getattr(self, name)
            _check(isinstance(v, (int, float)) and v >= 0, name, v, "weights must be >= 0")
        for name in ("tau_src", "tau_tgt"):
            v = getattr(self, name)
            _check(isinstance(v, int) and CONFIDENCE_MIN <= v <= CONFIDENCE_MAX, name, v,
                   f"use an integer confidence in {CONFIDENCE_MIN}..{CONFIDENCE_MAX}")
        _check(isinstance(self.tau_low, int) and 1 <= self.tau_low <= 4, "tau_low", self.tau_low,
               "use an integer in 1..4")
        _check(isinstance(self.beta, (int, float)) and 0.0 <= self.beta < 1.0, "beta", self.beta,
               "influence smoothing must lie in [0, 1)")
        _check(isinstance(self.tau, (int, float)) and self.tau >= 0, "tau", self.tau,
               "softmax temperature must be >= 0 (0 = argmax)")
        _check(isinstance(self.m_max, int) and self.m_max >= 1, "m_max", self.m_max,
               "candidate budget must be >= 1")
        _check(self.base_graph in ("in_regular", "circulant"), "base_graph", self.base_graph,
               "use 'in_regular' or 'circulant'")


def identity_dict(config: Any) -> dict[str, Any]:
    """``dataclasses.asdict(config)`` without the extension fields (stop, roles, agent models)
    left at their defaults: what identifies a config in hashes and run manifests.

    >>> "stop" in identity_dict(DebateConfig())
    False
    >>> "stop" in identity_dict(DebateConfig(stop="consensus"))
    True
    """
    out = dataclasses.asdict(config)
    for f in dataclasses.fields(config):
        if f.metadata.get("identity") == "omit_default" and getattr(config, f.name) == f.default:
            out.pop(f.name)
    return out


def config_hash(*configs: Any) -> str:
    """A short, stable hash of frozen dataclass configs (key order independent; extension
    fields at their defaults left out, see :func:`identity_dict`).

    >>> config_hash(DebateConfig()) == config_hash(DebateConfig())
    True
    >>> config_hash(DebateConfig()) == config_hash(DebateConfig(rounds=3))
    False
    >>> adversary = ("adversarial",) + ("honest",) * 4
    >>> config_hash(DebateConfig()) == config_hash(DebateConfig(roles=adversary))
    False
    """
    payload = [identity_dict(c) if dataclasses.is_dataclass(c) else c for c in configs]
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return config_digest(blob)
