"""The kernels the build executes notebooks on, their environment, and their scheduling: the
``pear`` kernel (:func:`ensure_kernel`), its transport (:func:`ipc_kernel_manager`: local IPC
sockets in a private folder, shut down without an interrupt), the variables a kernel starts
with (:func:`environ`, :func:`kernel_env`), and which notebooks run alone or side by side
(:func:`steps`, :func:`start_order`, :func:`at_once`).

>>> steps(["00_run_experiments", "01_main_results", "12_robustness", "13_claims"], "vllm")
[['00_run_experiments'], ['01_main_results'], ['12_robustness'], ['13_claims']]
>>> steps(["00_run_experiments", "01_main_results", "12_robustness", "13_claims"], "llamacpp")
[['00_run_experiments'], ['01_main_results', '12_robustness', '13_claims']]
>>> steps(["00_run_experiments", "01_main_results", "13_claims", "19_relabelling"], "llamacpp")
[['00_run_experiments'], ['01_main_results', '19_relabelling'], ['13_claims']]
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from pear.parallel import THREADS_ENV, cores_per_process, usable_cores
from pear.paper.outputs import NOTEBOOKS
from pear.backends.registry import BACKENDS

__all__ = ["KERNEL", "IPC_PREFIX", "RUNS_THE_MODEL", "READS_RECORDS_OF", "SIDE_BY_SIDE",
           "TYPICAL_S", "BLAS_THREADS_ENV", "ensure_kernel",
           "ipc_kernel_manager", "environ", "kernel_env", "steps", "start_order", "at_once"]

KERNEL = "pear"
"""The kernel every notebook runs on: this interpreter, ``MPLBACKEND=agg``."""

IPC_PREFIX = "pear-kernel-"
"""The name prefix of the private folder (``tempfile.mkdtemp``, mode 0700) that holds one
kernel's connection file and IPC sockets while it runs."""

RUNS_THE_MODEL = ("00_run_experiments", "10_temperature_sweep", "11_early_stop", "12_robustness",
                  "15_your_method", "16_counterfactual", "19_relabelling")
"""The notebooks that call the build's backend (00 records the grid the others read)."""

READS_RECORDS_OF = {"13_claims": ("19_relabelling",)}
"""Notebooks that read the records another notebook of the build writes beside the run (the
ledger judges the relabelling claims on notebook 19's seat variants): when both are built,
the reader runs in a step after every other (:func:`steps`), so that it reads them whole."""

SIDE_BY_SIDE = tuple(n for n, s in BACKENDS.items() if not s.runs or (s.local and not s.one_model))
"""Backends that run on this machine's cores.  After notebook 00 (every other notebook reads
its grid; none reads another's outputs, and those of :data:`READS_RECORDS_OF` run after the
notebooks whose records they read) the notebooks run :func:`at_once` at a time, longest
first, each kernel's spinning thread teams kept to its share of the cores
(:data:`pear.parallel.THREADS_ENV`, :data:`BLAS_THREADS_ENV`: a llama.cpp model decodes on one
thread beside another notebook; worker processes, e.g. Math-Verify's, are not capped).  With
a server or a GPU engine (one model in memory) a notebook of :data:`RUNS_THE_MODEL` runs
alone.  ``time per notebook`` is each one's own wall time."""

TYPICAL_S = {"12_robustness": 56, "14_calibration": 38, "15_your_method": 79,
             "17_real_debates": 47, "10_temperature_sweep": 19,
             "18_your_model": 15,  # 18: on simulated agents whatever the backend (2 cores)
             "19_relabelling": 100}  # 19: alone (--only 19) on a quiet 2-core machine, 2026-12-01
"""Seconds a notebook took (the default smoke build on llama.cpp, 2 cores, 2026-11-27): the
order in which side-by-side notebooks start, longest first, when no earlier build on the same
backend has timed them (the order changes no output).  Notebook 19 starts first: the ledger
(:data:`READS_RECORDS_OF`) waits for it."""

BLAS_THREADS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Set, with :data:`pear.parallel.THREADS_ENV`, to a side-by-side kernel's share of the cores:
numpy's linear algebra keeps to it (its threads spin while they wait)."""


def ensure_kernel() -> None:
    """Install the ``pear`` kernel (this interpreter, ``MPLBACKEND=agg``) if missing."""
    from ipykernel.kernelspec import install  # heavy: Jupyter, only for the build
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


def ipc_kernel_manager() -> type:
    """The kernel manager the build executes notebooks with (papermill's
    ``kernel_manager_class``).

    jupyter_client's default transport is TCP on localhost, and ipykernel (7.x) then logs
    "Kernel is running over TCP without encryption" as each notebook's kernel starts, into
    the build's output.  This manager uses ZeroMQ's IPC transport instead (what that warning
    recommends): no network port is opened; the connection file (with the message-signing
    key) and the kernel's sockets live in a fresh private folder (:data:`IPC_PREFIX` +
    random, mode 0700, a short path well under the socket-path limit), removed when the
    kernel shuts down, so neither the working directory nor a concurrent build sees them.
    Where the ZeroMQ build has no IPC transport (e.g. Windows) it keeps jupyter_client's TCP
    default.

    It shuts a kernel down without interrupting it first.  jupyter_client sends every
    kernel it shuts down a SIGINT (to the kernel's process group) before the shutdown
    request; ipykernel (7.x) takes that SIGINT, when it lands while the kernel still
    handles a message, as a KeyboardInterrupt and logs "KeyboardInterrupt caught in
    kernel." into the build's output (seen after notebook 00, whose output the build
    relays).  A notebook that papermill shuts down has finished (or failed) its last cell:
    there is nothing to interrupt, the shutdown request goes over the control channel (which
    a busy kernel still answers), and a kernel that does not exit in time is killed by
    jupyter_client as before.  An interrupt asked for outside a shutdown is sent as ever."""
    import zmq  # heavy: Jupyter, only for the build
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

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:  # jupyter_client's interrupt before a shutdown request
                return
            await super()._async_interrupt_kernel()

        interrupt_kernel = _async_interrupt_kernel

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            folder = Path(self.connection_file).parent if self.connection_file else None
            if not restart and folder is not None and folder.name.startswith(IPC_PREFIX):
                shutil.rmtree(folder, ignore_errors=True)

        cleanup_resources = _async_cleanup_resources

    return IPCKernelManager


@contextlib.contextmanager
def environ(env: Mapping[str, str]) -> Iterator[None]:
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


def kernel_env(together: bool) -> dict[str, str]:
    """The variables a notebook's kernel starts with beyond the build's own: run
    ``together`` with other notebooks, its spinning thread teams (llama.cpp's,
    :data:`pear.parallel.THREADS_ENV`, and numpy's BLAS, :data:`BLAS_THREADS_ENV`) kept to
    this process's share of the cores (:func:`pear.parallel.cores_per_process`; its worker
    processes share them freely); alone, none."""
    if not together:
        return {}
    return dict.fromkeys((THREADS_ENV, *BLAS_THREADS_ENV), str(cores_per_process()))


def steps(names: Sequence[str], backend: str) -> list[list[str]]:
    """``names`` in order, grouped into the steps that run one after another: notebook 00
    alone; the others together, except that on a backend not in :data:`SIDE_BY_SIDE` each
    of :data:`RUNS_THE_MODEL` is a step of its own; a notebook of :data:`READS_RECORDS_OF`
    whose writer is among ``names`` comes after all of these, in steps of its own."""
    after = [n for n in names
             if any(w in names and w != n for w in READS_RECORDS_OF.get(n, ()))]
    return _grouped([n for n in names if n not in after], backend) + \
        _grouped(after, backend)


def _grouped(names: Sequence[str], backend: str) -> list[list[str]]:
    """``names`` in order, each step together unless it is notebook 00 or, on a backend not
    in :data:`SIDE_BY_SIDE`, one of :data:`RUNS_THE_MODEL` (a step of its own)."""
    out: list[list[str]] = []
    alone = True
    for name in names:
        was_alone = alone
        alone = name == NOTEBOOKS[0] or (backend not in SIDE_BY_SIDE and name in RUNS_THE_MODEL)
        if out and not alone and not was_alone:
            out[-1].append(name)
        else:
            out.append([name])
    return out


def start_order(names: Sequence[str], seconds: Mapping[str, float]) -> list[str]:
    """``names`` longest first by ``seconds`` (an earlier build's times over
    :data:`TYPICAL_S`; a notebook in neither counts as 0 s), ties in the given order.

    >>> start_order(["08_case_study", "12_robustness", "13_claims"], {"13_claims": 9.0})
    ['12_robustness', '13_claims', '08_case_study']
    """
    expected = {**TYPICAL_S, **seconds}
    return sorted(names, key=lambda n: -expected.get(n, 0.0))


def at_once() -> int:
    """How many notebooks run at once after notebook 00: one per core."""
    return usable_cores()
