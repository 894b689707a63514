"""Early-stopped debates derived from the same debates run whole, instead of run again.

Nothing a debate asks or draws depends on its stop rule: every request's seed derives from
(seed, method, question, agent, round, phase) and each round's generator from the debate's
seed and the round (:mod:`pear.core.hashing`), and the stop rule enters only the debate's
configuration hash (its id).  So a debate under a stop rule is the debate run without one
(``stop="none"``: all R rounds) up to the round after which the rule first holds
(:func:`pear.core.stopping.stop_reason`, the engine's own test), and its record is that
prefix: the same rounds, ``rounds``, ``stop_reason``, the last kept round's vote as
``final_answer`` and ``correct``, and the prefix's cost -- ``calls``
(:func:`pear.core.engine.copied_calls`), ``parse_failures``
(:func:`pear.core.engine.recorded_parse_failures`), ``tokens`` and ``truncated_calls`` (the
kept rounds' own, :class:`pear.core.record.RoundEntry`) -- under the stopped configuration's
identity (:func:`pear.runs.runner.identities`).  A test runs grids under every stop rule
through the engine and holds these records equal to the engine's, timing fields aside.

* :func:`unstopped` -- the grid a stopped grid is a prefix of (its stop rule ``none``);
* :func:`stopped_record` -- one record, truncated where the rule fires;
* :func:`derive` -- every record of stopped grids from a run directory that holds their
  :func:`unstopped` grids' records, written as a run writes them (manifest, append-only
  records, resumable: debates already recorded are skipped), one pass over the source.

Timing fields: ``latency_s`` stays the whole debate's (the derived one took no model time of
its own; the whole run bounds it), ``finished_at`` is when it was derived.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from pear.core.engine import copied_calls, recorded_parse_failures
from pear.core.record import RECORD_KEYS, in_schema_order
from pear.core.stopping import StopRule, parse_stop, stop_reason
from pear.runs import compute
from pear.runs.grid import Experiment, model_grid
from pear.runs.jobs import jobs
from pear.runs.provenance import close_attempt, open_manifest
from pear.runs.runner import _writer_lock, identities, model_dir
from pear.store import manifest as manifest_io
from pear.store.records import RecordWriter, completed_ids, iter_lines, line_debate_id, record_files
from pear.runs.together import recorded_in

__all__ = ["unstopped", "derivable", "stopped_record", "derive"]


def unstopped(exp: Experiment) -> Experiment | None:
    """``exp`` run whole (stop rule ``none``), whose debates ``exp``'s are prefixes of; None
    when ``exp`` has no stop rule."""
    if exp.debate.stop == "none":
        return None
    parse_stop(exp.debate.stop)  # a bad rule is named here, before anything is read
    return dataclasses.replace(exp, debate=dataclasses.replace(exp.debate, stop="none"))


def derivable(exp: Experiment, source: str | os.PathLike[str], model_id: str,
              backend_name: str, recorded: set[str] | None = None) -> bool:
    """Whether :func:`derive` can write ``exp``'s grid from ``source``: ``exp`` has a stop
    rule, ``source`` holds every debate of its :func:`unstopped` grid under the same
    setting (:func:`pear.runs.together.recorded_in`; ``recorded``: its ids, when the caller
    has them) and its records say what each round cost (its first debate's rounds do)."""
    whole = unstopped(exp)
    if whole is None or not recorded_in(whole, source, model_id, backend_name, recorded):
        return False
    for path in record_files(model_dir(source, model_id)):
        for _, _, line in iter_lines(path):
            record = json.loads(line)
            if record.get("max_rounds"):
                return all("tokens" in rd for rd in record["rounds_data"])
    return False


def stopped_record(record: Mapping[str, Any], rule: StopRule,
                   identity: Mapping[str, Any]) -> dict[str, Any]:
    """The record the engine writes for ``record``'s debate under ``rule``, with the
    identity fields ``identity`` (:meth:`pear.core.engine.Engine.identity` under the stopped
    configuration).  ``record`` ran all its rounds (stop rule ``none``) and has each round's
    cost (records written since rounds carry ``tokens``)."""
    did = record["debate_id"]
    if record.get("branched_from") or record.get("imported"):
        raise ValueError(f"debate {did} is a branch or an imported debate: only debates run "
                         "whole from round 0 can be cut at a stop rule")
    rounds, total = record["rounds_data"], record.get("max_rounds", record["rounds"])
    values = dict(record)
    values.update(identity, finished_at=datetime.now(timezone.utc).isoformat(
        timespec="seconds"))
    if total == 0:  # CoT, CoT-SC: no rounds to stop; only the identity differs
        return in_schema_order(RECORD_KEYS, values)
    if record["rounds"] != total or len(rounds) != total + 1 \
            or record.get("stop_reason") != "max_rounds":
        raise ValueError(f"debate {did} ran {record['rounds']} of {total} rounds (stop reason "
                         f"{record.get('stop_reason')!r}): a stopped debate is cut from one "
                         "run whole (stop none)")
    if any("tokens" not in rd for rd in rounds):
        raise ValueError(f"debate {did} does not record what each round cost (written before "
                         "rounds carried tokens): run the stopped grid instead")
    for r in range(total + 1):
        reason = stop_reason(rule, votes=[rd["vote"] for rd in rounds[:r + 1]],
                             answers=[a["canonical"] for a in rounds[r]["agents"]], r=r,
                             rounds=total)
        if reason is not None:
            break
    kept = rounds[:r + 1]
    values.update(
        rounds=r, stop_reason=reason, rounds_data=kept, final_answer=kept[-1]["vote"],
        correct=kept[-1]["vote_correct"],
        tokens={k: sum(rd["tokens"][k] for rd in kept) for k in record["tokens"]},
        calls=copied_calls(kept), truncated_calls=sum(rd["truncated_calls"] for rd in kept),
        parse_failures=recorded_parse_failures(kept))
    return in_schema_order(RECORD_KEYS, values)


def derive(grids: Mapping[str | os.PathLike[str], Experiment],
           source: str | os.PathLike[str], model_id: str, backend_name: str, *,
           recorded: set[str] | None = None) -> int:
    """Write every stopped grid (``{run directory: experiment}``, each with a stop rule)
    from ``source``, a run directory holding every debate of each grid's :func:`unstopped`
    grid (model ``model_id`` on backend ``backend_name``), into its own directory as a run
    would (manifest of the grid's setting, the source's backend settings, append-only
    records; debates already there are skipped).  Returns the records written.  A debate
    the source lacks is an error naming it, before anything is written.  ``recorded``: the
    ids recorded in ``source``, when the caller has them (else read)."""
    src = Path(source)
    old_src = manifest_io.read(src) or {}
    settings = dict(zip(old_src.get("model_ids", []), old_src.get("backend_settings", [])))
    dirs = {Path(d): exp for d, exp in grids.items()}
    wanted: dict[str, list[tuple[Path, StopRule, dict[str, Any]]]] = defaultdict(list)
    expected, already = {}, {}
    have_src = recorded if recorded is not None else completed_ids(model_dir(src, model_id))
    for d, exp in dirs.items():
        whole = unstopped(exp)
        if whole is None:
            raise ValueError(f"grid for {str(d)!r} has no stop rule: nothing to derive")
        grid_jobs = jobs(model_grid(exp, model_id))
        done = completed_ids(model_dir(d, model_id))
        rule = parse_stop(exp.debate.stop)
        expected[d], already[d] = len(grid_jobs), 0
        for ident, src_ident in zip(identities(exp, model_id, backend_name, grid_jobs),
                                    identities(whole, model_id, backend_name, grid_jobs)):
            if ident["debate_id"] in done:
                already[d] += 1
                continue
            if src_ident["debate_id"] not in have_src:
                raise ValueError(f"run {str(src)!r} lacks debate {src_ident['debate_id']} "
                                 f"(the stopped debate {ident['debate_id']} is cut from it)")
            wanted[src_ident["debate_id"]].append((d, rule, ident))
    written: dict[Path, int] = defaultdict(int)
    with contextlib.ExitStack() as stack:
        manifests, attempts = {}, {d: compute.Attempt() for d in dirs}
        for d, exp in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_writer_lock(d))
            m = open_manifest(exp, d, manifest_io.read(d), backend_name, [model_id],
                              attempts[d])
            m["backend_settings"].append(settings.get(model_id))
            m["model_ids"].append(model_id)
            # the source relative to the variant's directory: no builder's path
            m["derived_from"] = {"run": os.path.relpath(Path(src).resolve(), d.resolve()),
                                 "stop": "none"}
            manifest_io.write(d, m)
            manifests[d] = m
        if wanted:
            writers = {d: stack.enter_context(RecordWriter(model_dir(d, model_id)))
                       for d in dirs}
            for path in record_files(model_dir(src, model_id)):
                for _, line_no, line in iter_lines(path):
                    targets = wanted.pop(line_debate_id(path, line_no, line) or "", ())
                    if not targets:
                        continue
                    record = json.loads(line)
                    for d, rule, ident in targets:
                        writers[d].write(stopped_record(record, rule, ident))
                        written[d] += 1
        for d, m in manifests.items():
            close_attempt(d, m, attempts[d], calls=0, tokens=0, cache_hits=0,
                          debates=written[d])
            m["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            m["complete"] = already[d] + written[d] == expected[d]
            manifest_io.write(d, m)
    return sum(written.values())
