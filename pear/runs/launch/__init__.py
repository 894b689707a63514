"""Launching a grid over shards: Slurm job arrays (one per model) or local processes, each
task a ``pear run --shard i/N`` into its own run directory (resumable, so preemption and
requeue lose nothing), merged with ``pear merge`` and checked for completeness; the status
comes from the records.  ``pear launch slurm|local|status|merge`` call these modules:

* :mod:`.spec`   the launch: grid, arrays per model (resources from the model catalog, time
                 from ``pear plan``), the directory layout, the same-grid check
* :mod:`.slurm`  sbatch scripts, their check against the cluster (``sbatch --test-only``),
                 submission, ``squeue`` states
* :mod:`.local`  the shards as local processes
* :mod:`.finish` merge with the completeness check, and the status
"""
from pear.runs.launch.finish import format_status, merge_launch, status
from pear.runs.launch.local import run_local
from pear.runs.launch.slurm import (array_script, check_scripts, check_slurm, merge_script, scripts,
                                   submit, write_scripts)
from pear.runs.launch.spec import Launch, ModelArray, check_same_grid, plan_launch, read_launch, write_launch

__all__ = ["Launch", "ModelArray", "plan_launch", "check_same_grid", "read_launch",
           "write_launch", "array_script", "merge_script", "scripts", "write_scripts",
           "check_slurm", "check_scripts", "submit", "run_local", "status", "format_status",
           "merge_launch"]
