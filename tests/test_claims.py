"""The claims ledger: each evaluator kind on hand-built records with a known verdict
(supported, contradicted, inconclusive, not covered), the ledger's one row per claim with a
verdict or a reason, the study's side recomputed from its own tables, and the HTML
fragment escaped."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pear.claims import evaluate as claims, evidence
from pear.paper import ledger
from pear.store import view
from record_factory import make_record, make_simple

RAW = claims.load_recompute()
CLAIMS = claims.load_claims().set_index("id")
PAPER = evidence.paper_source()


def simple(method: str, right: list[bool], *, dataset: str = "gsm8k", seed: int = 0,
           model: str = "m", tokens: tuple[int, int, int] = (100, 50, 0)) -> list[dict]:
    """One single-round record per question q0, q1, ... (right or wrong)."""
    return [make_simple(r, method=method, question_id=f"q{i}", dataset=dataset, seed=seed,
                        model=model, tokens=tokens) for i, r in enumerate(right)]


def source(records: list[dict], full: list[dict] | None = None, **kw) -> evidence.Source:
    sub = view.from_records(records)
    fv = view.from_records(full) if full else None
    return evidence.build_source(sub, fv, rng=np.random.default_rng(0), n_boot=400, **kw)


def judge(claim_id: str, src: evidence.Source) -> claims.ClaimResult:
    return claims.evaluate(CLAIMS.loc[claim_id].to_dict() | {"id": claim_id},
                           RAW["claims"][claim_id], src, PAPER, RAW)


def pattern(n: int, k: int) -> list[bool]:
    """k right answers out of n, spread evenly."""
    return [(i * k) // n != ((i + 1) * k) // n for i in range(n)]


# ----------------------------------------------------------------- number (estimate)

@pytest.mark.parametrize("right, n, verdict", [
    (2100, 3000, "supported"),       # 0.700: interval +-0.017 meets 0.701 +- 0.0005
    (200, 400, "contradicted"),      # 0.500: interval excludes 0.701
    (35, 50, "inconclusive"),        # 0.700 on 50 questions: too wide to tell
])
def test_number_claim_against_its_printed_value(right, n, verdict):
    res = judge("res-mean-acc-pear", source(simple("pear", pattern(n, right))))
    assert res.finding == verdict
    part = res.parts[0]
    assert part.value == pytest.approx(right / n) and part.printed == 0.701
    assert part.low < part.value < part.high
    if verdict == "inconclusive":   # n x (half-width / 0.02)^2 questions would decide it
        half = (part.high - part.low) / 2
        assert res.n_needed == pytest.approx(n * (half / 0.02) ** 2, rel=0.01)


def test_number_claim_without_its_method_is_not_covered():
    res = judge("res-mean-acc-pear", source(simple("clique", [True, False] * 5)))
    assert res.finding == "not covered" and "no pear" in res.reason


# ----------------------------------------------------------------- count (per setting)

def _pear_vs_fixed(pear_right: int, fixed_right: int, n: int = 20) -> list[dict]:
    recs = []
    for ds in ("gsm8k", "math500"):
        recs += simple("pear", pattern(n, pear_right), dataset=ds)
        for m in ("clique", "star", "chain", "ring"):
            recs += simple(m, pattern(n, fixed_right), dataset=ds)
    return recs


@pytest.mark.parametrize("pear, fixed, verdict", [
    (20, 0, "supported"), (0, 20, "contradicted"), (11, 10, "inconclusive")])
def test_count_claim_over_every_setting(pear, fixed, verdict):
    res = judge("intro-beats-fixed-all-settings", source(_pear_vs_fixed(pear, fixed)))
    assert res.finding == verdict
    assert [p.setting for p in res.parts] == ["m / gsm8k", "m / math500"]
    assert res.parts[0].value == pytest.approx(100 * (pear - fixed) / 20)
    if verdict == "inconclusive":
        assert res.n_needed and res.n_needed > 20


def test_count_claim_without_fixed_topologies_is_not_covered():
    res = judge("intro-beats-fixed-all-settings", source(simple("pear", [True] * 5)))
    assert res.finding == "not covered"


# ----------------------------------------------------------------- ordering

def test_ordering_claim_on_the_builds_own_model_when_the_studys_are_absent():
    recs = simple("pear", [True] * 30)
    for m in ("pear_T", "pear_I", "pear_L", "pear_TI", "pear_TL", "pear_IL"):
        recs += simple(m, [False] * 30)
    res = judge("abl-full-best-on-average", source(recs))
    assert res.finding == "supported" and res.parts[0].value == 100.0
    assert "on this build's models (m)" in res.parts[0].note
    worse = simple("pear", [False] * 30) + simple("pear_IL", [True] * 30) + [
        r for r in recs if r["method"] not in ("pear", "pear_IL")]
    assert judge("abl-full-best-on-average", source(worse)).finding == "contradicted"
    assert judge("abl-llama-full-beats-all-ablations", source(recs)).finding == "not covered"


# ----------------------------------------------------------------- significance (exact test)

def _full(b: int, c: int, both: int = 15) -> list[dict]:
    """PEAR and Clique on the full TruthfulQA set: b questions only PEAR gets right, c only
    Clique, ``both`` both."""
    pear = [True] * b + [False] * c + [True] * both
    clique = [False] * b + [True] * c + [True] * both
    return simple("pear", pear, dataset="truthfulqa") + simple("clique", clique,
                                                                dataset="truthfulqa")


@pytest.mark.parametrize("b, c, verdict", [
    (30, 5, "supported"), (5, 30, "contradicted"), (6, 4, "inconclusive")])
def test_significance_claim_by_the_exact_mcnemar_test(b, c, verdict):
    sub = simple("pear", [True] * 4, dataset="truthfulqa")
    res = judge("sig-all-eight-p-lt-0.05", source(sub, _full(b, c)))
    assert res.finding == verdict
    from pear.analysis.stats import mcnemar
    assert res.parts[0].value == pytest.approx(mcnemar(b, c).pvalue_exact)
    if verdict == "inconclusive":   # questions for 80 % power at the observed 6:4 discordance
        h = 2 * np.arcsin(np.sqrt(0.6)) - 2 * np.arcsin(np.sqrt(0.5))
        pairs = ((1.959964 + 0.841621) / h) ** 2       # discordant pairs needed
        assert res.n_needed == pytest.approx(pairs * (b + c + 15) / (b + c), rel=0.01)


def test_significance_claim_without_full_sets_is_not_covered():
    res = judge("sig-all-eight-p-lt-0.05", source(simple("pear", [True] * 4)))
    assert res.finding == "not covered" and "significance" in res.reason


# ----------------------------------------------------------------- correlation

def _ranked(order: list[str], dataset: str = "truthfulqa", n: int = 60) -> list[dict]:
    """Methods whose accuracies rise in ``order``, 8 questions of 60 apart."""
    return [r for i, m in enumerate(order) for r in simple(m, pattern(n, 8 * i + 4),
                                                           dataset=dataset)]


METHODS7 = ["cot", "cot_sc", "clique", "star", "chain", "ring", "pear"]


def test_correlation_claim_on_the_rank_agreement_of_subset_and_full_set():
    same = judge("spearman-all-significant-0.79-0.96",
                 source(_ranked(METHODS7), _ranked(METHODS7)))
    assert same.finding == "supported"
    assert [p.value for p in same.parts] == pytest.approx([0.0, 1.0], abs=1e-6)
    flipped = judge("spearman-all-significant-0.79-0.96",
                    source(_ranked(METHODS7), _ranked(METHODS7[::-1])))
    assert flipped.finding == "contradicted"
    assert judge("spearman-rho-values", source(_ranked(METHODS7), _ranked(METHODS7))) \
        .finding == "not covered"    # its values are the study's models'


# ----------------------------------------------------------------- cost

@pytest.mark.parametrize("random_tokens, verdict", [((100, 50, 0), "supported"),
                                                    ((250, 50, 0), "contradicted")])
def test_cost_claim_on_tokens_per_example(random_tokens, verdict):
    recs = simple("pear", [True] * 10) + simple("random", [True] * 10, tokens=random_tokens)
    res = judge("cost-pear-comparable-to-random", source(recs))
    assert res.finding == verdict
    assert res.parts[0].value == pytest.approx(100 * (150 / sum(random_tokens[:2]) - 1))


# ----------------------------------------------------------------- trend (round by round)

def _rounds(k_right: list[int], n: int = 40, method: str = "pear") -> list[dict]:
    """Debates of 3 agents whose vote is right after round r in k_right[r] of n questions."""
    out = []
    for q in range(n):
        rows = [["1"] * 3 if q < k else ["0"] * 3 for k in k_right]
        out.append(make_record(rows, "1", method=method, question_id=f"q{q}"))
    return out


@pytest.mark.parametrize("curve, verdict", [
    ([8, 20, 32], "supported"), ([32, 20, 8], "contradicted"), ([20, 20, 19], "inconclusive")])
def test_trend_claim_on_round_wise_accuracy(curve, verdict):
    res = judge("rounds-pear-non-decreasing", source(_rounds(curve)))
    assert res.finding == verdict
    assert [p.value for p in res.parts] == pytest.approx([100 * (curve[2] - curve[1]) / 40])


# ----------------------------------------------------------------- mechanism

def _routed(method: str, edges_by_round: list[list[tuple[int, int]]], n: int = 20,
            confidences: list[int] | None = None, dataset: str = "gsm8k") -> list[dict]:
    out = []
    for q in range(n):
        answers = [["1", "0", "1", "0"]] * (len(edges_by_round) + 1)
        conf = [confidences or [5, 3, 4, 1]] * len(answers)
        crit = {r + 1: [(s, t, "ACCEPT") for s, t in e] for r, e in enumerate(edges_by_round)}
        out.append(make_record(answers, "1", method=method, question_id=f"q{q}",
                               confidences=conf, critiques=crit, dataset=dataset))
    return out


def test_mechanism_claims_on_routing_logs_and_the_router():
    hub = [[(0, 1), (0, 2), (0, 3), (1, 0)]] * 3                 # agent 0 leads every round
    moving = [[(0, 1), (0, 2), (1, 3), (3, 0)], [(1, 0), (1, 2), (2, 3), (3, 1)],
              [(2, 0), (2, 1), (0, 3), (3, 2)]]                    # the leader changes
    recs = _routed("star", hub) + _routed("pear", moving)
    src = source(recs)
    res = judge("abs-no-permanent-privileged-position", src)
    assert res.finding == "supported"
    assert [p.value for p in res.parts] == [1.0, 0.0]
    stuck = source(_routed("star", hub) + _routed("pear", hub))
    assert judge("abs-no-permanent-privileged-position", stuck).finding == "contradicted"
    # the router's own theorems hold on the logged states; the "relative confidence"
    # limitation does not describe it (its T and L terms use absolute thresholds)
    assert judge("thm-equivariance-score-and-router", src).finding == "supported"
    assert judge("thm-softmax-one-round-bound", src).finding == "supported"
    assert judge("lim-relative-confidence", src).finding == "contradicted"
    assert judge("thm-equivariance-score-and-router",
                 source(simple("cot", [True]))).finding == "not covered"


# ----------------------------------------------------------------- the ledger

@pytest.fixture(scope="module")
def small_ledger() -> pd.DataFrame:
    return claims.ledger(build=source(_pear_vs_fixed(15, 10) + _routed("pear", [
        [(0, 1), (0, 2), (1, 3), (3, 0)]], dataset="truthfulqa")))


def test_the_ledger_holds_one_row_per_claim_each_with_a_verdict_or_a_reason(small_ledger):
    csv = claims.load_claims()
    # claims.csv's 102 and the 2 of claims_added.csv
    assert list(small_ledger["id"]) == list(csv["id"]) and len(small_ledger) == 104
    assert small_ledger["verdict"].isin(claims.VERDICTS).all()
    quiet = small_ledger[small_ledger["verdict"].isin(["not covered", "inconclusive"])]
    assert (quiet["reason"].str.len() > 0).all()
    counts = claims.verdict_counts(small_ledger)
    assert counts["verdict"].sum() == 104 and list(counts.index) == list(claims.VERDICTS)


def test_a_silently_skipped_claim_fails(small_ledger, tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="one row per claim"):
        claims._check(small_ledger.drop(index=5), claims.load_claims())
    blank = small_ledger.copy()
    i = blank.index[blank["verdict"] == "not covered"][0]
    blank.loc[i, "reason"] = ""
    with pytest.raises(AssertionError, match="without a reason"):
        claims._check(blank, claims.load_claims())
    text = claims.RECOMPUTE_FILE.read_text()
    cut = tmp_path / "recompute.toml"
    cut.write_text(text.replace('[claims."res-mean-acc-star"]', '[claims."nothing"]'))
    monkeypatch.setattr(claims, "RECOMPUTE_FILE", cut)
    with pytest.raises(ValueError, match="1 claims with no recompute entry.*res-mean-acc-star"):
        claims.load_recompute()


def test_simulated_builds_are_not_evidence_but_show_their_finding():
    recs = _pear_vs_fixed(20, 0) + _routed("pear", [[(0, 1), (0, 2), (1, 3), (3, 0)]],
                                           dataset="truthfulqa")
    for r in recs:
        r["backend"] = "simulated"
    out = claims.ledger(build=source(recs))
    row = out.set_index("id").loc["intro-beats-fixed-all-settings"]
    assert (row["verdict"], row["finding"]) == ("not evidence", "supported")
    # why not is a field of its own, said in words where shown; the reason is the finding's
    assert row["not_evidence"] == "simulated" and "simulated" not in row["reason"]
    assert ledger.why(row) == (claims.not_evidence_text("simulated", "supported")
                               + (f"; {row['reason']}" if row["reason"] else ""))
    assert ledger.table_ledger(out).loc["intro-beats-fixed-all-settings", "Why"].startswith(
        "simulated agents: the finding (supported) is a statement about the simulated "
        "mechanism, not about the study's models")
    with pytest.raises(ValueError, match="invalid not_evidence 'real'"):
        claims.not_evidence_text("real", "supported")
    router = out.set_index("id").loc["thm-equivariance-score-and-router"]
    assert router["verdict"] == router["finding"] == "supported"   # a check of the router


def test_the_studys_tables_are_recomputed_and_agree_with_claims_csv(small_ledger):
    table = ledger.table_consistency(small_ledger)
    assert (table["Agree"] != "NO").all()
    assert (table["Agree"] == "yes").sum() >= 60
    row = small_ledger.set_index("id").loc["res-mean-acc-pear"]
    assert row["table_finding"] == "does not hold"            # 0.701 printed, 0.748 in Table 1
    assert row["table_parts"][0].value == pytest.approx(0.7475, abs=5e-4)
    assert small_ledger.set_index("id").loc["cost-pear-vs-random-5.7", "table_finding"] == "holds"


def test_forest_rows_and_the_html_fragment_escape_every_text(small_ledger):
    forest = ledger.forest_frame(small_ledger)
    assert {"printed", "recomputed", "reproduced", "low", "high"} <= set(forest.columns)
    assert (forest["unit"] != "count").all() and len(forest) > 10
    evil = small_ledger.copy()
    evil.loc[0, "quote"] = '<script>alert("x")</script>'
    evil.at[0, "debates"] = ['m|gsm8k|<img src=x onerror=alert(1)>']
    html = ledger.ledger_html(evil, source="<b>build</b>")
    assert "<script>" not in html and "<img" not in html and "<b>build" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    assert html.count("<tr id=\"claim-") == 104
    assert "claims-counts" in html and ledger.counts_line(small_ledger) .split(",")[0] \
        .split()[0] in html
    cid = small_ledger["id"].iloc[3]
    said = ledger.ledger_html(small_ledger, family={
        cid: "holds in 2 of 5 members: those where <b>x</b>. Holds in: a, b."})
    row = said[said.index(f'id="claim-{cid}"'):].split("</tr>")[0]
    assert " · family: holds in 2 of 5 members</summary>" in row
    assert "<dt>Across the family</dt>" in row and "&lt;b&gt;x" in row
    assert said.count("Across the family") == 1


def test_permanent_hub_per_debate():
    """A debate has a permanent hub when one agent alone has the largest out-degree in every
    debate round: the same agent each round (1), another agent in some round or a tie for the
    top (0), no routed rounds (NaN); round 0's edges do not count."""
    edges = pd.DataFrame(
        [(0, 1, 2), (0, 1, 2), (0, 1, 0), (0, 2, 2), (0, 2, 1), (0, 2, 2),  # agent 2 both
         (1, 1, 0), (1, 1, 0), (1, 2, 1), (1, 2, 1),                      # 0, then 1
         (2, 1, 0), (2, 1, 1), (2, 2, 0), (2, 2, 0),                      # a tie in round 1
         (3, 0, 1), (3, 0, 1),                                            # round 0 only
         (4, 1, 3)],                                                      # one round
        columns=["debate", "round", "source"])
    debates = pd.DataFrame({"debate": [0, 1, 2, 3, 4, 5]})
    got = evidence._hub(debates, edges).tolist()
    assert got[:3] == [1.0, 0.0, 0.0] and got[4] == 1.0
    assert np.isnan(got[3]) and np.isnan(got[5])
