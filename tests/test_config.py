"""Bad configurations raise one ValueError naming the bad parameter; presets are replace()s."""
import dataclasses

import pytest

from pear.core.config import DebateConfig, RouterConfig, config_hash
from pear.core.methods import ABLATIONS, METHODS, method


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_agents=5, k=5), "k"),
    (dict(n_agents=5, k=0), "k"),
    (dict(n_agents=1, k=1), "n_agents"),
    (dict(rounds=-1), "rounds"),
    (dict(max_tokens=0), "max_tokens"),
    (dict(temperature=-0.1), "temperature"),
])
def test_bad_debate_config_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}="):
        DebateConfig(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    (dict(alpha_T=-0.1), "alpha_T"),
    (dict(alpha_I=-1), "alpha_I"),
    (dict(alpha_L=-0.5), "alpha_L"),
    (dict(tau_low=0), "tau_low"),
    (dict(tau_low=5), "tau_low"),
    (dict(beta=1.0), "beta"),
    (dict(beta=-0.1), "beta"),
    (dict(tau=-1), "tau"),
    (dict(m_max=0), "m_max"),
    (dict(tau_src=6), "tau_src"),
    (dict(base_graph="complete"), "base_graph"),
])
def test_bad_router_config_names_parameter(kwargs, name):
    with pytest.raises(ValueError, match=rf"\b{name}="):
        RouterConfig(**kwargs)


def test_unknown_method_is_named():
    with pytest.raises(ValueError, match="'debate_all'"):
        method("debate_all")


def test_paper_defaults():
    d, r = DebateConfig(), RouterConfig()
    assert (d.n_agents, d.rounds, d.k, d.max_tokens, d.temperature) == (5, 5, 2, 512, 0.2)
    assert (r.alpha_T, r.alpha_I, r.alpha_L) == (0.4, 0.7, 0.7)
    assert (r.tau_src, r.tau_tgt, r.tau_low, r.beta, r.m_max) == (4, 3, 2, 0.5, 100)


def test_methods_list_is_complete():
    assert set(METHODS) == {"cot", "cot_sc", "clique", "star", "chain", "ring", "random", "pear",
                            "pear_T", "pear_I", "pear_L", "pear_TI", "pear_TL", "pear_IL"}


def test_ablations_zero_the_other_weights():
    full = RouterConfig()
    for name in ABLATIONS:
        r = method(name).router
        kept = set(name.split("_")[1])
        for letter in "TIL":
            expected = getattr(full, f"alpha_{letter}") if letter in kept else 0.0
            assert getattr(r, f"alpha_{letter}") == expected, (name, letter)
    rnd = method("random").router
    assert (rnd.alpha_T, rnd.alpha_I, rnd.alpha_L) == (0, 0, 0)
    assert method("pear").router == full


def test_configs_are_frozen_and_hash_stably():
    d = DebateConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.k = 3
    assert config_hash(d, RouterConfig()) == config_hash(DebateConfig(), RouterConfig())
    assert config_hash(d, RouterConfig()) != config_hash(d, RouterConfig(tau=0.2))


def test_an_ablation_row_keeps_only_known_weights():
    # the method table's rows name the weights they keep (pear.core.methods.keeping)
    from pear.core.methods import keeping
    with pytest.raises(ValueError, match="unknown PEAR weight 'alpha_X'"):
        keeping(("alpha_T", "alpha_X"), RouterConfig())
    r = keeping(("alpha_T", "alpha_L"), RouterConfig(alpha_T=0.3, alpha_I=0.2, alpha_L=0.1))
    assert (r.alpha_T, r.alpha_I, r.alpha_L) == (0.3, 0.0, 0.1)


def test_whole_number_is_the_one_integer_argument_check():
    """Every integer argument a user gives (workers, seeds, n, k, replicates, n_boot ...) is
    checked by pear.core.config.whole_number: an int or a numpy integer in bounds, as an int."""
    import numpy as np
    from pear.core.config import whole_number
    assert whole_number(np.int32(4), "k", 1) == 4 and type(whole_number(np.int32(4), "k")) is int
    assert whole_number(-3, "seed", None) == -3
    for bad, pattern in [(True, "invalid k=True: use a whole number >= 1"),
                         (2.0, "invalid k=2.0"), ("3", "invalid k='3'"), (0, "invalid k=0")]:
        with pytest.raises(ValueError, match=pattern):
            whole_number(bad, "k", 1)
    with pytest.raises(ValueError, match=r"invalid n=6: use a whole number >= 1 and <= 5"):
        whole_number(6, "n", 1, 5)
    with pytest.raises(ValueError, match="invalid seed=-1: a bootstrap seed >= 0"):
        whole_number(-1, "seed", 0, fix="a bootstrap seed >= 0")
