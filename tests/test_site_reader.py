"""The results site as a reviewer reads it: the claims ledger shows a sentence the study
splits into parts (one claim per dataset, say) once, each part's row labelled by what sets it
apart; the debate browser shows each question's opening words, escaped, and searches them
and the ids (in a real headless Chromium when one is installed), and lists the debates
plainly with JavaScript off."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pear.claims import evaluate as claims
from pear.paper import ledger, site
from pear.store import view
from record_factory import make_record

LLAMA = ("on Llama-3.1-8B, PEAR gains 8.0, 9.0, and 9.5 points on MMLU-Pro, GSM8K, and "
         "MATH-500 respectively")


def _rows(claims_csv: pd.DataFrame) -> pd.DataFrame:
    """Ledger rows for claims of ``claims.csv`` (as :func:`pear.claims.evaluate.ledger` gives
    them; the verdicts made up, the text and scope the study's)."""
    n = len(claims_csv)
    return claims_csv.assign(
        table_finding="holds", reproduced="", finding="supported", verdict="supported",
        reason="", evidence=[[] for _ in range(n)], debates=[[] for _ in range(n)])


# ----------------------------------------------------------------- the ledger

def test_a_claim_of_several_parts_shows_its_text_once_and_labels_each_part():
    csv = claims.load_claims()
    html = ledger.ledger_html(_rows(csv), title="")
    assert html.count(LLAMA) == 1
    for cid, label in (("res-llama-gain-mmlu-pro", "MMLU-Pro: 8.0"),
                       ("res-llama-gain-gsm8k", "GSM8K: 9.0"),
                       ("res-llama-gain-math500", "MATH-500: 9.5")):
        assert re.search(rf'<tr id="claim-{cid}" [^>]*><td><span class="part-label">'
                         rf"{re.escape(label)}</span></td>", html)
    # the sentence heads its parts, right before the first one
    assert re.search(rf'<tr class="claim-parts"><td colspan="3">{re.escape(LLAMA)} '
                     r'<span class="n-parts">\(3 parts\)</span></td></tr>\n'
                     r'<tr id="claim-res-llama-gain-mmlu-pro"', html)
    # every claim's text once, as the first cell of a row; every claim id still a row
    rows = _rows(csv)
    for group in ledger.claim_groups(rows):
        text = ledger.escape(ledger.claim_text(group))
        assert html.count(f"<td>{text}</td>") + html.count(f'<td colspan="3">{text} ') == 1
    assert html.count('<tr id="claim-') == len(csv)
    # split per dataset: Llama gains, Qwen rounds, GPT rounds; listing numbers: the mean
    # accuracies, the per-dataset gains, PEAR's tokens beside Clique's, its gains in cost
    assert html.count('class="claim-parts"') == 7


MEAN_ACC = ("PEAR reaches a mean accuracy of 0.701, compared with 0.620 for Fixed Clique, "
            "0.602 for Fixed Star, 0.610 for Fixed Chain, and 0.609 for Fixed Ring")
GAINS = ("Per-dataset gains over the best fixed topology are 6.0 points on MMLU-Pro, 3.9 on "
         "TruthfulQA, 4.8 on GSM8K, and 5.6 on MATH-500")


@pytest.mark.parametrize("text, parts", [
    (MEAN_ACC, [("res-mean-acc-pear", "PEAR reaches a mean accuracy of 0.701"),
                ("res-mean-acc-clique", "0.620 for Fixed Clique"),
                ("res-mean-acc-star", "0.602 for Fixed Star"),
                ("res-mean-acc-chain", "0.610 for Fixed Chain"),
                ("res-mean-acc-ring", "0.609 for Fixed Ring")]),
    (GAINS, [("res-gain-vs-best-fixed-mmlu-pro",
              "Per-dataset gains over the best fixed topology are 6.0 points on MMLU-Pro"),
             ("res-gain-vs-best-fixed-truthfulqa", "3.9 on TruthfulQA"),
             ("res-gain-vs-best-fixed-gsm8k", "4.8 on GSM8K"),
             ("res-gain-vs-best-fixed-math500", "5.6 on MATH-500")])])
def test_a_sentence_listing_values_is_one_claim_with_its_parts(text, parts):
    """The study's sentence that lists several numbers is transcribed one row per number,
    each quoting only its item ("0.602 for Fixed Star"): the ledger shows the sentence once
    as one claim, each number a part of it, never an item as a claim of its own."""
    csv = claims.load_claims()
    rows = _rows(csv)
    group = next(g for g in ledger.claim_groups(rows) if parts[0][0] in set(g["id"]))
    assert list(group["id"]) == [cid for cid, _ in parts]
    assert ledger.claim_text(group) == text
    html = ledger.ledger_html(rows, title="")
    n = len(parts)
    ids = "".join(rf'\n<tr id="claim-{re.escape(cid)}" class="verdict-supported claim-part">'
                  rf'<td><span class="part-label">{re.escape(label)}</span></td>[^\n]*'
                  for cid, label in parts)
    assert re.search(rf'<tr class="claim-parts"><td colspan="3">{re.escape(text)} '
                     rf'<span class="n-parts">\({n} parts\)</span></td></tr>{ids}', html)
    for cid, _ in parts:
        assert len(re.findall(rf'<tr id="claim-{re.escape(cid)}"', html)) == 1
    items = csv.set_index("id").loc[[cid for cid, _ in parts[1:]], "quote"]
    for item in items:  # no item of the list as a claim's text of its own
        assert f"<td>{item}</td>" not in html and f'colspan="3">{item} ' not in html
    # the Markdown/TeX ledger: the same claim, its ids numbered as its parts
    table = ledger.table_ledger(rows)
    assert table.loc[[cid for cid, _ in parts], "Part"].tolist() == [
        f"{k} of {n}" for k in range(1, n + 1)]
    assert table.loc["res-pear-best-every-row", "Part"] == "–"


@pytest.mark.parametrize("quote, item", [
    ("0.602 for Fixed Star", True), ("and 5.6 on MATH-500", True),
    ("compared with 0.620 for Fixed Clique", True),
    ("PEAR reaches a mean accuracy of 0.701", False),
    ("with six of the eight significant at p<0.01", False),
    ("falls in the narrow band [0.589, 0.612]", False)])
def test_a_list_item_is_told_from_a_sentence(quote, item):
    assert ledger.list_item(quote) is item


def test_a_single_part_claim_reads_as_before_and_every_text_is_escaped():
    rows = _rows(pd.DataFrame([
        {"id": "one", "quote": "PEAR <wins>", "printed": "+4", "scope": "all"},
        {"id": "p1", "quote": "A & B: 0.1 then 0.2", "printed": "0.1",
         "scope": "MATH-500 x <m>, subset"},
        {"id": "p2", "quote": "A & B: 0.1 then 0.2", "printed": "0.2",
         "scope": "GSM8K x <m>, subset"}]))
    html = ledger.ledger_html(rows, title="")
    assert '<tr id="claim-one" class="verdict-supported"><td>PEAR &lt;wins&gt;</td>' in html
    assert html.count("A &amp; B: 0.1 then 0.2") == 1 and "<m>" not in html
    assert '<span class="part-label">MATH-500: 0.1</span>' in html
    assert '<span class="part-label">GSM8K: 0.2</span>' in html


@pytest.mark.parametrize("printed, scope, labels", [
    (["0.284", "0.485"], ["MATH-500 x Qwen, PEAR, subset"] * 2, ["0.284", "0.485"]),
    (["0.5", "0.5"], ["MATH-500 x Qwen", "GSM8K x Qwen"], ["MATH-500: 0.5", "GSM8K: 0.5"]),
    (["", ""], ["MATH-500 x Qwen", "MATH-500 x Qwen"], ["a", "b"]),  # alike: the ids
    (["1", "1"], ["x", "x"], ["a", "b"]),
])
def test_part_labels_name_what_sets_each_part_apart(printed, scope, labels):
    rows = pd.DataFrame({"id": ["a", "b"], "printed": printed, "scope": scope})
    assert ledger.part_labels(rows) == labels


# ----------------------------------------------------------------- the debate browser

JANET = "Janet’s ducks lay 16 eggs per day."
EVIL = "<b>Which</b> planet & moon </script> " + "is it " * 30


@pytest.fixture(scope="module")
def browser_site(tmp_path_factory) -> Path:
    """A debate browser over three debates: two of a GSM8K question of our benchmark, one
    imported whose question is not in it (its record names the entry: the question's text,
    with markup in it)."""
    ours = [make_record([["18", "18", "18"]], "18", dataset="gsm8k", question_id="gsm8k-0000",
                        seed=s) for s in (0, 1)]
    imported = make_record([["4", "4", "5"]], "4", dataset="gsm8k",
                           question_id="du-0123456789abcdef")
    imported["imported"] = {"format": "du", "file": "du.json", "entry": EVIL, "matched": False,
                            "file_gold": "4", "gold_agrees": None, "extra": {}}
    root = tmp_path_factory.mktemp("site")
    site._write_browser(root, view.from_records(ours + [imported]), Path("runs"), [])
    return root / "debates"


def _payload(debates: Path) -> dict:
    text = (debates / "data.js").read_text(encoding="utf-8")
    return json.loads(text.removeprefix("window.PEAR_DEBATES = ").rstrip().rstrip(";"))


def test_each_debate_carries_its_questions_opening_words(browser_site):
    data = _payload(browser_site)
    col = {c: i for i, c in enumerate(data["columns"])}
    text = {r[col["question_id"]]: r[col["question_text"]] for r in data["rows"]}
    assert text["gsm8k-0000"].startswith(JANET)
    assert len(text["gsm8k-0000"]) == site.OPENING_CHARS and text["gsm8k-0000"].endswith("…")
    assert text["du-0123456789abcdef"].startswith("<b>Which</b> planet & moon </script> is")
    assert "</script>" not in (browser_site / "data.js").read_text(encoding="utf-8")
    js = (browser_site / "browser.js").read_text(encoding="utf-8")
    assert "r[c.question_text]" in js and "toLowerCase" in js


def test_the_page_has_a_search_box_and_lists_debates_without_javascript(browser_site):
    page = (browser_site / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<input id="f-text" type="search"[^>]*placeholder="question words or id"',
                     page)
    assert "<th>Opens with</th>" in page
    noscript = re.search(r"<noscript>(.*)</noscript>", page, re.S).group(1)
    assert "#listing{display:none}" in noscript
    assert "the 3 debates with a transcript page" in noscript
    assert noscript.count(f"<td>{JANET}") == 2
    assert "<td>&lt;b&gt;Which&lt;/b&gt; planet &amp; moon &lt;/script&gt; is" in noscript
    assert "<b>Which" not in page
    links = re.findall(r'<a href="(d/[^"]+)">', noscript)
    assert len(links) == 3 and all((browser_site / h).is_file() for h in links)


def test_the_search_filters_the_rows_in_chromium(browser_site):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((browser_site / "index.html").resolve().as_uri(), wait_until="load")
            rows = page.locator("#rows tr")
            assert rows.count() == 3
            assert JANET in page.locator("#rows td.q-text").first.inner_text()
            page.fill("#f-text", "DUCKS lay")        # the question's words, any case
            assert rows.count() == 2
            assert page.inner_text("#count").startswith("2 of 3 debates")
            page.fill("#f-text", "planet & moon")    # text that was markup, as text
            assert rows.count() == 1
            assert "<b>Which</b>" in rows.first.inner_text()
            page.fill("#f-text", "du-0123")          # an id still finds its debate
            assert rows.count() == 1
            page.fill("#f-text", "no such words")
            assert rows.count() == 0
            assert errors == []
            assert not page.locator("noscript table").is_visible()
        finally:
            browser.close()
