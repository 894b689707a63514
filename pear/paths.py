"""Where things are: the one owner of the repository's paths and a run directory's file names,
of writing a file atomically (:func:`write_atomic`, :func:`write_json`), and of how a path is
shown in what others read (:func:`shown`, :class:`ShownPath`, :func:`shown_command`: no path
of the builder's machine in a page, a notebook or a manifest).

A leaf module (standard library only) that every layer may import.  The repository root is
found from the package's location, never from the working directory; a package installed
outside a checkout (a wheel) has no repository, and only the functions that need one fail.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

__all__ = ["shown", "shown_command", "shown_in", "ELIDED", "ShownPath", "PACKAGE_DIR",
           "REPO_ROOT", "DATA_DIR", "BENCHMARKS_DIR", "PAPER_DIR", "RUNS_DIR",
           "REAL_DEBATES_DIR",
           "FIGURES_DIR", "BUILD_DIR", "NOTEBOOKS_DIR", "TEMPLATES_FILE", "RECORDS_FILE",
           "RUN_MANIFEST", "VIEW_DIR", "VIEW_MANIFEST", "CACHE_FILE", "SITE_DIR",
           "EXECUTED_DIR", "cache_path", "BESIDE", "beside", "write_atomic",
           "write_json", "fresh_dir", "new_dir"]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
"""The checkout that holds ``pear/`` (``data/``, ``notebooks/``, ``figures/`` live there)."""
DATA_DIR = REPO_ROOT / "data"
BENCHMARKS_DIR = DATA_DIR / "benchmarks"   # the four benchmarks, with SOURCES.md
PAPER_DIR = DATA_DIR / "paper"             # the study's printed numbers
RUNS_DIR = DATA_DIR / "runs"               # default run directories
REAL_DEBATES_DIR = DATA_DIR / "real-debates"  # other frameworks' debates, with their licence
FIGURES_DIR = REPO_ROOT / "figures"        # generated tables and figures
BUILD_DIR = REPO_ROOT / "build"            # executed notebooks, the site
SITE_DIR = BUILD_DIR / "site"              # the static results site
EXECUTED_DIR = BUILD_DIR / "notebooks"     # the executed notebooks
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
TEMPLATES_FILE = PACKAGE_DIR / "core" / "templates" / "prompts.md"
"""The study's printed prompt templates, shipped inside the package (package data)."""

RECORDS_FILE = "debates.jsonl"   # a run directory's append-only records
RUN_MANIFEST = "manifest.json"   # a run directory's manifest (pear.store.manifest)
VIEW_DIR = "view"                # a run directory's columnar view (pear.store.indexing)
VIEW_MANIFEST = "manifest.json"  # the view's own manifest (files, offsets, parts) in VIEW_DIR
CACHE_FILE = "cache.sqlite"      # a run directory's response cache (pear.backends.cache)


def cache_path(run_dir: str | Path) -> Path:
    """The response cache of the run in ``run_dir`` (studies and branches of a run share it)."""
    return Path(run_dir) / CACHE_FILE


BESIDE = ("studies", "ensemble", "family", "twin")
"""What a run's own further work records beside its directory (:func:`beside`): the studies'
variants and branches, the ensemble of simulated populations (:mod:`pear.paper.ensemble`), the
family's grids, and the grid of a twin of recorded debates (notebook 18)."""


def beside(run_dir: str | Path, what: str) -> Path:
    """Where a run's ``what`` (one of :data:`BESIDE`) is recorded: ``<run_dir>-<what>/`` beside
    the run directory, never inside it (a run directory's records are one protocol's grid).

    >>> beside("data/runs/sim-simulated", "ensemble").name
    'sim-simulated-ensemble'
    """
    if what not in BESIDE:
        raise ValueError(f"unknown {what!r} beside a run: one of {', '.join(BESIDE)}")
    root = Path(run_dir)
    return root.with_name(f"{root.name}-{what}")


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` atomically: a crash, or a reader at the same moment, sees the
    old file or the new one, never a part (a temporary file beside it, then ``os.replace``).

    >>> import tempfile
    >>> p = write_atomic(Path(tempfile.mkdtemp()) / "a.txt", "one")
    >>> p.read_text(), sorted(f.name for f in p.parent.iterdir())
    ('one', ['a.txt'])
    """
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


def fresh_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path, checked up front to be what :func:`new_dir` can fill (absent, or an
    empty folder): otherwise one error naming it, before any work is done."""
    out = Path(path)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {str(out)!r} exists and is not empty: import into a new "
                         "run directory")
    return out


@contextlib.contextmanager
def new_dir(path: str | os.PathLike[str], label: str = "writing") -> Iterator[Path]:
    """A directory written whole or not at all: the block fills a temporary folder beside
    ``path`` (``.<name>.<label>-...``), which replaces ``path`` (absent, or an empty folder)
    when the block ends, and is removed if it fails.

    >>> root = Path(tempfile.mkdtemp())
    >>> with new_dir(root / "run") as tmp:
    ...     _ = (tmp / "a.txt").write_text("one")
    >>> sorted(f.name for f in root.iterdir()), (root / "run" / "a.txt").read_text()
    (['run'], 'one')
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.{label}-", dir=out.parent))
    try:
        yield tmp
        if out.exists():
            out.rmdir()  # empty, or this raises and nothing is replaced
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_json(path: str | os.PathLike[str], data: Any, *, indent: int = 2,
               sort_keys: bool = True, default: Callable[[Any], Any] | None = None,
               newline: bool = False) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (:func:`write_atomic`); ``newline`` ends
    the file with one.

    >>> import tempfile
    >>> text = write_json(Path(tempfile.mkdtemp()) / "a.json", {"b": 1, "a": 2}).read_text()
    >>> text.splitlines()
    ['{', '  "a": 2,', '  "b": 1', '}']
    """
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, default=default)
    return write_atomic(path, text + "\n" if newline else text)


ELIDED = "…"
"""What :func:`shown` writes for the folders of a path outside the checkout."""


def shown(path: str | os.PathLike[str], *, elide: bool = True) -> str:
    """``path`` as a file, a page or a printed line names it: an absolute path relative to the
    checkout when inside it, else its name after ``…/`` (where the builder keeps it is theirs:
    no absolute path of the builder's machine, its home or temporary folders, is shown), or as
    given when not ``elide`` (a line for the terminal of whoever typed it); a relative path as
    given (one that climbs out with ``..`` as an absolute one).

    >>> shown(REPO_ROOT / "data" / "runs"), shown("data/runs/x")
    ('data/runs', 'data/runs/x')
    >>> shown("/elsewhere/on/the/builder/runs"), shown("/elsewhere/runs", elide=False)
    ('…/runs', '/elsewhere/runs')
    """
    p = Path(path)
    if not p.is_absolute() and ".." not in p.parts:
        return p.as_posix()
    resolved = p.resolve()
    try:
        return resolved.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        if not elide:
            return str(path)
        return f"{ELIDED}/{resolved.name}" if resolved.name else ELIDED


class ShownPath(type(Path())):  # type: ignore[misc]  # the platform's concrete Path
    """A path that a notebook displays as :func:`shown` names it: a cell that ends with
    ``save_table(...)`` (a table, a figure written) or a run directory shows where it is
    without the builder's absolute path (IPython's display calls ``_repr_pretty_``, also for
    the paths in a tuple or a dict).  Otherwise a Path like any other: ``str`` and every
    operation unchanged.

    >>> import types
    >>> show = types.SimpleNamespace(text=print)
    >>> ShownPath(REPO_ROOT / "figures" / "a.md")._repr_pretty_(show, False)
    PosixPath('figures/a.md')
    >>> ShownPath("/tmp/x/b.md")._repr_pretty_(show, False)
    PosixPath('…/b.md')
    """

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"{type(Path()).__name__}({shown(self)!r})")


def shown_command(argv: Sequence[str]) -> str:
    """A command line as a manifest records it: each argument that is an absolute path (or
    ``--option=PATH``) :func:`shown`, so that the record carries no path of the machine that
    ran it (the checkout, its virtualenv, a kernel's temporary connection file).

    >>> shown_command([str(REPO_ROOT / ".venv/bin/pear"), "run", "--out=/scratch/me/r1",
    ...                "-f", "/tmp/k/kernel.json", "--seeds", "0,1"])
    '.venv/bin/pear run --out=…/r1 -f …/kernel.json --seeds 0,1'
    """
    def one(arg: str) -> str:
        key, eq, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        return f"{key}{eq}{shown(value)}" if os.path.isabs(value) else arg
    return " ".join(one(str(a)) for a in argv)


def shown_in(data: Any) -> Any:
    """A JSON document (a run's manifest) as a page shows it: every string that is an absolute
    path :func:`shown`, everything else as it is (the manifest on disk keeps the paths a resume
    needs; the copy a site carries names none of the builder's folders).

    >>> shown_in({"backend_settings": [{"cache_path": "/home/me/runs/c.sqlite", "n": 2}],
    ...           "argv": ["-m", "/tmp/k/model.gguf"], "seeds": [0, 1]})
    {'backend_settings': [{'cache_path': '…/c.sqlite', 'n': 2}], 'argv': ['-m', '…/model.gguf'], 'seeds': [0, 1]}
    """
    if isinstance(data, dict):
        return {k: shown_in(v) for k, v in data.items()}
    if isinstance(data, list):
        return [shown_in(v) for v in data]
    if isinstance(data, str) and os.path.isabs(data) and "\n" not in data:
        return shown(data)
    return data
