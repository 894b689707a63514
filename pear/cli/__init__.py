"""The ``pear`` command line, one module per command family: :mod:`~pear.cli.run` (``run``,
``plan``, ``merge``, ``branch``, ``launch``), :mod:`~pear.cli.inspect` (``show``, ``index``,
``validate``, ``grade-check``, ``parity``, ``parity-run``), :mod:`~pear.cli.importing`
(``import``, ``sim-check``), :mod:`~pear.cli.populations` (``fit``, ``family``,
``populations``), :mod:`~pear.cli.paper` (``paper``, ``claims-diff``, ``ensemble``),
:mod:`~pear.cli.check` (``check outputs``, ``check site``) and :mod:`~pear.cli.catalog`
(``models``, ``methods``).  Each family adds its commands' parsers, and each parser names its
handler; :func:`main` assembles them, loads the plug-ins and turns a
user's error into one line.

Errors a user can make (bad argument, unknown preset/dataset/method/backend, missing file,
unreachable server) print one line naming the problem and exit with code 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from pear.cli import catalog, check, importing, inspect, paper, populations, run
from pear.cli.options import Parser
from pear.core.backend import BackendError

__all__ = ["main"]

COMMANDS = (run.add_run, catalog.add_models, run.add_plan, run.add_merge, inspect.add_show,
            inspect.add_index, inspect.add_validate, inspect.add_grade_check,
            importing.add_import, importing.add_sim_check, paper.add_paper, check.add_check,
            catalog.add_methods, paper.add_claims_diff, inspect.add_parity,
            inspect.add_parity_run, run.add_branch,
            run.add_launch, paper.add_ensemble, populations.add_fit, populations.add_family,
            populations.add_populations)
"""Every command, in the order ``pear --help`` lists them."""


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="pear", description="PEAR multi-agent debate: run grids, inspect runs, "
               "rebuild the paper's tables and figures.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in COMMANDS:
        add(sub)
    return p


def _load_plugins(a: argparse.Namespace) -> None:
    """Import the plug-in modules (entry points, ``$PEAR_PLUGINS``, ``--plugin``); the
    variable is extended so that the notebook kernels of ``pear paper`` load them too."""
    # start-up: loaded after parsing, so `pear --help` stays fast
    from pear.methods import PLUGINS_ENV, load_plugins
    mods = list(getattr(a, "plugin", None) or [])
    if mods:
        old = [m for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
        os.environ[PLUGINS_ENV] = ",".join(dict.fromkeys(old + mods))
    load_plugins()  # entry points, $PEAR_PLUGINS, --plugin: once, before any name is read


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        _load_plugins(args)
        return args.handler(args)
    except KeyboardInterrupt:
        print("pear: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"pear: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - backend errors reach the user as one line
        if isinstance(err, BackendError):
            print(f"pear: error: {err}", file=sys.stderr)
            return 2
        raise
