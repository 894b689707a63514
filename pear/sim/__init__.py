"""The simulator, in one room beside the LLM backends (numpy and the standard library only):

* :mod:`pear.sim.population`: populations as named, versioned parameter files
  (``data/populations/``): :class:`~pear.sim.population.SimParams` and the revision model
  (:class:`~pear.sim.population.RevisionModel`);
* :mod:`pear.sim.revision`: the revision model's fit to real debates (maximum likelihood; the
  fit itself needs scipy);
* :mod:`pear.sim.backend`: :class:`~pear.sim.backend.SimulatedBackend`, the core's backend
  interface answered by simulated agents drawn from a population (``--backend simulated``).

Sim-check, which runs a population against a recorded run through the runner, is
:mod:`pear.populations.simcheck`.  Importing this package imports none of its modules.
"""
