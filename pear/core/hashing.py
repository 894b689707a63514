"""Seeds and ids, defined once: values derived from their parts with sha256, the same on every
machine and Python run (never Python's salted ``hash``).  The engine, the validator, the
benchmarks' shuffles and the run directories all call these.

>>> hex_id("gsm8k", 0, n=12) == hex_id("gsm8k", 0, n=12) != hex_id("gsm8k", 1, n=12)
True
>>> derive_seed(0, "pear", "q1") == derive_seed(0, "pear", "q1") != derive_seed(1, "pear", "q1")
True
>>> len(debate_id({"model": "m", "seed": 0})), len(config_digest('{"rounds":5}'))
(20, 16)
"""
from __future__ import annotations

import hashlib
from typing import Any, Mapping

__all__ = ["hex_id", "int_seed", "joined_seed", "derive_seed", "request_seed", "debate_seed",
           "round_seed", "orbit_seed", "base_graph_seed", "debate_id", "branch_debate_id", "config_digest",
           "stable_seed", "file_sha256"]


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
    return joined_seed(sep.join(map(str, parts)), nbytes, bits)


def joined_seed(text: str, nbytes: int = 8, bits: int | None = None) -> int:
    """:func:`int_seed` of the parts already joined into ``text`` (arguments unchecked: for
    the paths that draw a seed per request or per latent)."""
    value = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:nbytes], "big")
    return value & ((1 << bits) - 1) if bits is not None else value


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from any parts: per-request sampling seeds (run seed, method, question,
    agent, round, phase) and each debate's own generator."""
    return int_seed(*parts, nbytes=4, bits=31)


def request_seed(seed: int, method: str, dataset: str, question_id: str, agent: int,
                 round_: int, phase: str) -> int:
    """The sampling seed of one model call: run seed, question, agent, round and phase
    (``initial``, ``critique`` or ``revision``).  Round 0 is shared by a question's methods,
    so its seed leaves the method out; the revision's label predates the phase's name
    (``update``): seeds stay what they were.

    >>> [request_seed(0, m, "gsm8k", "q1", 2, 0, "initial") for m in ("pear", "cot")]
    [351798682, 351798682]
    """
    # derive_seed of the parts, joined here in one step: it runs for every model call
    if phase == "initial":
        text = f"{seed}\x1fround0\x1f{dataset}\x1f{question_id}\x1f{agent}\x1finitial"
    else:
        text = (f"{seed}\x1f{method}\x1f{dataset}\x1f{question_id}\x1f{agent}\x1f{round_}"
                f"\x1f{_REQUEST_LABELS[phase]}")
    return joined_seed(text, 4, 31)


_REQUEST_LABELS = {"critique": "critique", "revision": "update"}


def debate_seed(seed: int, method: str, dataset: str, question_id: str) -> int:
    """The seed of one debate (run seed, method, question): its rounds' generators derive
    from it (:func:`round_seed`)."""
    return derive_seed(seed, method, dataset, question_id, "debate")


def round_seed(debate: int, round_: int) -> int:
    """The seed of round ``round_``'s generator in the debate of seed ``debate``: every
    round draws (routing, vote ties) from its own generator, so a branch after round R
    starts round R + 1 as a full run does without replaying rounds 0..R."""
    return derive_seed(debate, "round", round_)


def orbit_seed(debate: int) -> int:
    """The seed of an orbit average's relabelling of one debate (drawn once, the same in
    every round; :func:`pear.core.methods.orbit`).

    >>> orbit_seed(7) == orbit_seed(7) != orbit_seed(8)
    True
    """
    return derive_seed(debate, "orbit")


def base_graph_seed(seed: int, dataset: str, question_id: str) -> int:
    """The seed of a question's base role graph: from (run seed, question) only, so every
    routed method of one question relabels the same graph (paired comparisons)."""
    return derive_seed(seed, dataset, question_id, "base_graph")


def debate_id(identity: Mapping[str, Any]) -> str:
    """A debate's id: 20 hex digits of the identity fields' values in key order."""
    return hex_id(*(identity[k] for k in sorted(identity)), n=20)


def branch_debate_id(identity: Mapping[str, Any], branched_from: Mapping[str, Any]) -> str:
    """A counterfactual branch's id: its identity fields and its parent's id and branch
    round (so a branch never shares an id with a full run of its method)."""
    parent = f"{branched_from['debate_id']}@{branched_from['round']}"
    return debate_id({**identity, "branched_from": parent})


def config_digest(canonical_json: str) -> str:
    """The 16-hex-digit hash of a config's canonical JSON (:func:`pear.core.config.config_hash`)."""
    return hex_id(canonical_json, n=16)


def stable_seed(*parts: object) -> int:
    """A 64-bit seed for data-side draws (question subsets, option shuffles)."""
    return int_seed(*parts, sep=":")


def file_sha256(path: Any) -> str:
    """The sha256 hex digest of a file's bytes, read in blocks (model files, benchmarks,
    imported records, record files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
