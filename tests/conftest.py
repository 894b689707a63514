"""Shared by the whole suite.

The fast suite runs on two worker processes (pytest-xdist, ``make test``): every test writes
only under its own ``tmp_path`` (nothing in the checkout's build/, figures/ or data/runs/),
binds its servers to a free port, and starts its own Math-Verify and engine processes.  The one
thing the workers share is the ``pear`` Jupyter kernel spec in this environment, which notebook
tests install when missing: installing it replaces its folder, so it is installed once here, in
the controlling process, before any worker starts.  Math-Verify's replies are not kept on disk
(``PEAR_GRADING_CACHE=off``, inherited by the notebooks and commands the tests start): every
test asks its own worker, as a run on a fresh machine does; the store's own tests set it.
"""
import importlib.util
import os


def pytest_configure(config):
    os.environ["PEAR_GRADING_CACHE"] = "off"
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    if importlib.util.find_spec("ipykernel") is not None:
        from pear.paper.kernels import ensure_kernel

        try:
            ensure_kernel()
        except RuntimeError:  # another Python's kernel by that name: the notebook tests that
            pass              # need it call ensure_kernel themselves and fail naming it
