"""An import shipped graded: a run directory of imported debates (:mod:`pear.store.importing`)
kept as data, so that a first build writes the run from it instead of grading every answer
again (DyLAN's corpus: ``data/real-debates/graded/``, :func:`pear.store.import_cache.corpus_run`).

A shipped copy is a folder of two files:

* ``manifest.json``: the run's manifest as the import wrote it (paths under the repository made
  relative to it), with ``shipped``: the records file, the sha256 and size of the records
  uncompressed and how many there are;
* ``debates.jsonl.xz``: the run's records, byte for byte, xz-compressed (the standard library's
  ``lzma``, deterministic: the same records give the same file).

:func:`write` ships a run directory, :func:`read_manifest` reads a shipped copy's manifest (the
caller decides, with :func:`pear.store.importing.same_import`, whether it is the import it
wants), :func:`restore` writes the run directory from it (decompressed and checked against the
recorded sha256 in a temporary directory beside it, then renamed into place: a crash leaves
nothing half-written; its manifest says where it came from, ``imported.from_shipped``), and
:func:`differences` compares a shipped copy with a run directory (a fresh import) record by
record, timing fields (:data:`pear.core.record.TIMING_FIELDS`) and the manifest's wall-clock and
environment fields (:data:`UNCOMPARED`) aside.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import lzma
import os
import shutil
from pathlib import Path
from typing import Any, Iterator, Mapping

import msgspec

from pear.core.record import TIMING_FIELDS
from pear.paths import REAL_DEBATES_DIR, RECORDS_FILE, REPO_ROOT, new_dir, shown
from pear.store import manifest as manifest_io
from pear.store.records import record_files

__all__ = ["GRADED_DIR", "RECORDS_XZ", "UNCOMPARED", "write", "read_manifest", "restore",
           "differences", "check"]

GRADED_DIR = REAL_DEBATES_DIR / "graded"
"""Where the shipped imports lie, one folder each (DyLAN's corpus,
:data:`pear.store.import_cache.GRADED`; notebook 17's files,
:data:`pear.populations.graded_copies.SHIPPED`)."""

RECORDS_XZ = RECORDS_FILE + ".xz"
"""The shipped records file."""
UNCOMPARED = ("command", "versions", "lock", "shipped", "imported.imported_at",
              "imported.seconds", "imported.from_shipped", "imported.files.path",
              "imported.bad_entries.file")
"""Manifest fields :func:`differences` leaves aside: when and where the import ran (its wall
clock, command line, package versions and lock, where the source file lay), not what it wrote."""
_PRESET = 6  # xz's default: 4 MB for DyLAN's 32 MB of records, in about 15 s
_CHUNK = 1 << 20


def _relative(path: str) -> str:
    """``path`` relative to the repository when it lies under it (shipped data names no
    machine's folders)."""
    try:
        return Path(path).resolve().relative_to(REPO_ROOT).as_posix()
    except (ValueError, OSError):
        return path


def _records(run_dir: Path) -> Path:
    files = record_files(run_dir)
    if files != [run_dir / RECORDS_FILE]:
        raise ValueError(f"{str(run_dir)!r}: a shipped import is one {RECORDS_FILE} at the top "
                         f"of its run directory, found {[str(f) for f in files]}")
    return files[0]


def write(run_dir: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Ship the imported run ``run_dir`` as ``dest`` (``manifest.json`` and
    :data:`RECORDS_XZ`), replacing what is there; written to a temporary folder beside it, then
    renamed."""
    run_dir, dest = Path(run_dir), Path(dest)
    man = manifest_io.read(run_dir)
    if not man or not man.get("imported"):
        raise ValueError(f"{str(run_dir)!r} is not an imported run (its manifest has no "
                         "'imported' part)")
    src = _records(run_dir)
    man = copy.deepcopy(man)
    imp = man["imported"]
    imp.pop("from_shipped", None)
    for f in imp.get("files", []):
        f["path"] = _relative(f["path"])
    for b in imp.get("bad_entries", []):
        b["file"] = _relative(b["file"])
    man["command"] = str(man.get("command", "")).replace(str(REPO_ROOT) + os.sep, "")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.writing-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        digest, size, lines = hashlib.sha256(), 0, 0
        with open(src, "rb") as fin, lzma.open(tmp / RECORDS_XZ, "wb", preset=_PRESET) as out:
            while chunk := fin.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                lines += chunk.count(b"\n")
                out.write(chunk)
        man["shipped"] = {"records": RECORDS_XZ, "sha256": digest.hexdigest(), "bytes": size,
                          "debates": lines}
        manifest_io.write(tmp, man)
        old = dest.parent / f".{dest.name}.old-{os.getpid()}"
        if dest.exists():
            os.replace(dest, old)
        os.replace(tmp, dest)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def read_manifest(dest: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The shipped copy's manifest, or None when ``dest`` holds no shipped copy."""
    dest = Path(dest)
    if not (dest / RECORDS_XZ).is_file():
        return None
    man = manifest_io.read(dest)
    return man if man and man.get("imported") and man.get("shipped") else None


def restore(dest: str | os.PathLike[str], out: str | os.PathLike[str],
            files: list[str | os.PathLike[str]]) -> Path:
    """Write the run directory ``out`` (which must not exist) from the shipped copy ``dest``
    of the import of ``files`` (their paths go into the manifest): the records decompressed and
    checked against the shipped sha256, in a temporary folder beside ``out``, then renamed.
    A shipped copy whose records do not match its manifest is an error (nothing is written)."""
    dest, out = Path(dest), Path(out)
    man = read_manifest(dest)
    if man is None:
        raise ValueError(f"{str(dest)!r} holds no shipped import")
    if out.exists():
        raise ValueError(f"{str(out)!r} exists: restore into a new run directory")
    ship = man.pop("shipped")
    imp = man["imported"]
    paths = [str(Path(f)) for f in files]
    for f, path in zip(imp.get("files", []), paths):
        f["path"] = path
    by_name = {Path(p).name: p for p in paths}
    for b in imp.get("bad_entries", []):
        b["file"] = by_name.get(Path(b["file"]).name, b["file"])
    imp["from_shipped"] = {
        "path": _relative(str(dest)), "sha256": ship["sha256"],
        "note": "written from the shipped graded copy of this import, not graded here; its "
                "'versions', 'lock', 'command' and times are those of the import that wrote it"}
    with new_dir(out, "restoring") as tmp:
        digest, size = hashlib.sha256(), 0
        with lzma.open(dest / RECORDS_XZ, "rb") as fin, open(tmp / RECORDS_FILE, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                fout.write(chunk)
            fout.flush()
            os.fsync(fout.fileno())
        if digest.hexdigest() != ship["sha256"] or size != ship["bytes"]:
            raise ValueError(f"shipped import {str(dest)!r}: its records ({size} bytes, sha256 "
                             f"{digest.hexdigest()[:12]}) are not the ones its manifest names "
                             f"({ship['bytes']} bytes, {ship['sha256'][:12]})")
        manifest_io.write(tmp, man)
    return out


def _compared(man: Mapping[str, Any]) -> dict[str, Any]:
    """``man`` without the :data:`UNCOMPARED` fields."""
    out = copy.deepcopy(dict(man))
    for field in UNCOMPARED:
        parts = field.split(".")
        nodes: list[Any] = [out]
        for key in parts[:-1]:
            nodes = [n.get(key) for n in nodes if isinstance(n, dict)]
            nodes = [x for n in nodes for x in (n if isinstance(n, list) else [n])]
        for n in nodes:
            if isinstance(n, dict):
                n.pop(parts[-1], None)
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _leaves(a: Any, b: Any, prefix: str = "") -> Iterator[str]:
    """Where ``a`` (shipped) and ``b`` (now) differ, leaf by leaf (lists item by item)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            here = f"{prefix}.{k}" if prefix else str(k)
            if k not in a or k not in b:
                yield f"{here}: {'absent' if k not in a else _short(a[k])} shipped, " \
                      f"{'absent' if k not in b else _short(b[k])} now"
            else:
                yield from _leaves(a[k], b[k], here)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _leaves(x, y, f"{prefix}[{i}]")
    elif a != b or type(a) is not type(b):
        yield f"{prefix}: shipped {_short(a)}, now {_short(b)}"


def _lines(path: Path, xz: bool) -> Iterator[bytes]:
    with (lzma.open(path, "rb") if xz else open(path, "rb")) as fh:
        yield from (line for line in fh if line.strip())


def check(dest: str | os.PathLike[str], run_dir: str | os.PathLike[str], source: str
          ) -> list[str]:
    """What ``pear population shipped check`` reports of the shipped copy ``dest`` against
    ``run_dir``, an import of ``source`` (a file's name) from scratch: each of
    :func:`differences` prefixed by ``dest``, or one line when no copy is shipped there (empty:
    the copy is what the code produces)."""
    if read_manifest(dest) is None:
        return [f"{dest}: no graded copy of {source} is shipped there"]
    return [f"{shown(dest, elide=False)}: {d}" for d in differences(dest, run_dir)]


def differences(dest: str | os.PathLike[str], run_dir: str | os.PathLike[str]) -> list[str]:
    """What differs between the shipped copy ``dest`` and the imported run ``run_dir`` (empty:
    the same import): every manifest field but :data:`UNCOMPARED`, the number of records, and
    the first record that differs (its place, its debate id and its first differing fields),
    timing fields (:data:`~pear.core.record.TIMING_FIELDS`) aside."""
    dest, run_dir = Path(dest), Path(run_dir)
    shipped = read_manifest(dest)
    if shipped is None:
        return [f"{dest}: no shipped import there"]
    now = manifest_io.read(run_dir) or {}
    out = [f"manifest {d}" for d in _leaves(_compared(shipped), _compared(now))]
    decode = msgspec.json.decode
    a_lines, b_lines = _lines(dest / RECORDS_XZ, True), _lines(_records(run_dir), False)
    for i, (x, y) in enumerate(itertools.zip_longest(a_lines, b_lines), 1):
        if x is None or y is None:
            n_a = i - 1 + (x is not None) + sum(1 for _ in a_lines)
            n_b = i - 1 + (y is not None) + sum(1 for _ in b_lines)
            out.append(f"records: {n_a} shipped, {n_b} now")
            break
        if x == y:
            continue
        a = {k: v for k, v in decode(x).items() if k not in TIMING_FIELDS}
        b = {k: v for k, v in decode(y).items() if k not in TIMING_FIELDS}
        if a != b:
            what = list(_leaves(a, b))
            out.append(f"record {i} (debate {a.get('debate_id')}): " + "; ".join(what[:3])
                       + (f" (and {len(what) - 3} more fields)" if len(what) > 3 else ""))
            break
    return out
