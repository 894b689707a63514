"""pear.core.hashing, the one owner of seeds and ids, keeps the values the records were written
with (the formulas recomputed independently here), so no record id, seed or directory name
changed when the call sites moved to it."""
import hashlib
import json

from pear.core import config, engine, hashing
from pear.tasks import benchmarks as data
from pear.runs.runner import model_dir


def test_reproduces_the_seeds():
    parts = (3, "pear", "gsm8k", "q7", 2, 1, "critique")
    blob = "\x1f".join(map(str, parts)).encode()
    assert hashing.derive_seed(*parts) == \
        int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF
    assert data.stable_seed("truthfulqa", 5) == \
        int.from_bytes(hashlib.sha256(b"truthfulqa:5").digest()[:8], "big")
    assert hashing.base_graph_seed(0, "gsm8k", "q1") == \
        hashing.derive_seed(0, "gsm8k", "q1", "base_graph")


def test_request_seeds_are_the_derived_seeds_of_their_parts():
    for seed, method, dataset, qid, agent, r in [(0, "pear", "gsm8k", "q1", 2, 1),
                                                  (7, "sc@64", "math500", "test/x.json", 0, 3),
                                                  (-1, "random", "mmlu_pro", "é 1", 4, 12)]:
        assert hashing.request_seed(seed, method, dataset, qid, agent, 0, "initial") == \
            hashing.derive_seed(seed, "round0", dataset, qid, agent, "initial")
        assert hashing.request_seed(seed, method, dataset, qid, agent, r, "critique") == \
            hashing.derive_seed(seed, method, dataset, qid, agent, r, "critique")
        assert hashing.request_seed(seed, method, dataset, qid, agent, r, "revision") == \
            hashing.derive_seed(seed, method, dataset, qid, agent, r, "update")


def test_reproduces_the_ids():
    cfg = config.DebateConfig(rounds=3)
    blob = json.dumps([config.identity_dict(cfg)], sort_keys=True, separators=(",", ":"),
                      default=str)
    assert hashing.hex_id(blob, n=16) == config.config_hash(cfg)
    assert model_dir("runs", "org/model").name.endswith("-" + hashing.hex_id("org/model", n=10))


def test_reproduces_the_debate_id():
    from pear.runs.grid import preset
    from pear.runs.jobs import jobs
    from pear.sim.backend import SimulatedBackend
    from pear.runs.grid import answer_key
    exp = preset("smoke", datasets=("gsm8k",), methods=("pear",), seeds=(1,),
                 full_datasets=())
    eng = engine.Engine(SimulatedBackend(answer_key(exp)), exp.debate)
    ident = eng.identity(jobs(exp)[0])
    fields = {k: v for k, v in ident.items() if k != "debate_id"}
    assert hashing.hex_id(*(fields[k] for k in sorted(fields)), n=20) == ident["debate_id"]
