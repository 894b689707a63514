"""The default protocol is unchanged: a seeded simulated run reproduces the golden records
(tests/golden/) field for field, timing fields aside (floats equal to 1e-12 relative).
Regenerate the golden file with
``PYTHONPATH=$PWD python -m tests.golden`` only when a protocol change is intended."""
import importlib.util
import json
import math
import sys
from pathlib import Path

_DIR = Path(__file__).with_name("golden")
_spec = importlib.util.spec_from_file_location("pear_golden", _DIR / "__init__.py")
golden = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("pear_golden", golden)
_spec.loader.exec_module(golden)


def _differences(old, new, path=""):
    """Paths where ``new`` differs from ``old`` (first few), for a readable failure."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            if k not in new:
                out.append(f"{path}.{k}: missing")
            elif k not in old:
                out.append(f"{path}.{k}: not in the golden record")
            else:
                out += _differences(old[k], new[k], f"{path}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new))
                for d in _differences(a, b, f"{path}[{i}]")]
    if isinstance(old, float) and isinstance(new, float):
        # a float may differ in its last bits when a sum is reordered (e.g. the router's score
        # S = a_T T~ - a_I I~ - a_L L~ vs the same sum folded per edge); anything a rounding
        # change could flip (a graph, a vote, a choice) is compared exactly
        same = math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-15)
    else:
        same = old == new and type(old) is type(new)
    return [] if same else [f"{path}: golden {old!r}, now {new!r}"]


def _expected_additions(rec):
    """Fields added to records after the golden file was recorded (issue 14: stop, roles,
    mixed models; issue 36: each round's cost, checked in :func:`_without_additions`) and
    the values the default protocol must give them.  Once the file is
    regenerated they are in it and compared like every other field."""
    debate = rec["method"] not in ("cot", "cot_sc")
    return ({"stop_reason": "max_rounds" if debate else None, "gold_shown_to": [],
             "max_rounds": rec["rounds"]},
            {"role": "honest", "model": rec["model"]})


def _without_additions(stored, now):
    """``now`` with the added fields that ``stored`` lacks removed, after checking them."""
    on_record, on_agent = _expected_additions(now)
    wrong = []
    now = dict(now)
    for key, want in on_record.items():
        if key not in stored and key in now:
            got = now.pop(key)
            wrong += [] if got == want else [f".{key}: {got!r}, expected {want!r}"]
    now["rounds_data"] = [dict(rd) for rd in now["rounds_data"]]
    # each round's cost (added for records cut at a stop rule): the rounds add up to the
    # record's tokens and truncated calls, which are compared with the golden ones
    spent = {"prompt": 0, "completion": 0, "cached": 0, "truncated_calls": 0}
    for rd, old in zip(now["rounds_data"], stored["rounds_data"]):
        if "tokens" in rd and "tokens" not in old:
            for key, value in rd.pop("tokens").items():
                spent[key] += value
            spent["truncated_calls"] += rd.pop("truncated_calls")
    if "tokens" not in stored["rounds_data"][0]:
        want = {**now["tokens"], "truncated_calls": now["truncated_calls"]}
        wrong += [] if spent == want else [f".rounds_data costs: {spent!r}, expected {want!r}"]
    for rd, old in zip(now["rounds_data"], stored["rounds_data"]):
        rd["agents"] = [dict(a) for a in rd["agents"]]
        for a, old_a in zip(rd["agents"], old["agents"]):
            for key, want in on_agent.items():
                if key not in old_a and key in a:
                    got = a.pop(key)
                    wrong += [] if got == want else [f".agents.{key}: {got!r}, expected {want!r}"]
    return now, wrong


def test_default_protocol_reproduces_the_golden_records():
    stored = golden.load()
    now = json.loads(json.dumps(golden.generate()))  # as stored: JSON types
    assert len(stored) == 84 and len(now) == len(stored)
    assert {r["method"] for r in stored} >= {"cot", "cot_sc", "clique", "pear", "random"}
    assert sum(r["parse_failures"] for r in stored) > 0  # junk completions are covered
    diffs = []
    for s, n in zip(stored, now):
        n, wrong = _without_additions(s, n)
        diffs += [f"{s['method']} {s['question_id']}{d}" for d in wrong + _differences(s, n)]
    assert not diffs, "\n".join(diffs[:20])
