"""Readers of other debate frameworks' records, one file per format, behind one interface
(:class:`pear.store.readers.base.Reader`); :mod:`pear.store.importing` turns what they read
into PEAR records.  Beside them: how each source's debates ran
(:mod:`pear.store.readers.protocols`) and the final answer their agents' free text states
(:mod:`pear.store.readers.answers`).

>>> sorted(READERS)
['du', 'dylan', 'dylan-mmlu']
"""
from __future__ import annotations

from pear.store.readers.base import BadEntry, BadInput, RawDebate, Reader
from pear.store.readers.du import DuReader
from pear.store.readers.dylan import DylanReader
from pear.store.readers.dylan_mmlu import DylanMmluReader

__all__ = ["READERS", "reader", "Reader", "RawDebate", "BadEntry", "BadInput"]

READERS: dict[str, Reader] = {r.name: r for r in (DuReader(), DylanReader(),
                                                   DylanMmluReader())}
"""Format name -> its reader."""


def reader(name: str) -> Reader:
    """The reader of format ``name``; an error names the formats there are."""
    if name not in READERS:
        raise ValueError(f"unknown import format {name!r}: choose one of "
                         f"{', '.join(sorted(READERS))}")
    return READERS[name]
