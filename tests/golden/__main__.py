"""``python -m tests.golden``: rewrite the golden records (see tests/golden/__init__.py)."""
from . import main

if __name__ == "__main__":
    main()
