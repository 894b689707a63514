"""The build's notebooks run on a kernel that talks over local IPC sockets: no TCP port, and
no 'Kernel is running over TCP without encryption' warning in the build's output."""
from __future__ import annotations

import nbformat
import papermill
import pytest

from pear.paper.kernels import KERNEL, ensure_kernel, ipc_kernel_manager


@pytest.mark.slow
def test_notebooks_run_over_ipc_without_the_tcp_warning(tmp_path, capfd):
    ensure_kernel()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(repr(os.environ.get('MPLBACKEND')))")]
    nbformat.write(nb, tmp_path / "in.ipynb")
    km = ipc_kernel_manager()
    assert km().transport == "ipc"
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                               kernel_name=KERNEL, progress_bar=False, kernel_manager_class=km)
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[0].outputs[0]["text"].strip() == "'agg'"
    captured = capfd.readouterr()
    assert "without encryption" not in captured.err + captured.out
