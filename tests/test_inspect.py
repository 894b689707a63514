"""PEAR inside Inspect (pear.harness): the solver on Inspect's mock model, the tasks and their
scorer, the log read back as a run (`pear import inspect`), and (slow) parity with `pear run`
against the same llama.cpp server.

The mock model's replies carry their own token usage: without it Inspect counts tokens with
tiktoken's o200k_base, which it downloads (no network: every sample would fail).  Replies
follow each phase's JSON schema, with answers fixed per question and agent: on the questions
at even positions agent 2 is wrong, on the others agents 1 and 2 are (the vote is wrong)."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from pear import cli  # noqa: E402
from pear.core.backend import Completion  # noqa: E402
from pear.core.engine import Engine, Job  # noqa: E402
from pear.core.hashing import request_seed  # noqa: E402
from pear.harness.logs import NotPearLog, import_logs  # noqa: E402
from pear.harness.solver import RECORD_KEY, RUN_KEY, debate_experiment  # noqa: E402
from pear.methods import method  # noqa: E402
from pear.store.records import iter_records  # noqa: E402
from pear.store.validate import validate  # noqa: E402
from pear.tasks import benchmarks, grading  # noqa: E402
from test_backend_openai import llama_server  # noqa: E402,F401 - the slow test's server

ROOT = Path(__file__).resolve().parents[1]
N = 3  # questions per task
GSM = benchmarks.load("gsm8k", n=N, seed=0)


# ----------------------------------------------------------------- the mock agents

def _wrong(q: benchmarks.Question) -> str:
    if q.choices:
        letters = benchmarks.option_letters(len(q.choices))
        return letters[(letters.index(q.gold) + 1) % len(letters)]
    return grading.format_number(grading.parse_number(q.gold) + Fraction(7))


def _reply(text: str, props: dict, questions: list[benchmarks.Question]) -> str:
    """The JSON a mock agent answers: its question found by its text in the prompt."""
    agent = int(re.search(r"You are Agent (\d+)", text).group(1))
    i, q = next((i, q) for i, q in enumerate(questions) if q.question.strip() in text)
    if "reviews" in props:
        targets = props["reviews"]["items"]["properties"]["target"]["enum"]
        return json.dumps({"reviews": [{"target": t, "step_loc": "step 1", "correction":
                                        "recheck the sum", "assessment": "Acceptable"}
                                       for t in targets]})
    wrong = agent == 2 or (i % 2 == 1 and agent == 1)
    body = {"answer": _wrong(q) if wrong else q.gold, "confidence": 2 if wrong else 4,
            "reasoning": f"agent {agent} works it out"}
    if "critique_response" in props:
        body["critique_response"] = {s: {"decision": "ACCEPT" if wrong else "REJECT",
                                         "reason": "weighed it"}
                                     for s in props["critique_response"]["properties"]}
    return json.dumps(body)


def _usage(prompt: str, reply: str) -> tuple[int, int]:
    return len(prompt) // 4, len(reply) // 4 + 1


def mock_model(questions, name: str = "mockllm/model"):
    """Inspect's mock model answering as the mock agents, each output with its usage."""
    def generate(input, tools, tool_choice, config):
        text = "\n".join(m.text for m in input)
        schema = config.response_schema.json_schema.model_dump(exclude_none=True) \
            if config.response_schema else {}
        reply = _reply(text, schema.get("properties", {}), questions)
        ins, outs = _usage(text, reply)
        out = ModelOutput.from_content(model=name, content=reply)
        out.usage = ModelUsage(input_tokens=ins, output_tokens=outs, total_tokens=ins + outs)
        return out
    return get_model(name, custom_outputs=generate)


class MockBackend:
    """The same mock agents behind the core's Backend, as `pear run` would call them."""

    name = "mock"
    model_id = "mockllm/model"

    def __init__(self, questions):
        self.questions, self.seeds = questions, []

    def settings(self):
        return {}

    def generate(self, requests):
        out = []
        for r in requests:
            text = "\n".join(m["content"] for m in r.messages)
            reply = _reply(text, (r.schema or {}).get("properties", {}), self.questions)
            ins, outs = _usage(text, reply)
            self.seeds.append(r.seed)
            out.append(Completion(reply, prompt_tokens=ins, completion_tokens=outs))
        return out


def _eval(task, model, tmp_path, **kw):
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none", **kw)
    assert log.status == "success", log.error
    return log


@pytest.fixture(scope="module")
def gsm_log(tmp_path_factory):
    """The gsm8k task on the mock agents: PEAR, the smoke protocol with 2 rounds, 3
    questions."""
    from pear.harness.tasks import gsm8k
    tmp = tmp_path_factory.mktemp("gsm_log")
    log = _eval(gsm8k(n_questions=N, preset="smoke", rounds=2), mock_model(GSM), tmp)
    return read_eval_log(log.location)


ENTRY_POINT = """
import json, sys
from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
def reply(input, tools, tool_choice, config):
    out = ModelOutput.from_content(model="mockllm", content=json.dumps(
        {"answer": "18", "confidence": 3, "reasoning": "r"}))
    out.usage = ModelUsage(input_tokens=9, output_tokens=9, total_tokens=18)
    return out
(log,) = eval("pear/gsm8k", model=get_model("mockllm/model", custom_outputs=reply),
              task_args={"method": "cot", "n_questions": 1}, log_dir=sys.argv[1],
              display="none")
print(log.status, log.samples[0].metadata["pear_record"]["method"])
"""


def test_inspect_finds_the_tasks_by_name(tmp_path):
    """`pear/gsm8k` through the entry point (run outside the checkout: from its root, a
    `python -m` run finds the in-tree pear.egg-info first, which is no editable install to
    Inspect, and names the tasks without the `pear/` prefix)."""
    out = subprocess.run([sys.executable, "-c", ENTRY_POINT, str(tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-2:] == ["success", "cot"]


# ----------------------------------------------------------------- the solver and the tasks

def test_samples_hold_pear_records_and_the_grader_scores_the_vote(gsm_log):
    assert len(gsm_log.samples) == N
    for s in gsm_log.samples:
        assert s.error is None
        rec = s.metadata[RECORD_KEY]
        assert (rec["method"], rec["backend"], rec["model"]) == ("pear", "inspect",
                                                                 "mockllm/model")
        assert rec["rounds"] == 2 and len(rec["rounds_data"]) == 3 and rec["n_agents"] == 3
        assert all(len(rd["agents"]) == 3 for rd in rec["rounds_data"])
        assert [len(rd["edges"]) for rd in rec["rounds_data"]] == [0, 3, 3]  # n k, k = 1
        assert s.output.completion == rec["final_answer"]
        q = benchmarks.get_question("gsm8k", s.id)
        graded = grading.get("gsm8k").grade(s.output.completion, q)
        assert s.scores["pear_grader"].value == ("C" if graded else "I")
        assert graded == rec["correct"]
        assert s.metadata[RUN_KEY]["protocol"] == debate_experiment(
            "pear", preset="smoke", rounds=2).protocol()
    # the mock agents: the vote is right on the questions at even positions only
    assert [s.scores["pear_grader"].value for s in gsm_log.samples] == ["C", "I", "C"]
    assert gsm_log.results.scores[0].metrics["accuracy"].value == pytest.approx(2 / 3)


def test_the_debate_is_the_one_pear_run_makes(gsm_log):
    """Prompts, seeds, parsing, routing, votes and token counts: the record equals the one the
    engine writes for the same (question, seed) with a plain backend, identity aside."""
    exp = debate_experiment("pear", preset="smoke", rounds=2)
    backend = MockBackend(GSM)
    direct = {r["question_id"]: r for r in Engine(backend, exp.debate, task_for=grading.get)
              .run([Job(q, method("pear", exp.router), 0) for q in GSM])}
    seeds = []
    for s in gsm_log.samples:
        rec = s.metadata[RECORD_KEY]
        ours = direct[rec["question_id"]]
        for key in ("rounds_data", "final_answer", "correct", "tokens", "calls",
                    "parse_failures", "config_hash", "gold", "stop_reason"):
            assert rec[key] == ours[key], key
        models = [e for e in s.events if e.event == "model"]
        assert len(models) == rec["calls"]
        seeds += [e.config.seed for e in models]
        assert sum(e.output.usage.input_tokens for e in models) == rec["tokens"]["prompt"]
    assert sorted(seeds) == sorted(backend.seeds)
    q = GSM[0]
    assert request_seed(0, "", "gsm8k", q.id, 0, 0, "initial") in seeds


def test_calls_are_labelled_by_round_phase_and_agent(gsm_log):
    s = gsm_log.samples[0]
    spans = [e.name for e in s.events if e.event == "span_begin"]
    for name in ("round 0: initial answers", "round 1: critiques", "round 1: revisions",
                 "round 2: revisions", "agent 1", "agent 3"):
        assert name in spans, name
    first = next(e for e in s.events if e.event == "model")
    label = first.input[-1].metadata["pear"]
    assert (label["phase"], label["round"]) == ("initial", 0) and label["agent"] in (0, 1, 2)


def test_other_methods_and_the_task_file_run_too(tmp_path):
    """A baseline (CoT) on TruthfulQA through the task file, and the clique topology on
    MMLU-Pro: records of their shape, scored by the letter grader."""
    tqa = benchmarks.load("truthfulqa", n=2, seed=0)
    log = _eval(f"{ROOT}/pear/harness/tasks.py@truthfulqa", mock_model(tqa), tmp_path,
                task_args={"method": "cot", "n_questions": 2, "preset": "smoke"})
    for s in log.samples:
        rec = s.metadata[RECORD_KEY]
        assert (rec["method"], rec["n_agents"], rec["rounds"]) == ("cot", 1, 0)
        q = benchmarks.get_question("truthfulqa", s.id)
        assert (s.scores["pear_grader"].value == "C") == grading.get("truthfulqa").grade(
            rec["final_answer"], q) == (rec["final_answer"] == q.gold)
    mmlu = benchmarks.load("mmlu_pro", n=2, seed=0)
    from pear.harness.tasks import mmlu_pro
    log = _eval(mmlu_pro(method="clique", n_questions=2, preset="smoke"), mock_model(mmlu),
                tmp_path)
    for s in log.samples:
        rec = s.metadata[RECORD_KEY]
        assert rec["method"] == "clique" and rec["rounds"] == 1
        assert sorted(map(tuple, rec["rounds_data"][1]["edges"])) == \
            [(a, b) for a in range(3) for b in range(3) if a != b]


def test_epochs_take_the_next_run_seeds(tmp_path):
    from pear.harness.tasks import gsm8k
    qs = benchmarks.load("gsm8k", n=1, seed=0)
    log = _eval(gsm8k(method="cot_sc", n_questions=1, preset="smoke", seed=3), mock_model(qs),
                tmp_path, epochs=2)
    recs = {s.epoch: s.metadata[RECORD_KEY] for s in log.samples}
    assert {e: r["seed"] for e, r in recs.items()} == {1: 3, 2: 4}
    run = import_logs([log.location], tmp_path / "run")
    assert run.debates == 2 and validate(tmp_path / "run").findings.ok


def test_model_roles_make_a_mixed_panel(tmp_path):
    from pear.harness.tasks import gsm8k
    qs = benchmarks.load("gsm8k", n=1, seed=0)
    log = _eval(gsm8k(n_questions=1, preset="smoke"), mock_model(qs), tmp_path,
                model_roles={"agent2": mock_model(qs, "mockllm/other")})
    rec = log.samples[0].metadata[RECORD_KEY]
    assert [a["model"] for a in rec["rounds_data"][0]["agents"]] == \
        ["mockllm/model", "mockllm/other", "mockllm/model"]
    assert rec["model"] == "mockllm/model+mockllm/other+mockllm/model"
    bad = inspect_eval(gsm8k(n_questions=1, preset="smoke"), model=mock_model(qs),
                       model_roles={"agent0": mock_model(qs, "mockllm/other")},
                       log_dir=str(tmp_path), display="none")[0]
    assert bad.status == "error" and "agent0" in str(bad.samples[0].error.message) \
        and "numbered 1..3" in str(bad.samples[0].error.message)


# ----------------------------------------------------------------- logs read back as a run

def test_a_log_imports_to_a_valid_run_with_the_logs_accuracy(gsm_log, tmp_path):
    s = import_logs([gsm_log.location], tmp_path / "run")
    assert s.debates == N
    assert validate(tmp_path / "run").findings.ok
    records = list(iter_records(tmp_path / "run"))
    assert sorted(r["question_id"] for r in records) == sorted(q.id for q in GSM)
    accuracy = sum(r["correct"] for r in records) / len(records)
    assert accuracy == pytest.approx(gsm_log.results.scores[0].metrics["accuracy"].value)
    # the same log written as .json (Inspect's other format) imports to the same records
    json_log = tmp_path / "log.json"
    write_eval_log(read_eval_log(gsm_log.location), str(json_log), format="json")
    import_logs([json_log], tmp_path / "from_json")
    assert sorted(r["debate_id"] for r in iter_records(tmp_path / "from_json")) == \
        sorted(r["debate_id"] for r in records)
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["inspect"]["logs"][0]["eval_id"] == gsm_log.eval.eval_id
    assert man["complete"] and man["models"] == ["mockllm/model"]
    # the CLI: the same import; options of the other formats are refused
    assert cli.main(["import", "inspect", gsm_log.location, "--out",
                     str(tmp_path / "cli")]) == 0
    assert validate(tmp_path / "cli").findings.ok
    assert cli.main(["import", "inspect", gsm_log.location, "--out", str(tmp_path / "x"),
                     "--dataset", "gsm8k"]) == 2


def test_the_notebooks_read_an_inspect_run_whole_whatever_the_preset(gsm_log, tmp_path):
    """A replay build (make paper BACKEND=replay RUNS=...) takes every debate of the run, as
    for another framework's import: a few questions of one method are not a preset's grid."""
    from pear.paper import study  # heavy: pandas; only this test needs the notebooks' reader
    import_logs([gsm_log.location], tmp_path / "run")
    assert study.is_imported(tmp_path / "run")
    res = study.load_results(tmp_path / "run", study.experiment("smoke"), "subset")
    assert len(res.debates) == N and set(res.debates["method"]) == {"pear"}
    assert "PEAR's Inspect solver" in res.grid


def test_a_log_of_another_solver_is_one_clear_error_and_writes_nothing(tmp_path, capsys):
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate
    out = ModelOutput.from_content(model="mockllm", content="4")
    out.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
    log = _eval(Task(dataset=[Sample(id="q1", input="2 + 2?", target="4")], solver=generate()),
                get_model("mockllm/model", custom_outputs=[out]), tmp_path)
    name = Path(log.location).name
    with pytest.raises(NotPearLog, match=rf"{re.escape(name)}: sample 'q1' \(epoch 1\) holds "
                                         r"no PEAR record.*pear_debate \(its solver: generate"):
        import_logs([log.location], tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run")]
    assert cli.main(["import", "inspect", log.location, "--out", str(tmp_path / "run")]) == 2
    assert "holds no PEAR record" in capsys.readouterr().err


def test_nothing_but_the_cli_import_command_loads_the_harness():
    """inspect_ai is a heavy optional extra: only pear.harness imports it, and only the
    import command imports pear.harness (inside its function)."""
    bad = []
    for path in (ROOT / "pear").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if rel.startswith("pear/harness/"):
                    continue
                if name.startswith("inspect_ai") or name.startswith("pear.harness") and \
                        rel != "pear/cli/importing.py":
                    bad.append(f"{rel}: {name}")
    assert not bad, bad


# ----------------------------------------------------------------- parity with pear run (slow)

@pytest.mark.slow
def test_pear_run_and_inspect_give_the_same_debates(llama_server, tmp_path):
    """The same small grid (GSM8K, 3 questions, seed 0, PEAR, the smoke protocol) by `pear
    run --backend openai` and by `inspect eval pear/gsm8k --model openai-api/local/...`
    against one llama.cpp server: the same answers, votes and accuracy."""
    env = {**os.environ, "LOCAL_BASE_URL": llama_server, "LOCAL_API_KEY": "none",
           "OPENAI_API_KEY": "none"}
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "pear"), "run", "--backend", "openai", "--model", "smollm2",
                    "--base-url", llama_server, "--preset", "smoke", "--datasets", "gsm8k",
                    "--methods", "pear", "--seeds", "0", "--n-questions", str(N), "--no-full",
                    "--no-cache", "--quiet", "--out", str(tmp_path / "pear_run")],
                   check=True, env=env, timeout=1200)
    subprocess.run([str(bin_dir / "inspect"), "eval", "pear/gsm8k",
                    "--model", "openai-api/local/smollm2", "-T", "preset=smoke",
                    "-T", f"n_questions={N}", "-T", "seed=0", "--log-dir",
                    str(tmp_path / "logs"), "--display", "none"],
                   check=True, env=env, timeout=1200, cwd=tmp_path)
    (log,) = list((tmp_path / "logs").glob("*.eval"))
    import_logs([log], tmp_path / "inspect_run")
    assert validate(tmp_path / "inspect_run").findings.ok
    ours = {r["question_id"]: r for r in iter_records(tmp_path / "pear_run")}
    theirs = {r["question_id"]: r for r in iter_records(tmp_path / "inspect_run")}
    assert sorted(ours) == sorted(theirs) == sorted(q.id for q in GSM)
    rows = [f"{'question':<12} {'round':>5}  {'pear run: answers (as graded)':<30} "
            f"{'inspect: answers (as graded)':<30} {'vote: run / inspect':<20} texts same"]
    for qid in sorted(ours):
        a, b = ours[qid], theirs[qid]
        for ra, rb in zip(a["rounds_data"], b["rounds_data"]):
            xa, xb = [x["canonical"] for x in ra["agents"]], [x["canonical"] for x in rb["agents"]]
            same = [x["reasoning"] for x in ra["agents"]] == [x["reasoning"] for x in rb["agents"]]
            rows.append(f"{qid:<12} {ra['round']:>5}  {str(xa):<30} {str(xb):<30} "
                        f"{ra['vote']!r:>8} / {rb['vote']!r:<9} {same}")
    acc = [sum(r["correct"] for r in run.values()) / len(run) for run in (ours, theirs)]
    tokens = [sum(r["tokens"]["prompt"] + r["tokens"]["completion"] for r in run.values())
              for run in (ours, theirs)]
    rows.append(f"accuracy: pear run {acc[0]:.3f}, inspect {acc[1]:.3f}; tokens: pear run "
                f"{tokens[0]}, inspect {tokens[1]}")
    print("\n" + "\n".join(rows))
    for qid in ours:
        a, b = ours[qid], theirs[qid]
        assert [[x["reasoning"] for x in rd["agents"]] for rd in a["rounds_data"]] == \
            [[x["reasoning"] for x in rd["agents"]] for rd in b["rounds_data"]], qid
        assert [rd["vote"] for rd in a["rounds_data"]] == [rd["vote"] for rd in b["rounds_data"]]
        assert [rd["edges"] for rd in a["rounds_data"]] == [rd["edges"] for rd in b["rounds_data"]]
        assert a["tokens"] == b["tokens"] and a["correct"] == b["correct"]
    assert acc[0] == acc[1]
