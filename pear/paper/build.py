"""The paper build behind ``pear paper``: :func:`build` executes the notebooks in order
(jupytext + papermill) with the parameters they declare, then writes the results site.

Its parts live beside it: the notebook registry, one entry per notebook with the outputs it
produces, whether it calls the model, what it reads and its typical time
(:mod:`pear.paper.registry`; ``pear check outputs figures`` names every missing output), the
kernels, their environment and which notebooks run alone or side by side
(:mod:`pear.paper.kernels`), what each notebook cost (:mod:`pear.paper.times`) and the
results site of a finished build (:mod:`pear.paper.publish`).  The notebooks' glue is
theirs: the grid's in :mod:`pear.paper.experiments`, the analysis notebooks' in
:mod:`pear.paper.study` (and the studies' modules beside it); none of it imports the build.

The analysis runs one way: records -> columnar view (:mod:`pear.store.view`) ->
:mod:`pear.analysis.metrics` -> :mod:`pear.analysis.stats` -> the study's printed numbers
(:mod:`pear.analysis.compare`) -> tables (:mod:`pear.analysis.report`) -> plots
(:mod:`pear.analysis.figures`) -> the notebooks' glue -> this build.
"""
from __future__ import annotations

import ast
import os
import re
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.analysis.report import FIGURES_ENV, figures_dir
from pear.parallel import fork_map
from pear.paths import ELIDED, EXECUTED_DIR, SITE_DIR, REPO_ROOT, shown
from pear.paper import kernels, provenance, study
from pear.paper import registry
from pear.paper.registry import GRID, NOTEBOOKS, check_outputs, select, write_not_applicable
from pear.paper.publish import write_results_site
from pear.paper.site import git_commit
from pear.paper.times import TIMES_FILE, BuildTimes, grid_attempt
from pear.runs.factory import POPULATION_ENV, sim_population
from pear.runs.grid import PRESETS
from pear.store.validate import DROP_ENV
from pear.backends.registry import REPLAY, SIMULATED

__all__ = ["PATH_PARAMETERS", "build", "notebook_parameters", "kernel_parameters"]

PATH_PARAMETERS = ("runs_dir", "population")
"""The build's parameters that name a path of its own choosing (the run directory, a
population file): a notebook gets them relative to the repository root, its kernel's working
directory (:func:`kernel_parameters`), so that an executed notebook does not carry where it
was built."""


def build(backend: str = "llamacpp", preset: str = "smoke", model: str = "", runs: str = "",
          seeds: str = "", n_questions: int = 0, base_url: str = "", only: str = "", *,
          drop_invalid: bool = False, figures: str | os.PathLike[str] | None = None,
          build_dir: str | os.PathLike[str] | None = None,
          notebooks_dir: str | os.PathLike[str] | None = None,
          site_dir: str | os.PathLike[str] | None = None, previous: str = "",
          population: str = "") -> int:
    """Execute the notebooks in order (``only``: comma-separated name prefixes): each
    ``notebooks/<name>.py`` is converted by jupytext to ``build/notebooks/src/<name>.ipynb``
    and executed by papermill into ``build/notebooks/<name>.ipynb`` with the ``pear``
    kernel, cwd = the repository root, and the parameters it declares among ``backend,
    preset, runs_dir, model, seeds, n_questions, base_url``.  Outputs go to ``figures``
    (default ``$PEAR_FIGURES_DIR`` or ``figures/``).  ``drop_invalid`` lets the notebooks
    analyse the valid records of a damaged run (``PEAR_DROP_INVALID=1``, see
    :mod:`pear.store.validate`) instead of stopping.  Returns 0, or 1 after the first failing
    notebook (its error and executed path are printed).  After a build without failure,
    the results site (:func:`pear.paper.site.write_site`) is written into ``site_dir`` (default
    ``build/site``), with the claims that moved since ``previous`` (an earlier build's figures
    directory) when given.  ``population``: the simulated backend's population (a name or
    file; '' = ``$PEAR_POPULATION``, else ``grounded``), set for the kernels; a file's run
    directory is named after the population's name (:func:`pear.paper.study.runs_path`)."""
    if backend not in study.BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of "
                         f"{', '.join(study.BACKENDS)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    if previous and not (Path(previous) / "claims.json").is_file() \
            and not Path(previous).is_file():
        raise FileNotFoundError(f"--previous {previous!r} holds no claims.json: give an "
                                "earlier build's figures directory")
    population = _population(population) if backend == SIMULATED else ""
    study.experiment(preset, seeds, n_questions, model, backend)  # checked before any kernel
    names = select(only)
    missing = registry.missing_inputs(names)
    if missing:
        raise FileNotFoundError("; ".join(missing))
    src_dir = Path(notebooks_dir) if notebooks_dir else REPO_ROOT / "notebooks"
    out_dir = Path(build_dir) if build_dir else EXECUTED_DIR
    (out_dir / "src").mkdir(parents=True, exist_ok=True)
    fig_dir = Path(figures).resolve() if figures else figures_dir()
    params = {"backend": backend, "preset": preset,
              "runs_dir": str(study.runs_path(runs, preset, backend, population)),
              "model": model, "seeds": seeds, "n_questions": int(n_questions),
              "base_url": base_url}
    if population:
        params["population"] = population
    kernels.ensure_kernel()
    params["commit"] = git_commit(REPO_ROOT)
    provenance.start(fig_dir, params, params["commit"])
    env = {"MPLBACKEND": "agg", FIGURES_ENV: str(fig_dir),  # inherited by the kernels
           DROP_ENV: "1" if drop_invalid else ""}
    if population:
        env[POPULATION_ENV] = population
    with kernels.environ(env):
        started = time.time()
        times = BuildTimes(out_dir / TIMES_FILE, params)
        rc = _execute(names, src_dir, out_dir, fig_dir, params, times)
        if rc == 0 and Path(params["runs_dir"]).is_dir():
            site = Path(site_dir) if site_dir else SITE_DIR
            kept, other = provenance.current(fig_dir, NOTEBOOKS)
            for n, entry in other.items():  # outputs of another run stay off this site
                if entry is not None:
                    print(f"left off the site: {provenance.describe(n, entry)}", flush=True)
            t0 = time.perf_counter()
            write_results_site(site, names=kept, figures=fig_dir, notebooks=out_dir,
                               params=params, started=started, previous=previous)
            times.add("results site", time.perf_counter() - t0, "ok")
            print(f"whole build: {times.wall():.1f} s ({times.total():.1f} s of notebook "
                  f"time: after {GRID.name}, {kernels.at_once()} at a time; per notebook: "
                  f"{times.path})", flush=True)
        elif rc == 0:  # e.g. --only the studies: they record beside the run, not in it
            print(f"results site skipped: no run directory {params['runs_dir']} (build "
                  f"{GRID.name} to record the grid)", flush=True)
        return rc


def _population(population: str) -> str:
    """The simulated build's population (:func:`pear.runs.factory.sim_population`), a file
    given by its absolute path, so that the kernels (working directory: the repository root)
    read it from wherever ``pear paper`` was started.

    >>> _population("study")
    'study'
    """
    chosen = sim_population(population or None)
    if chosen.endswith(".json") or os.sep in chosen:
        return str(Path(chosen).resolve())
    return chosen


def _execute(names: Sequence[str], src_dir: Path, out_dir: Path, fig_dir: Path,
             params: Mapping[str, Any], times: BuildTimes) -> int:
    """Run the notebooks ``names`` in :func:`pear.paper.kernels.steps` (a step's notebooks
    at once, longest first), recording each one's time, status and provenance; 1 after a
    step with a failed notebook or when outputs are missing at the end, else 0."""
    print(f"pear paper: {len(names)} notebooks, backend {params['backend']}, preset "
          f"{params['preset']}, runs {params['runs_dir']}, figures {fig_dir}", flush=True)
    imported = params["backend"] == REPLAY and study.is_imported(params["runs_dir"])
    typical = registry.typical_seconds(params["backend"], out_dir / TIMES_FILE)
    try:
        for step in kernels.steps(names, params["backend"]):
            skipped = [n for n in step if imported and registry.entry(n).not_for_imported]
            todo = kernels.start_order([n for n in step if n not in skipped], typical)
            done = dict(zip(todo, fork_map(
                partial(_notebook, src_dir=src_dir, out_dir=out_dir, params=params,
                        together=len(todo) > 1), todo, kernels.at_once())))
            failed = False
            for name in step:  # in build order
                nb = registry.entry(name)
                if name in skipped:
                    write_not_applicable(name, fig_dir)
                    provenance.record(fig_dir, name, nb.outputs, params,
                                      params["commit"])
                    times.add(name, 0.0, "skipped")
                    print(f"skipped {name}: {nb.not_for_imported} (its outputs say so)",
                          flush=True)
                    continue
                seconds, error = done[name]
                executed = out_dir / f"{name}.ipynb"
                if error is not None:
                    times.add(name, seconds, "failed")
                    print(f"FAILED {name} after {seconds:.1f} s\n{error}\n"
                          f"executed notebook: {executed}", file=sys.stderr, flush=True)
                    failed = True
                    continue
                times.add(name, seconds, "ok",
                          grid=grid_attempt(params) if nb.writes_grid else None)
                provenance.record(fig_dir, name, nb.outputs, params,
                                  params["commit"])
                print(f"ok {name} in {seconds:.1f} s -> {executed}", flush=True)
            if failed:
                return 1
    finally:
        print(times.table(), flush=True)
    produced = [fig_dir / f for n in names for f in registry.entry(n).outputs]
    print(f"built {len(names)} notebooks in {times.total():.1f} s; "
          f"{len(produced)} outputs in {fig_dir}:")
    for p in produced:
        print(f"  {p.name} ({p.stat().st_size if p.exists() else 'MISSING'} bytes)")
    missing = check_outputs(fig_dir, names)
    if missing:
        print(f"missing outputs: {', '.join(p.name for p in missing)}", file=sys.stderr)
        return 1
    return 0


def notebook_parameters(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Name -> default of the assignments in the notebook's ``parameters`` cell (a jupytext
    ``.py`` or an ``.ipynb``); an error names a notebook without exactly one such cell."""
    import jupytext  # heavy: Jupyter, only for the build
    nb = jupytext.read(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"notebook {str(path)!r} has {len(cells)} cells tagged 'parameters'; "
                         "it needs exactly one")
    out = {}
    for node in ast.parse(cells[0].source).body:
        # ``name = value`` or, as the notebooks write it for papermill's --help-notebook,
        # ``name: type = value``
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            out[node.target.id] = ast.literal_eval(node.value)
    return out


def kernel_parameters(params: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """The build's ``params`` that a notebook ``declared``, as its kernel gets them: each
    of :data:`PATH_PARAMETERS` under the repository root named relative to it (the kernel's
    working directory, where the notebooks resolve it: :func:`pear.paper.study.runs_path`),
    one elsewhere as it is.

    >>> kernel_parameters({"backend": "simulated", "runs_dir": str(REPO_ROOT / "data/runs/x"),
    ...                    "seeds": ""}, {"backend": "", "runs_dir": ""})
    {'backend': 'simulated', 'runs_dir': 'data/runs/x'}
    >>> kernel_parameters({"runs_dir": "/elsewhere/run"}, {"runs_dir": ""})
    {'runs_dir': '/elsewhere/run'}
    """
    out = {}
    for k, v in params.items():
        if k not in declared:
            continue
        if k in PATH_PARAMETERS and isinstance(v, str) and os.path.isabs(v):
            try:
                v = Path(v).relative_to(REPO_ROOT).as_posix()
            except ValueError:
                pass  # outside the repository: the builder's own path, kept
        out[k] = v
    return out


def _notebook(name: str, src_dir: Path, out_dir: Path, params: Mapping[str, Any],
              together: bool = False) -> tuple[float, str | None]:
    """Execute notebook ``name`` (jupytext to ``out_dir/src``, papermill into ``out_dir``),
    ``together`` with other notebooks its kernel's thread teams kept to this process's share
    of the cores (:func:`pear.paper.kernels.kernel_env`): its wall time and None, or the
    error that stopped it."""
    import jupytext  # heavy: Jupyter, only for the build
    import papermill
    src = src_dir / f"{name}.py"
    if not src.is_file():
        raise FileNotFoundError(f"notebook {name!r} not found: {src}")
    ipynb, executed = out_dir / "src" / f"{name}.ipynb", out_dir / f"{name}.ipynb"
    jupytext.write(jupytext.read(src), ipynb)
    given = kernel_parameters(params, notebook_parameters(src))
    # the runs: their progress lines (pear.runs.progress.Progress, written by the kernel
    # every 1.5 s) relayed as each arrives, in place of papermill's cell bar; notebooks run
    # together show neither
    stream = name == GRID.name
    t0 = time.perf_counter()
    try:
        with kernels.environ(kernels.kernel_env(together)):
            papermill.execute_notebook(
                str(ipynb), str(executed), parameters=given, kernel_name=kernels.KERNEL,
                progress_bar=not stream and not together, cwd=str(REPO_ROOT),
                stdout_file=sys.stdout if stream else None,
                stderr_file=sys.stderr if stream else None,
                kernel_manager_class=kernels.ipc_kernel_manager())
    except Exception as err:  # noqa: BLE001 - papermill/kernel errors end the build
        _as_shown(executed, given)
        return time.perf_counter() - t0, str(err)
    _as_shown(executed, given)
    return time.perf_counter() - t0, None


def _as_shown(executed: Path, given: Mapping[str, Any]) -> None:
    """The executed notebook's record of where it ran without the builder's paths: papermill's
    ``input_path``, ``output_path`` and parameters in its metadata, and the cell of parameters
    it injected, name paths as :func:`pear.paths.shown` does (relative to the checkout, else
    ``…/<name>``: the kernel itself read the real ones)."""
    import nbformat  # heavy: Jupyter, only for the build
    from papermill.translators import translate_parameters
    if not executed.is_file():
        return
    nb = nbformat.read(executed, as_version=4)
    meta = nb.metadata.get("papermill")
    if meta is None:
        return
    params = {k: shown(v) if k in PATH_PARAMETERS and isinstance(v, str) and os.path.isabs(v)
              else v for k, v in given.items()}
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = shown(meta[key])
    meta["parameters"] = params
    for cell in nb.cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            comment = "Parameters" if params == dict(given) else \
                f"Parameters (a path outside the checkout shown as {ELIDED}/<name>)"
            # papermill writes a non-ASCII character as an escape: "…/runs", not "\u2026/runs"
            cell.source = re.sub(r"(?<!\\)\\u2026", ELIDED, translate_parameters(
                kernels.KERNEL, "python", params, comment))
    nbformat.write(nb, executed)
