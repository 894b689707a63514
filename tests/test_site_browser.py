"""The results site in a real headless Chromium (Debian's ``chromium`` package, driven by
Playwright): a build on simulated agents writes ``build/site``-like output; its index and
its debate browser load from the file system with every figure decoded and no console
error, the browser's filters work, a transcript page opens; the index fits a 1,400-px
window (no horizontal scroll, the claims one line per column with details on click, no
64-hex hash in the visible text); the executed notebooks and the build's output carry no
"Kernel is running over TCP without encryption" warning; screenshots go to
``build/screenshots/`` for a person to look at.

Chromium is installed with apt-get when missing and this process may (root, apt-get
present); otherwise the test is skipped with the reason."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pear.paper import build as paper
from pear.analysis import report
from test_notebooks import _tiny_benchmarks

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "screenshots"


def _chromium() -> str:
    """The path of a Chromium binary, installing Debian's package if needed and allowed;
    skips the test with the reason otherwise."""
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    if not shutil.which("apt-get"):
        pytest.skip("no chromium binary and no apt-get to install it (Debian: apt-get "
                    "install chromium)")
    if os.geteuid() != 0:
        pytest.skip("no chromium binary, and installing it needs root: run "
                    "`sudo apt-get install chromium`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"installing chromium failed ({' '.join(cmd)}): "
                        f"{done.stderr.strip()[-300:]}")
    path = shutil.which("chromium")
    if not path:
        pytest.skip("apt-get installed chromium but no `chromium` binary is on PATH")
    return path


class _Page:
    """A page that records console errors, uncaught exceptions and failed requests."""

    def __init__(self, browser, width: int = 1280):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url}"))

    def open(self, path: Path) -> None:
        self.page.goto(path.resolve().as_uri(), wait_until="load")

    def broken_images(self) -> list[str]:
        return self.page.evaluate("""() => Array.from(document.images)
            .filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)""")


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_site_opens_in_chromium_without_errors(tmp_path, monkeypatch, capfd):
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (the dev extra has it)")
    monkeypatch.setenv("PEAR_DATA_DIR", str(_tiny_benchmarks(tmp_path / "bench")))
    monkeypatch.delenv(report.FIGURES_ENV, raising=False)
    site = tmp_path / "site"
    rc = paper.build(backend="simulated", preset="sim", seeds="0", n_questions=3,
                     runs=str(tmp_path / "runs"), figures=tmp_path / "figures",
                     build_dir=tmp_path / "nb", site_dir=site, only="00,01,03,04,07,08,13")
    assert rc == 0
    printed = capfd.readouterr()
    assert "without encryption" not in printed.out + printed.err
    executed = sorted((tmp_path / "nb").glob("*.ipynb"))
    assert len(executed) == 7
    assert not [p.name for p in executed if "without encryption" in p.read_text()]
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            p = _Page(browser)
            p.open(site / "index.html")
            assert p.page.locator("img").count() == 4  # ablation, round curves, pareto, forest
            assert p.broken_images() == []
            assert p.page.locator("table").count() >= 4
            assert "simulated agents" in p.page.inner_text("body")
            p.page.screenshot(path=str(SHOTS / "index.png"), full_page=False)
            p.page.screenshot(path=str(SHOTS / "index-full.png"), full_page=True)

            wide = _Page(browser, width=1400)
            wide.open(site / "index.html")
            fit = wide.page.evaluate("""() => ({
                width: document.documentElement.scrollWidth,
                past: Array.from(document.querySelectorAll('body *'))
                    .filter(e => e.getBoundingClientRect().right > 1400)
                    .map(e => e.tagName + '.' + e.className).slice(0, 5),
                text: document.body.innerText})""")
            assert fit["width"] <= 1400 and fit["past"] == []
            assert not re.search(r"[0-9a-f]{64}", fit["text"])
            rows = wide.page.locator("table.claims tr[id^=claim-]")
            assert rows.count() > 10
            first = rows.first
            assert first.locator("td").count() == 3  # quote, verdict, one-line reason
            assert not first.locator("dl").is_visible()
            first.locator("summary").click()
            assert first.locator("dl").is_visible() and "Printed" in first.inner_text()
            wide.page.screenshot(path=str(SHOTS / "index-1400.png"))
            assert wide.errors == []

            p.open(site / "debates" / "index.html")
            count = p.page.locator("#count")
            total = int(count.inner_text().split(" of ")[1].split()[0])
            assert count.inner_text().startswith(f"{total} of {total} debates")
            assert p.page.locator("#rows tr").count() == min(100, total)
            p.page.select_option("#f-method", label="PEAR")
            p.page.select_option("#f-correct", value="1")
            shown = int(count.inner_text().split(" of ")[0])
            assert 0 < shown < total
            methods = p.page.locator("#rows tr td:nth-child(4)").all_inner_texts()
            assert set(methods) == {"PEAR"}
            p.page.screenshot(path=str(SHOTS / "debates.png"))
            p.page.locator("#rows tr td a").first.click()
            p.page.wait_for_load_state("load")
            assert "Round 1" in p.page.inner_text("body")
            p.page.screenshot(path=str(SHOTS / "transcript.png"), full_page=True)

            p.open(site / "notebooks" / "07_cost_pareto.html")
            assert p.broken_images() == []
            assert p.errors == []
        finally:
            browser.close()
