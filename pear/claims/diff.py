"""Claims compared across builds: which claim changed its verdict, or its value beyond what the
two builds' intervals allow, between two builds (two commits, two models, two seeds).

A build's ledger is kept machine-readable beside its tables (``<figures>/claims.json``, written
by notebook ``13_claims`` through :func:`save_ledger`); :func:`diff` compares two of them.  A
claim *moved* when one of its parts (the same label and setting in both builds) has 95 %
intervals that do not overlap, or, for a part without an interval (an exact value, a check),
when that part's verdict changed; a claim one build covers and the other does not has *changed
coverage*.  A finding that flips while every interval still overlaps the other build's is
sampling noise at the threshold, not a move: it is counted (``diff(...).attrs["flips"]``), not
listed.

>>> a = [{"id": "c1", "finding": "supported", "verdict": "supported", "parts": [
...       {"label": "gain", "setting": "m / d", "value": 0.05, "low": 0.01, "high": 0.09}]}]
>>> b = [{"id": "c1", "finding": "inconclusive", "verdict": "inconclusive", "parts": [
...       {"label": "gain", "setting": "m / d", "value": 0.04, "low": -0.01, "high": 0.08}]}]
>>> d = diff(a, b)
>>> d.empty, d.attrs["flips"]
(True, 1)
>>> b[0]["parts"][0].update(value=-0.2, low=-0.3, high=-0.1)
>>> diff(a, b)[["id", "change"]].values.tolist()
[['c1', 'value moved']]
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from pear.paths import write_json
from pear.analysis.report import figures_dir

__all__ = ["LEDGER_FILE", "ledger_records", "save_ledger", "read_ledger", "diff", "diff_html",
           "format_diff"]

LEDGER_FILE = "claims.json"
"""The machine-readable ledger a build writes into its figures directory."""

_KEEP = ("id", "section", "kind", "quote", "printed", "unit", "finding", "verdict",
         "not_evidence", "reason")
_PART = ("label", "setting", "value", "low", "high", "unit", "test", "verdict")


def _plain(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalars
        return _plain(v.item())
    return v


def ledger_records(ledger: pd.DataFrame) -> list[dict[str, Any]]:
    """The ledger (:func:`pear.claims.evaluate.ledger`) as JSON-ready records: each claim's
    identity, finding and verdict, and its parts' values and intervals."""
    out = []
    for _, row in ledger.iterrows():
        parts = []
        for p in row.get("parts") or ():
            d = asdict(p) if is_dataclass(p) else dict(p)
            parts.append({k: _plain(d.get(k)) for k in _PART})
        out.append({**{k: _plain(row.get(k)) for k in _KEEP}, "parts": parts})
    return out


def save_ledger(ledger: pd.DataFrame, name: str = "claims",
                out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Write ``<figures>/<name>.json`` (default :data:`LEDGER_FILE`); returns its path."""
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_json(out / f"{name}.json", ledger_records(ledger), indent=1)


def read_ledger(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A saved ledger: ``path`` is a figures directory holding :data:`LEDGER_FILE`, or the
    file itself."""
    p = Path(path)
    if p.is_dir():
        p = p / LEDGER_FILE
    if not p.is_file():
        raise FileNotFoundError(f"no claims ledger at {str(p)!r}: build the claims notebook "
                                f"(13_claims) first, or give a run directory")
    data = json.loads(p.read_text())
    if not isinstance(data, list) or not all(isinstance(r, dict) and "id" in r for r in data):
        raise ValueError(f"{str(p)!r} is not a claims ledger (a list of claims with ids)")
    return data


def _has_interval(p: Mapping[str, Any]) -> bool:
    lo, hi = p.get("low"), p.get("high")
    return lo is not None and hi is not None and lo < hi


def _moved(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Disjoint 95 % intervals; for a part without an interval, a changed verdict."""
    if _has_interval(a) and _has_interval(b):
        return a["low"] > b["high"] or b["low"] > a["high"]
    return a.get("verdict") != b.get("verdict")


def _interval(p: Mapping[str, Any] | None) -> str:
    if p is None:
        return "absent"
    v, lo, hi = p.get("value"), p.get("low"), p.get("high")
    if v is None:
        return "n/a"
    if lo is None or hi is None or lo == hi:
        return f"{v:.3g}"
    return f"{v:.3g} [{lo:.3g}, {hi:.3g}]"


def diff(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The claims that moved from build ``a`` to build ``b``: one row per moved part (``id``,
    ``change``: "value moved", "coverage changed", "only in a", "only in b"; ``part``,
    ``setting``, ``finding_a``, ``finding_b``, ``a``, ``b``: values with their intervals);
    empty when nothing moved.  ``attrs["flips"]``: findings that changed within overlapping
    intervals (not listed)."""
    by_b = {r["id"]: r for r in b}
    rows: list[dict[str, Any]] = []
    flips = 0
    for ra in a:
        rb = by_b.pop(ra["id"], None)
        if rb is None:
            rows.append(_row(ra["id"], "only in a", ra, None))
            continue
        covered = [r.get("finding") != "not covered" for r in (ra, rb)]
        if covered[0] != covered[1]:
            rows.append(_row(ra["id"], "coverage changed", ra, rb))
            continue
        parts_b = {(p.get("label"), p.get("setting")): p for p in rb.get("parts", ())}
        moved = [(pa, parts_b[key]) for pa in ra.get("parts", ())
                 if (key := (pa.get("label"), pa.get("setting"))) in parts_b
                 and _moved(pa, parts_b[key])]
        rows += [_row(ra["id"], "value moved", ra, rb, pa, pb) for pa, pb in moved]
        flips += not moved and ra.get("finding") != rb.get("finding")
    for rid, rb in by_b.items():
        rows.append(_row(rid, "only in b", None, rb))
    cols = ["id", "change", "part", "setting", "finding_a", "finding_b", "a", "b"]
    out = pd.DataFrame(rows, columns=cols)
    out.attrs["flips"] = flips
    return out


def _row(rid: str, change: str, ra: Mapping[str, Any] | None, rb: Mapping[str, Any] | None,
         pa: Mapping[str, Any] | None = None, pb: Mapping[str, Any] | None = None
         ) -> dict[str, Any]:
    def first(r: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        return (r.get("parts") or [None])[0] if r else None
    pa = pa if pa is not None else first(ra)
    pb = pb if pb is not None else first(rb)
    part = (pa or pb or {}).get("label", "")
    return {"id": rid, "change": change, "part": part,
            "setting": (pa or pb or {}).get("setting", ""),
            "finding_a": ra.get("finding") if ra else None,
            "finding_b": rb.get("finding") if rb else None,
            "a": _interval(pa), "b": _interval(pb)}


def diff_html(table: pd.DataFrame, names: Iterable[str] = ("previous", "this build")) -> str:
    """The diff as an HTML fragment for the results site: a sentence, and a table of the
    claims that moved (both values with their intervals), model texts escaped."""
    import html
    a, b = list(names)
    head = html.escape(format_diff(table, (a, b)).splitlines()[0])
    if table.empty:
        return f"<p>{head}.</p>"
    cols = [("id", "Claim"), ("change", "Change"), ("part", "Part"), ("setting", "Setting"),
            ("finding_a", f"Finding ({a})"), ("finding_b", f"Finding ({b})"),
            ("a", a), ("b", b)]
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(r[c] if r[c] is not None else ''))}"
                                    "</td>" for c, _ in cols) + "</tr>"
                   for r in table.to_dict("records"))
    heads = "".join(f"<th>{html.escape(t)}</th>" for _, t in cols)
    return f"<p>{head}</p><table><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>"


def format_diff(table: pd.DataFrame, names: Iterable[str] = ("A", "B")) -> str:
    """The diff as text lines (what ``pear claims-diff`` prints)."""
    a, b = list(names)
    flips = table.attrs.get("flips", 0)
    noise = (f"; {flips} findings flipped within overlapping intervals (sampling noise at the "
             "threshold, not listed)") if flips else ""
    if table.empty:
        return f"no claim moved between {a} and {b}{noise}"
    lines = [f"{len(table['id'].unique())} claims moved between {a} and {b}{noise}:"]
    for r in table.itertuples():
        where = f" ({r.setting})" if r.setting else ""
        lines.append(f"  {r.id}: {r.change}; {r.finding_a} -> {r.finding_b}; "
                     f"{r.part}{where}: {a} {r.a}, {b} {r.b}")
    return "\n".join(lines)
