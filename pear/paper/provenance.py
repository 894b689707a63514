"""Every output knows its build: the figures folder's build manifest (``build.json``).

A figures folder is shared by every build that writes into it, and a partial rebuild
(``pear paper --only``) executes some notebooks only.  So beside the outputs, each notebook
that finishes records the run its outputs came from: the run directory (as
:func:`pear.paths.shown` names it: no builder's path), the run's
fingerprint (:func:`pear.store.manifest.fingerprint`: its manifest and the records the
analysis read), preset, backend, commit and the files it wrote.  The build's own run is
``run`` at the top.  The results site shows a notebook's outputs only when they came from
the build's run (:func:`current`), the build's check reports every output that did not
(:func:`check`), and nothing read from an earlier build can make a build fail.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.paths import shown, write_json
from pear.store.manifest import fingerprint

__all__ = ["BUILD_FILE", "read", "start", "record", "current", "check", "describe"]

BUILD_FILE = "build.json"
"""The build manifest of a figures folder."""


def read(fig_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The figures folder's build manifest (empty when no build wrote one)."""
    p = Path(fig_dir) / BUILD_FILE
    if not p.is_file():
        return {"run": None, "notebooks": {}}
    try:
        data = json.loads(p.read_text())
    except ValueError:  # a damaged manifest proves nothing about any output
        return {"run": None, "notebooks": {}}
    return {"run": data.get("run"), "notebooks": dict(data.get("notebooks") or {})}


def _write(fig_dir: Path, data: Mapping[str, Any]) -> None:
    fig_dir.mkdir(parents=True, exist_ok=True)
    write_json(fig_dir / BUILD_FILE, data)


def _run_entry(params: Mapping[str, Any], commit: str) -> dict[str, Any]:
    runs = Path(params["runs_dir"]).resolve()
    return {"run_dir": shown(runs), "fingerprint": fingerprint(runs) if runs.is_dir() else None,
            "preset": params.get("preset"), "backend": params.get("backend"),
            "commit": commit}


def start(fig_dir: str | os.PathLike[str], params: Mapping[str, Any], commit: str) -> None:
    """A build begins: its run (as it is now) becomes the folder's ``run``."""
    data = read(fig_dir)
    data["run"] = _run_entry(params, commit)
    _write(Path(fig_dir), data)


def record(fig_dir: str | os.PathLike[str], name: str, outputs: Sequence[str],
           params: Mapping[str, Any], commit: str) -> dict[str, Any]:
    """Notebook ``name`` finished and wrote ``outputs``: its entry names the run as it is now
    (after notebook 00, the records it appended), which is also the build's run from here
    on.  Returns the entry."""
    data = read(fig_dir)
    entry = _run_entry(params, commit)
    data["run"] = entry
    data["notebooks"][name] = {**entry, "outputs": list(outputs),
                               "built_at": datetime.now(timezone.utc).isoformat(
                                   timespec="seconds")}
    _write(Path(fig_dir), data)
    return data["notebooks"][name]


def _run_dir(entry: Mapping[str, Any]) -> Any:
    """An entry's run directory as :func:`_run_entry` names it (:func:`pear.paths.shown`),
    also for a manifest written before it did (an absolute path).

    >>> from pear.paths import REPO_ROOT
    >>> _run_dir({"run_dir": str(REPO_ROOT / "data/runs/a")}), _run_dir({"run_dir": "…/b"})
    ('data/runs/a', '…/b')
    """
    d = entry.get("run_dir")
    return shown(d) if isinstance(d, str) else d


def current(fig_dir: str | os.PathLike[str], names: Sequence[str]
            ) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Of ``names``, the notebooks whose outputs came from the folder's ``run`` (same run
    directory and fingerprint), and the others with their entries (from another run, or
    never recorded: ``None``)."""
    data = read(fig_dir)
    run = data["run"] or {}
    key = (_run_dir(run), run.get("fingerprint"))
    kept, other = [], {}
    for n in names:
        e = data["notebooks"].get(n)
        if e is not None and (_run_dir(e), e.get("fingerprint")) == key \
                and key[1] is not None:
            kept.append(n)
        else:
            other[n] = e
    return kept, other


def describe(name: str, entry: Mapping[str, Any] | None) -> str:
    """One line on why ``name``'s outputs are not the build's."""
    if entry is None:
        return f"{name}: no record of the run its outputs came from"
    return (f"{name}: built {entry.get('built_at', '?')} from run {entry.get('run_dir')} "
            f"(fingerprint {entry.get('fingerprint')}), not this build's run")


def check(fig_dir: str | os.PathLike[str], names: Sequence[str]) -> list[str]:
    """Every notebook of ``names`` whose outputs did not come from the folder's ``run``, as
    one line each (empty: every output is the last build's)."""
    data = read(fig_dir)
    if data["run"] is None:
        return [f"{Path(fig_dir) / BUILD_FILE}: no build manifest (outputs of unknown runs)"]
    _, other = current(fig_dir, names)
    return [describe(n, e) for n, e in other.items()]
