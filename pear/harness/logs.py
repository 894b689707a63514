"""Inspect eval logs written by :func:`pear.harness.solver.pear_debate` read back as a PEAR run
(``pear import inspect LOG... --out RUN``).

Each sample of such a log holds its debate's PEAR record (``metadata["pear_record"]``, the line
``pear run`` writes) and what a run manifest needs (``metadata["pear_run"]``: the protocol, the
grid, the models and backend settings).  The records are written as ``pear run`` writes them
(one folder per model, :func:`pear.runs.runner.model_dir`) and the manifest is a run's
(:mod:`pear.store.manifest`: protocol, backend, models, benchmark checksums, the grid, versions,
each log as an attempt with its time and cost), with an ``inspect`` part naming each log (its
sha256, eval id, task, model, status) instead of ``pear run``'s command line; since the records
are PEAR's own, ``pear validate`` checks them in full (config hashes, gold answers, graphs).

A log that is not the solver's (a sample without a record: another solver's transcript has no
per-round graph, confidences, critiques or router state to make one from), a sample that failed
before its debate ended, logs of different protocols, or a debate that appears twice is one
error naming the log and the sample, and nothing is written; with ``skip_bad`` the failed
samples are left out and listed in the manifest (a log with no record at all is still an
error).  The directory is written whole or not at all (:func:`pear.paths.new_dir`).  Samples are
read a chunk at a time without their events and messages (bounded memory).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from inspect_ai.log import (EvalLog, EvalSample, read_eval_log, read_eval_log_sample_summaries,
                            read_eval_log_samples_by_id)

from pear.core.hashing import file_sha256
from pear.harness.solver import RECORD_KEY, RUN_KEY
from pear.paths import fresh_dir, new_dir, shown_command
from pear.runs.compute import total
from pear.runs.grid import Experiment, scope_debates
from pear.runs.runner import model_dir
from pear.store import environment, manifest as manifest_io
from pear.store.records import RecordWriter
from pear.tasks.benchmarks import DATASETS, sha256_files

__all__ = ["import_logs", "InspectImport", "NotPearLog", "INSPECT_IMPORT_VERSION"]

INSPECT_IMPORT_VERSION = 1
"""What an import of Inspect logs writes, versioned (the manifest's ``inspect.version``)."""
_SKIP = {"events", "messages", "attachments", "store", "timelines"}  # not needed: records are kept
_CHUNK = 200  # our choice: samples read (and held) at a time


class NotPearLog(ValueError):
    """A log, or a sample of it, that holds no PEAR record."""


@dataclass(frozen=True)
class InspectImport:
    """What :func:`import_logs` wrote."""

    run_dir: Path
    debates: int
    logs: int
    seconds: float
    skipped: list[str] = field(default_factory=list)

    @property
    def per_1000(self) -> float:
        """Seconds per 1,000 debates."""
        return 1000 * self.seconds / self.debates if self.debates else float("nan")

    def report(self) -> str:
        line = (f"imported {self.debates} debates from {self.logs} Inspect log(s) into "
                f"{self.run_dir} in {self.seconds:.2f} s ({self.per_1000:.2f} s per 1,000 "
                "debates)")
        if self.skipped:
            line += f"\nskipped {len(self.skipped)} failed samples (listed in the manifest):"
            line += "".join(f"\n  {s}" for s in self.skipped[:10])
        return line


def _where(path: Path, sample: EvalSample) -> str:
    return f"{path.name}: sample {sample.id!r} (epoch {sample.epoch})"


def _header(path: Path) -> EvalLog:
    if not path.is_file():
        raise FileNotFoundError(f"Inspect log {str(path)!r} not found")
    try:
        return read_eval_log(str(path), header_only=True)
    except Exception as err:  # noqa: BLE001 - one clear message naming the file
        raise NotPearLog(f"{path.name}: not an Inspect eval log Inspect can read "
                         f"({type(err).__name__}: {str(err)[:200]})") from None


def _samples(path: Path) -> Iterator[EvalSample]:
    """The log's samples without their events and messages, :data:`_CHUNK` at a time (one
    read of the zip's directory per chunk; Inspect's one-by-one reader reads it per sample,
    which grows with the square of the log); a ``.json`` log whole (it has no members)."""
    if path.suffix == ".json":
        yield from read_eval_log(str(path)).samples or []
        return
    ids = [(s.id, s.epoch) for s in read_eval_log_sample_summaries(str(path))]
    for i in range(0, len(ids), _CHUNK):
        yield from read_eval_log_samples_by_id(str(path), ids[i:i + _CHUNK], concurrency=4,
                                               exclude_fields=_SKIP)


def _not_pear(path: Path, sample: EvalSample, head: EvalLog) -> str:
    """Why ``sample`` of ``path`` cannot be imported: it failed, or the log is not
    ``pear_debate``'s."""
    if sample.error is not None:
        return (f"{_where(path, sample)} failed before its debate ended "
                f"({str(sample.error.message)[:200]}); it holds no PEAR record")
    solver = ", ".join(s.solver for s in (head.plan.steps if head.plan else [])) or "unknown"
    return (f"{_where(path, sample)} holds no PEAR record (metadata[{RECORD_KEY!r}]): the log "
            f"was not written by pear's Inspect solver pear/pear_debate (its solver: {solver}). "
            "`pear import inspect` reads only that solver's logs; another solver's transcript "
            "has no per-round graph, confidences, critiques or router state to make a PEAR "
            "record from. Nothing was written")


def _attempt(head: EvalLog, debates: list[Mapping[str, Any]], name: str) -> dict[str, Any]:
    """A log as one attempt of the run (:mod:`pear.runs.compute`'s fields; the machine is not
    in an Inspect log; GPUs are those the process held, none: the models ran behind Inspect's
    model API, as for ``pear run --backend openai``)."""
    stats = head.stats
    wall = None
    try:
        wall = round((datetime.fromisoformat(stats.completed_at)
                      - datetime.fromisoformat(stats.started_at)).total_seconds(), 3)
    except (TypeError, ValueError):
        pass
    return {"at": stats.started_at or None, "ended_at": stats.completed_at or None,
            "wall_s": wall, "node": "not recorded", "launcher": "inspect", "gpus": 0,
            "gpu_hours": 0.0, "inspect_log": name,
            "calls": sum(int(r["calls"]) for r in debates),
            "tokens": sum(int(r["tokens"]["prompt"]) + int(r["tokens"]["completion"])
                          for r in debates),
            "cache_hits": 0, "debates": len(debates)}


def _experiment(run: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Experiment:
    """The grid the records belong to: the solver's, with every dataset, method and seed
    the logs hold (questions per dataset: the subset the samples were drawn from)."""
    exp = Experiment.from_dict(run["experiment"])
    datasets = {r["dataset"] for r in records}
    return replace(exp, name="inspect", datasets=tuple(d for d in DATASETS if d in datasets),
                   methods=tuple(dict.fromkeys(r["method"] for r in records)),
                   seeds=tuple(sorted({int(r["seed"]) for r in records})), full_datasets=(),
                   study_scope=False)


def import_logs(logs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                skip_bad: bool = False) -> InspectImport:
    """Import the debates of the Inspect ``logs`` (written by ``pear_debate``) into the new run
    directory ``out``.  A log or sample that holds no PEAR record, logs of different protocols
    or a repeated debate raise one error naming the log and the sample (:class:`NotPearLog`,
    ValueError) and nothing is written; ``skip_bad`` leaves failed samples out instead."""
    t0 = time.perf_counter()
    if not logs:
        raise ValueError("no Inspect logs to import")
    out = fresh_dir(out)
    paths = [Path(p) for p in logs]
    heads = [_header(p) for p in paths]  # every log readable before any sample is read
    seen: dict[str, str] = {}
    first: tuple[str, Mapping[str, Any]] | None = None
    settings: dict[str, Any] = {}
    backends: list[str] = []
    kept: list[dict[str, Any]] = []  # identity of every record (the grid and the counts)
    skipped: list[str] = []
    sources: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    with new_dir(out, "importing") as tmp:
        writers: dict[str, RecordWriter] = {}
        try:
            for path, head in zip(paths, heads):
                mine: list[Mapping[str, Any]] = []
                for sample in _samples(path):
                    meta = sample.metadata or {}
                    rec, run = meta.get(RECORD_KEY), meta.get(RUN_KEY)
                    if not isinstance(rec, dict) or not isinstance(run, dict):
                        why = _not_pear(path, sample, head)
                        if skip_bad and sample.error is not None:
                            skipped.append(why)
                            continue
                        raise NotPearLog(why)
                    where = _where(path, sample)
                    if first is None:
                        first = (where, run)
                    elif run.get("protocol") != first[1].get("protocol"):
                        diffs = manifest_io.diff(first[1].get("protocol"), run.get("protocol"),
                                                 "protocol")
                        raise ValueError(f"{where} ran another protocol than {first[0]} "
                                         f"({'; '.join(diffs[:3])}): import logs of one "
                                         "protocol into one run directory")
                    did = str(rec.get("debate_id"))
                    if did in seen:
                        raise ValueError(f"{where} holds debate {did}, which {seen[did]} "
                                         "holds too: import each debate once")
                    seen[did] = where
                    model = str(rec.get("model"))
                    if model not in writers:
                        writers[model] = RecordWriter(model_dir(tmp, model))
                    try:
                        writers[model].write(rec)
                    except ValueError as err:
                        raise ValueError(f"{where}: its PEAR record is damaged ({err})") from None
                    for mid, s in zip(run.get("model_ids") or [], run.get("backend_settings")
                                      or []):
                        settings.setdefault(mid, s)
                    backends.append(str(run.get("backend") or rec.get("backend")))
                    ident = {k: rec[k] for k in ("dataset", "question_id", "seed", "method",
                                                 "model")}
                    kept.append(ident)
                    mine.append({"calls": rec["calls"], "tokens": rec["tokens"]})
                if not mine and not skipped:
                    raise NotPearLog(f"{path.name}: the log holds no samples (status "
                                     f"{head.status}): nothing to import")
                sources.append({"path": str(path), "name": path.name,
                                "sha256": file_sha256(path), "eval_id": head.eval.eval_id,
                                "run_id": head.eval.run_id, "task": head.eval.task,
                                "model": head.eval.model, "status": head.status,
                                "created": head.eval.created, "packages": head.eval.packages,
                                "debates": len(mine)})
                attempts.append(_attempt(head, mine, path.name))
        finally:
            for w in writers.values():
                w.close()
        if first is None:
            raise NotPearLog(f"no debate could be imported from {', '.join(map(str, paths))}"
                             + (f" ({len(skipped)} failed samples; first: {skipped[0]})"
                                if skipped else ""))
        run = first[1]
        models = list(dict.fromkeys(r["model"] for r in kept))
        exp = _experiment(run, kept)
        have = {(r["dataset"], r["question_id"], int(r["seed"]), r["method"]) for r in kept}
        complete = set(scope_debates(exp, "subset")) <= have
        revision = heads[0].eval.revision
        seconds = time.perf_counter() - t0
        manifest_io.write(tmp, {
            "protocol": run["protocol"], "backend": "+".join(dict.fromkeys(backends)),
            "models": models, "data_sha256": sha256_files(), "shard": None,
            "experiments": [exp.to_dict()], "model_ids": models,
            "backend_settings": [settings.get(m) for m in models],
            "versions": environment.versions(), "lock": environment.lock(), "hardware": [],
            "git_commit": revision.commit if revision is not None else None,
            "started_at": min((a["at"] for a in attempts if a["at"]), default=None),
            "resumed_at": None,
            "finished_at": max((a["ended_at"] for a in attempts if a["ended_at"]),
                               default=None),
            "command": shown_command(sys.argv), "attempts": attempts,
            "compute": total(attempts), "complete": complete,
            "inspect": {"version": INSPECT_IMPORT_VERSION, "logs": sources,
                        "debates": len(kept), "skipped_count": len(skipped),
                        "skipped": skipped,
                        "note": "debates run by pear's Inspect solver (pear_debate): each record "
                                "as the engine wrote it; git_commit is the eval's, hardware is "
                                "not in an Inspect log",
                        "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "seconds": round(seconds, 3)},
        })
    return InspectImport(out, len(kept), len(paths), time.perf_counter() - t0, skipped)


