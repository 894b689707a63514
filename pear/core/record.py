"""The debate record's typed schema and version: what the engine writes for one debate.

:class:`DebateRecord` (with :class:`RoundEntry`, :class:`AgentEntry`, :class:`CritiqueEntry`,
:class:`RouterEntry`, :class:`Tokens`) is the one definition of a record: the engine builds it
(a critique entry as it goes), the store appends and reads it, the validator decodes against it,
the columnar view derives its tables from it.  Fields added after schema 1 are optional
(``total=False``; :func:`pear.store.records.with_defaults` fills an import's).  ``cot`` records
hold agent 0, ``cot_sc`` the n initial answers, both round 0 only.  A critique without a usable
review has ``delivered = false`` and is never shown.  Only the timing fields (``latency_s``,
``finished_at``) differ between two runs of a grid with the same seeds and cache.

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

    origin: str  # related work | entry point | module
    module: str
    version: str
    params: dict[str, Any]  # the parameters it ran with (in the config hash too)


class BranchEntry(TypedDict):
    """Where a counterfactual branch starts (:meth:`pear.core.engine.Engine.branch`)."""

    debate_id: str  # the parent's id and method
    method: str
    round: int  # rounds 0..round are the parent's, copied
    calls_copied: int  # what the copied rounds cost the parent


class _AgentRequired(TypedDict):
    agent: int  # 0-indexed
    answer: str
    canonical: str  # after task canonicalisation: what votes, routing and grading compare
    confidence: Optional[int]  # 1..5; None in imports whose protocol asks for none
    reasoning: str
    correct: bool
    parse_error: Optional[str]


class AgentEntry(_AgentRequired, total=False):
    """One agent's answer after a round."""

    # absent in older records: the call stopped at the token budget; the role (pear.core.config
    # ROLES); the model that answered (mixed panels)
    truncated: bool
    role: str
    model: str
    heard: list[dict[str, Any]]  # imports only: {canonical, correct} per answer quoted


class _CritiqueRequired(TypedDict):
    source: int
    target: int
    source_answer: str
    target_answer: str  # both answers as of round r-1
    source_confidence: int
    target_confidence: int
    delivered: bool  # False: no usable review (never shown)
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
    edges: list[list[int]]  # [source, target], 0-indexed; [] in round 0
    router: Optional[RouterEntry]
    agents: list[AgentEntry]
    critiques: list[CritiqueEntry]
    influence: list[float]  # rho after the update, per agent; [] in imports
    vote: str
    vote_correct: bool


class RoundEntry(_RoundRequired, total=False):
    """Round r of a debate (round 0 = the initial answers)."""

    # this round's part of the record's tokens and truncated_calls (rounds add up to them;
    # a branch's copied rounds keep the parent's); absent in older records
    tokens: Tokens
    truncated_calls: int


class _RecordRequired(TypedDict):
    schema: int
    debate_id: str  # of the IDENTITY fields
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
    # absent in older records: the prompt style; calls stopped at the budget; R of the config
    # (0 for CoT, CoT-SC; rounds is fewer after an early stop); consensus | stable |
    # max_rounds (None for CoT, CoT-SC); agents told the gold (the adversarial role)
    prompt_style: PromptStyle
    truncated_calls: int
    max_rounds: int
    stop_reason: Optional[str]
    gold_shown_to: list[int]
    # absent unless used: where the agents sat (DebateConfig.relabelling); an orbit
    # average's relabelling (pear.core.methods.orbit); a plug-in's provenance; a branch's
    # parent (its tokens and calls the branch's own); an import's source
    # (pear.store.importing.ImportEntry)
    relabelling: list[int]
    orbit: list[int]
    plugin: PluginEntry
    branched_from: BranchEntry
    imported: dict[str, Any]


# ----------------------------------------------------------------- field order

def keys(part: type) -> tuple[str, ...]:
    """The keys of a record part (a TypedDict of this module) in schema order: the required
    ones as declared, then the optional ones.

    >>> keys(Tokens)
    ('prompt', 'completion', 'cached')
    """
    return tuple(part.__annotations__)


# the keys of each part in the order the engine writes them (an agent's heard: imports only)
AGENT_KEYS = tuple(k for k in keys(AgentEntry) if k != "heard")
CRITIQUE_KEYS = keys(CritiqueEntry)
ROUTER_KEYS = keys(RouterEntry)
ROUND_KEYS = keys(RoundEntry)
RECORD_KEYS = keys(DebateRecord)


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
