"""The debate record schema, an append-only JSON Lines store, a resume index, and readers.

One JSON object per finished debate, one line each, in files named ``debates.jsonl``
anywhere under a run directory.  Schema (version 1)::

    {
      "schema": 1,
      "debate_id": str,            # stable id of (model, dataset, method, seed, question, config)
      "model": str, "backend": str, "dataset": str, "method": str, "seed": int,
      "question_id": str, "config_hash": str, "n_agents": int, "rounds": int,
      "gold": str,                 # gold answer, canonical form
      "rounds_data": [             # round 0 = initial answers, then rounds 1..R
        {"round": int,
         "edges": [[source, target], ...],          # 0-indexed agents; [] in round 0
         "router": null | {"pool_size": int, "score": float, "T": float, "I": float,
                           "L": float, "score_min": float, "score_max": float},
         "agents": [{"agent": int, "answer": str, "canonical": str, "confidence": int,
                     "reasoning": str, "correct": bool, "parse_error": str | null}, ...],
         "critiques": [{"source": int, "target": int, "critique": str,
                        "recommended_answer": str, "source_answer": str,
                        "target_answer": str, "source_confidence": int,
                        "target_confidence": int, "delivered": bool,
                        "decision": "ACCEPT" | "REJECT" | null,
                        "parse_error": str | null}, ...],
         "influence": [float, ...],                 # rho after this round's update
         "vote": str, "vote_correct": bool}, ...],  # majority vote after this round
      "final_answer": str, "correct": bool,
      "tokens": {"prompt": int, "completion": int, "cached": int},
      "calls": int, "parse_failures": int, "latency_s": float, "finished_at": str
    }

``cot`` records hold agent 0 only; ``cot_sc`` records hold the n initial answers; both
have a single round (round 0).  A critique whose source produced no usable review is
recorded with ``delivered = false`` and is never shown to its target.

Timing fields (``latency_s``, ``finished_at``) are the only ones that differ between two
runs of the same grid with the same seeds and cache.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator

__all__ = [
    "SCHEMA_VERSION",
    "RECORDS_FILE",
    "TIMING_FIELDS",
    "RecordWriter",
    "iter_records",
    "read_records",
    "completed_ids",
    "debates_frame",
    "agent_rounds_frame",
    "critiques_frame",
    "load_run",
]

SCHEMA_VERSION = 1
RECORDS_FILE = "debates.jsonl"
TIMING_FIELDS = ("latency_s", "finished_at")
IDENTITY = ("model", "backend", "dataset", "method", "seed", "question_id", "config_hash")


class RecordWriter:
    """Appends records to ``<run_dir>/debates.jsonl``: one line each, flushed at once,
    fsynced at batch boundaries (:meth:`sync`).  A torn last line left by a crash is
    truncated away before the first append, so new records never merge into it."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _repair_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        """Append one finished debate and flush it to the OS."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self._fh.write(line + "\n")
        self._fh.flush()

    def sync(self) -> None:
        """Make every record written so far durable (fsync)."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
            self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _repair_torn_tail(path: Path) -> None:
    """Cut a trailing partial line (no newline, or not valid JSON) left by a crash."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        warnings.warn(f"{path}: dropping a torn last line of {len(data) - cut} bytes "
                      f"left by an interrupted run", RuntimeWarning, stacklevel=3)
        fh.truncate(cut)


def _record_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    root = Path(run_dir)
    if root.is_file():
        return [root]
    if not root.exists():
        raise FileNotFoundError(f"run directory {str(root)!r} does not exist")
    return sorted(root.rglob(RECORDS_FILE))


def iter_records(run_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every complete record under ``run_dir``; a torn last line is skipped with a warning,
    a corrupt line elsewhere is an error naming the file and line."""
    for path in _record_files(run_dir):
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        last = len(lines) - 1  # after the final "\n" the split yields "" (complete file)
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                if i == last:
                    warnings.warn(f"{path}: ignoring a torn last line ({len(line)} bytes)",
                                  RuntimeWarning, stacklevel=2)
                    continue
                raise ValueError(f"{path}:{i + 1}: corrupt record ({err})") from None
            if i == last:  # valid JSON but no newline: the write was cut after the object
                warnings.warn(f"{path}: ignoring a last line without newline", RuntimeWarning,
                              stacklevel=2)
                continue
            yield rec


def read_records(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All complete records under ``run_dir``, de-duplicated by ``debate_id`` (first wins)."""
    seen: set[str] = set()
    out = []
    for rec in iter_records(run_dir):
        if rec["debate_id"] not in seen:
            seen.add(rec["debate_id"])
            out.append(rec)
    return out


def completed_ids(run_dir: str | os.PathLike[str]) -> set[str]:
    """The resume index: ids of debates already recorded under ``run_dir``."""
    if not Path(run_dir).exists():
        return set()
    return {r["debate_id"] for r in iter_records(run_dir)}


def debates_frame(records: Iterable[dict[str, Any]]):
    """One row per debate: identity, gold, final answer, correctness, tokens, calls,
    parse failures, the final influence vector."""
    import pandas as pd

    rows = []
    for r in records:
        tok = r["tokens"]
        rows.append({
            "debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY},
            "n_agents": r["n_agents"], "rounds": r["rounds"], "gold": r["gold"],
            "final_answer": r["final_answer"], "correct": bool(r["correct"]),
            "prompt_tokens": tok["prompt"], "completion_tokens": tok["completion"],
            "cached_tokens": tok["cached"], "tokens": tok["prompt"] + tok["completion"],
            "calls": r["calls"], "parse_failures": r["parse_failures"],
            "final_influence": list(r["rounds_data"][-1]["influence"]),
            "latency_s": r.get("latency_s", 0.0),
        })
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "n_agents", "rounds", "gold", "final_answer", "correct",
        "prompt_tokens", "completion_tokens", "cached_tokens", "tokens", "calls",
        "parse_failures", "final_influence", "latency_s"])


def agent_rounds_frame(records: Iterable[dict[str, Any]]):
    """One row per debate x round x agent: answer, canonical answer, confidence,
    correctness, parse error, the agent's influence and the vote after that round."""
    import pandas as pd

    rows = []
    for r in records:
        ident = {"debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY}}
        for rd in r["rounds_data"]:
            for a in rd["agents"]:
                rows.append({**ident, "round": rd["round"], "agent": a["agent"],
                             "answer": a["answer"], "canonical": a["canonical"],
                             "confidence": a["confidence"], "correct": bool(a["correct"]),
                             "parse_error": a["parse_error"],
                             "influence": rd["influence"][a["agent"]]
                             if a["agent"] < len(rd["influence"]) else 0.0,
                             "vote": rd["vote"], "vote_correct": bool(rd["vote_correct"])})
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "round", "agent", "answer", "canonical", "confidence",
        "correct", "parse_error", "influence", "vote", "vote_correct"])


def critiques_frame(records: Iterable[dict[str, Any]]):
    """One row per routed critique edge: source/target, their answers and confidences when
    the critique was written, whether it was delivered, the target's decision."""
    import pandas as pd

    rows = []
    for r in records:
        ident = {"debate_id": r["debate_id"], **{k: r[k] for k in IDENTITY}}
        for rd in r["rounds_data"]:
            for c in rd["critiques"]:
                rows.append({**ident, "round": rd["round"], "source": c["source"],
                             "target": c["target"], "source_answer": c["source_answer"],
                             "target_answer": c["target_answer"],
                             "source_confidence": c["source_confidence"],
                             "target_confidence": c["target_confidence"],
                             "cross_answer": c["source_answer"] != c["target_answer"],
                             "delivered": bool(c["delivered"]), "decision": c["decision"],
                             "accepted": c["decision"] == "ACCEPT",
                             "parse_error": c["parse_error"]})
    return pd.DataFrame(rows, columns=None if rows else [
        "debate_id", *IDENTITY, "round", "source", "target", "source_answer", "target_answer",
        "source_confidence", "target_confidence", "cross_answer", "delivered", "decision",
        "accepted", "parse_error"])


def load_run(run_dir: str | os.PathLike[str]):
    """``(debates, agent_rounds, critiques)`` DataFrames of every record under ``run_dir``."""
    recs = read_records(run_dir)
    return debates_frame(recs), agent_rounds_frame(recs), critiques_frame(recs)
