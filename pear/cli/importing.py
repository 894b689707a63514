"""Commands that bring other frameworks' recorded debates in: ``pear import``."""
from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_import"]


def add_import(sub: Any) -> None:
    im = sub.add_parser("import", help="import other frameworks' recorded debates as a run",
                        description="Read debate records written by another framework (du: Du "
                                    "et al.'s {question: [agent_contexts, gold]}; dylan: "
                                    "DyLAN's variant) into a new run directory of PEAR "
                                    "records, graded by our graders; questions found in our "
                                    "benchmark by their text take our ids and gold. Bad input "
                                    "is an error naming the file and the entry (exit 2) and "
                                    "nothing is written, unless --skip-bad.")
    im.add_argument("format", choices=("du", "dylan"), help="the files' format")
    im.add_argument("files", nargs="+", metavar="FILE", help="record files (.json or .json.gz)")
    im.add_argument("--out", required=True, help="new run directory")
    im.add_argument("--dataset", default="math500",
                    help="one of ours (mmlu_pro, truthfulqa, gsm8k, math500; default math500) "
                         "or a new name with --grading")
    im.add_argument("--grading", choices=("numbers", "letters", "math"), default=None,
                    help="how to grade a dataset we do not ship (e.g. Du et al.'s MMLU: "
                         "letters)")
    im.add_argument("--model", default="", help="the model that debated, recorded as given")
    im.add_argument("--skip-bad", action="store_true",
                    help="import the good entries and list the bad ones in the manifest")
    im.set_defaults(handler=_cmd_import)



def _cmd_import(a: argparse.Namespace) -> int:
    from pear.store.importing import import_files
    print(import_files(a.format, a.files, a.out, dataset=a.dataset, grading=a.grading,
                       model=a.model, skip_bad=a.skip_bad).report())
    return 0
