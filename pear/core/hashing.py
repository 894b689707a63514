"""Seeds, ids and content fingerprints, defined once: values derived from their parts with
sha256, the same on every machine and Python run (never Python's salted ``hash``).  The engine,
the validator, the benchmarks' shuffles, the run directories, caches, manifests and population
files all call these.

>>> hex_id("gsm8k", 0, n=12) == hex_id("gsm8k", 0, n=12) != hex_id("gsm8k", 1, n=12)
True
>>> derive_seed(0, "pear", "q1") == derive_seed(0, "pear", "q1") != derive_seed(1, "pear", "q1")
True
>>> len(debate_id({"model": "m", "seed": 0})), len(config_digest('{"rounds":5}'))
(20, 16)
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

__all__ = ["hex_id", "int_seed", "joined_seed", "derive_seed", "request_seed", "debate_seed",
           "round_seed", "orbit_seed", "base_graph_seed", "debate_id", "branch_debate_id", "config_digest",
           "stable_seed", "file_sha256", "content_digest"]


def content_digest(content: Any, n: int = 64) -> str:
    """The first ``n`` hex digits of sha256 of ``content``: bytes as given, text as UTF-8,
    any other value as its canonical JSON (``json.dumps(content, sort_keys=True)``).

    >>> content_digest({"b": 1, "a": 2}, n=12) == content_digest('{"a": 2, "b": 1}', n=12)
    True
    """
    if not 1 <= n <= 64:
        raise ValueError(f"invalid n={n!r}: a sha256 hex digest has 1..64 digits")
    if not isinstance(content, bytes):
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        content = text.encode("utf-8")
    return hashlib.sha256(content).hexdigest()[:n]


def hex_id(*parts: object, n: int = 16, sep: str = "\x1f") -> str:
    """The first ``n`` hex digits of sha256 of the parts (as ``str``) joined by ``sep``."""
    return content_digest(sep.join(map(str, parts)), n)


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
    """A model call's sampling seed (:func:`derive_seed` of run seed, method, question, agent,
    round, phase, joined in one step): round 0's leaves the method out (shared by a question's
    methods); the revision's label is ``update``, its older name.

    >>> [request_seed(0, m, "gsm8k", "q1", 2, 0, "initial") for m in ("pear", "cot")]
    [351798682, 351798682]
    """
    if phase == "initial":
        text = f"{seed}\x1fround0\x1f{dataset}\x1f{question_id}\x1f{agent}\x1finitial"
    else:
        text = (f"{seed}\x1f{method}\x1f{dataset}\x1f{question_id}\x1f{agent}\x1f{round_}"
                f"\x1f{_REQUEST_LABELS[phase]}")
    return joined_seed(text, 4, 31)


_REQUEST_LABELS = {"critique": "critique", "revision": "update"}


def debate_seed(seed: int, method: str, dataset: str, question_id: str) -> int:
    """The seed of one debate (run seed, method, question); its rounds' derive from it."""
    return derive_seed(seed, method, dataset, question_id, "debate")


def round_seed(debate: int, round_: int) -> int:
    """The seed of a round's generator (routing, vote ties): a branch after round R starts
    round R + 1 as a full run does, replaying nothing."""
    return derive_seed(debate, "round", round_)


def orbit_seed(debate: int) -> int:
    """The seed of an orbit average's relabelling of one debate (:func:`pear.core.methods.orbit`).

    >>> orbit_seed(7) == orbit_seed(7) != orbit_seed(8)
    True
    """
    return derive_seed(debate, "orbit")


def base_graph_seed(seed: int, dataset: str, question_id: str) -> int:
    """The seed of a question's base role graph: every routed method relabels the same one."""
    return derive_seed(seed, dataset, question_id, "base_graph")


def debate_id(identity: Mapping[str, Any]) -> str:
    """A debate's id: 20 hex digits of the identity fields' values in key order."""
    return hex_id(*(identity[k] for k in sorted(identity)), n=20)


def branch_debate_id(identity: Mapping[str, Any], branched_from: Mapping[str, Any]) -> str:
    """A branch's id: its identity fields with its parent's id and branch round."""
    parent = f"{branched_from['debate_id']}@{branched_from['round']}"
    return debate_id({**identity, "branched_from": parent})


def config_digest(canonical_json: str) -> str:
    """The 16-hex-digit hash of a config's canonical JSON (:func:`pear.core.config.config_hash`)."""
    return hex_id(canonical_json, n=16)


def stable_seed(*parts: object) -> int:
    """A 64-bit seed for data-side draws (question subsets, option shuffles)."""
    return int_seed(*parts, sep=":")


def file_sha256(path: Any) -> str:
    """The sha256 hex digest of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
