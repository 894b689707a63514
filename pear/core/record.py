"""The debate record's typed schema and version: what the engine writes for one debate.

:class:`DebateRecord` (with :class:`RoundEntry`, :class:`AgentEntry`, :class:`CritiqueEntry`,
:class:`RouterEntry`, :class:`Tokens`) is the one definition of a record: the engine builds it,
the store (:mod:`pear.store.records`) appends and reads it, the validator decodes against it and
the columnar view (:mod:`pear.store.columns`) derives its Arrow tables from it (a test holds the
two equal).  Fields added after schema 1 was first written are optional (``total=False`` parts);
the store fills ``prompt_style``, ``truncated_calls`` and agents' ``truncated`` where a record
(an import) lacks them (:func:`pear.store.records.with_defaults`).

``cot`` records hold agent 0 only; ``cot_sc`` records hold the n initial answers; both have a
single round (round 0).  A critique whose source produced no usable review is recorded with
``delivered = false`` and is never shown to its target.  Timing fields (``latency_s``,
``finished_at``) are the only ones that differ between two runs of the same grid with the same
seeds and cache.

>>> sorted(DebateRecord.__required_keys__ - {"rounds_data", "tokens"})[:4]
['backend', 'calls', 'config_hash', 'correct']
"""
from __future__ import annotations

from typing import Any, Literal, Optional, TypedDict

__all__ = [
    "SCHEMA_VERSION", "TIMING_FIELDS", "IDENTITY", "Tokens", "RouterEntry", "AgentEntry",
    "CritiqueEntry", "RoundEntry", "PluginEntry", "BranchEntry", "DebateRecord",
    "PromptStyle", "Assessment", "keys", "in_schema_order", "AGENT_KEYS", "CRITIQUE_KEYS",
    "ROUTER_KEYS", "ROUND_KEYS", "RECORD_KEYS",
]

SCHEMA_VERSION = 1
TIMING_FIELDS = ("latency_s", "finished_at")
IDENTITY = ("model", "backend", "dataset", "method", "seed", "question_id", "config_hash")
"""The fields that say which debate a record is (hashed into ``debate_id``)."""

PromptStyle = Literal["paper", "compact"]
Assessment = Literal["Strong", "Acceptable", "Flawed", ""]


# ----------------------------------------------------------------- the schema

class Tokens(TypedDict):
    """Token counts summed over every call of a debate (cached is part of prompt)."""

    prompt: int
    completion: int
    cached: int


class RouterEntry(TypedDict):
    """The router's choice in one round: pool size, the chosen relabelling's score and its
    T/I/L terms, and the range of scores over the pool."""

    pool_size: int
    score: float
    T: float
    I: float  # noqa: E741 - the paper's name
    L: float
    score_min: float
    score_max: float


class PluginEntry(TypedDict):
    """Where a plug-in method came from (:func:`pear.core.methods.provenance`)."""

    # related work | entry point | module
    origin: str
    module: str
    version: str
    # The parameters the method ran with (they are in the config hash too).
    params: dict[str, Any]


class BranchEntry(TypedDict):
    """Where a counterfactual branch starts (:meth:`pear.core.engine.Engine.branch`)."""

    # The parent debate's id and method.
    debate_id: str
    method: str
    # Rounds 0..round are the parent's, copied; later rounds are the branch's.
    round: int
    # The model calls the copied rounds cost the parent (saved by branching).
    calls_copied: int


class _AgentRequired(TypedDict):
    # 0-indexed agent.
    agent: int
    answer: str
    # The answer after task canonicalisation (what votes, routing and grading compare).
    canonical: str
    # 1..5; None in imported records (the protocols they come from ask for none: absent,
    # not invented).
    confidence: Optional[int]
    reasoning: str
    correct: bool
    parse_error: Optional[str]


class AgentEntry(_AgentRequired, total=False):
    """One agent's answer after a round."""

    # The call stopped at the token budget (finish reason "length"); absent in older
    # records.
    truncated: bool
    # honest | adversarial | overconfident | underconfident (pear.core.config); absent in older
    # records.
    role: str
    # The model that answered for this agent (mixed-model panels); absent in older records.
    model: str
    # Imports only: {canonical, correct} per answer its prompt quoted (docs/records.md).
    heard: list[dict[str, Any]]


class _CritiqueRequired(TypedDict):
    source: int
    target: int
    source_answer: str
    # Both agents' answers when the critique was written (those of round r-1).
    target_answer: str
    source_confidence: int
    target_confidence: int
    # False when the source produced no usable review (never shown to the target).
    delivered: bool
    decision: Optional[Literal["ACCEPT", "REJECT"]]
    parse_error: Optional[str]


class CritiqueEntry(_CritiqueRequired, total=False):
    """One routed critique edge: the source's review of its target (``step_loc``,
    ``correction``, ``assessment``; "" where the source gave none) and the target's
    decision with its one-sentence ``reason``."""

    step_loc: str
    correction: str
    assessment: Assessment
    reason: str


class _RoundRequired(TypedDict):
    round: int
    # [source, target] pairs, 0-indexed; [] in round 0.
    edges: list[list[int]]
    router: Optional[RouterEntry]
    agents: list[AgentEntry]
    critiques: list[CritiqueEntry]
    # rho after this round's update, one per agent; [] in imported records (no router).
    influence: list[float]
    vote: str
    vote_correct: bool


class RoundEntry(_RoundRequired, total=False):
    """Round r of a debate (round 0 = the initial answers)."""

    # What this round's calls cost: the round's part of the record's ``tokens`` and
    # ``truncated_calls`` (a record's rounds add up to them; a branch's copied rounds keep
    # the parent's), so that a prefix of a debate has its own cost; absent in older records.
    tokens: Tokens
    truncated_calls: int


class _RecordRequired(TypedDict):
    schema: int
    # Stable id of (model, backend, dataset, method, seed, question, config).
    debate_id: str
    model: str
    backend: str
    dataset: str
    method: str
    seed: int
    question_id: str
    config_hash: str
    n_agents: int
    rounds: int
    gold: str
    rounds_data: list[RoundEntry]
    final_answer: str
    correct: bool
    tokens: Tokens
    calls: int
    parse_failures: int


class DebateRecord(_RecordRequired, total=False):
    """One finished debate (schema :data:`SCHEMA_VERSION`)."""

    latency_s: float
    finished_at: str
    # Which prompt templates produced it; absent in older records.
    prompt_style: PromptStyle
    # Calls whose finish reason was "length"; absent in older records.
    truncated_calls: int
    # R of the config (0 for CoT and CoT-SC); ``rounds`` is fewer when the debate stopped
    # early (pear.core.stopping); absent in older records.
    max_rounds: int
    # consensus | stable | max_rounds; None for CoT and CoT-SC; absent in older records.
    stop_reason: Optional[str]
    # Agents told the gold answer (the adversarial role); absent in older records.
    gold_shown_to: list[int]
    # Where the panel's agents sat (DebateConfig.relabelling: the agent at each position, the
    # order of the agent entries); absent for the identity and in older records.
    relabelling: list[int]
    # An orbit average's relabelling (a method named ROUTER~orbit: the router saw agent i as
    # orbit[i], drawn once per debate from its seed, pear.core.hashing.orbit_seed); absent
    # for every other method.
    orbit: list[int]
    # A plug-in method's provenance (pear.core.methods); absent for the study's methods.
    plugin: PluginEntry
    # A counterfactual branch's parent (pear branch); absent for debates run whole.  Its
    # tokens and calls are the branch's own.
    branched_from: BranchEntry
    # Where an imported debate came from (pear import; its parts are the import's:
    # pear.store.importing.ImportEntry); absent for debates run here.
    imported: dict[str, Any]


# ----------------------------------------------------------------- field order

def keys(part: type) -> tuple[str, ...]:
    """The keys of a record part (a TypedDict of this module) in schema order: the required
    ones as declared, then the optional ones.

    >>> keys(Tokens)
    ('prompt', 'completion', 'cached')
    """
    return tuple(part.__annotations__)


AGENT_KEYS = tuple(k for k in keys(AgentEntry) if k != "heard")
"""An agent entry's keys in the order the engine writes them (``heard``: imports only)."""
CRITIQUE_KEYS = keys(CritiqueEntry)
"""A critique entry's keys in the order the engine writes them."""
ROUTER_KEYS = keys(RouterEntry)
ROUND_KEYS = keys(RoundEntry)
RECORD_KEYS = keys(DebateRecord)
"""A record's top-level keys in the order the engine writes them."""


def in_schema_order(order: tuple[str, ...], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (one record part's fields by name) in the schema's key order ``order``
    (:data:`RECORD_KEYS`, ...); a name the schema lacks is an error, so that what the engine
    writes is always in the schema.

    >>> in_schema_order(keys(Tokens), {"cached": 0, "prompt": 3, "completion": 1})
    {'prompt': 3, 'completion': 1, 'cached': 0}
    >>> in_schema_order(keys(Tokens), {"prompt": 3, "total": 4})
    Traceback (most recent call last):
    ...
    ValueError: field 'total' is not in the record schema (prompt, completion, cached)
    """
    out = {k: values[k] for k in order if k in values}
    if len(out) != len(values):
        extra = next(k for k in values if k not in out)
        raise ValueError(f"field {extra!r} is not in the record schema ({', '.join(order)})")
    return out
