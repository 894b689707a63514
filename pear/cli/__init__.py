"""The ``pear`` command line, one module per command family: :mod:`~pear.cli.run` (``run``,
``plan``, ``merge``, ``branch``, ``launch``), :mod:`~pear.cli.inspect` (``show``, ``index``,
``validate``, ``grade-check``, ``parity``, ``parity-run``), :mod:`~pear.cli.importing`
(``import``), :mod:`~pear.cli.populations` (``population``: ``fit``, ``sim-check``,
``family``, ``shipped``, ``published``), :mod:`~pear.cli.paper` (``paper``, ``claims-diff``,
``ensemble``), :mod:`~pear.cli.check` (``check outputs``, ``check site``) and
:mod:`~pear.cli.catalog` (``models``, ``methods``).  Each family adds its commands' parsers, and
each parser names its handler; :func:`main` assembles them in :data:`GROUPS` (what ``pear
--help`` lists, by what a user does), loads the plug-ins and turns a user's error into one
line.  A handler imports what its command needs inside itself, so that ``pear
--help`` stays fast.

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

GROUPS = (
    ("run and inspect", (run.add_run, run.add_plan, run.add_branch, inspect.add_show,
                         inspect.add_index, inspect.add_validate, inspect.add_grade_check,
                         inspect.add_parity, inspect.add_parity_run, catalog.add_models,
                         catalog.add_methods)),
    ("import and simulate", (importing.add_import, populations.add_population,
                             paper.add_ensemble)),
    ("build", (paper.add_paper, check.add_check, paper.add_claims_diff)),
    ("cluster", (run.add_launch, run.add_merge)),
)
"""Every command, grouped by what a user does, in the order ``pear --help`` lists them."""


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="pear", usage="pear [-h] COMMAND ...",
               description="PEAR multi-agent debate: run grids, inspect runs, import and "
               "simulate debates,\nrebuild the paper's tables and figures (`pear COMMAND -h`: "
               "one command's options).", formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser, prog="pear",
                           metavar="COMMAND", help=argparse.SUPPRESS)
    sections = []
    for title, adds in GROUPS:
        before = len(sub._choices_actions)  # the help line of each command added
        for add in adds:
            add(sub)
        rows = [(c.dest, c.help or "") for c in sub._choices_actions[before:]]
        sections.append(f"{title}:\n" + "\n".join(
            _row(name, text) for name, text in rows))
    p.epilog = "\n\n".join(sections)
    return p


def _row(name: str, text: str, width: int = 88, column: int = 16) -> str:
    """One command's line of ``pear --help``: its name and its help, wrapped under the help."""
    import textwrap
    lines = textwrap.wrap(text, width - column) or [""]
    first = f"  {name:<{column - 3}} {lines[0]}" if len(name) < column - 3 else \
        f"  {name}\n{' ' * column}{lines[0]}"
    return "\n".join([first, *(" " * column + line for line in lines[1:])])


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
