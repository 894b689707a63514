"""The columns of a run's view (:mod:`pear.store.view`): the four tables' Arrow schemas, rows
gathered from records (:class:`Rows`), and the pandas dtypes they are read with.

- ``debates``: one row per debate: identity, gold and final answer, correctness, rounds
  (run, and the most allowed with the stop reason where records have early stopping), tokens,
  calls, parse failures, truncated calls, prompt style, where the panel's agents sat
  (``relabelling``, the agent at each position as ``"2,0,1"``; null: the identity) and an
  orbit average's relabelling (``orbit``; null for other methods), where its line lies (``file``,
  ``offset``) so that one debate's texts can be read without the rest, and a ``digest`` of its
  contents (:func:`pear.store.validate.digest`: two records with one id and different digests
  conflict);
- ``agent_rounds``: one row per debate x round x agent: canonical answer, confidence,
  correctness, the agent's influence after the round, parse and truncation flags;
- ``edges``: one row per routed critique: source, target, delivery, decision, whether the
  two answered differently (canonical answers of round r-1), both confidences, the
  assessment;
- ``rounds``: one row per debate x round: the vote and its correctness, and the router's
  pool size, chosen score, T/I/L terms and the pool's score range (null without router).

``debate`` (the debate's row number in the view) keys the child tables.  Fields that older
records lack are null.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pyarrow as pa

from pear.core.record import IDENTITY

if TYPE_CHECKING:  # start-up: pandas is imported where a table is read (pyarrow imports it
    # too, when it first makes an array from lists: a run that writes no view never does)
    import pandas as pd

__all__ = ["SCHEMAS", "TABLES", "Rows", "to_pandas"]

_str, _i16, _i32, _i64, _f64, _bool = (pa.string(), pa.int16(), pa.int32(), pa.int64(),
                                        pa.float64(), pa.bool_())
SCHEMAS: dict[str, pa.Schema] = {
    "debates": pa.schema([
        ("debate", _i32), ("debate_id", _str), ("model", _str), ("backend", _str),
        ("dataset", _str), ("method", _str), ("seed", _i32), ("question_id", _str),
        ("config_hash", _str), ("n_agents", _i16), ("rounds", _i16), ("max_rounds", _i16),
        ("stop_reason", _str), ("gold", _str),
        ("final_answer", _str), ("correct", _bool), ("prompt_tokens", _i64),
        ("completion_tokens", _i64), ("cached_tokens", _i64), ("tokens", _i64),
        ("calls", _i32), ("parse_failures", _i32), ("truncated_calls", _i32),
        ("prompt_style", _str), ("latency_s", _f64), ("file", _i32), ("offset", _i64),
        ("digest", _str), ("relabelling", _str), ("orbit", _str)]),
    "agent_rounds": pa.schema([
        ("debate", _i32), ("round", _i16), ("agent", _i16), ("canonical", _str),
        ("confidence", _i16), ("correct", _bool), ("influence", _f64),
        ("parse_failed", _bool), ("truncated", _bool)]),
    "edges": pa.schema([
        ("debate", _i32), ("round", _i16), ("source", _i16), ("target", _i16),
        ("delivered", _bool), ("decision", _str), ("cross_answer", _bool),
        ("source_confidence", _i16), ("target_confidence", _i16), ("parse_failed", _bool),
        ("assessment", _str)]),
    "rounds": pa.schema([
        ("debate", _i32), ("round", _i16), ("vote", _str), ("vote_correct", _bool),
        ("n_edges", _i16), ("pool_size", _i32), ("score", _f64), ("T", _f64), ("I", _f64),
        ("L", _f64), ("score_min", _f64), ("score_max", _f64)]),
}
"""The columns of each table (``debate`` is the row number of the debate in the view)."""
TABLES = tuple(SCHEMAS)
CATEGORICAL = {"debates": ["model", "backend", "dataset", "method", "question_id",
                            "config_hash", "prompt_style"],
                "agent_rounds": ["canonical"], "edges": ["decision", "assessment"],
                "rounds": ["vote"]}
"""String columns read as pandas categoricals (few distinct values, many rows)."""
OBJECT = {"debates": ["model", "backend", "dataset", "method", "question_id", "config_hash",
                        "prompt_style"]}
"""Identity columns handed to pandas as plain strings (small table; keeps group-by keys and
table labels ordinary)."""


def _perm(value: Any) -> str | None:
    """A recorded permutation as the view keeps it (``[2, 0, 1]`` -> ``"2,0,1"``)."""
    return ",".join(str(int(x)) for x in value) if value else None


class Rows:
    """Column lists of the four tables for a batch of records."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, dict[str, list[Any]]] = {
            t: {name: [] for name in SCHEMAS[t].names} for t in TABLES}
        self.n = 0

    def add(self, rec: Mapping[str, Any], debate: int, file: int, offset: int,
            digest: str | None = None) -> None:
        d = self.cols["debates"]
        tok = rec["tokens"]
        for k in IDENTITY:
            d[k].append(rec[k])
        d["debate"].append(debate)
        d["debate_id"].append(rec["debate_id"])
        d["n_agents"].append(rec["n_agents"])
        d["rounds"].append(rec["rounds"])
        d["max_rounds"].append(rec.get("max_rounds"))  # records with early stopping only
        d["stop_reason"].append(rec.get("stop_reason"))
        d["gold"].append(rec["gold"])
        d["final_answer"].append(rec["final_answer"])
        d["correct"].append(bool(rec["correct"]))
        d["prompt_tokens"].append(tok["prompt"])
        d["completion_tokens"].append(tok["completion"])
        d["cached_tokens"].append(tok["cached"])
        d["tokens"].append(tok["prompt"] + tok["completion"])
        d["calls"].append(rec["calls"])
        d["parse_failures"].append(rec["parse_failures"])
        d["truncated_calls"].append(rec.get("truncated_calls"))
        d["prompt_style"].append(rec.get("prompt_style"))
        d["latency_s"].append(rec.get("latency_s", 0.0))
        d["file"].append(file)
        d["offset"].append(offset)
        d["digest"].append(digest)
        d["relabelling"].append(_perm(rec.get("relabelling")))
        d["orbit"].append(_perm(rec.get("orbit")))
        ar, ed, ro = self.cols["agent_rounds"], self.cols["edges"], self.cols["rounds"]
        prev: dict[int, str] = {}
        for rd in rec["rounds_data"]:
            r = rd["round"]
            rho = rd["influence"]
            canon = {}
            for a in rd["agents"]:
                i = a["agent"]
                canon[i] = a["canonical"]
                ar["debate"].append(debate)
                ar["round"].append(r)
                ar["agent"].append(i)
                ar["canonical"].append(a["canonical"])
                ar["confidence"].append(a["confidence"])
                ar["correct"].append(bool(a["correct"]))
                # null where the record has no influence (imported records: no router)
                ar["influence"].append(float(rho[i]) if i < len(rho) else None)
                ar["parse_failed"].append(a["parse_error"] is not None)
                ar["truncated"].append(a.get("truncated"))
            for c in rd["critiques"]:
                s, t = c["source"], c["target"]
                ed["debate"].append(debate)
                ed["round"].append(r)
                ed["source"].append(s)
                ed["target"].append(t)
                ed["delivered"].append(bool(c["delivered"]))
                ed["decision"].append(c["decision"])
                # canonical answers of round r-1 where both agents answered then, else the
                # raw answers the critique saw
                ed["cross_answer"].append(prev[s] != prev[t] if s in prev and t in prev
                                          else c["source_answer"] != c["target_answer"])
                ed["source_confidence"].append(c["source_confidence"])
                ed["target_confidence"].append(c["target_confidence"])
                ed["parse_failed"].append(c["parse_error"] is not None)
                ed["assessment"].append(c.get("assessment"))
            router = rd.get("router") or {}
            ro["debate"].append(debate)
            ro["round"].append(r)
            ro["vote"].append(rd["vote"])
            ro["vote_correct"].append(bool(rd["vote_correct"]))
            ro["n_edges"].append(len(rd["edges"]))
            for k in ("pool_size", "score", "T", "I", "L", "score_min", "score_max"):
                ro[k].append(router.get(k))
            prev = canon
        self.n += 1

    def extend(self, other: "Rows", file: int, offsets: Sequence[int]) -> None:
        """Append ``other``'s rows, laid out where their places were unknown (debates numbered
        from 0, any ``file`` and ``offset``): numbered after these, in record file ``file`` at
        ``offsets`` (one per debate)."""
        if len(offsets) != other.n:
            raise ValueError(f"{len(offsets)} offsets for {other.n} debates")
        shift = self.n
        for t, cols in other.cols.items():
            mine = self.cols[t]
            for name, values in cols.items():
                if name == "debate":
                    mine[name] += [d + shift for d in values]
                elif t == "debates" and name in ("file", "offset"):
                    mine[name] += [file] * other.n if name == "file" else list(offsets)
                else:
                    mine[name] += values
        self.n += other.n

    def tables(self) -> dict[str, pa.Table]:
        """The rows gathered so far as Arrow tables; the lists start empty again."""
        out = {t: pa.table(cols, schema=SCHEMAS[t]) for t, cols in self.cols.items()}
        self._reset()
        return out


def to_pandas(table: pa.Table, name: str) -> pd.DataFrame:
    """One table as pandas: few-valued strings as categoricals, the debates' identity as
    plain strings, nullable integers where older records left nulls."""
    import pandas as pd

    df = table.to_pandas(self_destruct=True, split_blocks=True)
    for col in CATEGORICAL.get(name, ()):
        if col not in df:
            continue
        if col in OBJECT.get(name, ()):
            df[col] = df[col].astype(object)
        elif not isinstance(df[col].dtype, pd.CategoricalDtype):
            df[col] = df[col].astype("category")
    for col in ("truncated_calls", "confidence", "source_confidence", "target_confidence",
                "pool_size", "max_rounds"):
        if col in df and df[col].dtype.kind == "f":  # nulls made it float: nullable int
            df[col] = df[col].astype("Int32" if col in ("truncated_calls", "pool_size")
                                     else "Int16")
    if "truncated" in df and df["truncated"].dtype == object:
        df["truncated"] = df["truncated"].astype("boolean")
    return df
