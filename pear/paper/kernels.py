"""The kernels the build executes notebooks on, their environment, and their scheduling: the
``pear`` kernel (:func:`ensure_kernel`), its transport (:func:`ipc_kernel_manager`: local IPC
sockets in a private folder, shut down without an interrupt), the variables a kernel starts
with (:func:`environ`, :func:`kernel_env`), and which notebooks run alone or side by side
(:func:`steps`, :func:`start_order`, :func:`at_once`), read from the notebook registry
(:mod:`pear.paper.registry`: which notebook writes the grid, which call the model, which read
another's records, how long each takes).
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
from pear.paper.registry import entry
from pear.backends.registry import BACKENDS

__all__ = ["KERNEL", "IPC_PREFIX", "SIDE_BY_SIDE", "BLAS_THREADS_ENV", "ensure_kernel",
           "ipc_kernel_manager", "environ", "kernel_env", "steps", "start_order", "at_once"]

KERNEL = "pear"
"""The kernel every notebook runs on: this interpreter, ``MPLBACKEND=agg``."""

IPC_PREFIX = "pear-kernel-"
"""The name prefix of the private folder (``tempfile.mkdtemp``, mode 0700) that holds one
kernel's connection file and IPC sockets while it runs."""

SIDE_BY_SIDE = tuple(n for n, s in BACKENDS.items() if not s.runs or (s.local and not s.one_model))
"""Backends that run on this machine's cores.  After the grid's notebook (every other notebook
reads its grid; none reads another's outputs, and one that reads another's records,
:attr:`pear.paper.registry.Notebook.reads`, runs after it) the notebooks run :func:`at_once`
at a time, longest first, each kernel's spinning thread teams kept to its share of the cores
(:data:`pear.parallel.THREADS_ENV`, :data:`BLAS_THREADS_ENV`: a llama.cpp model decodes on one
thread beside another notebook; worker processes, e.g. Math-Verify's, are not capped).  With
a server or a GPU engine (one model in memory) a notebook that runs the model
(:attr:`pear.paper.registry.Notebook.runs_the_model`) runs alone.  ``time per notebook`` is each one's own wall time."""

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
    kernel." into the build's output (seen after the grid's notebook, whose output the
    build relays).  A notebook that papermill shuts down has finished (or failed) its last cell:
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
    """``names`` in order, grouped into the steps that run one after another: the grid's
    notebook alone; the others together, except that on a backend not in :data:`SIDE_BY_SIDE`
    each that runs the model is a step of its own; a notebook that reads the records of
    another among ``names`` comes after all of these, in steps of its own."""
    after = [n for n in names
             if any(w in names and w != n for w in entry(n).reads_notebooks)]
    return _grouped([n for n in names if n not in after], backend) + \
        _grouped(after, backend)


def _grouped(names: Sequence[str], backend: str) -> list[list[str]]:
    """``names`` in order, each step together unless it is the grid's notebook or, on a
    backend not in :data:`SIDE_BY_SIDE`, one that runs the model (a step of its own)."""
    out: list[list[str]] = []
    alone = True
    for name in names:
        was_alone = alone
        e = entry(name)
        alone = e.writes_grid or (backend not in SIDE_BY_SIDE and e.runs_the_model)
        if out and not alone and not was_alone:
            out[-1].append(name)
        else:
            out.append([name])
    return out


def start_order(names: Sequence[str], seconds: Mapping[str, float]) -> list[str]:
    """``names`` longest first by ``seconds`` (:func:`pear.paper.registry.typical_seconds`; a
    notebook without a figure counts as 0 s), ties in the given order.

    >>> start_order(["a", "b", "c"], {"b": 9.0, "c": 12.0})
    ['c', 'b', 'a']
    """
    return sorted(names, key=lambda n: -seconds.get(n, 0.0))


def at_once() -> int:
    """How many notebooks run at once after the grid's notebook: one per core."""
    return usable_cores()
