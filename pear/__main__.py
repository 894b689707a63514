"""``python -m pear`` is the ``pear`` command."""
import sys

from pear.cli import main

sys.exit(main())
