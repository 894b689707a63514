"""The command that brings other frameworks' recorded debates in: ``pear import`` (holding a
simulated population against a run is ``pear population sim-check``,
:mod:`pear.cli.populations`)."""
from __future__ import annotations

import argparse
import importlib
from typing import Any

from pear.store.readers import FORMATS

__all__ = ["add_import"]


def add_import(sub: Any) -> None:
    im = sub.add_parser("import", help="import other frameworks' recorded debates as a run",
                        description="Read debate records written by another framework into a "
                                    "new run directory of PEAR records, graded by our graders; "
                                    "questions found in our benchmark by their text take our "
                                    "ids and gold ("
                                    + "; ".join(f"{f.name}: {f.summary}"
                                                for f in FORMATS.values() if f.reader)
                                    + "); or "
                                    + "; ".join(f"{f.name}: {f.summary}"
                                                for f in FORMATS.values() if not f.reader)
                                    + ". Bad input is an error naming the file and the entry "
                                    "(exit 2) and nothing is written, unless --skip-bad.")
    im.add_argument("format", choices=tuple(FORMATS),
                    help="the files' format" + "".join(
                        f"; {f.name} needs the {f.extra} extra" for f in FORMATS.values()
                        if f.extra))
    im.add_argument("files", nargs="+", metavar="FILE",
                    help="record files (" + "; ".join(f"{f.name}: {f.files}"
                                                      for f in FORMATS.values()) + ")")
    im.add_argument("--out", required=True, help="new run directory")
    im.add_argument("--dataset", default=None,
                    help="one of ours (mmlu_pro, truthfulqa, gsm8k, math500; default math500) "
                         "or a new name with --grading (not for "
                         + ", ".join(f.name for f in FORMATS.values() if not f.reader)
                         + ": its records name it)")
    # pear.tasks.grading.GRADING_KINDS, spelled out so that `pear --help` stays fast (a test
    # holds the two equal)
    im.add_argument("--grading", choices=("numbers", "letters", "math", "yesno"), default=None,
                    help="how to grade a dataset we do not ship: numbers (a final number, "
                         "e.g. Du et al.'s arithmetic), letters (an option letter among those "
                         "the question lists, e.g. Du et al.'s MMLU, AQuA), math (a LaTeX "
                         "answer, Math-Verify) or yesno (yes or no, e.g. StrategyQA)")
    im.add_argument("--model", default="", help="the model that debated, recorded as given")
    im.add_argument("--protocol", default=None, metavar="NAME",
                    help="keep only the debates of this source protocol (a run records one: "
                         "DyLAN's MMLU teams of 2, 3, 4 and 7 agents are dylan-mmlu-2, -3, -4 "
                         "and -7; files that mix protocols need it)")
    im.add_argument("--skip-bad", action="store_true",
                    help="import the good entries and list the bad ones in the manifest")
    im.set_defaults(handler=_cmd_import)


def _cmd_import(a: argparse.Namespace) -> int:
    if FORMATS[a.format].reader is None:
        return _cmd_import_records(a)
    from pear.store.importing import import_files
    print(import_files(a.format, a.files, a.out, dataset=a.dataset or "math500",
                       grading=a.grading,
                       model=a.model, skip_bad=a.skip_bad,
                       protocol=a.protocol).report())
    return 0


def _cmd_import_records(a: argparse.Namespace) -> int:
    """``pear import FORMAT FILE...`` of a format whose entries are PEAR records already (e.g.
    the Inspect logs of pear's solver): its importer writes them as a run of ours."""
    fmt = FORMATS[a.format]
    given = [f"--{k.replace('_', '-')}" for k in ("dataset", "grading", "model", "protocol")
             if getattr(a, k, None)]
    if given:
        raise ValueError(f"{', '.join(given)} does not apply to {fmt.name} files: their PEAR "
                         "records name the dataset, grading, model and protocol")
    module, _, function = fmt.importer.partition(":")
    try:  # the one importer of pear.harness: inspect_ai is a heavy optional extra
        import_files = getattr(importlib.import_module(module), function)
    except ImportError as err:
        raise ValueError(f"pear import {fmt.name} needs the {fmt.extra} extra (missing "
                         f"{err.name or err}): make setup-{fmt.extra}, or pip install "
                         f"'pear[{fmt.extra}]'") from None
    print(import_files(a.files, a.out, skip_bad=a.skip_bad).report())
    return 0
