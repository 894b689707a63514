"""The argument types and options that several command families share: the one-line
parser, comma lists, bounded numbers, ``--plugin`` and the ``--drop-invalid`` help."""
from __future__ import annotations

import argparse

from pear.backends.registry import BACKENDS, names

__all__ = ["Parser", "comma_list", "int_at_least", "positive", "nonneg", "positive_float",
           "add_plugin_argument", "add_backend_argument", "DROP_HELP"]


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"pear: error: {message}\n")


def comma_list(kind):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty list {text!r}")
        try:
            return tuple(kind(t) for t in items)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid value in {text!r}") from None
    return parse


def int_at_least(lowest: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if v < lowest:
            raise argparse.ArgumentTypeError(f"must be >= {lowest}: {text!r}")
        return v
    return parse


positive, nonneg = int_at_least(1), int_at_least(0)


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return v


def add_backend_argument(parser: argparse.ArgumentParser, *, default: str | None,
                         help: str = "") -> None:
    """``--backend``, one of the backends that run (:mod:`pear.backends.registry`); an unknown
    name is one line naming it and the names (exit 2)."""
    def backend(text: str) -> str:
        if text not in names(runs=True):
            what = f"backend {text!r} runs nothing" if text in BACKENDS else \
                f"unknown backend {text!r}"
            raise argparse.ArgumentTypeError(f"{what}: choose one of "
                                             f"{', '.join(names(runs=True))}")
        return text

    listed = "; ".join(f"{n}: {BACKENDS[n].summary}" for n in names(runs=True))
    parser.add_argument("--backend", default=default, type=backend, choices=names(runs=True),
                        metavar="BACKEND",
                        help=(help or "the backend") + f" ({listed})"
                        + (f" (default: {default})" if default else ""))


def add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE, which registers methods (repeatable; also "
                             "PEAR_PLUGINS=mod1,mod2)")


DROP_HELP = ("analyse the valid records of a damaged run (say what was left out) instead of "
              "stopping")
