"""The static results site that ``pear paper`` writes at the end of a build (``build/site/``):
plain HTML and CSS with a little vanilla JavaScript, no server, opens from the file system.

- ``index.html``, made to fit a 1,400-px window: a line of links, an optional claims
  ledger first (:func:`write_site`'s ``ledger``), what was built (backend, model display
  names, preset, grid size, build time; the full model ids and the git commit in a
  "Build details" block), then per notebook its figures (PNG inline, PDF linked), its
  tables rendered (one longer than :data:`FOLD_ROWS` rows behind a click), each beside
  the study's printed numbers where the notebook has them (:data:`BESIDE`), its quoted
  numbers and a link to the executed notebook; the case study links its transcript
  page;
- ``checklist.html``: the reviewer's checklist (NeurIPS Q5-Q8, ACL C1-C4) answered for
  this build, linking to the outputs and to the files it copies into ``provenance/``
  (:mod:`pear.paper.checklist`);
- ``notebooks/<name>.html``: every executed notebook, exported by nbconvert (no script or
  style fetched from the network);
- ``figures/``: the figures' PNG and PDF files;
- ``debates/index.html`` (+ ``data.js``, ``browser.js``): every debate of the run in a
  filterable, paginated listing (dataset, method, seed, model, correct, minority-correct
  won, majority-correct lost, stopped early, has a page) with its question's opening words
  (:data:`OPENING_CHARS`), searched with its ids; with JavaScript off, the debates that
  have a page in a plain table;
- ``debates/d/<debate_id>.html`` (:func:`page_name`): one transcript page per debate of :func:`chosen_debates`
  (every debate when the run holds at most :data:`ALL_PAGES_UP_TO`; else, per model x
  dataset x method, the first debate in record order of each kind in :data:`KINDS`); any
  other debate on demand with ``pear show RUN --debate ID --html`` (same path).

Texts from records are HTML-escaped (pages) or put into the page with ``textContent``
(listing); the listing's data is JSON inside a script file, ``</`` escaped.

The site's style, the browser's script and page body, and the notebooks' export template are
package data in ``pear/paper/assets/`` (the page frame and its base style in
``pear/analysis/assets/``), read with :mod:`importlib.resources`.

The claims ledger hook: ``write_site(..., ledger=...)`` takes an HTML fragment (str) or a
callable returning one; without it, ``<figures>/claims.html`` (an HTML fragment) or else
``<figures>/claims.md`` (Markdown, rendered with raw HTML disabled) is used when present.
It becomes the first section of ``index.html``, titled "Claims".
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.catalog.labels import (DATASETS, dataset_label, method_label, method_order,
                                 model_labels)
from pear.analysis.transcript import KIND_LABELS, debate_flags, html_page, render_transcript_html
from pear import paths
from pear.core.hashing import content_digest
from pear.paper import checklist
from pear.parallel import fork_map
from pear.store import environment
from pear.store.view import load
from pear.tasks.benchmarks import get_question

__all__ = ["write_site", "build_meta", "SiteSummary", "chosen_debates", "page_path",
           "page_name", "BESIDE",
           "KINDS", "ALL_PAGES_UP_TO", "markdown_html", "write_debate_page",
           "export_notebook", "check_site"]

ALL_PAGES_UP_TO = 400  # our choice: a smoke or small run gets every transcript page
OPENING_CHARS = 80  # our choice: the opening words of a question the debate browser shows
KINDS = ("minority_won", "majority_lost", "stopped_early", "correct", "wrong")
"""The kinds of debate that get a page per model x dataset x method in a large run."""
BESIDE = {"main_results": "main_results_vs_paper", "full_dataset": "full_dataset_vs_paper",
          "diagnostics": "diagnostics_vs_paper", "significance": "significance_vs_paper",
          "spearman": "spearman_vs_paper", "tokens": "cost_vs_paper"}
"""Table -> the table with the study's printed numbers shown beside it."""


def _asset(name: str) -> str:
    """A file of the site's ``assets/`` (package data: its CSS, its script, its templates)."""
    return files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


_CHECKLIST_CSS = _asset("checklist.css")  # the reviewer's checklist page, after the site's
FOLD_ROWS = 30  # our choice: a longer table shows its caption, the rows one click away
_SITE_CSS = _asset("site.css")  # every page of the site, after transcript.PAGE_CSS


@dataclass
class SiteSummary:
    """What :func:`write_site` wrote."""

    root: Path
    pages: list[Path] = field(default_factory=list)
    """Every HTML page, index first."""
    debates: int = 0
    transcripts: int = 0
    seconds: float = 0.0


def markdown_html(text: str) -> str:
    """Markdown (tables included) as HTML, raw HTML in the text escaped, not passed on.

    >>> markdown_html("| a |\\n|---|\\n| <b> |")
    '<table>\\n<thead>\\n<tr>\\n<th>a</th>\\n</tr>\\n</thead>\\n<tbody>\\n<tr>\\n<td>&lt;b&gt;</td>\\n</tr>\\n</tbody>\\n</table>\\n'
    """
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def page_name(debate_id: str) -> str:
    """The file name of a debate's transcript page: ``<id>.html`` for a plain id (the
    engine's are 20 hex digits), else ``x<sha256 of the id, 20 hex>.html``.

    >>> page_name("0a1b2c"), page_name("m|gsm8k|pear|0|q0")
    ('0a1b2c.html', 'x57679d19827505694cee.html')
    """
    if re.fullmatch(r"[A-Za-z0-9_-]{1,100}", debate_id):
        return f"{debate_id}.html"
    return f"x{content_digest(debate_id, n=20)}.html"


def page_path(site_dir: str | os.PathLike[str], debate_id: str) -> Path:
    """Where a debate's transcript page lives in a site: ``debates/d/`` + :func:`page_name`."""
    return Path(site_dir) / "debates" / "d" / page_name(debate_id)


def write_debate_page(view: Any, debate_id: str, path: str | os.PathLike[str],
                      back: str = "../index.html", flags: Mapping[str, Any] | None = None
                      ) -> Path:
    """Write one debate's transcript page (:func:`pear.analysis.transcript.render_transcript_html`)
    from ``view`` (a :class:`pear.store.view.View`) to ``path``; ``flags``: the debate's row of
    :func:`debate_flags` where the caller has them (a site's pages: computed once for all)."""
    if flags is None:
        deb = view.debates
        row = deb.index[deb["debate_id"] == debate_id]
        if row.empty:
            raise ValueError(f"no debate {debate_id!r} among the {len(deb)} debates of the run")
        one = deb.loc[row]
        flags = debate_flags(one, view.agent_rounds[view.agent_rounds["debate"].isin(
            one["debate"])]).iloc[0].to_dict()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_transcript_html(view.record(debate_id), flags=flags, back=back),
                   encoding="utf-8")
    return out


def chosen_debates(debates: pd.DataFrame, flags: pd.DataFrame,
                   extra: Iterable[str] = ()) -> list[str]:
    """The debates that get a transcript page: all when there are at most
    :data:`ALL_PAGES_UP_TO`; else per (model, dataset, method) the first debate (record
    order) of each of :data:`KINDS`, plus ``extra`` ids (e.g. the case study)."""
    if len(debates) <= ALL_PAGES_UP_TO:
        return list(debates["debate_id"])
    kinds = flags.assign(correct=debates["correct"].to_numpy(bool),
                         wrong=~debates["correct"].to_numpy(bool))
    order = np.argsort(debates["debate"].to_numpy(), kind="stable")
    deb = debates.iloc[order]
    kinds = kinds.iloc[order]
    keys = [deb[c].astype(str).to_numpy() for c in ("model", "dataset", "method")]
    cell = pd.Series(list(zip(*keys)), index=deb.index)
    chosen: dict[str, None] = {}
    for kind in KINDS:
        hit = kinds[kind].to_numpy(bool)
        first = ~cell[hit].duplicated().to_numpy()
        chosen.update(dict.fromkeys(deb["debate_id"].to_numpy()[hit][first]))
    chosen.update(dict.fromkeys(x for x in extra if x))
    return list(chosen)


# ----------------------------------------------------------------- notebooks

_OFFLINE_TEMPLATE = _asset("notebook_offline.html.j2")
"""nbconvert's ``lab`` template without the scripts it would fetch from the network."""


def export_notebook(ipynb: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """An executed notebook as one HTML file (nbconvert's ``lab`` template without the
    scripts it would fetch from the network: require.js, MathJax, Mermaid)."""
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="lab", embed_images=True,
                            extra_loaders=[jinja2.DictLoader(
                                {"pear_offline.html.j2": _OFFLINE_TEMPLATE})],
                            template_file="pear_offline.html.j2")
    body, _ = exporter.from_notebook_node(nbformat.read(str(ipynb), as_version=4))
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path


def _export(paths: tuple[Path, Path]) -> Path:
    return export_notebook(*paths)


def _notebook_intro(ipynb: Path) -> tuple[str, str]:
    """(title, intro HTML) from the notebook's first Markdown cell."""
    import nbformat
    nb = nbformat.read(str(ipynb), as_version=4)
    cell = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if cell is None:
        return ipynb.stem, ""
    lines = cell.source.strip().splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else ipynb.stem
    return title, markdown_html("\n".join(lines[1:]))


# ----------------------------------------------------------------- index

def git_commit(root: Path) -> str:
    """The checkout's commit (marked when it has uncommitted changes)."""
    return environment.git_commit(root, mark_changes=True)


def _table_html(md: Path, fold: bool = True) -> str:
    """A Markdown table file of :func:`pear.analysis.report.save_table`: caption, then the table
    (with ``fold``, behind "Show the table (N rows)" when it has more than :data:`FOLD_ROWS`
    rows)."""
    text = md.read_text(encoding="utf-8")
    caption, _, table = text.partition("\n\n") if not text.startswith("|") else ("", "", text)
    body = markdown_html(table or text)
    rows = body.count("<tr>") - 1
    if fold and rows > FOLD_ROWS:
        body = (f"<details class=\"fold\"><summary>Show the table ({rows} rows)</summary>"
                f"{body}</details>")
    return (f"<p class=\"caption\">{html.escape(caption)}</p>" if caption else "") + body


def _is_table(md: Path) -> bool:
    """Whether a Markdown output is a table file (an optional caption, then the table)."""
    text = md.read_text(encoding="utf-8")
    return text.startswith("|") or text.partition("\n\n")[2].startswith("|")


def _document_html(md: Path, page: str | None) -> str:
    """A Markdown output that is not a table (the case study): its first paragraph, then a
    link to the site's own page for it when it has one (``page``), else the text folded."""
    text = md.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n\n")
    if page:
        return (f"{markdown_html(first)}<p><a href=\"{html.escape(page)}\">The debate, round "
                f"by round</a> (its transcript page, every text in full; as Markdown: "
                f"<code>{html.escape(md.name)}</code>)</p>")
    return (f"{markdown_html(first)}<details class=\"fold\"><summary>Show the text"
            f"</summary>{markdown_html(rest)}</details>")


def _numbers_html(tex: Path) -> str:
    rows = re.findall(r"\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}", tex.read_text(encoding="utf-8"))
    body = "".join(f"<tr><td><code>\\{html.escape(k)}</code></td><td class=\"num\">"
                   f"{html.escape(v)}</td></tr>" for k, v in rows)
    return (f"<details><summary>{len(rows)} quoted numbers ({html.escape(tex.name)}, LaTeX "
            f"macros)</summary><table><tr><th>Macro</th><th>Value</th></tr>{body}</table>"
            "</details>")


def _section(name: str, outputs: Sequence[str], fig_dir: Path, nb_dir: Path,
             site: Path, pages: Mapping[str, str]) -> str:
    """One notebook's part of the index; ``pages``: output stem -> the site page that shows
    that (non-table) Markdown output."""
    ipynb = nb_dir / f"{name}.ipynb"
    title, intro = _notebook_intro(ipynb) if ipynb.is_file() else (name, "")
    parts = [f"<h2 id=\"{name}\">{html.escape(title)}</h2>", intro]
    if (site / "notebooks" / f"{name}.html").is_file():
        parts.append(f"<p><a href=\"notebooks/{name}.html\">Executed notebook "
                     f"<code>{name}</code></a></p>")
    stems = list(dict.fromkeys(Path(f).stem for f in outputs))
    paired = set(BESIDE.values())
    for stem in stems:
        png, pdf, md = fig_dir / f"{stem}.png", fig_dir / f"{stem}.pdf", fig_dir / f"{stem}.md"
        if png.is_file():
            for f in (png, pdf):
                if f.is_file():
                    shutil.copy2(f, site / "figures" / f.name)
            link = f" · <a href=\"figures/{pdf.name}\">PDF</a>" if pdf.is_file() else ""
            parts.append(f"<figure><img src=\"figures/{png.name}\" alt=\"{stem}\">"
                         f"<figcaption><code>{stem}</code>{link}</figcaption></figure>")
        elif md.is_file() and not _is_table(md):
            parts.append(f"<h3>{html.escape(stem)}</h3>{_document_html(md, pages.get(stem))}")
        elif md.is_file() and stem not in paired:
            mine = f"<div><h3>{html.escape(stem)}</h3>{_table_html(md)}</div>"
            other = fig_dir / f"{BESIDE.get(stem, '')}.md"
            if stem in BESIDE and other.is_file():
                mine += (f"<div><h3>{html.escape(other.stem)}: the study's printed numbers "
                         f"beside ours</h3>{_table_html(other, fold=False)}</div>")
            parts.append(f"<div class=\"pair\">{mine}</div>")  # beside where both fit
    for stem in stems:  # a paired table whose partner is missing still shows
        md = fig_dir / f"{stem}.md"
        partner = next((k for k, v in BESIDE.items() if v == stem), None)
        if stem in paired and md.is_file() and not (fig_dir / f"{partner}.md").is_file():
            parts.append(f"<h3>{html.escape(stem)}</h3>{_table_html(md)}")
    for f in outputs:
        if f.endswith(".tex") and not f.endswith(tuple(f"{s}.tex" for s in stems
                                                       if (fig_dir / f"{s}.md").is_file())):
            if (fig_dir / f).is_file():
                parts.append(_numbers_html(fig_dir / f))
    return "\n".join(p for p in parts if p)


def _ledger_html(ledger: str | Callable[[], str] | None, fig_dir: Path) -> str:
    if callable(ledger):
        ledger = ledger()
    if ledger is None:
        if (fig_dir / "claims.html").is_file():
            ledger = (fig_dir / "claims.html").read_text(encoding="utf-8")
        elif (fig_dir / "claims.md").is_file():
            ledger = markdown_html((fig_dir / "claims.md").read_text(encoding="utf-8"))
    if not ledger:
        return ""
    return f"<section class=\"ledger\" id=\"claims\"><h2>Claims</h2>{ledger}</section>"


DETAILS = ("Model ids", "Git commit")
"""Build facts shown only on a click ("Build details"): full model ids (file hashes) and the
commit."""


def _meta_html(meta: Mapping[str, str]) -> str:
    def rows(keys: Sequence[str]) -> str:
        return "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(meta[k]))}</td></tr>"
                       for k in keys)
    shown = [k for k in meta if k not in DETAILS]
    hidden = [k for k in meta if k in DETAILS]
    details = (f"<details class=\"build-details\"><summary>Build details</summary>"
               f"<table class=\"meta\">{rows(hidden)}</table></details>") if hidden else ""
    return f"<table class=\"meta\">{rows(shown)}</table>{details}"


# ----------------------------------------------------------------- debate browser

_BROWSER_JS = _asset("browser.js")
"""The debate browser's script (``debates/browser.js``): filters, search and pages over
``window.PEAR_DEBATES`` (``data.js``), every text put in with ``textContent``."""
_BROWSER_BODY = Template(_asset("browser.html"))
"""The debate browser's page body: ``$summary``, ``$pages_note``, ``$command`` (escaped
HTML) and ``$static`` (the listing for a reader with JavaScript off)."""
_BROWSER_CSS = _asset("browser.css")



def _short(v: Any, limit: int = 40) -> str:
    s = " ".join(("" if v is None else str(v)).split())  # whitespace runs made one space
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _question_opening(view: Any, dataset: str, question_id: str, debate_id: str) -> str:
    """The opening words of a debate's question (:data:`OPENING_CHARS`, on one line): from
    our benchmark (:func:`pear.tasks.benchmarks.get_question`), else, for an imported debate
    whose question is not in it, the entry its record names (the question's text, for the
    readers that key entries by it); "" when neither has it."""
    try:
        text = get_question(dataset, question_id).question
    except (ValueError, FileNotFoundError, KeyError):
        try:
            text = (view.record(debate_id).get("imported") or {}).get("entry", "")
        except (ValueError, OSError):
            text = ""
    return _short(text, OPENING_CHARS)


def _openings(view: Any, deb: pd.DataFrame) -> list[str]:
    """:func:`_question_opening` of every debate of ``deb``, each question looked up once."""
    seen: dict[tuple[str, str], str] = {}
    out = []
    for did, ds, q in zip(deb["debate_id"], deb["dataset"], deb["question_id"]):
        key = (str(ds), str(q))
        if key not in seen:
            seen[key] = _question_opening(view, key[0], key[1], str(did))
        out.append(seen[key])
    return out


def _static_listing(rows: list[list[Any]], cols: list[str], data: Mapping[str, Any]) -> str:
    """The debates that have a transcript page as a plain table, for a reader with
    JavaScript off (no filters, no search): each linked, with its model, dataset, method,
    seed, question and the question's opening words (every text escaped)."""
    c = {n: i for i, n in enumerate(cols)}

    def row(r: list[Any]) -> str:
        cells = [data["models"][r[c["model"]]], data["datasets"][r[c["dataset"]]],
                 data["methods"][r[c["method"]]], r[c["seed"]], r[c["question_id"]],
                 r[c["question_text"]], "\u2713" if r[c["correct"]] else "\u2717"]
        return (f"<tr><td><a href=\"d/{html.escape(r[c['page']])}\">"
                f"{html.escape(r[c['debate_id']])}</a></td>"
                + "".join(f"<td>{html.escape(str(v))}</td>" for v in cells) + "</tr>")
    shown = [row(r) for r in rows if r[c["page"]]]
    return (f"<p class=\"muted\">JavaScript is off: the {len(shown)} debates with a "
            "transcript page, unfiltered.</p><div class=\"scroll\"><table><thead><tr>"
            "<th>Debate</th><th>Model</th><th>Dataset</th><th>Method</th><th>Seed</th>"
            "<th>Question</th><th>Opens with</th><th>Correct</th></tr></thead><tbody>"
            + "".join(shown) + "</tbody></table></div>")


def _write_browser(site: Path, view: Any, runs_dir: Path, extra: Iterable[str],
                   mark: str = "") -> tuple[int, int]:
    deb = view.debates
    flags = debate_flags(deb, view.agent_rounds)
    chosen = chosen_debates(deb, flags, extra)
    out = site / "debates"
    (out / "d").mkdir(parents=True, exist_ok=True)
    at = dict(zip(deb["debate_id"], range(len(deb))))
    for did in chosen:  # an id not in the run (None): write_debate_page says so
        write_debate_page(view, did, page_path(site, did),
                          flags=None if did not in at else flags.iloc[at[did]].to_dict())
    datasets = sorted(deb["dataset"].unique(), key=lambda d: (d not in _DS_ORDER,
                                                               _DS_ORDER.get(d, 0), d))
    methods = method_order(deb["method"].unique())
    models = sorted(deb["model"].unique())
    names = model_labels(models)
    idx = {k: {v: i for i, v in enumerate(vals)} for k, vals in
           (("dataset", datasets), ("method", methods), ("model", models))}
    has = set(chosen)
    cols = ["debate_id", "model", "dataset", "method", "seed", "question_id",
            "question_text", "correct", "final", "gold", "rounds", "minority_won",
            "majority_lost", "stopped_early", "tokens", "page"]
    rows = [[d, idx["model"][m], idx["dataset"][ds], idx["method"][me], int(s), str(q), qt,
             int(ok), _short(fa), _short(g), int(r), int(mw), int(ml), int(st), int(t),
             page_name(d) if d in has else ""]
            for d, m, ds, me, s, q, qt, ok, fa, g, r, t, mw, ml, st in zip(
                deb["debate_id"], deb["model"], deb["dataset"], deb["method"], deb["seed"],
                deb["question_id"], _openings(view, deb), deb["correct"], deb["final_answer"],
                deb["gold"], deb["rounds"], deb["tokens"], flags["minority_won"],
                flags["majority_lost"], flags["stopped_early"])]
    command = f"pear show {paths.shown(runs_dir)} --debate ID --html"
    data = {"columns": cols, "rows": rows, "datasets": [dataset_label(d) for d in datasets],
            "methods": [method_label(m) for m in methods],
            "models": [names[m] for m in models],
            "seeds": sorted(int(s) for s in deb["seed"].unique()), "command": command}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    (out / "data.js").write_text(f"window.PEAR_DEBATES = {text};\n", encoding="utf-8")
    (out / "browser.js").write_text(_BROWSER_JS, encoding="utf-8")
    pages_note = ("Every debate has a transcript page." if len(chosen) >= len(deb) else
                  f"{len(chosen)} debates have a transcript page: per model x dataset x "
                  f"method, the first debate (record order) of each kind: "
                  f"{', '.join(KIND_LABELS[k] for k in KINDS)}; and the case study.")
    body = _BROWSER_BODY.substitute(
        summary=html.escape(f"{len(deb)} debates recorded in {paths.shown(runs_dir)}.")
        + (f"</p><p class=\"mark\">{html.escape(mark)}" if mark else ""),
        pages_note=html.escape(pages_note), command=html.escape(command),
        static=_static_listing(rows, cols, data))
    (out / "index.html").write_text(html_page("PEAR debates", body,
                                              css=_SITE_CSS + _BROWSER_CSS), encoding="utf-8")
    return len(deb), len(chosen)


_DS_ORDER = {d: i for i, d in enumerate(DATASETS)}


# ----------------------------------------------------------------- the site

def write_site(site_dir: str | os.PathLike[str], *, figures_dir: str | os.PathLike[str],
               notebooks_dir: str | os.PathLike[str], runs_dir: str | os.PathLike[str],
               notebooks: Mapping[str, Sequence[str]], meta: Mapping[str, str],
               case_study: str = "", ledger: str | Callable[[], str] | None = None,
               mark: str = "", claims_diff: str = "",
               params: Mapping[str, Any] | None = None) -> SiteSummary:
    """Write the results site into ``site_dir`` (emptied first).

    ``notebooks``: notebook name -> the files it writes into ``figures_dir``
    (:data:`pear.paper.registry.EXPECTED_OUTPUTS`), in build order; their executed copies are read
    from ``notebooks_dir``.  ``meta``: what was built (label -> text) for the top of the
    index.  ``runs_dir``: the run whose debates the browser lists (through its view).
    ``case_study``: a debate id that always gets a page.  ``ledger``: see the module.
    ``mark`` (:func:`pear.catalog.labels.evidence_mark`) is shown under the title of the index and
    of the debate browser.  ``claims_diff``: an HTML fragment (:func:`pear.claims.diff.diff_html`)
    shown under the claims as "Changes since the previous build".  ``params``: the build's
    parameters (backend, preset, ..., commit) for the reviewer's checklist
    (:mod:`pear.paper.checklist`, ``checklist.html``)."""
    t0 = time.perf_counter()
    site, fig_dir, nb_dir = Path(site_dir), Path(figures_dir), Path(notebooks_dir)
    if site.exists():
        shutil.rmtree(site)
    (site / "figures").mkdir(parents=True)
    summary = SiteSummary(site)
    executed = [n for n in notebooks if (nb_dir / f"{n}.ipynb").is_file()]
    summary.pages += fork_map(_export, [(nb_dir / f"{n}.ipynb", site / "notebooks" / f"{n}.html")
                                        for n in executed])  # one per core at a time
    view = load(runs_dir)
    summary.debates, summary.transcripts = _write_browser(site, view, Path(runs_dir),
                                                          [case_study], mark)
    summary.pages += sorted((site / "debates").glob("**/*.html"))
    titles = {n: _notebook_intro(nb_dir / f"{n}.ipynb")[0]
              if (nb_dir / f"{n}.ipynb").is_file() else n for n in notebooks}
    toc = "".join(f"<li><a href=\"#{n}\">{html.escape(t)}</a></li>" for n, t in titles.items())
    banner = f"<p class=\"mark\">{html.escape(mark)}</p>" if mark else ""
    claims = _ledger_html(ledger, fig_dir)
    if claims_diff:
        claims += ("<section class=\"ledger\" id=\"claims-diff\"><h2>Changes since the "
                   f"previous build</h2>{claims_diff}</section>")
    nav = " · ".join((["<a href=\"#claims\">Claims</a>"] if claims else []) + [
        "<a href=\"#built\">What was built</a>",
        "<a href=\"debates/index.html\">Debate browser</a>",
        "<a href=\"#notebooks\">Notebooks</a>",
        f"<a href=\"{checklist.PAGE}\">Reviewer's checklist</a>"])
    body = ["<h1>PEAR results</h1>", banner, f"<nav class=\"top\">{nav}</nav>", claims,
            "<h2 id=\"built\">What was built</h2>", _meta_html(meta),
            f"<p><a href=\"debates/index.html\">Debate browser</a>: {summary.debates} "
            f"debates, {summary.transcripts} with a transcript page.</p>",
            f"<h2 id=\"notebooks\">Notebooks</h2><ul class=\"toc\">{toc}</ul>"]
    case = page_path(site, case_study) if case_study else None
    pages = {"case_study": case.relative_to(site).as_posix()} if case and case.is_file() \
        else {}
    body += [_section(n, files, fig_dir, nb_dir, site, pages) for n, files in notebooks.items()]
    index = site / "index.html"
    index.write_text(html_page("PEAR results", "\n".join(b for b in body if b),
                               css=_SITE_CSS), encoding="utf-8")
    summary.pages.insert(0, index)
    page = site / checklist.PAGE
    page.write_text(html_page("PEAR: reviewer's checklist", checklist.checklist_body(
        site, runs_dir=runs_dir, figures_dir=fig_dir, params=params or {}),
        css=_SITE_CSS + _CHECKLIST_CSS), encoding="utf-8")
    summary.pages.insert(1, page)
    summary.seconds = time.perf_counter() - t0
    return summary


def build_meta(*, backend: str, preset: str, models: Sequence[str], grid: str,
               debates: int, started: float, seconds: float, repo: Path) -> dict[str, str]:
    """The "what was built" table of the index (model display names with their ids)."""
    names = model_labels(models)
    return {"Backend": backend, "Preset": preset,
            "Models": "; ".join(names[m] for m in models),
            "Model ids": "; ".join(models),
            "Grid": f"{grid}; {debates} debates in the run",
            "Built": f"{datetime.fromtimestamp(started, timezone.utc):%Y-%m-%d %H:%M UTC}, "
                     f"notebooks took {seconds:.0f} s",
            "Git commit": git_commit(repo)}



def check_site(site_dir: str | os.PathLike[str]) -> list[str]:
    """What is wrong with a written site: a missing page, a link or image of a page that
    points to no file, or a script or image loaded from the network (the site must work
    offline); ``index.html``, the reviewer's checklist, ``debates/index.html`` and every
    notebook page are checked.

    >>> check_site("/nonexistent")
    ['/nonexistent/index.html is missing']
    """
    root = Path(site_dir)
    problems = [f"{root / p} is missing" for p in ("index.html", "debates/index.html",
                                                    "debates/data.js", "debates/browser.js",
                                                    checklist.PAGE)
                if not (root / p).is_file()]
    if problems:
        return problems[:1] if not (root / "index.html").is_file() else problems
    pages = [root / "index.html", root / checklist.PAGE, root / "debates" / "index.html",
             *sorted((root / "notebooks").glob("*.html"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for attr, link in re.findall(r"""(src|href)=["']([^"'#]+)["']""", text):
            if re.match(r"[a-z]+:", link):
                if attr == "src" and not link.startswith("data:"):
                    problems.append(f"{page.relative_to(root)} loads from outside: {link}")
            elif not (page.parent / html.unescape(link)).exists():
                problems.append(f"{page.relative_to(root)} links a missing file: {link}")
    return problems
