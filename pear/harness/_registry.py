"""What Inspect loads for names in the ``pear/`` namespace (the ``inspect_ai`` entry point in
pyproject.toml): the tasks (``inspect eval pear/gsm8k``), the solver and the scorer."""
from pear.harness.solver import pear_debate  # noqa: F401 - registers pear/pear_debate
from pear.harness.tasks import (gsm8k, math500, mmlu_pro, pear_grader,  # noqa: F401 - register
                                truthfulqa)
