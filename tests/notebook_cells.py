"""A notebook's own functions, for the tests of what moved from the package into its cells: the
imports, ``def``s and literal constants of its code cells run in a namespace (nothing else of
the notebook runs)."""
from __future__ import annotations

import ast
from typing import Any

import jupytext

from pear.paths import REPO_ROOT


def notebook_functions(name: str, **names: Any) -> dict[str, Any]:
    """The namespace of notebook ``name``'s imports and function definitions, with ``names``
    (what its functions read of the notebook's other cells) set beside them."""
    nb = jupytext.read(REPO_ROOT / "notebooks" / f"{name}.py")
    tree = ast.parse("\n".join(c.source for c in nb.cells if c.cell_type == "code"))
    keep = [n for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef))
            or isinstance(n, ast.Assign) and _literal(n.value)]
    if not any(isinstance(n, ast.FunctionDef) for n in keep):
        raise ValueError(f"notebook {name!r} defines no function")
    namespace: dict[str, Any] = dict(names)
    exec(compile(ast.Module(keep, []), f"{name}.py", "exec"), namespace)  # noqa: S102
    return namespace


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True
