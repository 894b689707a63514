"""One record schema: the engine writes exactly the typed schema (pear.core.record), and every
column of the columnar view (pear.store.columns) is a field of that schema or is derived from
named fields."""
from __future__ import annotations

import typing

import pytest

from pear.sim.backend import SimulatedBackend
from pear.core import record
from pear.core.config import DebateConfig
from pear.core.methods import method
from pear.core.engine import Engine, Job
from pear.store.columns import SCHEMAS
from record_factory import arithmetic_questions

QS = arithmetic_questions(4)


def _keys(td: type) -> set[str]:
    return set(td.__required_keys__) | set(td.__optional_keys__)


@pytest.fixture(scope="module")
def records():
    key = {(q.dataset, q.id): q.gold for q in QS}
    eng = Engine(SimulatedBackend(answer_key=key), DebateConfig(rounds=2))
    return list(eng.run([Job(q, method(m), 0) for q in QS for m in ("cot", "cot_sc", "pear",
                                                                     "clique")]))


def test_the_engine_writes_the_typed_schema(records):
    top = _keys(record.DebateRecord)
    for rec in records:
        assert set(rec) <= top, set(rec) - top
        assert set(record.DebateRecord.__required_keys__) <= set(rec)
        assert set(rec["tokens"]) == _keys(record.Tokens)
        for rd in rec["rounds_data"]:
            assert set(rd) <= _keys(record.RoundEntry), set(rd) - _keys(record.RoundEntry)
            for a in rd["agents"]:
                assert set(a) <= _keys(record.AgentEntry), set(a) - _keys(record.AgentEntry)
            for c in rd["critiques"]:
                assert set(c) <= _keys(record.CritiqueEntry), \
                    set(c) - _keys(record.CritiqueEntry)
            if rd.get("router"):
                assert set(rd["router"]) <= _keys(record.RouterEntry)


DERIVED = {  # view column -> the record fields it is computed from
    ("debates", "debate"): "row number in the view",
    ("debates", "prompt_tokens"): "tokens.prompt",
    ("debates", "completion_tokens"): "tokens.completion",
    ("debates", "cached_tokens"): "tokens.cached",
    ("debates", "tokens"): "tokens.prompt + tokens.completion",
    ("debates", "file"): "where the line lies", ("debates", "offset"): "where the line lies",
    ("debates", "digest"): "hash of the record's contents",
    ("agent_rounds", "debate"): "row number", ("agent_rounds", "round"): "rounds_data.round",
    ("agent_rounds", "influence"): "rounds_data.influence[agent]",
    ("agent_rounds", "parse_failed"): "agents.parse_error is not None",
    ("edges", "debate"): "row number", ("edges", "round"): "rounds_data.round",
    ("edges", "cross_answer"): "canonical answers of round r-1 of source and target",
    ("edges", "parse_failed"): "critiques.parse_error is not None",
    ("rounds", "debate"): "row number",
    ("rounds", "n_edges"): "len(rounds_data.edges)",
    ("rounds", "pool_size"): "router", ("rounds", "score"): "router", ("rounds", "T"): "router",
    ("rounds", "I"): "router", ("rounds", "L"): "router", ("rounds", "score_min"): "router",
    ("rounds", "score_max"): "router",
}
SOURCE = {"debates": record.DebateRecord, "agent_rounds": record.AgentEntry,
          "edges": record.CritiqueEntry, "rounds": record.RoundEntry}


def test_every_view_column_is_a_record_field_or_derived_from_one():
    for table, schema in SCHEMAS.items():
        fields = _keys(SOURCE[table])
        for name in schema.names:
            assert name in fields or (table, name) in DERIVED, \
                f"view column {table}.{name} is neither a record field nor listed as derived"
    for (table, name) in DERIVED:
        assert name in SCHEMAS[table].names, f"{table}.{name} is listed but not in the view"
    for key in ("prompt", "completion", "cached"):
        assert key in typing.get_type_hints(record.Tokens)
