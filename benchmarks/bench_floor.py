"""What a simulated debate must cost at least, against what it costs now (issue 36, item 1).

A sample of the simulated paper grid (the ``sim`` preset, seed 0, no full-dataset runs,
``--questions`` questions per dataset) is run in this process with one engine
(:func:`pear.runs.runner.run`, ``workers=1``; the Math-Verify worker started beforehand, so
its start is not counted): *now* is its wall time per debate.  Its records then give the
floor, the work no simulated debate can skip, timed alone on the same debates:

- **router**: every routed round of every debate routed again (:func:`pear.core.router.
  route_batch` over each chunk's debates of a round, as the engine batches them: pool draw,
  scores, softmax, draw), plus the influence update of every debate round;
- **record**: the record's objects made (as ``json.loads`` of its line makes the same dicts
  and lists) and written (:class:`pear.store.records.RecordWriter`: JSON, the schema check,
  append, one fsync per chunk).

Then what every request costs at least while the records stay what they are, timed alone on
the grid's own requests rebuilt from its records (round 0 once per question and agent; a
critique per source with out-edges, a revision per agent and round): its seed
(:func:`pear.core.hashing.request_seed`, sha256), the six uniforms of the simulated backend's
generator seeded from it (:func:`pear.sim.backend.request_uniforms`, a phase of about 2,400
requests at once, as the grid's phases come), and its prompt rendered (the prompt's length is the request's
prompt tokens).  Added to the floor, that is the least a debate costs with today's records,
whatever batching does (docs/performance.md).

Prints microseconds per debate of the grid (all methods: the single-agent ones route nothing).
Beside the record write, the least its bytes cost whatever builds them: each record's values,
laid out beforehand, made into msgspec Structs in the record's key order and encoded (the
lines checked equal to the records').

Last, what a whole ``pear run`` command pays before and after its debates: the wall time of
``python -m pear run`` on the 60-question grid of ``bench_sim.py --grid paper`` when every
debate of it is already recorded (imports, the grid, the questions, the manifest: no
debate), the median of ``--repeat`` runs.  With the floor above, that bounds the rate of that
benchmark's command on two cores (the floor with records kept, halved, per debate, plus the
start-up), printed beside ``--base-rate`` (the earlier commit's rate there; 277 debates/s is
issue 56's figure for 8029965 on this project's 2-core machines).  Then, at fifteen times
that base, what a debate may take of a core with both cores fully used, and what is left of it
once the records' bytes, seeds and draws (at the least) are paid: the budget of everything else,
beside what routing, prompts and the view written beside the records (``lay_out``: a record
encoded, decoded, checked and laid out into the view's rows) cost now.

And what grading costs a machine's first run, which finds the grading store empty
(``PEAR_GRADING_CACHE`` pointed at a new file): the CPU of Math-Verify's worker process (its
start, and every reading and comparison of the 60-question grid's MATH answers) in a fresh
process running that grid with one engine, against the CPU that fifteen times the base leaves
the grid's debates on both cores.  With two processes each starts its own worker, so the
one-process figure plus one more start is the least the two-process run pays.

    python benchmarks/bench_floor.py [--questions 20] [--repeat 5] [--base-rate 277]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20, help="questions per dataset")
    ap.add_argument("--repeat", type=int, default=5, help="timings of the floor (median)")
    ap.add_argument("--base-rate", type=float, default=277.0,
                    help="the earlier commit's debates/s on the 60-question grid")
    ap.add_argument("--grading-cpu", type=int, metavar="N", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.grading_cpu:
        return grading_cpu(a.grading_cpu)

    from pear.core.graphs import debate_base_graph, distinct_relabellings
    from pear.core.router import RouterState, route_batch, update_influence
    from pear.runs import runner
    from pear.runs.factory import make_backend
    from pear.runs.grid import experiment
    from pear.store.checks import Checker
    from pear.store.indexing import lay_out
    from pear.store.records import RecordWriter, read_records
    from pear.tasks import mathgrade

    exp = experiment("sim", backend="simulated", seeds=(0,), n_questions=a.questions,
                     full_datasets=())
    backend = make_backend("simulated", exp=exp)
    mathgrade.verify("1", "1")  # the Math-Verify worker's start is not a debate's cost
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        start = time.perf_counter()
        summary = runner.run(exp, backend, Path(tmp) / "run", progress=False, workers=1)
        now = time.perf_counter() - start
        run_dir = runner.model_dir(Path(tmp) / "run", backend.model_id)
        records = read_records(run_dir)
        # the view's part of a record, as `pear run` writes it: encoded, decoded, checked, laid
        # out into the four tables' rows (pear.store.indexing.lay_out)
        checker = Checker(run_dir)
        layouts = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            lay_out(checker, records)
            layouts.append(time.perf_counter() - t)
    view_us = statistics.median(layouts) / len(records) * 1e6
    assert len(records) == summary.written > 0
    n, k, cfg = exp.debate.n_agents, exp.debate.k, exp.router

    # router: the routed rounds, batched per (chunk of questions, round) as the engine does
    batches: dict[tuple[int, int], list[tuple]] = {}
    influence: list[tuple] = []
    groups: dict[tuple, int] = {}
    relabellings: dict[tuple, object] = {}
    for r in records:
        chunk = groups.setdefault((r["seed"], r["dataset"], r["question_id"]), len(groups))
        chunk //= exp.chunk_questions
        base = debate_base_graph(r["seed"], r["dataset"], r["question_id"], n, k)
        key = base.tobytes()
        if key not in relabellings:
            relabellings[key] = distinct_relabellings(base, n)
        rounds = r["rounds_data"]
        for prev, cur in zip(rounds, rounds[1:]):
            if cur.get("router"):
                state = RouterState.after_round(prev, base, k=k, config=cfg)
                batches.setdefault((chunk, cur["round"]), []).append(
                    (state, relabellings[key]))
            if cur["edges"]:
                pairs = [(c["source"], c["decision"] == "ACCEPT") for c in cur["critiques"]]
                influence.append((prev["influence"][:n], pairs))

    def route_all() -> None:
        for items in batches.values():
            route_batch([(s, np.random.default_rng(i), rel) for i, (s, rel) in enumerate(items)])

    def influence_all() -> None:
        for rho, pairs in influence:
            update_influence(rho, pairs, cfg.beta)

    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]

    def build_all() -> None:
        for line in lines:
            json.loads(line)

    # the least that the record's bytes cost, whatever builds them: each record's values, laid
    # out in flat tuples beforehand, made into msgspec Structs in the record's key order (the
    # cheapest Python objects msgspec encodes) and encoded; the lines must equal the records'
    import msgspec
    from pear.store.records import encode_record
    shapes: dict[tuple, type] = {}

    def shape(keys: tuple) -> type:
        if keys not in shapes:
            shapes[keys] = msgspec.defstruct(f"S{len(shapes)}", [(k, object) for k in keys])
        return shapes[keys]

    def flat(record: dict) -> tuple:
        """(struct, values, where the rounds are, rounds): each round (struct, values, where
        its agents and critiques are, their (struct, values)); other values as they are."""
        def level(d: dict, nested: tuple[str, ...]) -> tuple[type, list, list[int]]:
            return shape(tuple(d)), list(d.values()), [list(d).index(k) for k in nested]
        rounds = []
        for rd in record["rounds_data"]:
            kind, values, (ai, ci) = level(rd, ("agents", "critiques"))
            rounds.append((kind, values, ai, ci,
                           [(shape(tuple(x)), tuple(x.values())) for x in rd["agents"]],
                           [(shape(tuple(x)), tuple(x.values())) for x in rd["critiques"]]))
        kind, values, (ri,) = level(record, ("rounds_data",))
        return kind, values, ri, rounds

    def made(f: tuple):
        kind, values, ri, rounds = f
        out = []
        for rkind, rvalues, ai, ci, agents, critiques in rounds:
            rvalues = rvalues.copy()
            rvalues[ai] = [k(*v) for k, v in agents]
            rvalues[ci] = [k(*v) for k, v in critiques]
            out.append(rkind(*rvalues))
        values = values.copy()
        values[ri] = out
        return kind(*values)

    flats = [flat(r) for r in records]
    encoder = msgspec.json.Encoder()
    assert all(encoder.encode(made(f)) == encode_record(r, check=False)
               for f, r in zip(flats, records)), "the Structs must give the records' lines"

    def bytes_all() -> None:
        for f in flats:
            encoder.encode(made(f))

    def write_all(tmp: Path) -> None:
        with RecordWriter(tmp) as w:
            for i, r in enumerate(records):
                w.write(r)
                if i % 500 == 499:
                    w.sync()

    # every request's own work that the records fix: seed, draws, prompt (rebuilt from them)
    from pear.core import prompts
    from pear.core.hashing import request_seed
    from pear.runs.jobs import jobs
    questions = {(j.question.dataset, j.question.id): j.question for j in jobs(exp)}
    style = exp.debate.prompt_style
    requests: list[tuple] = []  # (seed parts, phase, prompt arguments)
    initial = set()
    for r in records:
        q = questions[r["dataset"], r["question_id"]]
        for a0 in r["rounds_data"][0]["agents"]:
            key = (r["seed"], r["dataset"], r["question_id"], a0["agent"])
            if key not in initial:
                initial.add(key)
                requests.append(((r["seed"], "", r["dataset"], r["question_id"], a0["agent"],
                                  0, "initial"), "initial", (q, a0["agent"])))
        rounds = r["rounds_data"]
        for prev, cur in zip(rounds, rounds[1:]):
            views = [{"agent": x["agent"], "answer": x["answer"] or "(no answer)",
                      "canonical": x["canonical"], "confidence": x["confidence"],
                      "reasoning": x["reasoning"]} for x in prev["agents"]]
            targets: dict[int, list[int]] = {}
            for s_, t_ in cur["edges"]:
                targets.setdefault(s_, []).append(t_)
            for s_, ts in sorted(targets.items()):
                requests.append(((r["seed"], r["method"], r["dataset"], r["question_id"], s_,
                                  cur["round"], "critique"), "critique",
                                 (q, views[s_], [views[t] for t in ts])))
            for i, view in enumerate(views):
                shown = [{"source": c["source"], "step_loc": c["step_loc"],
                          "correction": c["correction"], "assessment": c["assessment"]}
                         for c in cur["critiques"] if c["target"] == i and c["delivered"]]
                requests.append(((r["seed"], r["method"], r["dataset"], r["question_id"], i,
                                  cur["round"], "revision"), "revision", (q, view, shown)))
    render = {"initial": prompts.initial_messages, "critique": prompts.critique_messages,
              "revision": prompts.revision_messages}

    def seeds_all() -> None:
        for parts_, _, _ in requests:
            request_seed(*parts_)

    seeds = [request_seed(*parts_) for parts_, _, _ in requests]

    from pear.sim.backend import request_uniforms
    phases = [seeds[i:i + 2400] for i in range(0, len(seeds), 2400)]  # a phase's requests

    def draws_all() -> None:  # each request's generator's six uniforms, a phase at once
        for part in phases:
            request_uniforms(backend.seed, part, 6).tolist()

    def prompts_all() -> None:
        for _, phase, args in requests:
            render[phase](*args, style)

    def timed(fn, *args) -> float:
        times = []
        for i in range(a.repeat):
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
        return statistics.median(times) / len(records) * 1e6

    with tempfile.TemporaryDirectory(prefix="bench-floor-w-") as tmp:
        parts = {"router (route_batch)": timed(route_all),
                 "influence update": timed(influence_all),
                 "record objects": timed(build_all),
                 "record write": timed(lambda: write_all(Path(tmp) / str(time.monotonic())))}
    floor = sum(parts.values())
    routed = sum(len(b) for b in batches.values())
    print(f"{len(records)} debates ({routed} routed rounds) of the sim paper grid, "
          f"{a.questions} questions per dataset, seed 0; microseconds per debate:")
    for name, us in parts.items():
        print(f"  {name:<22} {us:9.1f}")
    print(f"  {'floor':<22} {floor:9.1f}")
    per_request = {"request seeds (sha256)": timed(seeds_all),
                   "6 uniforms a request": timed(draws_all),
                   "prompts rendered": timed(prompts_all)}
    kept = floor + sum(per_request.values())
    print(f"what today's records fix for each of the {len(requests)} requests "
          f"({len(requests) / len(records):.1f} a debate), microseconds per debate:")
    for name, us in per_request.items():
        print(f"  {name:<22} {us:9.1f}   ({us * len(records) / len(requests):.2f} a request)")
    print(f"  {'floor, records kept':<22} {kept:9.1f}   ({1e6 / kept:.0f} debates/s a core)")
    print(f"  {'now (1 process)':<22} {now / len(records) * 1e6:9.1f}   "
          f"x{now / len(records) * 1e6 / floor:.1f} the floor, "
          f"x{now / len(records) * 1e6 / kept:.1f} the floor with records kept")

    least_bytes = timed(bytes_all)
    print(f"  {'record bytes at least':<22} {least_bytes:9.1f}   (its values made into msgspec "
          f"Structs and encoded: the record write's least part)")
    print(f"  {'view laid out':<22} {view_us:9.1f}   (a record's rows of the view written "
          f"beside the records: encoded, decoded, checked, laid out)")

    # the command's start-up: bench_sim's paper grid at 60 questions, every debate recorded
    from bench_sim import GRIDS, ROOT
    cmd = [sys.executable, "-m", "pear", "run", "--backend", "simulated", "--preset", "sim",
           *GRIDS["paper"], "--n-questions", "60", "--quiet"]
    with tempfile.TemporaryDirectory(prefix="bench-floor-s-") as tmp:
        out = ["--out", str(Path(tmp) / "run")]
        done = subprocess.run(cmd + out, cwd=ROOT, check=True, capture_output=True, text=True)
        grid = int(done.stdout.strip().splitlines()[-1].split()[0])
        starts = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            subprocess.run(cmd + out, cwd=ROOT, check=True, capture_output=True)
            starts.append(time.perf_counter() - t)
    start_s = statistics.median(starts)
    best = grid / (start_s + grid * kept * 1e-6 / 2)
    print(f"start-up of `pear run` on the 60-question grid ({grid} debates, all recorded "
          f"already): {start_s:.2f} s (median of {a.repeat})")
    print(f"  that grid's rate on two cores at most {best:,.0f} debates/s with records kept "
          f"(start-up + floor / 2 a debate): x{best / a.base_rate:.1f} a base of "
          f"{a.base_rate:g} debates/s; x15 needs the whole command within "
          f"{grid / (15 * a.base_rate):.2f} s")
    # fifteen times the base: what is left a debate, on a core, with both cores perfectly used,
    # after the start-up and what the records fix at the least (bytes, seeds, draws)
    per_core = (grid / (15 * a.base_rate) - start_s) * 2 / grid * 1e6
    fixed = least_bytes + per_request["request seeds (sha256)"] + \
        per_request["6 uniforms a request"]
    left = per_core - fixed
    per_req = len(requests) / len(records)
    print(f"at x15 a debate may take {per_core:.1f} microseconds of a core (both cores fully "
          f"used); the records' bytes, seeds and draws take {fixed:.1f} at the least; left "
          f"for everything else (prompts, routing, the agents, parsing, grading, the view): "
          f"{left:.1f} a debate, {left / per_req:.2f} a request; routing and the influence "
          f"update alone take {parts['router (route_batch)'] + parts['influence update']:.1f}, "
          f"prompts rendered {per_request['prompts rendered']:.1f}, the view {view_us:.1f}")

    # a machine's first run: the grading store empty, Math-Verify's worker does every reading
    child = subprocess.run([sys.executable, __file__, "--grading-cpu", "60"], cwd=ROOT,
                           check=True, capture_output=True, text=True)
    got = json.loads(child.stdout.strip().splitlines()[-1])
    budget = per_core * 1e-6 * grid
    least = got["grading_s"] + got["start_s"]
    print(f"grading on an empty store, the 60-question grid in one process: Math-Verify's "
          f"worker took {got['grading_s']:.2f} s of CPU ({got['start_s']:.2f} of it its start "
          f"alone); with two processes at least {least:.2f} s (one more start), against "
          f"{budget:.2f} s of CPU that x15 leaves the grid's {grid} debates on both cores: "
          f"{least / budget:.0%} of it, {(budget - least) / grid * 1e6:.1f} microseconds a "
          f"debate left for the rest")


def grading_cpu(n_questions: int) -> None:
    """In a fresh process: the CPU of Math-Verify's worker (reaped, so counted as this
    process's children's) while one engine runs the ``n_questions`` grid of bench_sim's paper
    grid with an empty grading store, and of its start alone; one JSON line."""
    import os
    import resource

    def children() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    from pear.runs import runner
    from pear.runs.factory import make_backend
    from pear.runs.grid import experiment
    from pear.tasks import mathgrade

    with tempfile.TemporaryDirectory(prefix="bench-floor-g-") as tmp:
        os.environ[mathgrade.CACHE_ENV] = str(Path(tmp) / "empty.sqlite")
        before = children()
        mathgrade.verify("1", "2")
        mathgrade.shutdown()
        start_s = children() - before
        mathgrade._EXTRACTED.clear()
        mathgrade._VERIFIED.clear()
        os.environ[mathgrade.CACHE_ENV] = str(Path(tmp) / "empty2.sqlite")
        exp = experiment("sim", backend="simulated", seeds=(0,), n_questions=n_questions,
                         full_datasets=())
        backend = make_backend("simulated", exp=exp)
        before = children()
        runner.run(exp, backend, Path(tmp) / "run", progress=False, workers=1, view=False)
        mathgrade.shutdown()
        grading_s = children() - before
    print(json.dumps({"start_s": start_s, "grading_s": grading_s}))


if __name__ == "__main__":
    main()
