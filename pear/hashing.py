"""Stable hashing, defined once: ids and seeds derived from values with sha256, the same on
every machine and Python run (never Python's salted ``hash``).

Today's call sites spell it out each time (``config.config_hash``, ``engine.derive_seed`` and
the debate id, ``data.stable_seed``, ``experiment.model_dir``); these two functions give the
same values (tests/test_hashing.py checks each), so those sites can call them unchanged.

>>> hex_id("gsm8k", 0, n=12) == hex_id("gsm8k", 0, n=12) != hex_id("gsm8k", 1, n=12)
True
>>> int_seed("gsm8k", 0, sep=":") < 2 ** 64
True
"""
from __future__ import annotations

import hashlib

__all__ = ["hex_id", "int_seed"]


def _digest(parts: tuple[object, ...], sep: str) -> bytes:
    return hashlib.sha256(sep.join(map(str, parts)).encode("utf-8")).digest()


def hex_id(*parts: object, n: int = 16, sep: str = "\x1f") -> str:
    """The first ``n`` hex digits of sha256 of the parts (as ``str``) joined by ``sep``."""
    if not 1 <= n <= 64:
        raise ValueError(f"invalid n={n!r}: a sha256 hex digest has 1..64 digits")
    return _digest(parts, sep).hex()[:n]


def int_seed(*parts: object, nbytes: int = 8, sep: str = "\x1f", bits: int | None = None
             ) -> int:
    """An integer from the first ``nbytes`` bytes (big-endian) of sha256 of the parts joined
    by ``sep``, kept to its low ``bits`` bits when given (31: a seed any RNG accepts)."""
    if not 1 <= nbytes <= 32:
        raise ValueError(f"invalid nbytes={nbytes!r}: a sha256 digest has 1..32 bytes")
    value = int.from_bytes(_digest(parts, sep)[:nbytes], "big")
    return value & ((1 << bits) - 1) if bits is not None else value
