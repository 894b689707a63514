"""Readers of other debate frameworks' records, one file per format, behind one interface
(:class:`pear.store.readers.base.Reader`); :mod:`pear.store.importing` turns what they read
into PEAR records.  Beside them: how each source's debates ran
(:mod:`pear.store.readers.protocols`) and the final answer their agents' free text states
(:mod:`pear.store.readers.answers`).

:data:`FORMATS` is every format ``pear import`` takes, once: those read here and the Inspect
logs of pear's own solver (:mod:`pear.harness.logs`, named by module path only).

>>> sorted(READERS)
['du', 'dylan', 'dylan-mmlu']
>>> list(FORMATS)
['du', 'dylan', 'dylan-mmlu', 'inspect']
"""
from __future__ import annotations

from dataclasses import dataclass

from pear.store.readers.base import BadEntry, BadInput, RawDebate, Reader
from pear.store.readers.du import DuReader
from pear.store.readers.dylan import DylanReader
from pear.store.readers.dylan_mmlu import DylanMmluReader

__all__ = ["FORMATS", "ImportFormat", "READERS", "reader", "Reader", "RawDebate", "BadEntry",
           "BadInput"]


@dataclass(frozen=True)
class ImportFormat:
    """One format of ``pear import``: what its files are and what reads them."""

    name: str
    summary: str
    """What its files hold (the command line's help)."""
    files: str
    """The files it takes."""
    reader: Reader | None = None
    """Its reader: raw debates, graded by our graders (None: :attr:`importer` reads it)."""
    importer: str = ""
    """``"module:function"`` that imports files whose entries are PEAR records already (the
    dataset, grading, model and protocol are theirs), as ``function(files, out,
    skip_bad=...)``."""
    extra: str = ""
    """The optional install its importer needs (``pip install 'pear[EXTRA]'``)."""

    @classmethod
    def of(cls, r: Reader, summary: str, files: str = ".json, .json.gz or .tgz") -> ImportFormat:
        """The format ``r`` reads, under the reader's own name."""
        return cls(r.name, summary, files, reader=r)


FORMATS: dict[str, ImportFormat] = {f.name: f for f in (
    ImportFormat.of(DuReader(), "Du et al.'s {question: [agent_contexts, gold]}"),
    ImportFormat.of(DylanReader(), "DyLAN's variant of Du et al.'s records"),
    ImportFormat.of(DylanMmluReader(), "DyLAN's MMLU JSON Lines, question and gold from the "
                    "<archive stem>-key.tsv beside the archive"),
    ImportFormat("inspect", "Inspect eval logs of pear's solver (pear/pear_debate), whose "
                 "samples hold PEAR records, as a run of ours", ".eval or .json",
                 importer="pear.harness.logs:import_logs", extra="inspect"),
)}
"""Format name -> what it is, in the order the command line lists them."""

READERS: dict[str, Reader] = {n: f.reader for n, f in FORMATS.items() if f.reader is not None}
"""Format name -> its reader (the formats read here)."""


def reader(name: str) -> Reader:
    """The reader of format ``name``; an error names the formats there are."""
    if name not in READERS:
        raise ValueError(f"unknown import format {name!r}: choose one of "
                         f"{', '.join(sorted(READERS))}")
    return READERS[name]
