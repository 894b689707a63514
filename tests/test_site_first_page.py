"""The site's first page for a newcomer: the claims table shows quote, verdict and a one-line
reason with the rest behind a click; no model file hash in visible text (full ids only in the
"Build details" block)."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd

from pear.paper import ledger, site

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf@sha256:" + "3f" * 32


class _Visible(HTMLParser):
    """Text a reader sees without opening any <details> (its <summary> stays visible)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.in_summary, self.text = 0, 0, []

    def handle_starttag(self, tag, attrs):
        self.depth += tag == "details"
        self.in_summary += tag == "summary"

    def handle_endtag(self, tag):
        self.depth -= tag == "details"
        self.in_summary -= tag == "summary"

    def handle_data(self, data):
        if self.depth == 0 or self.in_summary:
            self.text.append(data)


def _visible(fragment: str) -> str:
    p = _Visible()
    p.feed(fragment)
    return " ".join(p.text)


def _ledger() -> pd.DataFrame:
    return pd.DataFrame([{
        "id": "res-gain", "quote": "PEAR improves accuracy", "printed": "+4.2",
        "table_finding": "holds", "reproduced": "gain 0.0 [-1, 1]", "finding": "inconclusive",
        "verdict": "not evidence", "not_evidence": "smoke", "reason": "x" * 400, "evidence": ["table:main_results"],
        "debates": [f"{GGUF}|gsm8k|pear"]}])


def test_claims_rows_fold_their_details_and_name_models_by_display_name():
    html = ledger.ledger_html(_ledger(), title="")
    visible = _visible(html)
    assert "PEAR improves accuracy" in visible and "not evidence (inconclusive)" in visible
    assert "x" * 120 not in visible  # the long reason is cut to one line ...
    assert "x" * 300 in html          # ... and whole behind the click
    assert re.search(r"<details><summary>[^<]{1,115}</summary><dl>", html)
    text = re.sub(r"<[^>]+>", " ", html)  # every text, opened or not (link targets aside)
    assert not re.search(r"[0-9a-f]{32,}", text)
    assert "SmolLM2-135M (Q4_1) / GSM8K / PEAR debates" in html


def test_build_details_hold_the_full_model_ids():
    meta = site.build_meta(backend="llamacpp", preset="smoke", models=[GGUF], grid="1 question",
                           debates=3, started=0.0, seconds=1.0, repo=site.Path("/nonexistent"))
    html = site._meta_html(meta)
    assert "SmolLM2-135M (Q4_1)" in _visible(html)
    assert not re.search(r"[0-9a-f]{32,}", _visible(html))
    assert GGUF in html and "Build details" in html
