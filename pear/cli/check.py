"""``pear check``: is a finished build whole?  ``pear check outputs DIR`` (every expected
table and figure of the notebooks exists in the figures directory, is not empty and came
from the last build's run) and ``pear check site DIR`` (the results site has every page and
link, and loads nothing from the network).  Each exits 1 naming every problem, else 0."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from pear.cli.options import Parser

__all__ = ["add_check"]


def add_check(sub: Any) -> None:
    c = sub.add_parser("check", help="check a build's outputs or its results site",
                       description="Check what a build wrote: exit 1 naming every problem.")
    modes = c.add_subparsers(dest="mode", required=True, parser_class=Parser)
    o = modes.add_parser("outputs", help="every expected output of the notebooks, from the "
                         "last build's run", description="Check that every expected output "
                         "of the build exists, is not empty and came from the last build's "
                         "run (the figures directory's build.json).")
    o.add_argument("figures", metavar="DIR", help="the figures directory (figures/)")
    o.add_argument("--only", default="", help="comma-separated notebook name prefixes")
    o.set_defaults(handler=_cmd_check_outputs)
    s = modes.add_parser("site", help="every page and link of the results site",
                         description="Check a results site written by `pear paper`.")
    s.add_argument("site", metavar="DIR", help="the site (build/site)")
    s.set_defaults(handler=_cmd_check_site)


def _cmd_check_outputs(a: argparse.Namespace) -> int:
    # start-up: only this command loads them (`pear --help` stays fast)
    from pear.paper import provenance
    from pear.paper.registry import EXPECTED_OUTPUTS, check_outputs, producer, select
    names = select(a.only)  # a bad --only: one line, exit 2
    missing = check_outputs(a.figures, names)
    expected = sum(len(EXPECTED_OUTPUTS[n]) for n in names)
    stale = provenance.check(a.figures, names)
    if stale:
        print(f"{len(stale)} notebooks' outputs in {a.figures} are not the last build's "
              f"({provenance.BUILD_FILE}):", file=sys.stderr)
        for line in stale:
            print(f"  {line}", file=sys.stderr)
    if missing:
        print(f"{len(missing)} of {expected} expected outputs missing or empty in "
              f"{a.figures}:", file=sys.stderr)
        for path in missing:
            print(f"  {path.name} (from {producer(path.name)})", file=sys.stderr)
    if missing or stale:
        return 1
    print(f"all {expected} expected outputs present in {a.figures}, every one from the last "
          "build's run")
    return 0


def _cmd_check_site(a: argparse.Namespace) -> int:
    from pear.paper.site import check_site  # start-up: only this command loads it
    problems = check_site(a.site)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"site {a.site}: every page and link present")
    return 0
