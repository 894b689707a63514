"""The columnar view of a run directory: what the analysis needs of its records, as Parquet.

The JSON Lines records stay the append-only truth.  Beside them, ``<run_dir>/view/`` holds
four tables (:data:`TABLES`: ``debates``, ``agent_rounds``, ``edges``, ``rounds``,
described in :mod:`pear.store.columns`), written by streaming the records (:mod:`pear.store.indexing`).
Long texts (reasoning, critiques) stay in the JSON Lines; :meth:`View.record` reads one.

Freshness is checked, never assumed (:func:`index`: incremental on appended lines, a
rebuild when the records or the view changed under it); :func:`load` indexes first, then
reads the tables into pandas (strings as categoricals), each on first use.

Records are untrusted until checked: indexing checks every new line (:mod:`pear.store.validate`),
and :func:`load` stops with one clear error when the view's run holds damaged records
(including one debate id recorded with different contents), unless ``drop_invalid``
(default: the ``PEAR_DROP_INVALID`` environment variable, which ``pear paper
--drop-invalid`` sets), which analyses the valid records only and says what it left out.

Why pandas over DuckDB: the view's size grows with the number of debates, not with the
size of their texts (the sim grid's ~1.6 M agent rows take tens of MB in memory), every
metric is a group-by that pandas does in well under a second at that size, and the tables
the notebooks print are DataFrames already; DuckDB would add a dependency and a second
query language for no memory the analysis needs.
"""
from __future__ import annotations

import copy
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pear.store.columns import CATEGORICAL, SCHEMAS, TABLES, Rows, to_pandas
from pear.store.indexing import (VIEW_DIR, IndexSummary, Manifest, index, part_path, read_manifest,
                           run_dir_of)
from pear.store.records import read_record_at, with_defaults
from pear.store.findings import (Findings, Problem, ValidationError, digest, drop_invalid_default,
                           torn_tail)
from pear.store.checks import Checker

__all__ = ["VIEW_DIR", "TABLES", "SCHEMAS", "IndexSummary", "View", "index", "load",
           "from_records", "findings"]


def from_records(records: Iterable[Mapping[str, Any]]) -> "View":
    """A :class:`View` of in-memory records (no files; ``file`` = -1, ``offset`` = the
    record's position): for tests and for scripts that hold the records they just made."""
    rows, kept = Rows(), {}
    for i, rec in enumerate(records):
        rows.add(rec, i, -1, i, digest(rec))
        kept.setdefault(rec["debate_id"], rec)
    tables = rows.tables()
    out = View({t: to_pandas(tables[t], t) for t in TABLES}, files=(), root=None)
    out._records = kept
    return out


def _read(vdir: Path, man: Manifest, name: str, columns: Sequence[str] | None
          ) -> pd.DataFrame:
    paths = [part_path(vdir, p["name"], name) for p in man.parts]
    cats = [c for c in CATEGORICAL.get(name, ()) if columns is None or c in columns]
    if not paths:
        table = SCHEMAS[name].empty_table()
        if columns is not None:
            table = table.select(list(columns))
        return to_pandas(table, name)
    parts = [pq.read_table(p, columns=list(columns) if columns else None,
                           read_dictionary=cats) for p in paths]
    table = pa.concat_tables(parts).unify_dictionaries() if len(parts) > 1 else parts[0]
    return to_pandas(table.combine_chunks(), name)


class View:
    """The four tables of a run directory's view as pandas DataFrames (each read on first
    use), with debates de-duplicated by ``debate_id`` (the first in record-file path order,
    then line order, wins, as :func:`pear.store.records.read_records`) and the child tables
    restricted to the debates kept."""

    def __init__(self, frames: Mapping[str, pd.DataFrame] | None = None, *,
                 files: Sequence[Path] = (), root: Path | None = None,
                 vdir: Path | None = None, manifest: Manifest | None = None,
                 columns: Mapping[str, Sequence[str]] | None = None) -> None:
        self.files = tuple(files)
        """The record files, in the order of the ``file`` column."""
        self.root = root
        self._vdir, self._man, self._columns = vdir, manifest, dict(columns or {})
        self._raw: dict[str, pd.DataFrame] = dict(frames or {})
        self._frames: dict[str, pd.DataFrame] = {}
        self._keep = np.zeros(0, dtype=bool)
        self._records: Mapping[str, Any] = {}  # in-memory views: the records themselves

    def _read(self, name: str) -> pd.DataFrame:
        if name not in self._raw:
            if self._man is None or self._vdir is None:
                raise ValueError(f"table {name!r} was not loaded")
            self._raw[name] = _read(self._vdir, self._man, name, self._columns.get(name))
        return self._raw[name]

    def _set_debates(self, deb: pd.DataFrame) -> None:
        if len(deb) and deb["debate_id"].duplicated().any():
            rank = np.argsort(np.argsort([str(p) for p in self.files]))
            key = rank[deb["file"].to_numpy()] if len(rank) else np.zeros(len(deb), int)
            order = np.lexsort((deb["offset"].to_numpy(), key))
            first = np.zeros(len(deb), dtype=bool)
            first[order[~deb["debate_id"].iloc[order].duplicated().to_numpy()]] = True
            deb = deb[first].reset_index(drop=True)
        size = int(deb["debate"].max()) + 1 if len(deb) else 0
        self._keep = np.zeros(size, dtype=bool)
        self._keep[deb["debate"].to_numpy()] = True
        self._frames = {"debates": deb}

    def table(self, name: str) -> pd.DataFrame:
        """One table (``debates``, ``agent_rounds``, ``edges``, ``rounds``)."""
        if name not in SCHEMAS:
            raise ValueError(f"unknown table {name!r}: choose one of {', '.join(TABLES)}")
        if "debates" not in self._frames:
            self._set_debates(self._read("debates"))
        if name not in self._frames:
            df = self._read(name)
            codes = df["debate"].to_numpy()
            mask = np.zeros(len(df), dtype=bool)
            inside = codes < len(self._keep)
            mask[inside] = self._keep[codes[inside]]
            self._frames[name] = df if mask.all() else df[mask].reset_index(drop=True)
        return self._frames[name]

    @property
    def debates(self) -> pd.DataFrame:
        return self.table("debates")

    @property
    def agent_rounds(self) -> pd.DataFrame:
        return self.table("agent_rounds")

    @property
    def edges(self) -> pd.DataFrame:
        return self.table("edges")

    @property
    def rounds(self) -> pd.DataFrame:
        return self.table("rounds")

    def select(self, keep: pd.Series | np.ndarray) -> "View":
        """A view of the debates where ``keep`` (a boolean mask over :attr:`debates`) holds;
        the child tables follow."""
        out = View(files=self.files, root=self.root, vdir=self._vdir, manifest=self._man,
                   columns=self._columns)
        out._records = self._records
        out._raw = {k: v for k, v in self._frames.items() if k != "debates"}
        out._raw.update({k: v for k, v in self._raw.items() if k not in out._raw})
        out._set_debates(self.debates[np.asarray(keep, dtype=bool)].reset_index(drop=True))
        return out

    def record(self, debate_id: str) -> dict[str, Any]:
        """The full record (texts included) of one debate, read from its JSON Lines file."""
        deb = self.debates
        hit = deb.loc[deb["debate_id"] == debate_id, ["file", "offset"]]
        if hit.empty:
            raise ValueError(f"no debate {debate_id!r} among the {len(deb)} in the view")
        file, offset = (int(v) for v in hit.iloc[0])
        if debate_id in self._records:
            return with_defaults(copy.deepcopy(dict(self._records[debate_id])))
        if not 0 <= file < len(self.files):
            raise ValueError(f"debate {debate_id!r} has no record file in this view")
        return read_record_at(self.files[file], offset)


def load(run_dir: str | os.PathLike[str], *, columns: Mapping[str, Sequence[str]] | None = None,
         update: bool = True, verify: bool = True, drop_invalid: bool | None = None) -> View:
    """The view of ``run_dir``, indexed (and its new lines checked) first unless
    ``update=False`` (see :func:`index`).  ``columns`` restricts what is read per table
    (``debate`` is always read; ``debates`` always gets ``debate_id``, ``file``, ``offset``
    and ``digest``).  Where the run directory cannot be written (a read-only copy), the view
    is built in a temporary directory instead.  Damaged records are a
    :class:`pear.store.validate.ValidationError` naming the first, unless ``drop_invalid`` (None:
    :func:`pear.store.validate.drop_invalid_default`)."""
    drop = drop_invalid_default() if drop_invalid is None else drop_invalid
    root = run_dir_of(run_dir)
    cols = None
    if columns is not None:
        unknown = [(t, c) for t, cs in columns.items() for c in cs
                   if t not in SCHEMAS or c not in SCHEMAS[t].names]
        if unknown:
            raise ValueError(f"unknown view column {unknown[0][1]!r} of table {unknown[0][0]!r}")
        cols = {t: list(dict.fromkeys(["debate", *(["debate_id", "file", "offset", "digest"]
                                                   if t == "debates" else []), *cs]))
                for t, cs in columns.items()}
    vdir = root / VIEW_DIR
    if update:
        try:
            index(root, verify=verify, drop_invalid=drop)
        except PermissionError:
            return _load_elsewhere(root, cols, drop)
    man = read_manifest(vdir)
    if man is None:
        raise FileNotFoundError(f"no view under {str(root)!r}: run `pear index {root}`")
    view = View(files=[root / f["path"] for f in man.files], root=root, vdir=vdir,
                manifest=man, columns=cols)
    _enforce(view, man, drop)
    return view


def findings(view: View, man: Manifest) -> Findings:
    """Everything the checks know of ``view``'s run: the indexed lines' findings, the torn
    tails of its record files, and debate ids recorded more than once (the same contents:
    a warning; different contents: an error)."""
    out = Findings.from_dict(man.findings)
    if view.root is not None:
        out = Checker(view.root).run_findings.merge(out)
    for f in man.files:
        path = Path(view.root or ".") / f["path"]
        if path.is_file() and (p := torn_tail(path, f["offset"])) is not None:
            out.add(p)
    deb = view._read("debates")
    if len(deb) and deb["debate_id"].duplicated().any():
        twice = deb[deb["debate_id"].duplicated(keep=False)]
        g = twice.groupby(twice["debate_id"].astype(object), sort=False).agg(
            copies=("digest", "size"), digests=("digest", lambda d: d.nunique(dropna=False)),
            file=("file", "last"), offset=("offset", "last"))
        for did, row in g.iterrows():
            file = int(row["file"])
            where = (f"{view.files[file]}@{int(row['offset'])}" if 0 <= file < len(view.files)
                     else "memory")
            conflict = row["digests"] > 1
            out.add(Problem("conflicting_id" if conflict else "duplicate_id", where,
                            f"debate {did} recorded {row['copies']} times"
                            + (" with different contents" if conflict else "")),
                    count=int(row["copies"]) - 1)
    return out


def _enforce(view: View, man: Manifest, drop: bool) -> None:
    """Stop on damaged records, or (``drop``) warn what the view leaves out: the records
    dropped while indexing and the later copies of a conflicting id (the first is kept)."""
    found = findings(view, man)
    if found.ok:
        return
    if not drop:
        raise ValidationError(view.root, found)
    left = found.dropped + found.counts.get("conflicting_id", 0)
    warnings.warn(f"{view.root}: analysing the valid records only; left out {left} damaged "
                  f"records ({', '.join(f'{n} {k}' for k, n in sorted(found.errors().items()))}"
                  f"; first: {found.first_error()})", RuntimeWarning, stacklevel=3)


def _load_elsewhere(root: Path, cols: Mapping[str, Sequence[str]] | None,
                    drop: bool) -> View:
    """Index a read-only run directory into a temporary view and read every table."""
    warnings.warn(f"{root} is not writable: indexing its records in a temporary directory",
                  RuntimeWarning, stacklevel=3)
    with tempfile.TemporaryDirectory() as tmp:
        vdir = Path(tmp) / VIEW_DIR
        index(root, view_dir=vdir, drop_invalid=drop)
        man = read_manifest(vdir) or Manifest()
        view = View(files=[root / f["path"] for f in man.files], root=root, vdir=vdir,
                    manifest=man, columns=cols)
        _enforce(view, man, drop)
        for t in TABLES:
            view.table(t)
    return view
