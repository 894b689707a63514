"""pytest: the doctests of this package need Inspect (the ``inspect`` extra); without it
``pytest --doctest-modules pear`` leaves the package out instead of failing to import it."""
import importlib.util


def _have_inspect() -> bool:
    try:
        return importlib.util.find_spec("inspect_ai") is not None
    except (ImportError, ValueError):
        return False


collect_ignore_glob = [] if _have_inspect() else ["*.py"]
