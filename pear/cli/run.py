"""Commands that make runs: ``pear run``, ``pear plan``, ``pear merge``, ``pear branch`` and
``pear launch`` (a grid's shards on a Slurm cluster or as local processes)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pear.cli.options import (Parser, add_backend_argument, add_plugin_argument, comma_list,
                              nonneg, positive, positive_float)
from pear.paths import cache_path
from pear.runs.factory import make_backend, grid_backend, default_workers
from pear import backends
from pear.backends.dry import CHARS_PER_TOKEN
from pear.backends.registry import BACKENDS, SIMULATED

__all__ = ["add_run", "add_plan", "add_merge", "add_branch", "add_launch"]

_MODEL_NAMED_BY = "/".join(n for n, s in BACKENDS.items() if s.takes_model_name)
"""The backends that take ``--model NAME`` (:mod:`pear.backends.registry`)."""


def _role(text: str) -> tuple[int, str]:
    """``AGENT=ROLE`` (agent numbered from 1); the role's name is checked by the config."""
    agent, sep, role = text.partition("=")
    if not sep or not agent.strip().isdigit() or not role.strip():
        raise argparse.ArgumentTypeError(f"expected AGENT=ROLE (e.g. 2=adversarial), got {text!r}")
    return int(agent), role.strip()


def _shard(text: str) -> tuple[int, int]:
    from pear.runs.jobs import parse_shard
    try:
        return parse_shard(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("invalid shard ")) from None


def _grid_arguments(parser: argparse.ArgumentParser, *, preset: str, backend: str,
                    verb: str) -> None:
    """The arguments that choose a grid, shared by ``run`` and ``plan``."""
    parser.add_argument("--preset", default=preset,
                        help=f"smoke | paper | sim | beyond (default: {preset})")
    add_backend_argument(parser, default=backend)
    parser.add_argument("--datasets", type=comma_list(str), help="comma-separated datasets")
    parser.add_argument("--methods", type=comma_list(str), help="comma-separated methods")
    parser.add_argument("--seeds", type=comma_list(int), help="comma-separated run seeds")
    parser.add_argument("--n-questions", type=positive, help="questions per dataset")
    parser.add_argument("--rounds", type=nonneg, help="debate rounds")
    parser.add_argument("--agents", dest="n_agents", type=positive, help="number of agents")
    parser.add_argument("--no-full", action="store_true", help="skip the full-dataset runs")
    parser.add_argument("--shard", type=_shard,
                        help=f"i/N: {verb} only part i of N of the grid (deterministic; "
                             "`pear merge` combines the parts)")
    parser.add_argument("--no-study-scope", action="store_true",
                        help=f"{verb} the study's models on the whole grid, not only the "
                             "methods, questions and full sets the study ran on them")
    parser.add_argument("--population", metavar="NAME|FILE",
                        help="the simulated backend's population: study, grounded or a "
                             "population file (default: $PEAR_POPULATION, else grounded)")


def _running_arguments(parser: argparse.ArgumentParser, *, workers: str) -> None:
    """How the debates run, shared by ``run`` and ``branch``: ``--no-cache``, ``--quiet``,
    ``--workers`` (``workers``: its help) and ``--plugin``."""
    parser.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--workers", type=positive, default=None, help=workers)
    add_plugin_argument(parser)


def add_run(sub: Any) -> None:
    r = sub.add_parser("run", help="run (or resume) an experiment grid",
                       description="Run every missing debate of a preset grid into --out; "
                                   "rerunning resumes.")
    _grid_arguments(r, preset="smoke", backend="llamacpp", verb="run")
    r.add_argument("--out", required=True, help="run directory (records, manifest, cache)")
    r.add_argument("--prompt-style", choices=("paper", "compact"),
                   help="paper (the study's templates) or compact (tiny CPU models)")
    r.add_argument("--stop", help="early stopping: none (default, the study) | consensus | "
                   "stable:K (the vote unchanged for K rounds)")
    r.add_argument("--role", dest="roles", action="append", type=_role, metavar="AGENT=ROLE",
                   help="role of one agent (numbered from 1): honest | adversarial | "
                   "overconfident | underconfident; repeatable")
    r.add_argument("--agent-models", type=comma_list(str), metavar="M1,M2,...",
                   help="one model per agent (a mixed-model panel; openai or llamacpp backend)")
    r.add_argument("--agent-temperatures", type=comma_list(float), metavar="T1,T2,...",
                   help="one sampling temperature per agent (one model at two temperatures)")
    r.add_argument("--model", action="append",
                   help=f"model name ({_MODEL_NAMED_BY}); repeatable")
    r.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    r.add_argument("--base-url", action="append",
                   help="OpenAI-compatible endpoint; repeatable; MODEL=URL serves one of "
                   "--agent-models from its own server")
    _running_arguments(r, workers="processes that run the grid (default: every core for the "
                       "simulated backend, one per core up to 4 for llamacpp, each on its "
                       "share of the cores, else 1); the records are the same for any number")
    r.add_argument("--tensor-parallel-size", type=positive,
                   help="vllm: GPUs per model (tensor parallel)")
    r.add_argument("--no-view", action="store_true",
                   help="do not write the columnar view beside the records (a shard merged "
                   "later; the view is then indexed when first read)")
    r.set_defaults(handler=_cmd_run)


def _run_experiment(a: argparse.Namespace) -> Any:
    """The grid the arguments choose (``pear run``, ``pear plan``, each ``pear launch``
    shard): every argument named like a setting of :func:`pear.runs.grid.preset`
    (a field of the experiment or of its debate config) overrides the preset's."""
    from pear.runs.grid import PRESET_SETTINGS, experiment
    over = {k: v for k in PRESET_SETTINGS if (v := getattr(a, k, None)) is not None}
    if getattr(a, "no_full", False):
        over["full_datasets"] = ()
    if getattr(a, "no_study_scope", False):
        over["study_scope"] = False
    if over.get("roles"):
        over["roles"] = dict(over["roles"])
    return experiment(a.preset, backend=None if a.command == "plan" else a.backend,
                      models=tuple(getattr(a, "model", None) or ()), **over)


def _population(a: argparse.Namespace) -> str | None:
    """``--population``, checked: the simulated backend's, a shipped name or a readable
    population file (an error naming the bad value otherwise)."""
    if not a.population:
        return None
    if a.backend != SIMULATED:
        raise ValueError(f"--population is for the simulated backend, not {a.backend!r}")
    from pear.sim.population import load
    load(a.population)
    return a.population


def _cmd_run(a: argparse.Namespace) -> int:
    from pear.runs.runner import run
    exp = _run_experiment(a)
    extra = {"tensor_parallel_size": a.tensor_parallel_size} \
        if a.tensor_parallel_size and a.backend == "vllm" else None
    if _population(a):
        extra = {"population": a.population}
    backend = grid_backend(a.backend, exp, model_path=a.model_path, base_urls=a.base_url,
                           cache_path=None if a.no_cache else cache_path(a.out), extra=extra)
    summary = run(exp, backend, Path(a.out), progress=not a.quiet, stop=_stop_on_signal(),
                  workers=a.workers or default_workers(a.backend), view=not a.no_view)
    if summary.stopped:
        print(f"pear: stopped by a signal after {summary.written} debates (every finished "
              "debate is recorded); rerun the same command to resume", file=sys.stderr)
        return 143
    print(summary.line())
    if not summary.complete:
        print(f"pear: {summary.incomplete()}", file=sys.stderr)
    return 0 if summary.complete else 1


def _stop_on_signal():
    """A ``stop`` flag for :func:`pear.runs.runner.run` set by SIGTERM or SIGUSR1 (a
    scheduler's preemption, or its warning before the time limit): the debates in flight
    finish and are recorded, then the run stops.  A signal more than 5 s after the first
    (not the same one sent twice, as Slurm and the task's script both do) stops at once."""
    import signal
    import time
    hits: list[float] = []

    def handler(signum: int, _frame: Any) -> None:
        hits.append(time.monotonic())
        if len(hits) > 1:
            if hits[-1] - hits[0] > 5.0:
                raise KeyboardInterrupt
            return
        print(f"pear: {signal.Signals(signum).name}: finishing the debates in flight, then "
              "stopping", file=sys.stderr, flush=True)
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (e.g. called from a test's thread)
            pass
    return lambda: bool(hits)


def add_plan(sub: Any) -> None:
    pl = sub.add_parser("plan", help="what a grid costs, without loading a model",
                        description="Debates, model calls, prompt/completion tokens, cached "
                                    "share and GPU-hours of a preset grid.")
    _grid_arguments(pl, preset="paper", backend="vllm", verb="plan")
    pl.add_argument("--model", action="append",
                    help="model name, registry key or group (paper, api, study); repeatable")
    pl.add_argument("--throughput", type=positive_float,
                    help="computed tokens per second of one GPU (uncached prompt + completion)")
    pl.add_argument("--from", dest="from_run", metavar="RUN_DIR",
                    help="use the measured averages of an existing run")
    pl.add_argument("--fill", type=positive_float, default=1.0,
                    help="dry run: share of the token budget a reply uses (default 1: the "
                         "upper bound)")
    pl.add_argument("--chars-per-token", type=positive_float, default=None,
                    help="dry run: characters per token (default 4)")
    pl.set_defaults(handler=_cmd_plan)


def _cmd_plan(a: argparse.Namespace) -> int:
    from pear.runs.plan import estimate, format_plan
    if a.fill > 1:
        raise ValueError(f"invalid --fill {a.fill!r}: a share of the token budget in (0, 1]")
    exp = _run_experiment(a)
    costs = [estimate(exp, m, from_run=a.from_run, fill=a.fill,
                      chars_per_token=a.chars_per_token or CHARS_PER_TOKEN)
             for m in (exp.models or (None,))]
    print(format_plan(exp, costs, backend=a.backend, throughput=a.throughput))
    return 0


def add_merge(sub: Any) -> None:
    mg = sub.add_parser("merge", help="combine run directories (e.g. shards) into one",
                        description="Check that the runs' manifests agree and copy their "
                                    "records into a new directory.")
    mg.add_argument("out", help="new run directory")
    mg.add_argument("runs", nargs="+", help="run directories to combine")
    mg.set_defaults(handler=_cmd_merge)


def _cmd_merge(a: argparse.Namespace) -> int:
    from pear.runs.merge import merge
    s = merge(a.out, a.runs)
    print(f"{s.records} debates merged into {a.out} ({s.duplicates} duplicates dropped)"
          + (f"; shards {', '.join(s.shards)}" if s.shards else ""))
    if s.missing_shards:
        print(f"missing shards: {', '.join(map(str, s.missing_shards))}; running the unsharded "
              f"grid into {a.out} finishes them", file=sys.stderr)
    return 0


# ----------------------------------------------------------------- branch (pear.runs.branch)

def add_branch(sub: Any) -> None:
    b = sub.add_parser("branch", help="rerun the rounds after R of recorded debates under "
                       "other methods", description="Counterfactual branching: every debate "
                       "of RUN's parent method continues from its recorded state after round "
                       "R under each of --methods; rounds 0..R are copied, never re-asked. "
                       "Records carry branched_from; `pear validate OUT` checks the copied "
                       "rounds against the parent's.")
    b.add_argument("run_dir", help="the parent run directory")
    b.add_argument("--from-round", type=nonneg, required=True, metavar="R",
                   help="branch after round R (0 = after the initial answers)")
    b.add_argument("--methods", type=comma_list(str), required=True, metavar="M[,M...]",
                   help="debate methods to branch into")
    b.add_argument("--out", required=True, help="run directory of the branches")
    b.add_argument("--parent-method", help="the parent debates' method (default: the run's "
                   "one debate method, else random)")
    add_backend_argument(b, default=None, help="the parent's model through this backend "
                         "(default: the parent's simulated agents; a real model must be named)")
    b.add_argument("--model", help=f"model name ({_MODEL_NAMED_BY})")
    b.add_argument("--model-path", help="GGUF file for the llamacpp backend")
    b.add_argument("--base-url", action="append", help="OpenAI-compatible endpoint")
    _running_arguments(b, workers="processes that run the branches (default: every core for "
                       "the simulated backend, one per core up to 4 for llamacpp, else 1); the "
                       "records are the same for any number")
    b.set_defaults(handler=_cmd_branch)


def _cmd_branch(a: argparse.Namespace) -> int:
    # heavy: pandas, msgspec, only for this command
    from pear.runs.branch import branch, parent_experiment
    backend = None
    if a.backend and not backends.spec(a.backend).simulator:
        _, exp = parent_experiment(a.run_dir)
        cache = None if a.no_cache else cache_path(a.out)
        Path(a.out).mkdir(parents=True, exist_ok=True)
        backend = make_backend(a.backend, exp=exp, model=a.model, model_path=a.model_path,
                               base_urls=a.base_url, cache_path=cache)
    s = branch(a.run_dir, a.from_round, a.methods, a.out, backend=backend,
               parent_method=a.parent_method, progress=not a.quiet,
               workers=a.workers or default_workers(a.backend or SIMULATED))
    print(f"{s.written} branches written, {s.already_done} already done, "
          f"{s.skipped_stopped} parents ended by round {a.from_round}; {s.calls} model calls "
          f"made, {s.calls_copied} calls of copied rounds not repeated")
    return 0


# ----------------------------------------------------------------- launch (pear.runs.launch)

_LAUNCH_GRID = ("preset", "backend", "datasets", "methods", "seeds", "n_questions", "rounds",
                "n_agents", "no_full", "no_study_scope", "prompt_style", "stop", "base_url",
                "no_cache", "population")
"""The options of ``pear launch`` that every shard's ``pear run`` repeats."""


def add_launch(sub: Any) -> None:
    la = sub.add_parser("launch", help="run a grid's shards on a Slurm cluster or as local "
                        "processes; status; merge", description="Shards of a grid as Slurm "
                        "job arrays (one per model) or local processes, each a resumable "
                        "`pear run --shard i/N`, merged per model into OUT/<model>/ "
                        "(docs/cluster.md).")
    lsub = la.add_subparsers(dest="launch_command", required=True, parser_class=Parser)
    for name, what in (("slurm", "submit one Slurm job array per model and a merge job"),
                       ("local", "run the shards as local processes, then merge")):
        p = lsub.add_parser(name, help=what, description=what + "; rerunning submits only "
                            "the shards that are not complete")
        _grid_arguments(p, preset="paper", backend="vllm", verb="launch")
        for action in p._actions:  # the launcher chooses the shards (--shards)
            if action.dest == "shard":
                action.help = argparse.SUPPRESS
        p.add_argument("--model", action="append", help="model name, registry key or group "
                       "(paper, api, study); repeatable; one array per model")
        p.add_argument("--base-url", action="append", help="OpenAI-compatible endpoint "
                       "(openai backend); repeatable")
        p.add_argument("--prompt-style", choices=("paper", "compact"))
        p.add_argument("--stop", help="early stopping (as `pear run --stop`)")
        p.add_argument("--no-cache", action="store_true", help="no response cache per shard")
        p.add_argument("--out", required=True, help="launch directory")
        p.add_argument("--shards", type=positive, help="shards per model")
        p.add_argument("--target-hours", type=positive_float, metavar="H",
                       help="instead of --shards: as many shards as keep each task under H "
                       "hours by the `pear plan` estimate (vllm)")
        p.add_argument("--gpu-kind", default="h100", help="GPU kind for memory and time "
                       "estimates (docs/cluster.md; default h100)")
        p.add_argument("--throughput", type=positive_float,
                       help="computed tokens per second of one GPU (default: the GPU kind's)")
        p.add_argument("--time", help="time limit per task (Slurm format; default: from the "
                       "estimate)")
        p.add_argument("--gpus-per-node", type=positive,
                       help="refuse models that need more GPUs per task")
        p.add_argument("--then-paper", action="store_true",
                       help="after a complete merge, the notebooks on the merged records "
                       "(pear paper --backend replay; one model)")
        if name == "slurm":
            p.add_argument("--partition")
            p.add_argument("--account")
            p.add_argument("--throttle", type=positive, metavar="K",
                           help="at most K tasks of an array at once (%%K)")
            p.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                           help="passed to every array script as '#SBATCH ARG' (repeatable)")
            p.add_argument("--dry-run", action="store_true",
                           help="write the scripts under OUT/launch/, submit nothing")
        else:
            p.add_argument("--parallel", type=positive, default=1,
                           help="processes at once (capped by the visible GPUs)")
    st = lsub.add_parser("status", help="debates done / expected per model and shard",
                         description="Progress from the records (and squeue where it knows "
                         "the tasks): per shard debates done / expected, Slurm state, "
                         "restarts; totals with an ETA.")
    st.add_argument("out", help="launch directory")
    mg = lsub.add_parser("merge", help="merge each model's shards into OUT/<model>/ and "
                         "name what is missing (the merge job runs this)")
    mg.add_argument("out", help="launch directory")
    la.set_defaults(handler=_cmd_launch)


def _launch_run_args(a: argparse.Namespace) -> list[str]:
    """The ``pear run`` arguments of the launch's grid, in a fixed order (each option as
    ``pear run`` spells it)."""
    sub = argparse.ArgumentParser().add_subparsers()
    add_run(sub)
    flags = {act.dest: act.option_strings[0] for act in sub.choices["run"]._actions
             if act.option_strings}
    out = ["--preset", a.preset, "--backend", a.backend]
    for dest in _LAUNCH_GRID[2:]:
        v = getattr(a, dest, None)
        flag = flags[dest]
        if v is None or v is False or v == []:
            continue
        if v is True:
            out.append(flag)
        elif dest == "base_url":
            for url in v:
                out += [flag, url]
        elif dest == "population" and Path(v).is_file():  # a file: read from any cwd
            out += [flag, str(Path(v).resolve())]
        else:
            out += [flag, ",".join(map(str, v)) if isinstance(v, tuple) else str(v)]
    return out


def _run_parser() -> argparse.ArgumentParser:
    """``pear`` with its ``run`` command alone: what each shard of a launch runs."""
    p = Parser(prog="pear")
    add_run(p.add_subparsers(dest="command", required=True, parser_class=Parser))
    return p


def _cmd_launch(a: argparse.Namespace) -> int:
    from pear.runs import launch as L
    if a.launch_command in ("status", "merge"):
        spec = L.read_launch(a.out)
        if a.launch_command == "status":
            print(L.format_status(spec, L.status(spec)))
            return 0
        lines, complete = L.merge_launch(spec)
        print("\n".join(lines))
        return 0 if complete else 1
    if a.shard:
        raise ValueError("--shard is chosen by the launcher: give --shards N")
    _population(a)  # refused before anything is written
    run_args = _launch_run_args(a)
    run_ns = _run_parser().parse_args(["run", *run_args, "--out", a.out]
                                  + [x for m in (a.model or []) for x in ("--model", m)])
    exp = _run_experiment(run_ns)
    if not BACKENDS[a.backend].takes_model_name and a.model:
        raise ValueError(f"--model is for the {_MODEL_NAMED_BY} backends, not {a.backend!r}")
    if a.launch_command == "slurm" and not a.dry_run:
        L.check_slurm(a.partition)  # before anything is written
    spec = L.plan_launch(exp, run_args, a.out, backend=a.backend, shards=a.shards,
                         target_hours=a.target_hours, time_limit=a.time, gpu_kind=a.gpu_kind,
                         throughput=a.throughput, gpus_per_node=a.gpus_per_node)
    L.check_same_grid(spec)
    if a.then_paper:
        from pear.runs.launch.spec import paper_command
        paper = paper_command(spec)  # refused before anything is written
    if a.launch_command == "slurm" and not a.dry_run:  # the whole launch, or nothing
        L.check_scripts(L.scripts(spec, partition=a.partition, account=a.account,
                                  throttle=a.throttle, sbatch_args=a.sbatch_arg,
                                  then_paper=a.then_paper), a.partition)
    L.write_launch(spec)
    from pear.runs.launch.finish import describe
    print("\n".join(describe(arr) for arr in spec.arrays))
    if a.launch_command == "local":
        results = L.run_local(spec, a.parallel)
        failed = [f"{m} {i}" for m, i, rc in results if rc != 0]
        if failed:
            print(f"shards that did not finish: {', '.join(failed)} (logs in "
                  f"{spec.dir / 'logs'}); rerun the same command to resume", file=sys.stderr)
        lines, complete = L.merge_launch(spec)
        print("\n".join(lines))
        if complete and a.then_paper:
            import subprocess
            return subprocess.run(paper, cwd=spec.workdir).returncode
        return 0 if complete else 1
    paths = L.write_scripts(spec, partition=a.partition, account=a.account,
                            throttle=a.throttle, sbatch_args=a.sbatch_arg,
                            then_paper=a.then_paper)
    print("scripts: " + ", ".join(str(p) for p in paths))
    if a.dry_run:
        return 0
    done = L.submit(spec, throttle=a.throttle)
    if not done:
        print("nothing to submit: every shard is complete or still queued "
              f"(pear launch status {a.out})")
    for slug, job, shards in done:
        print(f"submitted {slug}: job {job}"
              + (f" (shards {','.join(map(str, shards))})" if shards else " (afterany)"))
    return 0
