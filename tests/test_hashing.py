"""pear.core.hashing reproduces every stable id and seed the project derives today, so the call
sites can switch to it without changing a record id, a seed or a directory name."""
import json

from pear.core import config, engine, hashing
from pear.tasks import benchmarks as data
from pear.runs.experiment import model_dir


def test_reproduces_the_seeds():
    parts = (3, "pear", "gsm8k", "q7", 2, 1, "critique")
    assert hashing.int_seed(*parts, nbytes=4, bits=31) == engine.derive_seed(*parts)
    assert hashing.int_seed("truthfulqa", 5, sep=":") == data.stable_seed("truthfulqa", 5)


def test_reproduces_the_ids():
    cfg = config.DebateConfig(rounds=3)
    blob = json.dumps([config.identity_dict(cfg)], sort_keys=True, separators=(",", ":"),
                      default=str)
    assert hashing.hex_id(blob, n=16) == config.config_hash(cfg)
    assert model_dir("runs", "org/model").name.endswith("-" + hashing.hex_id("org/model", n=10))


def test_reproduces_the_debate_id():
    from pear.runs.experiment import jobs, preset
    from pear.backends.simulated import SimulatedBackend
    from pear.runs.experiment import answer_key
    exp = preset("smoke", datasets=("gsm8k",), methods=("pear",), seeds=(1,),
                 full_datasets=())
    eng = engine.Engine(SimulatedBackend(answer_key(exp)), exp.debate)
    ident = eng.identity(jobs(exp)[0])
    fields = {k: v for k, v in ident.items() if k != "debate_id"}
    assert hashing.hex_id(*(fields[k] for k in sorted(fields)), n=20) == ident["debate_id"]
