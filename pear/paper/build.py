"""The paper build behind ``pear paper``: the ordered notebooks, the outputs each one
produces, the notebooks' parameters (the preset's experiment, the run directory, running
the grid), and ``build()`` (jupytext + papermill).

showyourwork's rules: every figure, table and quoted number in ``figures/`` has exactly one
producer, listed in :data:`EXPECTED_OUTPUTS`; :data:`NOTEBOOKS` is the one ordered build;
``python -m pear.paper.build --check figures`` fails naming every missing output.  The analysis
runs one way: records -> columnar view (:mod:`pear.store.view`) -> :mod:`pear.analysis.metrics` ->
:mod:`pear.analysis.stats` -> the study's printed numbers (:mod:`pear.analysis.compare`) -> tables
(:mod:`pear.analysis.report`) -> plots (:mod:`pear.analysis.figures`) -> the notebooks' glue
(:mod:`pear.paper.study`, :mod:`pear.analysis.transcript`) -> this build.

>>> [n for n in NOTEBOOKS if not EXPECTED_OUTPUTS[n]]
['00_run_experiments']
>>> len({f for files in EXPECTED_OUTPUTS.values() for f in files}) == sum(
...     len(files) for files in EXPECTED_OUTPUTS.values())
True
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from pear.catalog.labels import DATASETS, method_order, evidence_mark
from pear.parallel import THREADS_ENV, cores_per_process, fork_map, usable_cores
from pear.paths import EXECUTED_DIR, SITE_DIR, cache_path, write_json
from pear.analysis.report import FIGURES_ENV, figures_dir
from pear.paper import provenance, study
from pear.paper.study import BACKENDS, REPO_ROOT, describe_scope, experiment, runs_path
from pear.claims.diff import LEDGER_FILE, diff, diff_html, read_ledger
from pear.paper.site import git_commit, build_meta, write_site
from pear.runs.factory import default_workers, grid_backend, POPULATION_ENV, sim_population
from pear.runs.grid import PRESETS
from pear.runs.runner import run
from pear.store import manifest as manifest_io
from pear.store.records import record_files
from pear.store.validate import ValidationError, drop_invalid_default, validate, DROP_ENV
from pear.store.view import index, load

__all__ = [
    "NOTEBOOKS", "EXPECTED_OUTPUTS", "NOT_FOR_IMPORTED", "write_not_applicable", "BACKENDS",
    "REPO_ROOT", "FIGURES_ENV", "build",
    "check_outputs", "main", "notebook_parameters", "runs_path", "experiment",
    "run_experiments", "describe_runs", "write_results_site", "ensure_kernel", "TIMES_FILE",
    "BuildTimes",
]

KERNEL = "pear"

NOTEBOOKS = ("00_run_experiments", "01_main_results", "02_full_dataset", "03_ablation",
             "04_round_curves", "05_diagnostics", "06_significance", "07_cost_pareto",
             "08_case_study", "09_theory_checks", "10_temperature_sweep", "11_early_stop",
             "12_robustness", "13_claims", "14_calibration", "15_your_method",
             "16_counterfactual", "17_real_debates", "18_your_model")
"""The build, in order (``notebooks/<name>.py``)."""


def _fig(name: str) -> tuple[str, str]:
    return f"{name}.pdf", f"{name}.png"


def _tab(name: str) -> tuple[str, str]:
    return f"{name}.tex", f"{name}.md"


EXPECTED_OUTPUTS: dict[str, tuple[str, ...]] = {
    "00_run_experiments": (),
    "01_main_results": (*_tab("main_results"), *_tab("main_results_vs_paper"),
                        *_tab("main_summary"), "numbers.tex"),
    "02_full_dataset": (*_tab("full_dataset"), *_tab("full_dataset_vs_paper")),
    "03_ablation": (*_fig("ablation"), *_tab("ablation")),
    "04_round_curves": _fig("round_curves"),
    "05_diagnostics": (*_tab("diagnostics"), *_tab("diagnostics_definitions"),
                       *_tab("diagnostics_vs_paper")),
    "06_significance": (*_tab("significance"), *_tab("significance_vs_paper"),
                        *_tab("spearman"), *_tab("spearman_vs_paper")),
    "07_cost_pareto": (*_fig("pareto"), *_tab("tokens"), *_tab("cost_vs_paper"),
                       "numbers_cost.tex", *_tab("sc_matched")),
    "08_case_study": ("case_study.md",),
    "09_theory_checks": (*_fig("theory_checks"), *_tab("theory_checks")),
    "10_temperature_sweep": (*_fig("temperature_sweep"), *_tab("temperature_sweep"),
                             *_tab("temperature_gap")),
    "11_early_stop": (*_fig("early_stop_pareto"), *_tab("early_stop")),
    "12_robustness": (*_fig("robustness"), *_tab("robustness")),
    "13_claims": (*_tab("claims"), *_tab("claims_consistency"), *_fig("claims_forest"),
                  "claims.html", "claims.json", *_tab("ensemble_main"),
                  *_tab("ensemble_gains"), *_tab("ensemble_claims"),
                  *_tab("family_gains"), *_tab("family_claims")),
    "14_calibration": (*_fig("calibration"), *_tab("calibration")),
    "15_your_method": (*_tab("your_method"), *_tab("your_method_significance"),
                       *_fig("your_method_pareto")),
    "16_counterfactual": (*_tab("counterfactual"), *_fig("counterfactual")),
    "17_real_debates": (*_tab("real_debates"), *_fig("real_debates"), *_tab("leave_one_out"),
                        *_tab("leave_one_out_summary")),
    "18_your_model": (*_tab("your_model_twin"), *_tab("your_model_power"),
                      *_tab("your_model_claims")),
}
"""Every file each notebook writes into the figures directory (one producer per file)."""


_OWN_RUNS = ("it runs its own study variants beside the main run, and a run of imported "
             "debates has no protocol of ours to vary")
NOT_FOR_IMPORTED: dict[str, str] = {
    "09_theory_checks": _OWN_RUNS + " (and its checks need confidences and the router)",
    "10_temperature_sweep": _OWN_RUNS, "11_early_stop": _OWN_RUNS, "12_robustness": _OWN_RUNS,
    "15_your_method": _OWN_RUNS,
    "16_counterfactual": "it branches recorded PEAR-protocol debates (router state, "
                         "critiques), which imported debates do not have",
}
"""Notebooks that cannot speak to a run of imported debates (``pear import``), and why:
``pear paper --backend replay`` on such a run skips them and writes each of their outputs
as a note saying so (:func:`write_not_applicable`)."""


def write_not_applicable(name: str, fig_dir: Path, why: str) -> list[Path]:
    """Each expected output of notebook ``name`` as a note that it cannot be computed from
    imported debates and why (tables: one-line Markdown/LaTeX; figures: a figure saying
    so)."""
    from pear.analysis import figures  # heavy: matplotlib, only for this function
    text = f"Not computed: notebook {name} cannot speak to imported debates: {why}."
    out = []
    for f in EXPECTED_OUTPUTS[name]:
        path = fig_dir / f
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix in (".md", ".tex"):
            path.write_text(text + "\n")
        elif path.suffix == ".pdf":
            figures.save_figure(figures.empty_figure(name, text), path.stem, out_dir=fig_dir)
        out.append(path)
    return out


# ----------------------------------------------------------------- parameters and runs

def run_experiments(backend: str, exp: Any, runs_dir: str | os.PathLike[str], *,
                    model: str = "", base_url: str = "", progress: bool = True,
                    cache: str | os.PathLike[str] | None = None) -> Any:
    """Run (or resume) every debate of ``exp`` into ``runs_dir`` with the CLI's backend
    (responses cached in ``cache``, default ``runs_dir/cache.sqlite``; the studies share the
    main run's cache, so a request they repeat costs no model call), then bring the run's columnar view up
    to date (:func:`pear.store.view.index`) so that the analysis notebooks only read it; returns
    the :class:`pear.runs.runner.RunSummary`.  ``backend="replay"`` runs nothing: it checks
    that ``runs_dir`` holds records, checks every line from scratch while indexing them
    (:func:`pear.store.validate.validate`: a damaged run stops here, unless
    ``PEAR_DROP_INVALID=1``) and returns None."""
    out = Path(runs_dir)
    if backend == "replay":
        if not out.is_dir() or not any(p.stat().st_size for p in record_files(out)):
            raise FileNotFoundError(f"backend 'replay' needs recorded debates, but {str(out)!r} "
                                    "holds none: pass --runs DIR of an earlier run")
        print(f"replay: checking every record in {out} (untrusted until checked); nothing is "
              "run")
        checked = validate(out)
        print(checked.report())
        if not checked.findings.ok and not drop_invalid_default():
            raise ValidationError(out, checked.findings)
        return None
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    be = grid_backend(backend, exp, model_path=model or None,
                      base_urls=[base_url] if base_url else None,
                      cache_path=Path(cache) if cache is not None else cache_path(out))
    s = run(exp, be, out, progress=progress, workers=default_workers(backend))
    print(f"{s.written} debates written, {s.already_done} already done, {len(s.failed)} failed "
          f"of {s.total}; {s.requests} requests in {s.generate_calls} backend calls, "
          f"{s.tokens} tokens, {s.cache_hits} cache hits")
    if not s.complete:
        first = s.failed[0][1] if s.failed else "unknown"
        raise RuntimeError(f"the grid is incomplete ({len(s.failed)} debates failed; first: "
                           f"{first}); rerun to resume")
    _report_index(index(out))
    return s


def _report_index(summary: Any) -> None:
    print(f"columnar view: {summary.action} ({summary.new_debates} new debates, "
          f"{summary.debates} in all) in {summary.seconds:.1f} s")


def describe_runs(runs_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """Debates recorded under ``runs_dir`` (its columnar view): one row per (model,
    method), one column per dataset."""
    df = load(runs_dir, columns={"debates": ["model", "method", "dataset"]}).debates
    table = df.pivot_table(index=["model", "method"], columns="dataset", values="debate",
                           aggfunc="size", fill_value=0)
    rank = {m: i for i, m in enumerate(method_order(df["method"].unique()))}
    table = table.sort_index(key=lambda ix: ix.map(rank) if ix.name == "method" else ix)
    return table[[d for d in DATASETS if d in table] + [d for d in table if d not in DATASETS]]


# ----------------------------------------------------------------- the build

def _notebooks(only: str) -> list[str]:
    prefixes = [p.strip() for p in only.split(",") if p.strip()]
    if not prefixes:
        return list(NOTEBOOKS)
    bad = [p for p in prefixes if not any(n.startswith(p) for n in NOTEBOOKS)]
    if bad:
        raise ValueError(f"--only {bad[0]!r} matches no notebook; notebooks: "
                         f"{', '.join(NOTEBOOKS)}")
    return [n for n in NOTEBOOKS if any(n.startswith(p) for p in prefixes)]


def notebook_parameters(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Name -> default of the assignments in the notebook's ``parameters`` cell (a jupytext
    ``.py`` or an ``.ipynb``); an error names a notebook without exactly one such cell."""
    import ast

    import jupytext
    nb = jupytext.read(path)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"notebook {str(path)!r} has {len(cells)} cells tagged 'parameters'; "
                         "it needs exactly one")
    out = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


IPC_PREFIX = "pear-kernel-"
"""The name prefix of the private folder (``tempfile.mkdtemp``, mode 0700) that holds one
kernel's connection file and IPC sockets while it runs."""


def ipc_kernel_manager() -> type:
    """The kernel manager the build executes notebooks with (papermill's
    ``kernel_manager_class``).

    jupyter_client's default transport is TCP on localhost, and ipykernel (7.x) then logs
    "Kernel is running over TCP without encryption" as each notebook's kernel starts, into
    the build's output.  This
    manager uses ZeroMQ's IPC transport instead (what that warning recommends): no network
    port is opened; the connection file (with the message-signing key) and the kernel's
    sockets live in a fresh private folder (:data:`IPC_PREFIX` + random, mode 0700, a short
    path well under the socket-path limit), removed when the kernel shuts down, so neither
    the working directory nor a concurrent build sees them.  Where the ZeroMQ build has no IPC
    transport (e.g. Windows) it keeps jupyter_client's TCP default."""
    import shutil
    import tempfile

    import zmq
    from jupyter_client import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class IPCKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], config=True,
                                    default_value="ipc" if zmq.has("ipc") else "tcp")

        @default("connection_file")
        def _private_connection_file(self) -> str:
            if self.transport != "ipc":
                return ""  # jupyter_client's default: a temporary file
            return os.path.join(tempfile.mkdtemp(prefix=IPC_PREFIX), "kernel.json")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            folder = Path(self.connection_file).parent if self.connection_file else None
            if not restart and folder is not None and folder.name.startswith(IPC_PREFIX):
                shutil.rmtree(folder, ignore_errors=True)

        cleanup_resources = _async_cleanup_resources

    return IPCKernelManager


def ensure_kernel() -> None:
    """Install the ``pear`` kernel (this interpreter, ``MPLBACKEND=agg``) if missing."""
    from ipykernel.kernelspec import install
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    def ok() -> bool:
        try:
            spec = KernelSpecManager().get_kernel_spec(KERNEL)
        except NoSuchKernel:
            return False
        return (Path(spec.argv[0]).resolve() == Path(sys.executable).resolve()
                and spec.env.get("MPLBACKEND") == "agg")
    if not ok():
        install(prefix=sys.prefix, kernel_name=KERNEL, display_name="Python (pear)",
                env={"MPLBACKEND": "agg"})
        if not ok():
            path = KernelSpecManager().get_kernel_spec(KERNEL).resource_dir
            raise RuntimeError(f"a kernel named {KERNEL!r} at {path} runs another Python than "
                               f"{sys.executable}; remove it (jupyter kernelspec remove {KERNEL})")


def check_outputs(figures: str | os.PathLike[str],
                  notebooks: Sequence[str] = NOTEBOOKS) -> list[Path]:
    """The expected outputs of ``notebooks`` missing or empty in ``figures``."""
    root = Path(figures)
    return [root / f for n in notebooks for f in EXPECTED_OUTPUTS[n]
            if not (root / f).is_file() or (root / f).stat().st_size == 0]


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
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(PRESETS)}")
    if previous and not (Path(previous) / "claims.json").is_file() \
            and not Path(previous).is_file():
        raise FileNotFoundError(f"--previous {previous!r} holds no claims.json: give an "
                                "earlier build's figures directory")
    population = _population(population) if backend == "simulated" else ""
    experiment(preset, seeds, n_questions, model, backend)  # validate before any kernel starts
    names = _notebooks(only)
    src_dir = Path(notebooks_dir) if notebooks_dir else REPO_ROOT / "notebooks"
    out_dir = Path(build_dir) if build_dir else EXECUTED_DIR
    (out_dir / "src").mkdir(parents=True, exist_ok=True)
    fig_dir = Path(figures).resolve() if figures else figures_dir()
    params = {"backend": backend, "preset": preset,
              "runs_dir": str(runs_path(runs, preset, backend, population)), "model": model,
              "seeds": seeds, "n_questions": int(n_questions), "base_url": base_url}
    if population:
        params["population"] = population
    ensure_kernel()
    params["commit"] = git_commit(REPO_ROOT)
    provenance.start(fig_dir, params, params["commit"])
    env = {"MPLBACKEND": "agg", FIGURES_ENV: str(fig_dir),  # inherited by the kernels
           DROP_ENV: "1" if drop_invalid else ""}
    if population:
        env[POPULATION_ENV] = population
    with _environ(env):
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
                  f"time: after notebook 00, {at_once()} at a time; per notebook: "
                  f"{times.path})", flush=True)
        elif rc == 0:  # e.g. ONLY=09,10,11,12: the studies record beside the run, not in it
            print(f"results site skipped: no run directory {params['runs_dir']} (build "
                  "notebook 00 to record the grid)", flush=True)
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


RUNS_THE_MODEL = ("00_run_experiments", "10_temperature_sweep", "11_early_stop", "12_robustness",
                  "15_your_method", "16_counterfactual")
"""The notebooks that call the build's backend (00 records the grid the others read)."""

SIDE_BY_SIDE = ("llamacpp", "simulated", "replay")
"""Backends that run on this machine's cores.  After notebook 00 (every other notebook reads
its grid; none reads another's outputs) the notebooks run :func:`at_once` at a time, longest
first, each kernel's spinning thread teams kept to its share of the cores
(:data:`pear.parallel.THREADS_ENV`, :data:`BLAS_THREADS_ENV`: a llama.cpp model decodes on one
thread beside another notebook; worker processes, e.g. Math-Verify's, are not capped).  With
a server or a GPU engine (one model in memory) a notebook of :data:`RUNS_THE_MODEL` runs
alone.  ``time per notebook`` is each one's own wall time."""

TYPICAL_S = {"12_robustness": 56, "14_calibration": 38, "15_your_method": 79,
             "17_real_debates": 47, "10_temperature_sweep": 19,
             "18_your_model": 15}  # 18: on simulated agents whatever the backend (2 cores)
"""Seconds a notebook took (the default smoke build on llama.cpp, 2 cores, 2026-11-27): the
order in which side-by-side notebooks start, longest first, when no earlier build on the same
backend has timed them (the order changes no output)."""


READS_DYLAN_MMLU = ("17_real_debates", "18_your_model")
"""Notebooks that read DyLAN's MMLU debates as imported runs
(:func:`pear.populations.grounding.mmlu_runs`, imported on first use): before two of them run
side by side the build imports them once, so that no two kernels import them at once."""


def _import_dylan_mmlu() -> None:
    """DyLAN's MMLU debates imported (kept when already there: seconds; else imported)."""
    from pear.populations import grounding  # heavy: pandas, scipy, only for this function
    t0 = time.perf_counter()
    runs = grounding.mmlu_runs()
    print(f"DyLAN's MMLU debates: {len(runs)} imported runs ready in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)


BLAS_THREADS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Set, with :data:`pear.parallel.THREADS_ENV`, to a side-by-side kernel's share of the cores:
numpy's linear algebra keeps to it (its threads spin while they wait)."""


def at_once() -> int:
    """How many notebooks run at once after notebook 00: one per core."""
    return usable_cores()


def _execute(names: Sequence[str], src_dir: Path, out_dir: Path, fig_dir: Path,
             params: Mapping[str, Any], times: BuildTimes) -> int:
    print(f"pear paper: {len(names)} notebooks, backend {params['backend']}, preset "
          f"{params['preset']}, runs {params['runs_dir']}, figures {fig_dir}", flush=True)
    imported = params["backend"] == "replay" and study.is_imported(params["runs_dir"])
    expected = {**TYPICAL_S, **_earlier_times(out_dir / TIMES_FILE, params["backend"])}
    try:
        for step in _steps(names, params["backend"]):
            skipped = [n for n in step if imported and n in NOT_FOR_IMPORTED]
            todo = sorted((n for n in step if n not in skipped),
                          key=lambda n: -expected.get(n, 0.0))  # longest first
            if len([n for n in todo if n in READS_DYLAN_MMLU]) > 1:
                _import_dylan_mmlu()
            done = dict(zip(todo, fork_map(
                partial(_notebook, src_dir=src_dir, out_dir=out_dir, params=params,
                        together=len(todo) > 1), todo, at_once())))
            failed = False
            for name in step:  # in build order
                if name in skipped:
                    write_not_applicable(name, fig_dir, NOT_FOR_IMPORTED[name])
                    provenance.record(fig_dir, name, EXPECTED_OUTPUTS[name], params,
                                      params["commit"])
                    times.add(name, 0.0, "skipped")
                    print(f"skipped {name}: {NOT_FOR_IMPORTED[name]} (its outputs say so)",
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
                          grid=_grid_attempt(params) if name == NOTEBOOKS[0] else None)
                provenance.record(fig_dir, name, EXPECTED_OUTPUTS[name], params,
                                  params["commit"])
                print(f"ok {name} in {seconds:.1f} s -> {executed}", flush=True)
            if failed:
                return 1
    finally:
        print(times.table(), flush=True)
    produced = [fig_dir / f for n in names for f in EXPECTED_OUTPUTS[n]]
    print(f"built {len(names)} notebooks in {times.total():.1f} s; "
          f"{len(produced)} outputs in {fig_dir}:")
    for p in produced:
        print(f"  {p.name} ({p.stat().st_size if p.exists() else 'MISSING'} bytes)")
    missing = check_outputs(fig_dir, names)
    if missing:
        print(f"missing outputs: {', '.join(p.name for p in missing)}", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` set in this process's environment (and so in the kernels it starts) for the
    ``with`` block, each variable put back as it was after it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _steps(names: Sequence[str], backend: str) -> list[list[str]]:
    """``names`` in order, grouped into the steps that run one after another: notebook 00
    alone; the others together, except that on a backend not in :data:`SIDE_BY_SIDE` each
    of :data:`RUNS_THE_MODEL` is a step of its own.

    >>> _steps(["00_run_experiments", "01_main_results", "12_robustness", "13_claims"], "vllm")
    [['00_run_experiments'], ['01_main_results'], ['12_robustness'], ['13_claims']]
    >>> _steps(["00_run_experiments", "01_main_results", "12_robustness", "13_claims"],
    ...        "llamacpp")
    [['00_run_experiments'], ['01_main_results', '12_robustness', '13_claims']]
    """
    steps: list[list[str]] = []
    alone = True
    for name in names:
        was_alone = alone
        alone = name == NOTEBOOKS[0] or (backend not in SIDE_BY_SIDE and name in RUNS_THE_MODEL)
        if steps and not alone and not was_alone:
            steps[-1].append(name)
        else:
            steps.append([name])
    return steps


def _earlier_times(path: Path, backend: str) -> dict[str, float]:
    """Each notebook's seconds in the last build (:data:`TIMES_FILE`) if it ran on
    ``backend``, else {}."""
    try:
        data = json.loads(path.read_text())
        if data.get("backend") != backend:
            return {}
        return {n: float(e["seconds"]) for n, e in data["notebooks"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _notebook(name: str, src_dir: Path, out_dir: Path, params: Mapping[str, Any],
              together: bool = False) -> tuple[float, str | None]:
    """Execute notebook ``name`` (jupytext to ``out_dir/src``, papermill into ``out_dir``),
    ``together`` with other notebooks its kernel's thread teams kept to this process's share
    of the cores (:data:`pear.parallel.THREADS_ENV`): its wall time and None, or the error
    that stopped it."""
    import jupytext
    import papermill
    src = src_dir / f"{name}.py"
    if not src.is_file():
        raise FileNotFoundError(f"notebook {name!r} not found: {src}")
    ipynb, executed = out_dir / "src" / f"{name}.ipynb", out_dir / f"{name}.ipynb"
    jupytext.write(jupytext.read(src), ipynb)
    declared = notebook_parameters(src)
    given = {k: v for k, v in params.items() if k in declared}
    # the runs: their progress lines (pear.runs.progress.Progress, written by the kernel
    # every 1.5 s) relayed as each arrives, in place of papermill's cell bar; notebooks run
    # together show neither
    stream = name == NOTEBOOKS[0]
    # beside other kernels, the kernel's spinning thread teams (llama.cpp, BLAS) keep to this
    # process's share of the cores; its worker processes share them freely
    share = str(cores_per_process())
    env = dict.fromkeys((THREADS_ENV, *BLAS_THREADS_ENV), share) if together else {}
    t0 = time.perf_counter()
    try:
        with _environ(env):
            papermill.execute_notebook(
                str(ipynb), str(executed), parameters=given, kernel_name=KERNEL,
                progress_bar=not stream and not together, cwd=str(REPO_ROOT),
                stdout_file=sys.stdout if stream else None,
                stderr_file=sys.stderr if stream else None,
                kernel_manager_class=ipc_kernel_manager())
    except Exception as err:  # noqa: BLE001 - papermill/kernel errors end the build
        return time.perf_counter() - t0, str(err)
    return time.perf_counter() - t0, None


TIMES_FILE = "build-times.json"
"""What each notebook of the last build cost: ``build/notebooks/build-times.json`` (beside
the executed notebooks), rewritten as each notebook ends (:class:`BuildTimes`)."""


class BuildTimes:
    """The wall time of each notebook of a build, in build order, with its status (``ok``,
    ``failed``, ``skipped``) and, for notebook 00, the grid's own attempt (its wall time and
    the debates it wrote, from the run manifest); written to ``path`` after every notebook,
    so a build that is stopped still says what its finished notebooks cost.

    >>> t = BuildTimes(None, {"backend": "simulated", "preset": "sim", "runs_dir": "r"})
    >>> t.add("00_run_experiments", 61.04, "ok", grid={"wall_s": 58.2, "debates": 720})
    >>> t.add("01_main_results", 4.61, "ok")
    >>> print(t.table())
    time per notebook (simulated, preset sim, runs r):
      00_run_experiments        61.0 s  ok  (grid: 58.2 s, 720 debates)
      01_main_results            4.6 s  ok
      all                       65.7 s
    """

    def __init__(self, path: Path | None, params: Mapping[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {
            "backend": params.get("backend"), "preset": params.get("preset"),
            "runs_dir": str(params.get("runs_dir")), "n_questions": params.get("n_questions"),
            "seeds": params.get("seeds"), "commit": params.get("commit"),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cpus": usable_cores(), "notebooks": {}, "total_s": 0.0, "wall_s": 0.0}
        self._t0 = time.perf_counter()

    def add(self, name: str, seconds: float, status: str,
            grid: Mapping[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"seconds": round(seconds, 2), "status": status}
        if grid is not None:
            entry["grid"] = dict(grid)
        self.data["notebooks"][name] = entry
        self.data["total_s"] = round(self.total(), 2)
        self.data["wall_s"] = round(self.wall(), 2)
        if self.path is not None:
            write_json(self.path, self.data)

    def total(self) -> float:
        """The notebooks' times added (more than :meth:`wall` when some ran at once)."""
        return sum(e["seconds"] for e in self.data["notebooks"].values())

    def wall(self) -> float:
        """Seconds since the build started."""
        return time.perf_counter() - self._t0

    def table(self) -> str:
        d = self.data
        lines = [f"time per notebook ({d['backend']}, preset {d['preset']}, runs "
                 f"{d['runs_dir']}):"]
        for name, e in d["notebooks"].items():
            grid = e.get("grid")
            extra = f"  (grid: {grid['wall_s']:.1f} s, {grid['debates']} debates)" if grid else ""
            lines.append(f"  {name:<22} {e['seconds']:>7.1f} s  {e['status']}{extra}")
        lines.append(f"  {'all':<22} {self.total():>7.1f} s")
        if self.path is not None:
            lines[0] = lines[0][:-1] + f" -> {self.path}:"
        return "\n".join(lines)


def _grid_attempt(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's last attempt (notebook 00's grid: its wall time and debates written), or
    None for a replay or a directory without a run manifest."""
    runs = Path(params["runs_dir"])
    man = manifest_io.read(runs) if params["backend"] != "replay" and runs.is_dir() else None
    attempts = (man or {}).get("attempts") or []
    if not attempts or attempts[-1].get("wall_s") is None:
        return None
    return {"wall_s": attempts[-1]["wall_s"], "debates": attempts[-1].get("debates", 0)}


def previous_diff(previous: str | os.PathLike[str], figures: Path) -> str:
    """The claims that moved from a previous build (a figures directory or ledger file
    holding ``claims.json``) to this one, as the site's HTML fragment; "" when this build
    wrote no ledger."""
    if not (figures / LEDGER_FILE).is_file():
        return ""
    prev = Path(previous)
    return diff_html(diff(read_ledger(prev), read_ledger(figures)),
                     (f"previous ({prev.name or prev})", "this build"))


def write_results_site(site: Path, *, names: Sequence[str], figures: Path, notebooks: Path,
                       params: Mapping[str, Any], started: float, previous: str = "") -> Path:
    """The results site of a finished build (:func:`pear.paper.site.write_site`): what was built
    (backend, preset, models, grid, time, commit), the notebooks ``names``, the debates of
    the run, and (``previous``: an earlier build's figures directory) the claims that moved
    since; returns its ``index.html``."""
    import re

    exp = experiment(params["preset"], params["seeds"], params["n_questions"],
                     params["model"], params["backend"])
    runs = Path(params["runs_dir"])
    deb = load(runs, columns={"debates": ["model", "backend"]}).debates
    grid = describe_scope(exp, "subset") + (f"; {describe_scope(exp, 'full')}"
                                            if exp.full_datasets else "")
    backends = ", ".join(sorted(set(deb["backend"]))) or params["backend"]
    meta = build_meta(backend=backends if params["backend"] != "replay"
                      else f"replay of {backends}", preset=params["preset"],
                      models=sorted(set(deb["model"])), grid=grid, debates=len(deb),
                      started=started, seconds=time.time() - started, repo=REPO_ROOT)
    case = figures / "case_study.md"
    found = re.search(r"Debate `([^`]+)`", case.read_text(encoding="utf-8")) \
        if case.is_file() and "08_case_study" in names else None
    if found and found.group(1) not in set(load(runs, columns={"debates": ["debate_id"]})
                                           .debates["debate_id"]):
        print(f"case study skipped: debate {found.group(1)} of {case} is not in the run "
              f"{runs}", flush=True)
        found = None
    t0 = time.perf_counter()
    mark = evidence_mark(simulated="simulated" in set(deb["backend"]), preset=exp.name,
                         models=sorted(set(deb["model"])), n_questions=exp.n_questions)
    out = write_site(site, figures_dir=figures, notebooks_dir=notebooks, runs_dir=runs,
                     notebooks={n: EXPECTED_OUTPUTS[n] for n in names}, meta=meta,
                     case_study=found.group(1) if found else "", mark=mark,
                     claims_diff=previous_diff(previous, figures) if previous else "",
                     params=params)
    print(f"results site: {out.root / 'index.html'} ({len(out.pages)} pages: "
          f"{out.transcripts} debate transcripts of {out.debates} debates) in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return out.root / "index.html"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pear.paper.build --check DIR``: exit 1 naming every missing or empty output."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m pear.paper.build", description="Check that every "
                                "expected output of the build exists and is not empty.")
    p.add_argument("--check", metavar="DIR", required=True, help="the figures directory")
    p.add_argument("--only", default="", help="comma-separated notebook name prefixes")
    a = p.parse_args(argv)
    try:
        names = _notebooks(a.only)
    except ValueError as err:
        print(f"pear.paper.build: error: {err}", file=sys.stderr)
        return 2
    missing = check_outputs(a.check, names)
    expected = sum(len(EXPECTED_OUTPUTS[n]) for n in names)
    stale = provenance.check(a.check, names)
    if stale:
        print(f"{len(stale)} notebooks' outputs in {a.check} are not the last build's "
              f"({provenance.BUILD_FILE}):", file=sys.stderr)
        for line in stale:
            print(f"  {line}", file=sys.stderr)
    if missing:
        print(f"{len(missing)} of {expected} expected outputs missing or empty in {a.check}:",
              file=sys.stderr)
        for path in missing:
            producer = next(n for n in names if path.name in EXPECTED_OUTPUTS[n])
            print(f"  {path.name} (from {producer})", file=sys.stderr)
        return 1
    if stale:
        return 1
    print(f"all {expected} expected outputs present in {a.check}, every one from the last "
          "build's run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
