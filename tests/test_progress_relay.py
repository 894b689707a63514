"""Progress that reaches the screen through papermill: notebook 00 run by the build's own
path (:func:`pear.paper.build.build`, papermill relaying the kernel's output) on simulated
agents slowed to 20 ms a request, its relayed output read line by line as it arrives."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] (?P<phase>[^:]+(?:: [^:]+)?): calls (?P<calls>\d+)/"
                  r"(?P<expected>\d+) \(\d+%\), debates (?P<debates>\d+)/(?P<of>\d+), "
                  r"(?P<rate>[\d.]+) calls/s, elapsed \S+, ETA (?P<eta>\S+), tokens \d+")
BUILD = """
import os, sys
# one core: one process runs the grid, as on every real model's backend (simulated grids on
# several cores run their chunks in worker processes, which report their calls to the parent
# every 0.5 s: tests/test_progress.py)
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from pear.paper.build import build
d = sys.argv[1]
sys.exit(build("simulated", "smoke", runs=d + "/runs", only="00", figures=d + "/fig",
               build_dir=d + "/nb", site_dir=d + "/site"))
"""


def _read(stream, name: str, lines: list) -> None:
    for line in iter(stream.readline, ""):
        lines.append((time.monotonic(), name, line.rstrip("\n")))


def test_notebook_00_relays_timestamped_progress_while_the_cell_runs(tmp_path):
    env = {**os.environ, "PEAR_SIM_LATENCY_S": "0.02",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", BUILD, str(tmp_path)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[tuple[float, str, str]] = []
    readers = [threading.Thread(target=_read, args=(s, n, lines))
               for s, n in ((proc.stdout, "stdout"), (proc.stderr, "stderr"))]
    for r in readers:
        r.start()
    rc = proc.wait(timeout=300)
    for r in readers:
        r.join()
    text = "\n".join(f"{n}: {t}" for _, n, t in lines)
    assert rc == 0, text
    progress = [(t, LINE.match(s)) for t, n, s in lines if n == "stderr" and LINE.match(s)]
    assert len(progress) >= 3, text
    assert not any("\r" in s for _, _, s in lines)  # lines, no bar frames
    # relayed while the cell runs: before the build reports the notebook done
    done = next(t for t, n, s in lines if n == "stdout" and s.startswith("ok 00_run"))
    assert all(t < done for t, _ in progress)
    # at most ~2 s apart (a line every 1.5 s while calls complete)
    gaps = [b - a for (a, _), (b, _) in zip(progress, progress[1:])]
    assert max(gaps) <= 2.5, gaps
    calls = [int(m["calls"]) for _, m in progress]
    expected = [int(m["expected"]) for _, m in progress]
    assert calls == sorted(calls) and len(set(calls)) >= 3  # counts that increase
    assert expected == sorted(expected, reverse=True)  # the unneeded calls leave the total
    last = progress[-1][1]
    assert calls[-1] == expected[-1] and last["debates"] == last["of"] == "63"
    # a finite ETA once calls complete, from the rate of calls: within a factor of 5 (and
    # 3 s) of the time the grid then still took (debates that stop at consensus drop calls
    # from the total as they go, so an early ETA overestimates; the bar said 2 s
    # for six minutes)
    for t, m in progress[:-1]:
        if int(m["calls"]):
            h, mm, ss = (int(x) for x in m["eta"].split(":"))
            eta, left = 3600 * h + 60 * mm + ss, progress[-1][0] - t
            assert left / 5 - 3 <= eta <= 5 * left + 3, (m.group(0), left)
