"""A dry backend for cost planning: well-formed replies of a set length, no model.

Every reply is JSON that follows the request's schema (free-text fields padded so that the
reply has ``fill * max_tokens`` tokens at ``chars_per_token`` characters a token), so the
engine runs its real protocol and later prompts grow with the replies as they would with a
model.  Prompt tokens are counted from the characters of the messages plus a per-message
chat-template overhead.  A simulated prefix cache (vLLM's automatic prefix caching with
unlimited memory, in request order) gives the cached share of each prompt.

Its answers are distinct per request ("42-<n>"), so agents never agree and no debate stops
early (an upper bound where early stopping is on); confidence is 3.  The content is
meaningless: only its length and shape matter.  Not registered in
:data:`pear.backends.registry.BACKENDS`.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from pear.core.backend import Completion, Request

__all__ = ["DryBackend", "fill_schema"]

CHARS_PER_TOKEN = 4.0  # our choice: English prose with a 100k+ vocabulary (Llama 3, Qwen2.5)
MESSAGE_OVERHEAD_TOKENS = 5  # our choice: role markers of one chat-template turn (ChatML ~5)
CACHE_BLOCK_TOKENS = 16  # vLLM's default KV-cache block size (prefix caching is per block)
SHORT_TEXT = "42"
"""The stem of every answer-like string field (keys containing "answer")."""


_WORDS = ("alpha", "beta", "gamma", "delta", "step", "check", "value", "total", "since",
          "hence", "the", "of", "so", "we", "sum", "term", "case", "rule", "part", "each")


def _filler(n: int, seed: int) -> str:
    """``n`` characters of words drawn with ``seed`` (distinct replies share no prefix)."""
    import random
    rng = random.Random(seed)  # local generator: never the global RNG
    words: list[str] = []
    size = 0
    while size <= n:
        words.append(rng.choice(_WORDS))
        size += len(words[-1]) + 1
    return " ".join(words)[:n]


def fill_schema(schema: dict[str, Any] | None, chars: int, seed: int = 0) -> Any:
    """A JSON value that follows ``schema`` and is about ``chars`` characters long when
    serialised: enums take their first value, integers the middle of their range (array
    items: successive values, see :func:`_build`), keys
    containing "answer" the short text "42-<seed>", and every other string an equal share of
    the remaining characters (words drawn with ``seed``).

    >>> s = {"type": "object", "properties": {"answer": {"type": "string"},
    ...      "confidence": {"type": "integer", "minimum": 1, "maximum": 5},
    ...      "reasoning": {"type": "string"}}}
    >>> v = fill_schema(s, 120)
    >>> v["answer"], v["confidence"], len(json.dumps(v))
    ('42-0', 3, 120)
    """
    if schema is None:
        schema = {"type": "object", "properties": {"answer": {"type": "string"},
                                                   "confidence": {"type": "integer"},
                                                   "reasoning": {"type": "string"}}}
    slots: list[list[str]] = []
    answer = f"{SHORT_TEXT}-{seed % 1000}"
    value = _build(schema, "", slots, answer=answer)
    spare = max(0, chars - len(json.dumps(value)))
    if slots:
        share, extra = divmod(spare, len(slots))
        for i, slot in enumerate(slots):
            slot[0] = _filler(share + (1 if i < extra else 0), seed * 1000 + i)
        value = _build(schema, "", iter(slots), answer=answer)
    return value


def _build(schema: dict[str, Any], key: str, slots: Any, index: int | None = None,
           answer: str = SHORT_TEXT) -> Any:
    """The value of ``schema``; free-text strings are appended to (or taken from) ``slots``.
    Inside an array, item ``index`` takes the index-th enum value or minimum + index (so
    that the items of a list of reviews or decisions are distinct)."""
    if "enum" in schema:
        return schema["enum"][(index or 0) % len(schema["enum"])]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _build(v, k, slots, index, answer) for k, v in props.items()}
    if kind == "array":
        n = max(int(schema.get("minItems", 1)), 1)
        return [_build(schema.get("items", {}), key, slots, i, answer) for i in range(n)]
    if kind in ("integer", "number"):
        lo, hi = schema.get("minimum", 1), schema.get("maximum", 5)
        return int((lo + hi) // 2) if index is None else int(min(hi, lo + index))
    if kind == "boolean":
        return True
    if "answer" in key.lower():
        return answer
    if isinstance(slots, list):
        slot = [""]
        slots.append(slot)
        return ""
    return next(slots)[0]


class DryBackend:
    """Replies of ``fill * max_tokens`` tokens that follow each request's schema."""

    name = "dry"

    def __init__(self, *, fill: float = 1.0, chars_per_token: float = CHARS_PER_TOKEN,
                 message_overhead: int = MESSAGE_OVERHEAD_TOKENS) -> None:
        if not 0.0 < fill <= 1.0:
            raise ValueError(f"invalid fill={fill!r}: a share of the token budget in (0, 1]")
        if chars_per_token <= 0:
            raise ValueError(f"invalid chars_per_token={chars_per_token!r}: use > 0")
        self.fill, self.chars_per_token = float(fill), float(chars_per_token)
        self.message_overhead = int(message_overhead)
        self._blocks: set[bytes] = set()

    @property
    def model_id(self) -> str:
        return f"dry-fill{self.fill:g}-cpt{self.chars_per_token:g}"

    def settings(self) -> dict[str, Any]:
        return {"backend": self.name, "fill": self.fill, "chars_per_token": self.chars_per_token,
                "message_overhead": self.message_overhead}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, request: Request) -> Completion:
        completion_tokens = max(1, round(self.fill * request.max_tokens))
        text = json.dumps(fill_schema(request.schema,
                                      int(completion_tokens * self.chars_per_token),
                                      seed=request.seed))
        prompt_chars = sum(len(m["content"]) for m in request.messages)
        prompt_tokens = round(prompt_chars / self.chars_per_token
                              + self.message_overhead * (len(request.messages) + 1))
        return Completion(text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens,
                          cached_tokens=min(prompt_tokens, self._cached(request)))

    def _cached(self, request: Request) -> int:
        """Tokens of the longest prefix seen before, in whole cache blocks; records this
        prompt's blocks."""
        text = "".join(f"\x1e{m['role']}\x1f{m['content']}" for m in request.messages)
        step = max(1, int(CACHE_BLOCK_TOKENS * self.chars_per_token))
        digest = hashlib.sha1()
        hit, matching = 0, True
        for start in range(0, len(text) - step + 1, step):
            digest.update(text[start:start + step].encode())
            key = digest.digest()
            if matching and key in self._blocks:
                hit += CACHE_BLOCK_TOKENS
            else:
                matching = False
                self._blocks.add(key)
        return hit
