"""Each source's debate protocol: the facts DyLAN's CoT baseline's records show, and the
protocol ``pear import`` writes in the manifest for ``du`` and ``dylan`` runs."""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import replace

import pytest

from pear.store.readers.protocols import Drop, Protocol, Quorum
from pear.paths import REAL_DEBATES_DIR
from pear.store import manifest
from pear.store.importing import import_files
from pear.store.readers.dylan import PROTOCOL as DYLAN
from pear.tasks.benchmarks import load

DYLAN_FILE = REAL_DEBATES_DIR / "dylan-math500-gpt35.json.gz"
_QUOTED = re.compile(r"One agent solution: ```(.*?)```", re.S)


def _chats():
    """Per debate: texts[agent][round] and heard[agent][round] (the answers quoted to it)."""
    data = json.loads(gzip.decompress(DYLAN_FILE.read_bytes()))
    for contexts, *_ in data.values():
        texts = [[m["content"].strip() for m in c if m["role"] == "assistant"] for c in contexts]
        heard = [[[q.strip() for q in _QUOTED.findall(m["content"])]
                  for m in c if m["role"] == "user"][1:] for c in contexts]
        yield texts, heard


def test_dylan_records_show_its_protocol():
    shapes = Counter()
    order = Counter()  # how a recorded other agent's answer is heard: this round or the last
    quoted = Counter()
    for texts, heard in _chats():
        n, rounds = len(texts), len(texts[0])
        shapes[(n, rounds)] += 1
        for i in range(n):
            for r in range(1, rounds):
                quoted[(r, len(heard[i][r - 1]))] += 1
                for j in set(range(n)) - {i}:
                    now, before = texts[j][r], texts[j][r - 1]
                    order["this round" if now in heard[i][r - 1] else
                          "last round" if before in heard[i][r - 1] else "neither"] += 1
                    if now in heard[i][r - 1]:
                        order[("this round", j < i)] += 1
                    elif before in heard[i][r - 1]:
                        order[("last round", j < i)] += 1
    # at most 4 agents and 3 rounds; a quorum of 3 stops after round 0 or 1; 2 kept agents
    # after the ranking agree (2 x 2) or debate the last round (2 x 3)
    assert set(shapes) == {(4, 1), (3, 1), (4, 2), (3, 2), (2, 2), (2, 3)}
    assert (DYLAN.agents, DYLAN.rounds) == (max(n for n, _ in shapes), max(r for _, r in shapes))
    assert min(n for n, r in shapes if r < DYLAN.rounds and n > DYLAN.drop.keep) == \
        DYLAN.stop.after
    assert {n for n, r in shapes if r == DYLAN.rounds} == {DYLAN.drop.keep}
    # round 1: the 3 other agents of 4 quoted in full; round 2: the one other kept agent
    assert quoted[(1, DYLAN.agents - 1)] / sum(v for (r, _), v in quoted.items() if r == 1) > 0.99
    assert set(k for (r, k) in quoted if r == 2) == {DYLAN.drop.keep - 1}
    # sequential: an agent earlier in the round is heard with this round's answer, a later one
    # with the last round's
    assert order[("this round", True)] > 0.95 * (order[("this round", True)]
                                                 + order[("last round", True)])
    assert order[("last round", False)] > 0.95 * (order[("last round", False)]
                                                  + order[("this round", False)])
    assert order["neither"] < 0.01 * sum(order[k] for k in ("this round", "last round"))
    assert DYLAN.order == "sequential" and not DYLAN.confidences and not DYLAN.critiques


@pytest.mark.parametrize("answered, agreeing, stops", [
    (3, 3, True), (3, 2, False), (4, 3, True), (4, 2, False), (2, 2, False)])
def test_dylans_quorum(answered, agreeing, stops):
    assert DYLAN.stop.reached(answered, agreeing) is stops


def test_the_manifest_states_the_sources_protocol(tmp_path):
    q = load("gsm8k")[1]
    chat = [{"role": "user", "content": q.question}, {"role": "assistant", "content": "3"},
            {"role": "user", "content": "others ..."}, {"role": "assistant", "content": "3"}]
    f = tmp_path / "gsm_3_2.json"
    f.write_text(json.dumps({q.question: [[chat, chat, chat], "#### 3"]}))
    import_files("du", [f], tmp_path / "du", dataset="gsm8k")
    du = Protocol.from_dict(manifest.read(tmp_path / "du")["imported"]["protocol"])
    assert (du.name, du.agents, du.rounds, du.order, du.stop, du.drop) == \
        ("du", 3, 2, "simultaneous", None, None)
    assert "gen_gsm.py" in du.source and not du.confidences and not du.critiques
    data = json.loads(gzip.decompress(DYLAN_FILE.read_bytes()))
    few = tmp_path / "few.json"
    few.write_text(json.dumps({k: data[k] for k in list(data)[:3]}))
    import_files("dylan", [few], tmp_path / "dylan", dataset="math500")
    got = Protocol.from_dict(manifest.read(tmp_path / "dylan")["imported"]["protocol"])
    # the import measured how often DyLAN's check missed quorums (none in these 3 debates)
    assert got.stop == Quorum(share=2 / 3, after=3, miss=0.0, miss_right=0.0)
    assert got == replace(DYLAN, stop=got.stop)
    assert got.drop == Drop(before_round=2, keep=2, by="llm_ranker")


@pytest.mark.parametrize("bad, message", [
    ({"name": "x", "agents": 3}, "missing rounds"),
    ({"name": "x", "agents": 3, "rounds": 2, "speed": 1}, "unknown speed"),
    ({"name": "x", "agents": 3, "rounds": 2, "order": "random"}, "order one of"),
    ({"name": "x", "agents": 3, "rounds": 2, "stop": {"share": 1.5, "after": 3}},
     "share=1.5"),
    ({"name": "x", "agents": 3, "rounds": 2, "drop": {"before_round": 2, "keep": 2}},
     "must keep fewer"),
])
def test_a_bad_protocol_is_one_error_naming_it(bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Protocol.from_dict(bad)
