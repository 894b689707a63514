"""``pear import FORMAT FILE... --out RUN``: other frameworks' recorded debates as a PEAR run.

A reader (:mod:`pear.store.readers`) reads each file; every debate becomes one record of the
schema (:mod:`pear.core.record`) with, per round, each agent's full text, the final answer it
states (:func:`pear.store.readers.answers.final_answer`: what a careful reader reads, units
and trailing prose aside) as our grader for the dataset reads and grades it, the majority vote
(:func:`pear.core.vote.vote`) and the edges (everyone hears everyone in these protocols: the
clique of the debate's size, :func:`pear.core.graphs.fixed_topology`); where the file gives
the answers each agent's message quoted (DyLAN's, :attr:`pear.store.readers.RawDebate.heard`),
the agent's entry lists them graded, in prompt order, as ``heard`` (:func:`_heard`): those of
agents the record does not keep included, which the clique's edges do not show.  Questions
found in our benchmark by their text take our id and gold answer (the file's gold is kept in
``imported.file_gold`` and compared with ours); others keep the file's gold, graded by the
grading kind given (:data:`pear.tasks.grading.GRADING_KINDS`; letters among the options the
question's text lists, :func:`pear.tasks.grading.offered_letters`).  What these
protocols do not have is absent, not invented: confidences are null, there are no critiques,
no router and no influence; token counts are not recorded (0) and the manifest says so.

The run directory gets a manifest (:mod:`pear.store.manifest`) whose ``imported`` part names
the format, each file with its sha256, the model as given, the grading kind, the source's
protocol (:class:`pear.store.readers.protocols.Protocol`: stop rule, who hears whom and when,
what an agent sees, who leaves; the reader's :meth:`~pear.store.readers.Reader.protocol`) and the
counts (debates, matched, golds that disagree, bad entries).  Bad input (a file not in the format,
agents with different round counts, an answer-less gold, a gold letter beyond the question's
options, truncated JSON) is one error naming the file and the entry, and nothing is written;
with ``skip_bad`` the bad entries are left out and listed in the manifest.  Records are written
to a temporary directory and moved into place whole.
"""
from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, TypedDict

import numpy as np

from pear.core.graphs import fixed_topology
from pear.core.hashing import debate_id, derive_seed, file_sha256, hex_id
from pear.core.record import SCHEMA_VERSION
from pear.core.vote import vote
from pear.paths import fresh_dir, new_dir, shown_command
from pear.store import environment, manifest as manifest_io
from pear.store.readers import BadEntry, BadInput, RawDebate, reader
from pear.store.readers.answers import final_answer
from pear.store.readers.base import short
from pear.store.readers.protocols import Protocol, Quorum, quorum_misses
from pear.store.records import RECORDS_FILE, RecordWriter
from pear.tasks.benchmarks import DATASETS, Question, match_question, sha256_files
from pear.tasks.grading import (GRADING_KINDS, Task, for_kind, get, kind_of, offered_letters,
                                option_letters, parse_letter)

__all__ = ["ImportSummary", "ImportEntry", "import_files", "same_import", "IMPORT_BACKEND",
           "IMPORT_METHOD", "IMPORT_VERSION"]

IMPORT_VERSION = 4
"""What an import writes, versioned (the manifest's ``imported.version``): 2 reads each
answer's stated final answer (:func:`pear.store.readers.answers.final_answer`) and records
the source's protocol; 3 adds the share of quorums the source's own check missed
(``protocol.stop.miss``, :func:`pear.store.readers.protocols.quorum_misses` on the imported
records) and, per agent of round 1.. whose message quotes other agents'
answers (DyLAN's), the graded answers it heard (its entry's ``heard``: one
``{"canonical", "correct"}`` per quoted answer, in prompt order, the answers of agents the
record does not keep included); 4 measures the missed quorums on the right answer apart
(``protocol.stop.miss_right``; ``miss`` is then that of quorums on a wrong answer).  A cached
import of another version is imported again."""

IMPORT_BACKEND = "imported"
"""The ``backend`` identity field of imported records."""
IMPORT_METHOD = "clique"
"""The ``method`` of imported records: in Du et al.'s and DyLAN's protocols every agent sees
every other agent's answer each round (the clique), though without PEAR's critique phase."""
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_THREADS = 4  # our choice: grading threads (Math-Verify runs in its own worker processes)
_NO_OPTIONS = "ABCD"  # our choice: MMLU's four, for a question whose text lists no options


class ImportEntry(TypedDict):
    """An imported record's ``imported`` part (:class:`pear.core.record.DebateRecord`): where
    the debate came from, another framework's record file and the entry in it, and what our
    benchmarks say of its question."""

    # The reader that read it (du | dylan | ...).
    format: str
    # The file's name and the entry's key in it (the question text, shortened).
    file: str
    entry: str
    # Whether the question was found in our benchmark by its text (id and gold are then ours).
    matched: bool
    # The gold answer as the file gives it.
    file_gold: str
    # Whether the file's gold is our benchmark's gold for our grader (None: not matched).
    gold_agrees: Optional[bool]
    # Other fields the file gives per debate (DyLAN: level, subject).
    extra: dict[str, Any]


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_files` wrote."""

    run_dir: Path
    debates: int
    matched: int
    """Debates whose question was found in our benchmark by its text."""
    gold_disagree: int
    """Matched debates whose file gold our grader does not call our gold."""
    bad: list[BadEntry] = field(default_factory=list)
    seconds: float = 0.0

    def report(self) -> str:
        rate = self.debates / self.seconds if self.seconds > 0 else float("inf")
        lines = [f"imported {self.debates} debates into {self.run_dir} in {self.seconds:.1f} s "
                 f"({rate:.1f} debates/s); {self.matched} matched to our benchmark by text, "
                 f"{self.gold_disagree} of them with a gold that disagrees with ours"]
        if self.bad:
            lines.append(f"skipped {len(self.bad)} bad entries (listed in the manifest):")
            lines += [f"  {b.message()}" for b in self.bad[:10]]
        return "\n".join(lines)


def _task(dataset: str, grading: str | None) -> Task:
    """Our grader for ``dataset``, or one of kind ``grading`` for a dataset we do not ship."""
    if dataset in DATASETS:
        task = get(dataset)
        if grading and grading != kind_of(task):
            raise ValueError(f"--grading {grading!r} does not fit dataset {dataset!r} (graded "
                             f"as {kind_of(task)!r}); leave --grading out for our datasets")
        return task
    if not _NAME.fullmatch(dataset):
        raise ValueError(f"invalid dataset name {dataset!r}: lower-case letters, digits, "
                         "'_', '-', '.'")
    if not grading:
        raise ValueError(f"dataset {dataset!r} is not one of ours ({', '.join(DATASETS)}): "
                         f"name its grading kind with --grading {'|'.join(GRADING_KINDS)}")
    return for_kind(grading, dataset)


def _question(raw: RawDebate, dataset: str, fmt: str, task: Task) -> Question:
    """A question for a debate not in our benchmark: the file's text and gold; for letter
    grading, the options are the letters the text lists
    (:func:`pear.tasks.grading.offered_letters`), A-D where it lists none."""
    letters: tuple[str, ...] | None = None
    if kind_of(task) == "letters":
        letters = tuple(offered_letters(raw.question) or _NO_OPTIONS)
    qid = f"{fmt}-{hex_id(' '.join(raw.question.split()), n=16)}"
    return Question(id=qid, dataset=dataset, question=raw.question, choices=letters,
                    gold=raw.gold, gold_raw=raw.gold, permutation=None)


def _gold(raw: RawDebate, task: Task, q: Question) -> tuple[str, str]:
    """The file's gold as ``task`` reads it for question ``q``, or ``""`` and why it cannot
    be read (a letter must be one of the options the question offers)."""
    if kind_of(task) == "letters":
        read = task.judge([raw.gold], q).classes[0]
        letter = "" if read else parse_letter(raw.gold)  # any letter, A-Z
        if letter:
            letters = option_letters(q)
            listed = "" if q.dataset in DATASETS else \
                " (its text lists them)" if offered_letters(q.question) else \
                f" (its text lists none: {_NO_OPTIONS[0]}-{_NO_OPTIONS[-1]} assumed)"
            return "", f"the gold letter {letter!r} (the file gives " \
                       f"{short(raw.gold, 40)!r}) is not one of the options the question " \
                       f"offers, {letters[0]}-{letters[-1]}{listed}"
    else:
        read = task.canonical(raw.gold)
    if not read:
        return "", f"the gold answer {short(raw.gold, 40)!r} holds no answer our " \
                   f"{kind_of(task)} grader can read"
    return read, ""


def _answer(task: Task, text: str) -> str:
    """An agent's answer in ``text`` as ``task`` reads it: the final answer the text states
    (:func:`pear.store.readers.answers.final_answer`, else the whole text); a yes/no reader
    reads the whole text itself (the statement it looks for is not math)."""
    if kind_of(task) == "yesno":
        return task.canonical(text)
    return task.canonical(final_answer(text) or text)


def _record(raw: RawDebate, file: Path, *, fmt: str, dataset: str, task: Task, model: str,
            config: str, ours: Question | None, seed: int
            ) -> tuple[dict[str, Any] | None, str]:
    """The record of one debate (``ours``: its question in our benchmark, else None;
    ``seed``: how many debates of the same question came before it), or None and why it
    cannot be imported."""
    q = ours or _question(raw, dataset, fmt, task)
    gold_read, why = _gold(raw, task, q)
    if not gold_read:
        return None, why
    agrees = bool(task.judge([raw.gold], ours).correct[0]) if ours is not None else None
    gold = ours.gold if ours is not None else (gold_read if kind_of(task) != "math"
                                               else raw.gold)
    if ours is None and kind_of(task) == "numbers":
        q = Question(q.id, q.dataset, q.question, q.choices, gold_read, raw.gold, None)
    ident = {"model": model, "backend": IMPORT_BACKEND, "dataset": dataset,
             "method": IMPORT_METHOD, "seed": seed, "question_id": q.id,
             "config_hash": config}
    did = debate_id(ident)
    n, rounds_n = raw.n_agents, raw.n_rounds
    clique = fixed_topology("clique", n).tolist()
    rounds, failures = [], 0
    for r in range(rounds_n):
        texts = [raw.texts[a][r] for a in range(n)]
        answers = [_answer(task, t) for t in texts]
        judged = task.judge(answers, q)
        agents = []
        for a, (text, answer, cls, grade) in enumerate(zip(texts, answers, judged.classes,
                                                           judged.grades)):
            failures += not cls
            agents.append({"agent": a, "answer": answer, "canonical": cls, "confidence": None,
                           "reasoning": text, "correct": bool(grade.correct),
                           "parse_error": None if cls else "no answer read by our grader"})
        if r and raw.heard:
            _heard(agents, [raw.heard[a][r] for a in range(n)], rounds[-1]["agents"], task, q)
        rng = np.random.default_rng(derive_seed(did, r, "vote"))
        top = vote(list(judged.classes), rng)
        holder = next((x for x in agents if x["canonical"] == top), None)
        rounds.append({"round": r, "edges": clique if r else [], "router": None,
                       "agents": agents, "critiques": [], "influence": [], "vote": top,
                       "vote_correct": bool(top) and holder is not None and holder["correct"]})
    rec = {"schema": SCHEMA_VERSION, "debate_id": did, **ident, "n_agents": n,
           "rounds": rounds_n - 1, "gold": gold, "rounds_data": rounds,
           "final_answer": rounds[-1]["vote"], "correct": rounds[-1]["vote_correct"],
           "tokens": {"prompt": 0, "completion": 0, "cached": 0}, "calls": n * rounds_n,
           "parse_failures": failures,
           "imported": ImportEntry(format=fmt, file=file.name, entry=short(raw.entry, 200),
                                   matched=ours is not None, file_gold=raw.gold,
                                   gold_agrees=agrees,
                                   extra={**dict(raw.extra),
                                          **({"options": len(q.choices)} if q.choices else {})})}
    return rec, ""


def _heard(agents: list[dict[str, Any]], quotes: Sequence[Sequence[str]],
           before: list[dict[str, Any]], task: Task, q: Question) -> None:
    """Give each entry of ``agents`` (one round's, graded) whose message quoted answers
    (``quotes[agent]``, in prompt order) its ``heard``: per quoted answer ``{"canonical",
    "correct"}``, graded as an agent's own text is (its stated final answer, our grader's
    reading, judged with the question).  A quoted text that is a recorded answer of this
    round or the one before (``before``) takes that answer's grade; the others (answers of
    agents the record does not keep) are judged together with this round's answers, and one
    in the class of an answer of this round takes that answer's canonical and grade, so that
    equal answers carry equal labels within the round."""
    known: dict[str, tuple[str, bool]] = {}
    for e in [*agents, *before]:
        known.setdefault(e["reasoning"], (e["canonical"], e["correct"]))
    new = list(dict.fromkeys(t for said in quotes for t in said if t not in known))
    if new:
        mine = [e["answer"] for e in agents]
        judged = task.judge(mine + [_answer(task, t) for t in new], q)
        classes, grades = judged.classes, judged.grades
        for j, text in enumerate(new, start=len(mine)):
            same = next((e for e, c in zip(agents, classes) if classes[j] and c == classes[j]),
                        None)
            known[text] = (same["canonical"], same["correct"]) if same is not None else \
                (classes[j], bool(grades[j].correct))
    for entry, said in zip(agents, quotes):
        if said:
            entry["heard"] = [{"canonical": known[t][0], "correct": bool(known[t][1])}
                              for t in said]


def same_import(man: Mapping[str, Any] | None, fmt: str,
                files: Sequence[str | os.PathLike[str]], *, dataset: str,
                grading: str | None = None, model: str = "") -> bool:
    """Whether the run manifest ``man`` records exactly the import :func:`import_files` would
    write now with these arguments: the same files (by sha256), importer version
    (:data:`IMPORT_VERSION`), format, dataset, model, grading kind (when given) and our
    benchmarks (``data_sha256``, the questions it matched against).  What a cached or shipped
    import must be to be used instead of importing again."""
    imp = (man or {}).get("imported")
    if not imp:
        return False
    return ([f.get("sha256") for f in imp.get("files") or []]
            == [file_sha256(f) for f in files]
            and imp.get("version") == IMPORT_VERSION and imp.get("format") == fmt
            and imp.get("datasets") == [dataset]
            and imp.get("model") == (model or f"{fmt}-import")
            and (grading is None or imp.get("grading") == grading)
            and man.get("data_sha256") == sha256_files())  # type: ignore[union-attr]


def import_files(fmt: str, files: Sequence[str | os.PathLike[str]],
                 out: str | os.PathLike[str], *, dataset: str, grading: str | None = None,
                 model: str = "", skip_bad: bool = False,
                 protocol: str | None = None) -> ImportSummary:
    """Import the debates of ``files`` (format ``fmt``: ``du``, ``dylan`` or ``dylan-mmlu``)
    into the new run directory ``out`` as records of ``dataset``, graded by our grader for it
    (a dataset we do not ship needs ``grading``: numbers, letters, math or yesno).  ``model``
    is recorded as given (default ``<fmt>-import``).  A run records one source protocol:
    ``protocol`` (a name, e.g. ``dylan-mmlu-3``) keeps only that protocol's debates, and files
    whose debates follow several protocols without it are one error naming each with its
    count.  Bad input raises :class:`BadInput` naming the file and the entry and writes
    nothing, unless ``skip_bad``."""
    t0 = time.perf_counter()
    rd = reader(fmt)
    task = _task(dataset, grading)
    model = model or f"{fmt}-import"
    if not re.fullmatch(r"[^\x00-\x1f\x7f<>\"'&\\`]{1,128}", model):
        raise ValueError(f"invalid --model {model!r}: a plain name without quotes or markup")
    if not files:
        raise ValueError("no files to import")
    out = fresh_dir(out)
    config = hex_id("import", fmt, kind_of(task), n=16)
    records: list[dict[str, Any]] = []
    bad: list[BadEntry] = []
    seen: dict[str, int] = {}
    protocols: dict[str, Protocol] = {}
    counts: dict[str, int] = {}
    sources = []
    for f in map(Path, files):
        jobs = []
        for item in rd.read(f):
            if isinstance(item, BadEntry):
                bad.append(item)
                continue
            proto = rd.protocol(item)
            counts[proto.name] = counts.get(proto.name, 0) + 1
            if protocol is not None and proto.name != protocol:
                continue
            protocols.setdefault(proto.name, proto)
            ours = match_question(dataset, item.question) if dataset in DATASETS else None
            qid = ours.id if ours is not None else _question(item, dataset, fmt, task).id
            seed = seen.get(qid, 0)  # the same question again: another sample (seed 1, 2..)
            seen[qid] = seed + 1
            jobs.append((item, ours, seed))
        if bad and not skip_bad:
            raise BadInput(bad)
        if len(protocols) > 1:  # before grading: a mixed import is refused at once
            raise ValueError(
                f"the files hold debates of several source protocols ("
                f"{', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))} debates read "
                f"so far): a run records one; import each on its own (--protocol NAME)")
        # grading waits on Math-Verify's worker processes: a few threads keep them busy
        with ThreadPoolExecutor(max_workers=_THREADS) as pool:
            done = list(pool.map(lambda job: _record(
                job[0], f, fmt=fmt, dataset=dataset, task=task, model=model, config=config,
                ours=job[1], seed=job[2]), jobs))
        count = 0
        for (item, _, _), (rec, why) in zip(jobs, done):
            if rec is None:
                bad.append(BadEntry(str(f), item.entry, why))
                continue
            records.append(rec)
            count += 1
        sources.append({"path": str(f), "name": f.name, "sha256": file_sha256(f), "debates": count})
        if bad and not skip_bad:
            raise BadInput(bad)
    found = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    if not records:
        raise ValueError(f"no debate could be imported from {', '.join(map(str, files))}"
                         + (f" ({len(bad)} bad entries; first: {bad[0].message()})"
                            if bad else "")
                         + (f" with protocol {protocol!r} (found {found or 'none'})"
                            if protocol is not None else ""))
    (proto,) = protocols.values()  # one, as checked above
    if isinstance(proto.stop, Quorum):  # how often the source's own check missed a quorum
        share = [min(round(m / q, 4), 0.999) if q else 0.0 for q, m in (
            quorum_misses(records, proto.stop, right=ok) for ok in (False, True))]
        proto = replace(proto, stop=replace(proto.stop, miss=share[0], miss_right=share[1]))
    matched = sum(r["imported"]["matched"] for r in records)
    disagree = sum(r["imported"]["gold_agrees"] is False for r in records)
    with new_dir(out, "importing") as tmp:
        with RecordWriter(tmp) as w:
            for rec in records:
                w.write(rec)
        seconds = time.perf_counter() - t0
        manifest_io.write(tmp, {
            "imported": {
                "version": IMPORT_VERSION, "format": fmt, "files": sources, "model": model,
                "datasets": [dataset],
                "protocol": proto.to_dict(),
                "grading": kind_of(task), "debates": len(records), "matched": matched,
                "unmatched": len(records) - matched, "gold_disagree": disagree,
                "bad_count": len(bad),
                "bad_entries": [{"file": b.file, "entry": short(b.entry, 200),
                                 "reason": b.reason} for b in bad],
                "absent": ["confidence", "critiques", "router", "influence", "tokens"],
                "note": "debates recorded by another framework: confidences, critiques, "
                        "router and influence are absent (null or empty), token counts are "
                        "not recorded (0); edges are the clique of the agents the record "
                        "keeps; an agent's heard (where present) grades every answer its "
                        "message quoted, those of agents the record does not keep included",
                "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "seconds": round(seconds, 3),
            },
            "backend": IMPORT_BACKEND, "models": [model], "data_sha256": sha256_files(),
            "versions": environment.versions(), "lock": environment.lock(),
            "command": shown_command(sys.argv),
            # what is known of what the debates cost: the calls they hold; the machine, the
            # time and the tokens of the framework that ran them are not in its files
            "hardware": [],
            "compute": {"attempts": 0, "unfinished": 0, "wall_s": None, "gpu_hours": None,
                        "calls": sum(int(r.get("calls") or 0) for r in records),
                        "tokens": None, "cache_hits": 0, "debates": len(records)},
        })
    assert (out / RECORDS_FILE).is_file()
    return ImportSummary(out, len(records), matched, disagree, bad, time.perf_counter() - t0)
