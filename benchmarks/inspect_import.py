"""``pear import inspect``: seconds per 1,000 debates to read an Inspect log back as a PEAR run.

Makes an Inspect log of ``--debates`` PEAR debates on GSM8K questions (the ``--preset``
protocol, default ``smoke``: 3 agents, 1 round, 9 calls a debate; ``paper``: 5 agents, 5
rounds, up to 55 calls) played by Inspect's mock model (each reply valid JSON for its phase,
with its own token usage, so nothing is downloaded), then times :func:`pear.harness.logs.
import_logs` on it (best of ``--repeats``) and ``pear validate`` on the result.  Prints the
log's size, the eval's time and the import's seconds per 1,000 debates.  Needs the ``inspect``
extra.
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from pear.harness.logs import import_logs
from pear.harness.tasks import gsm8k
from pear.store.validate import validate
from pear.tasks import benchmarks


def mock_model(questions: list[benchmarks.Question]):
    """The mock agents: agent 2 answers 1 more than the gold answer, the others the gold;
    every critique reviews its targets, every revision accepts the critiques it got."""
    by_text = {q.question.strip(): q for q in questions}

    def generate(input, tools, tool_choice, config):
        text = "\n".join(m.text for m in input)
        agent = int(re.search(r"You are Agent (\d+)", text).group(1))
        q = next(q for t, q in by_text.items() if t in text)
        props = config.response_schema.json_schema.model_dump(exclude_none=True)[
            "properties"] if config.response_schema else {}
        if "reviews" in props:
            body = {"reviews": [{"target": t, "step_loc": "step 1", "correction": "recheck",
                                 "assessment": "Acceptable"}
                                for t in props["reviews"]["items"]["properties"]["target"]
                                ["enum"]]}
        else:
            body = {"answer": str(int(q.gold) + 1) if agent == 2 else q.gold,
                    "confidence": 4, "reasoning": f"agent {agent}: " + "step " * 40}
            if "critique_response" in props:
                body["critique_response"] = {s: {"decision": "ACCEPT", "reason": "fine"}
                                             for s in props["critique_response"]["properties"]}
        reply = json.dumps(body)
        out = ModelOutput.from_content(model="mockllm/model", content=reply)
        out.usage = ModelUsage(input_tokens=len(text) // 4, output_tokens=len(reply) // 4,
                               total_tokens=len(text) // 4 + len(reply) // 4)
        return out

    return get_model("mockllm/model", custom_outputs=generate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--debates", type=int, default=1000, help="debates in the log (questions)")
    ap.add_argument("--preset", default="smoke", help="the debates' protocol (default smoke)")
    ap.add_argument("--repeats", type=int, default=3, help="imports timed (the best counts)")
    ap.add_argument("--max-samples", type=int, default=64, help="samples Inspect runs at once")
    a = ap.parse_args()
    questions = benchmarks.load("gsm8k", n=a.debates, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        (log,) = inspect_eval(gsm8k(n_questions=a.debates, preset=a.preset),
                              model=mock_model(questions), log_dir=f"{tmp}/logs",
                              display="none", max_samples=a.max_samples)
        made = time.perf_counter() - t0
        if log.status != "success":
            raise SystemExit(f"the eval failed: {log.error}")
        path = Path(log.location)
        best = float("inf")
        for i in range(a.repeats):
            s = import_logs([path], f"{tmp}/run{i}")
            best = min(best, s.seconds)
        t1 = time.perf_counter()
        ok = validate(f"{tmp}/run0").findings.ok
        checked = time.perf_counter() - t1
        print(f"log: {a.debates} debates ({a.preset} protocol, "
              f"{s.debates} imported), {path.stat().st_size / 1e6:.1f} MB, made by Inspect in "
              f"{made:.1f} s")
        print(f"import: best of {a.repeats} {best:.2f} s = {1000 * best / a.debates:.2f} s "
              "per 1,000 debates")
        print(f"pear validate on the run: {'valid' if ok else 'DAMAGED'} in {checked:.2f} s")


if __name__ == "__main__":
    main()
