"""PEAR inside other evaluation harnesses; today Inspect (``inspect_ai``, the ``inspect`` extra).

- :mod:`pear.harness.backend`: the core's ``Backend`` on Inspect's model API
  (:class:`~pear.harness.backend.InspectBackend`);
- :mod:`pear.harness.solver`: ``pear_debate``, an Inspect solver that runs one debate per
  sample with any registered method and keeps its PEAR record in the sample;
- :mod:`pear.harness.tasks`: the four benchmarks as Inspect tasks (``inspect eval pear/gsm8k``)
  with a scorer that grades as ``pear run`` does;
- :mod:`pear.harness.logs`: Inspect logs of that solver read back as a PEAR run
  (``pear import inspect LOG...``).

``inspect_ai`` is a heavy optional dependency: it is imported at the head of these modules,
and nothing else in ``pear`` imports this package (the CLI's import command loads it lazily).
docs/inspect.md has the how-to.
"""
