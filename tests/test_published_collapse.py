"""The population held against published per-model figures (pear.populations.published_collapse):
the published intervals, the strength matching, and that the simulated collapse follows
the revision model."""
from __future__ import annotations

import dataclasses

import pytest

from pear.populations import published_collapse as P
from pear.sim.population import RevisionModel, load


def test_intervals_are_the_sources_where_given_else_wilsons():
    sonnet = next(f for f in P.PUBLISHED if f.model == "Claude Sonnet 4.5")
    assert sonnet.collapse_interval() == (0.0059, 0.0751)
    qwen = next(f for f in P.PUBLISHED if f.model == "Qwen3-8B")
    lo, hi = qwen.collapse_interval()  # 200 debates, 56 with a right round-0 vote
    assert 0 < lo < qwen.collapse < hi < 0.2
    lo, hi = qwen.recover_interval()  # 144 with a wrong one
    assert lo < qwen.recover < hi and hi - lo < 0.2
    assert len(P.PUBLISHED) == 11 and all(0 < f.initial < 1 for f in P.PUBLISHED)


def test_the_round0_majority_is_matched_to_each_models():
    figs = [f for f in P.PUBLISHED if f.model in ("Qwen3-8B", "Gemini 3 Flash")]
    df = P.check("grounded", replicates=1, n_questions=120, figures=figs)
    assert list(df["model"]) == ["Gemini 3 Flash", "Qwen3-8B"]  # PUBLISHED's order
    assert abs(df["sim_initial"] - df["initial"]).max() < 0.06
    assert df["agent_acc"].iloc[1] < df["agent_acc"].iloc[0]  # weaker agents for the weaker model
    assert df[["sim_collapse", "sim_recover"]].stack().between(0, 1).all()


def _with(pop, **coef):
    c = dict(zip(RevisionModel.FEATURES, pop.revision.coef)) | coef
    return dataclasses.replace(pop, revision=RevisionModel(
        tuple(c[f] for f in RevisionModel.FEATURES), pop.revision.critique_weight))


def test_collapse_follows_the_revision_model():
    g = load("grounded")
    fig = [next(f for f in P.PUBLISHED if f.model == "Phi-4-mini")]
    keep = P.check(_with(g, own=60.0), replicates=1, n_questions=150, figures=fig)
    drift = P.check(_with(g, own=-60.0, share=0.0, new=3.0), replicates=1, n_questions=150,
                    figures=fig)
    # agents that always keep their answer: the vote moves only where a tie is drawn again
    assert keep["sim_collapse"].iloc[0] < 0.1
    assert drift["sim_collapse"].iloc[0] > 0.3 > keep["sim_collapse"].iloc[0]


def test_the_command_prints_the_table(capsys):
    from pear.cli import main
    assert main(["population", "published", "--replicates", "1", "--questions", "40"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("grounded against DebateLedger (arXiv 2609.35279)")
    assert "| Llama-3.1-8B | 0.507" in out and "of 22 simulated shares inside" in out


@pytest.mark.parametrize("bad", [0.0, 1.0])
def test_a_figure_with_no_debates_on_one_side_is_refused(bad):
    fig = P.Figure("x", 100, bad, 0.1, 0.1)
    with pytest.raises(ValueError):
        fig.collapse_interval() if bad == 0.0 else fig.recover_interval()


@pytest.mark.slow
def test_a_stubborn_model_is_matched_inside_both_published_intervals():
    """GPT-4o-mini (collapse 0.024, recovery 0.10: a model that keeps right and wrong
    majorities alike), which bisecting one effect at a time left out: the grid lands inside
    both intervals, with a firm keep and no extra pull of a right answer."""
    fig = next(f for f in P.PUBLISHED if f.model == "GPT-4o-mini")
    member, d = P.match(fig, load("grounded"))
    assert d["inside"], d
    c_lo, c_hi = fig.collapse_interval()
    assert c_lo <= d["simulated_collapse"] <= c_hi
    assert d["effects"]["keep"]["estimate"] > 1.0 >= abs(d["effects"]["follow_right"]["estimate"])
    assert member.name == "ledger-gpt-4o-mini"
