"""The claims ledger shown: its tables (:func:`table_ledger`, :func:`table_consistency`),
the numbers of its forest plot (:func:`forest_frame`; notebook 13 draws it), the HTML
fragment the results site opens with (:func:`ledger_html`, its links :func:`site_link`), and
the relabelling study the ledger judges (:func:`load_relabelling`).  Every text from a record
or a table is escaped in HTML (:func:`pear.store.validate.escape`).

>>> counts_line(pd.DataFrame({"verdict": ["supported", "not covered", "supported"]}))
'2 supported, 0 contradicted, 0 inconclusive, 1 not covered, 0 not evidence'
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from pear.claims.evaluate import NOT_EVIDENCE, VERDICTS, not_evidence_text, verdict_counts
from pear.claims.evidence import Relabelling
from pear.store.validate import escape
from pear.analysis.report import figures_dir, output_name
from pear.catalog.labels import dataset_label, method_label, model_label
from pear.backends.registry import REPLAY
from pear.paper import provenance, study
from pear.paths import beside
from pear.paper.registry import EXPECTED_OUTPUTS

__all__ = ["load_relabelling", "counts_line", "table_ledger", "table_consistency",
           "forest_frame", "why", "ledger_html", "part_labels", "claim_groups", "claim_text",
           "list_item", "site_link", "save_html", "default_link"]


def load_relabelling(backend: str, preset: str, runs_dir: str = "", *, model: str = "",
                     seeds: str = "", n_questions: int = 0, odd_role: str = "adversarial"
                     ) -> Relabelling | str:
    """The build's relabelling study as the ledger judges it: notebook 19's seat variants
    (:func:`pear.paper.relabelling.variants`, with its ``odd_role``) read from their records
    beside the build's run, nothing run, and its tables computed from them
    (:func:`pear.paper.relabelling.tables`); or why there is none (notebook 19 not run on
    this run, or its records not readable), the reason its claims show."""
    from pear.paper import beyond, relabelling  # heavy: matplotlib, only for this function
    exp = relabelling.experiment(preset, seeds=seeds, n_questions=n_questions)
    variants = relabelling.variants(exp, odd_role)
    runs = study.runs_path(runs_dir, preset, backend)
    if not any(beyond.variant_dir(runs, name).is_dir() for name in variants):
        return (f"notebook 19_relabelling was not run on this build's run (no records of its "
                f"seat variants in {beside(runs, 'studies').name}/)")
    try:
        results = beyond.run_variants(REPLAY, variants, runs, model=model)
        _, spread, orbit = relabelling.tables(results)
    except (FileNotFoundError, ValueError, KeyError) as err:
        return f"notebook 19_relabelling's records could not be read: {err}"
    first = next(iter(results.values()))
    return Relabelling(spread, orbit, seats=len(variants), odd=odd_role,
                       description=first.label)


def counts_line(ledger: pd.DataFrame, column: str = "verdict") -> str:
    """Claims per verdict in one line, every verdict named."""
    counts = ledger[column].value_counts()
    return ", ".join(f"{int(counts.get(v, 0))} {v}" for v in VERDICTS)


def table_ledger(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per claim id: which part of a claim of several parts it is
    (:func:`claim_groups`: "2 of 5"; "–" for a claim of one part), kind, the printed claim,
    what the study's own tables give, this build's reproduced values, the verdict (with the
    finding when it is not evidence) and the reason or the questions that would decide it."""
    def verdict(r: pd.Series) -> str:
        return r["verdict"] if r["verdict"] == r["finding"] else \
            f"{r['verdict']} (finding: {r['finding']})"
    part = [f"{k} of {len(g)}" if len(g) > 1 else "–"
            for g in claim_groups(ledger) for k in range(1, len(g) + 1)]
    out = pd.DataFrame({
        "Claim": ledger["id"], "Part": part, "Kind": ledger["kind"],
        "Printed": ledger["printed"],
        "Study's tables": ledger["table_finding"],
        "Reproduced": ledger["reproduced"].where(ledger["reproduced"] != "", "–"),
        "Verdict": ledger.apply(verdict, axis=1),
        "Why": [why(r) or "–" for _, r in ledger.iterrows()]})
    return out.set_index("Claim")


def table_consistency(ledger: pd.DataFrame) -> pd.DataFrame:
    """The study against itself: every claim whose printed value can be recomputed from the
    study's tables (by the ledger's evaluators) or that claims.csv checks, with both
    checks and whether they agree."""
    ours = ledger["table_finding"].map({"holds": "yes", "holds where recomputable": "yes",
                                        "does not hold": "no"})
    keep = ours.notna() | ledger["consistent"].isin(["yes", "no"])
    rows = ledger[keep]
    ours = ours[keep]
    agree = np.where(ours.isna() | ~rows["consistent"].isin(["yes", "no"]), "–",
                     np.where(ours == rows["consistent"], "yes", "NO"))
    out = pd.DataFrame({"Claim": rows["id"], "Printed": rows["printed"],
                        "Recomputed from the tables": rows["recomputed"].where(
                            rows["recomputed"] != "", "–"),
                        "Consistent (ours)": ours.fillna("–"),
                        "claims.csv says": rows["from_tables"].where(rows["from_tables"] != "",
                                                                     "–"),
                        "Consistent (claims.csv)": rows["consistent"], "Agree": agree})
    return out.set_index("Claim")


def forest_frame(ledger: pd.DataFrame) -> pd.DataFrame:
    """The numeric claims' parts that carry a printed number: ``claim, label, unit,
    printed, recomputed`` (from the study's tables; NaN if not recomputable),
    ``reproduced, low, high`` (this build, 95 % interval) and ``verdict`` of the part."""
    rows = []
    for _, r in ledger.iterrows():
        build = [p for p in r["parts"] if p.printed is not None and p.unit != "count"]
        table = [p for p in r["table_parts"] if p.printed is not None and p.unit != "count"]
        for i, p in enumerate(build):
            t = table[i] if i < len(table) and table[i].label == p.label else None
            rows.append({"claim": r["id"], "label": p.label + (f" ({p.setting})"
                                                               if p.setting else ""),
                         "unit": p.unit, "printed": p.printed,
                         "recomputed": t.value if t is not None and t.verdict != "not covered"
                         else np.nan,
                         "reproduced": p.value, "low": p.low, "high": p.high,
                         "verdict": p.verdict})
    cols = ["claim", "label", "unit", "printed", "recomputed", "reproduced", "low", "high",
            "verdict"]
    return pd.DataFrame(rows, columns=cols)


def default_link(kind: str, name: str) -> str:
    """Where a ledger row links (the site may pass its own): a table or figure of the
    build (``figures/<name>.md`` / ``.png``), or the debates of ``model|dataset|method``.

    >>> default_link("table", "main_results"), default_link("debates", "m|gsm8k|pear")
    ('main_results.md', 'debates.html#m|gsm8k|pear')
    """
    if kind == "table":
        return f"{name}.md"
    if kind == "figure":
        return f"{name}.png"
    if kind == "debates":
        return f"debates.html#{name}"
    return f"{name}.md"


def site_link(kind: str, name: str, figures: Any = None) -> str | None:
    """Where a ledger row links inside the results site (:mod:`pear.paper.site`, the ledger being
    its index page's first section): a table to its notebook's section, a figure to its
    PNG, debates to the debate browser (which does not filter from a link); None (no link)
    for a table or figure this build did not write into ``figures`` (default
    :func:`pear.analysis.report.figures_dir`), or that another run's build wrote there (its
    build manifest, :mod:`pear.paper.provenance`, names another run).

    >>> import tempfile; d = tempfile.mkdtemp(); _ = open(f"{d}/pareto.png", "w")
    >>> site_link("figure", "pareto", d), site_link("table", "main_results", d)
    ('figures/pareto.png', None)
    """
    if kind == "debates":
        return "debates/index.html"
    out = figures_dir(figures)
    if kind == "figure":
        return f"figures/{name}.png" if (out / f"{name}.png").is_file() else None
    producer = next((n for n, files in EXPECTED_OUTPUTS.items()
                     if f"{name}.md" in files or name in files), None)
    written = (out / f"{name}.md").is_file() or (out / name).is_file()
    if not (producer and written):
        return None
    if provenance.read(out)["run"] is not None and not provenance.current(out, [producer])[0]:
        return None  # a table of another run's build: no link from this ledger
    return f"#{producer}"


def save_html(fragment: str, name: str, out_dir: Any = None) -> Any:
    """Write an HTML fragment to ``<figures>/<name>.html`` (the results site takes
    ``claims.html`` as its first section); returns the path."""
    out = figures_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{output_name(name, 'html')}.html"
    path.write_text(fragment, encoding="utf-8")
    return path


def why(row: Mapping[str, Any]) -> str:
    """A ledger row's reason in full: why its finding is not evidence (its ``not_evidence``
    field, :func:`pear.claims.evaluate.not_evidence_text`), then the finding's own reason.

    >>> why({"not_evidence": "simulated", "finding": "supported", "reason": "this build: 1"})
    "simulated agents: the finding (supported) is a statement about the simulated mechanism, not about the study's models; this build: 1"
    """
    parts = (not_evidence_text(row.get("not_evidence"), row["finding"]), _text(row["reason"]))
    return "; ".join(p for p in parts if p)


_ROUTER = "a check of this repository's router"


def one_line(row: Mapping[str, Any], limit: int = 110) -> str:
    """The reason of a ledger row in one line (the verdict beside it says "not evidence"):
    its own reason, or what its finding is about when it has none, cut at ``limit``
    characters.

    >>> one_line({"not_evidence": "smoke", "finding": "supported", "reason": ""})
    "a finding about the smoke setup, not the study's models"
    >>> len(one_line({"finding": "supported", "reason": "x" * 300})) <= 110
    True
    """
    text = " ".join(_text(row["reason"]).split())
    if text.startswith(_ROUTER):
        head, sep, rest = text.partition("; ")
        text = rest if sep else "a check of the router on logged states"
    kind = row.get("not_evidence")
    if not text and isinstance(kind, str) and kind in NOT_EVIDENCE:
        text = f"a finding about {NOT_EVIDENCE[kind][1]}, not the study's models"
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _debate_label(key: str) -> str:
    """``model|dataset|method`` with the model's display name (never a file hash)."""
    model, _, rest = key.partition("|")
    dataset, _, method = rest.partition("|")
    return f"{model_label(model)} / {dataset_label(dataset)} / {method_label(method)}"


def _text(value: Any) -> str:
    """A ledger cell as text ("" for a missing one)."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def part_labels(rows: pd.DataFrame) -> list[str]:
    """What tells apart the parts of one claim (rows of the ledger sharing a quote): the
    items of each row's scope (split at ``,`` and `` x ``) that not every part shares, then
    its printed value; the claim id where that leaves two parts alike.

    >>> part_labels(pd.DataFrame({"id": ["a", "b"], "printed": ["8.0", "9.0"],
    ...                           "scope": ["MMLU-Pro x Llama, subset", "GSM8K x Llama, subset"]}))
    ['MMLU-Pro: 8.0', 'GSM8K: 9.0']
    >>> part_labels(pd.DataFrame({"id": ["r1", "r5"], "printed": ["0.28", "0.28"]}))
    ['r1', 'r5']
    """
    scopes = [[t for t in re.split(r"\s*(?:,| x )\s*", _text(s)) if t]
              for s in rows.get("scope", pd.Series([""] * len(rows)))]
    shared = set.intersection(*(set(s) for s in scopes)) if scopes else set()
    labels = []
    for scope, printed in zip(scopes, rows["printed"].map(_text)):
        own = ", ".join(t for t in scope if t not in shared)
        labels.append(f"{own}: {printed}" if own and printed else own or printed)
    return [lab if lab and labels.count(lab) == 1 else _text(i)
            for lab, i in zip(labels, rows["id"])]


_LIST_ITEM = re.compile(r"(?:(?:and|or|compared with)\s+)?[+-]?\d")
"""A quote that is an item of a list (a number first, after "and", "or" or "compared
with" at most): the study's transcription gives each number of a sentence that lists
several its own row, quoting only its item ("0.602 for Fixed Star", "and 5.6 on
MATH-500")."""
_CONNECTIVE = re.compile(r"^(?:and|or|compared with)\s+")


def list_item(quote: str) -> bool:
    """Whether ``quote`` is an item of a list a previous claim's sentence began
    (:data:`_LIST_ITEM`), not a sentence of its own.

    >>> list_item("0.602 for Fixed Star"), list_item("and 5.6 on MATH-500")
    (True, True)
    >>> list_item("PEAR reaches a mean accuracy of 0.701"), list_item("with six of the eight")
    (False, False)
    """
    return bool(_LIST_ITEM.match(_text(quote)))


def claim_groups(ledger: pd.DataFrame) -> list[pd.DataFrame]:
    """The ledger's rows in order, the rows of one claim together: consecutive rows with
    the same quote (a sentence split into parts, e.g. one per dataset), and the rows whose
    quote is an item of the list the row before began (:func:`list_item`, same section):
    "PEAR reaches a mean accuracy of 0.701" then "compared with 0.620 for Fixed Clique",
    "0.602 for Fixed Star", ... are one claim with five parts.  Each row keeps its id."""
    quotes = ledger["quote"].map(_text).to_numpy()
    sections = (ledger["section"].map(_text).to_numpy() if "section" in ledger
                else [""] * len(ledger))
    starts = [i for i in range(len(ledger))
              if i == 0 or not (quotes[i] == quotes[i - 1] or (
                  list_item(quotes[i]) and sections[i] == sections[i - 1]))]
    return [ledger.iloc[a:b] for a, b in zip(starts, starts[1:] + [len(ledger)])]


def claim_text(group: pd.DataFrame) -> str:
    """The text of one claim (a group of :func:`claim_groups`): its quote, or the quotes
    of a listed claim joined in order ("PEAR reaches a mean accuracy of 0.701, compared
    with 0.620 for Fixed Clique, ...")."""
    return ", ".join(dict.fromkeys(group["quote"].map(_text)))


def _group_labels(group: pd.DataFrame) -> list[str]:
    """Each part's label: :func:`part_labels` for a sentence split into parts; for a
    listed claim, each part's own item without its leading "and" or "compared with" (the
    claim id where two parts would read alike)."""
    if group["quote"].map(_text).nunique() == 1:
        return part_labels(group)
    labels = [_CONNECTIVE.sub("", _text(q)) for q in group["quote"]]
    return [lab if lab and labels.count(lab) == 1 else _text(i)
            for lab, i in zip(labels, group["id"])]


def _claim_row(r: pd.Series, first: str, link: Callable[[str, str], str | None],
               part: bool = False, family: str = "") -> str:
    """One ledger row: ``first`` (the quote, or a part's label; escaped HTML), the verdict
    and a one-line reason with the details behind a click; ``family``: what the claim does
    across the family of real twins (its first sentence is said beside the reason)."""
    links = []
    for item in r["evidence"]:
        kind, _, name = item.partition(":")
        href = link(kind, name) if name else None
        if href:
            links.append(f'<a href="{escape(href)}">{escape(name)}</a>')
    for d in r["debates"][:4]:
        href = link("debates", d)
        if href:
            links.append(f'<a href="{escape(href)}">{escape(_debate_label(d))} debates</a>')
    verdict = r["verdict"] if r["verdict"] == r["finding"] else \
        f"{r['verdict']} ({r['finding']})"
    cls = r["verdict"].replace(" ", "-") + (" claim-part" if part else "")
    details = "".join(
        f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in (
            ("Claim", escape(r["id"])), ("Printed", escape(r["printed"])),
            ("Study's tables", escape(r["table_finding"])),
            ("Reproduced", escape(r["reproduced"] or "–")),
            ("Why", escape(why(r) or "–")),
            *((("Across the family", escape(family)),) if family else ()),
            ("Behind it", " · ".join(links) or "–")))
    summary = one_line(r) or "–"
    if family and (count := re.match(r"holds in \d+ of \d+ members", family)):
        summary += f" · family: {count.group()}"
    return (f'<tr id="claim-{escape(r["id"])}" class="verdict-{escape(cls)}">'
            f'<td>{first}</td><td>{escape(verdict)}</td>'
            f'<td><details><summary>{escape(summary)}</summary>'
            f"<dl>{details}</dl></details></td></tr>")


def _claim_rows(group: pd.DataFrame, link: Callable[[str, str], str | None],
                family: Mapping[str, str]) -> list[str]:
    """The rows of one claim (:func:`claim_groups`): a claim of one part as one row; one
    of several parts as its text once (a row of its own), then a row per part labelled by
    what sets it apart."""
    if len(group) == 1:
        r = group.iloc[0]
        return [_claim_row(r, escape(r["quote"]), link, family=family.get(r["id"], ""))]
    head = (f'<tr class="claim-parts"><td colspan="3">{escape(claim_text(group))} '
            f'<span class="n-parts">({len(group)} parts)</span></td></tr>')
    return [head] + [_claim_row(r, f'<span class="part-label">{escape(label)}</span>', link,
                                part=True, family=family.get(r["id"], ""))
                     for (_, r), label in zip(group.iterrows(), _group_labels(group))]


def ledger_html(ledger: pd.DataFrame, *, link: Callable[[str, str], str | None] = default_link,
                title: str = "The study's claims, one by one", source: str = "",
                family: Mapping[str, str] | None = None) -> str:
    """The ledger as an HTML fragment (a ``<section>``, no page chrome): the counts per
    verdict (and per finding when the build is not evidence), then one row per claim with
    its quote, its verdict and a one-line reason; a click opens the rest (the printed value,
    the study's own tables, the reproduced values, the whole reason, and links to the tables,
    figures and debates behind it: ``link(kind, name)`` builds each address, None for none).
    A claim of several parts (:func:`claim_groups`: a sentence split per dataset, or one
    that lists several numbers) shows its text once, each part's row labelled by what sets
    it apart.  ``family``: claim id -> what it does across the family of real twins
    (notebook 13 says it from :func:`pear.paper.ensemble.held_by_member`), said beside its
    reason and in its details.
    Models are named by display name; every text is escaped."""
    counts = verdict_counts(ledger)
    head = "".join(f"<th>{escape(v)}</th>" for v in counts.index)
    rows_counts = "".join(
        f"<tr><th>{escape(col)}</th>"
        + "".join(f"<td>{int(n)}</td>" for n in counts[col]) + "</tr>"
        for col in ("verdict", "finding")
        if col == "verdict" or (ledger["verdict"] != ledger["finding"]).any())
    out = ['<section class="claims-ledger">' + (f"<h2>{escape(title)}</h2>" if title else "")]
    if source:
        out.append(f"<p>{escape(source)}</p>")
    out.append(f'<table class="claims-counts"><tr><th></th>{head}</tr>{rows_counts}</table>')
    out.append('<table class="claims"><colgroup><col class="c-quote"><col class="c-verdict">'
               '<col class="c-why"></colgroup>'
               "<tr><th>Claim</th><th>Verdict</th><th>Why (click for details)</th></tr>")
    for group in claim_groups(ledger):
        out += _claim_rows(group, link, family or {})
    out.append("</table></section>")
    return "\n".join(out)
