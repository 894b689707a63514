"""The build's parameters and argument checks (pear.paper.build), its outputs table
(pear.paper.registry), its kernels and their scheduling (pear.paper.kernels: unit tests, one
real kernel in the slow suite), notebook 00's glue (pear.paper.experiments), the glue the
analysis notebooks call: the debates of a scope as the grid defines it (pear.paper.study), the
study's numbers beside the reproduced ones and quoted numbers as macros
(pear.analysis.compare), and the case study from real records (pear.analysis.transcript)."""
from __future__ import annotations

import json
import os
import re
import warnings

import pandas as pd
import pytest

from pear import parallel
from pear.analysis import compare, transcript
from pear.paper import build as paper, experiments, kernels, registry, study
from pear.paper.times import TIMES_FILE, BuildTimes
from pear.paths import REPO_ROOT
from pear.runs.grid import preset, scope_debates
from pear.runs.jobs import jobs
from pear.runs.runner import run
from pear.runs.factory import POPULATION_ENV, make_backend
from pear.sim.population import Population, load as load_population
from pear.store import manifest


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory):
    """A tiny simulated grid: GSM8K and TruthfulQA, 3 methods, 2 seeds, 3 questions, and
    TruthfulQA's full set for CoT only."""
    exp = preset("smoke", datasets=("gsm8k", "truthfulqa"), methods=("cot", "ring", "pear"),
                 seeds=(0, 1), n_questions=3, full_datasets=())
    out = tmp_path_factory.mktemp("runs")
    run(exp, make_backend("simulated", exp=exp), out, progress=False)
    return exp, out


def test_experiment_takes_the_notebook_parameters():
    e = study.experiment("sim", seeds="2, 3", n_questions=7, model="org/m", backend="vllm")
    assert (e.seeds, e.n_questions, e.models) == ((2, 3), 7, ("org/m",))
    assert study.experiment("sim").seeds == preset("sim").seeds  # "" / 0 = the preset's
    assert study.experiment("sim", model="x.gguf", backend="llamacpp").models == ()
    with pytest.raises(ValueError, match="invalid seeds '0,a'"):
        study.experiment("sim", seeds="0,a")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        study.experiment("sim", backend="gpu")


def test_build_rejects_bad_arguments_before_starting_a_kernel():
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        paper.build(backend="nope")
    with pytest.raises(ValueError, match="unknown preset 'big'"):
        paper.build(backend="simulated", preset="big")
    with pytest.raises(ValueError, match="--only '42' matches no notebook"):
        paper.build(backend="simulated", only="01,42")
    assert registry.select("0") == [n for n in registry.NOTEBOOKS if n.startswith("0")]
    assert registry.select("03_abl, 01") == ["01_main_results", "03_ablation"]
    assert registry.select(" , ") == list(registry.NOTEBOOKS)


def test_runs_path_defaults_under_the_repository():
    assert study.runs_path("", "sim", "simulated") == REPO_ROOT / "data/runs/sim-simulated"
    assert study.runs_path("/tmp/x", "sim", "simulated").as_posix() == "/tmp/x"


def test_a_population_file_names_the_build_run_after_the_population(tmp_path, monkeypatch):
    """``make paper BACKEND=simulated POPULATION=twin.json``: the run directory is named after
    the population in the file (not the file's path), from any working directory, with the
    file given to the kernels by its absolute path; a grid under it names it in its manifest."""
    grounded = load_population("grounded").with_params(skill_mean=-1.0)
    twin = Population("twin-of-mine", grounded.params, grounded.revision)
    twin.write(tmp_path / "twin.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(POPULATION_ENV, raising=False)
    runs = REPO_ROOT / "data/runs"
    named_run = runs / "sim-simulated-twin-of-mine"
    assert study.runs_path("", "sim", "simulated", "twin.json") == named_run
    assert paper._population("twin.json") == str(tmp_path / "twin.json")
    assert paper._population("study") == "study"
    monkeypatch.setenv(POPULATION_ENV, str(tmp_path / "twin.json"))  # as the kernels get it
    assert study.runs_path("", "sim", "simulated") == named_run
    assert study.runs_path("", "sim", "simulated", "study") == runs / "sim-simulated-study"
    assert study.runs_path("", "sim", "simulated", "grounded") == runs / "sim-simulated"
    # a file that holds the build default itself is the build default's run
    load_population("grounded").write(tmp_path / "copy.json")
    assert study.runs_path("", "sim", "simulated", "copy.json") == runs / "sim-simulated"
    exp = preset("smoke", datasets=("gsm8k",), methods=("cot",), seeds=(0,), n_questions=2,
                 full_datasets=())
    run(exp, make_backend("simulated", exp=exp), tmp_path / "run", progress=False)
    named = manifest.read(tmp_path / "run")["backend_settings"][0]["population"]
    assert named == {"name": "twin-of-mine", "fingerprint": twin.fingerprint}


def test_load_results_selects_the_grid_and_names_missing_cells(sim_run, tmp_path):
    exp, out = sim_run
    res = study.load_results(out, exp)
    assert len(res.debates) == 2 * 3 * 3 * 2  # datasets x methods x seeds x questions
    assert res.simulated and res.label.startswith(
        "simulated agents; pipeline check (3 questions per dataset): not evidence (backend "
        "simulated; model simulated agents)")
    assert "3 questions per dataset (question seed 0) x 2 seeds" in res.caption("T.")
    # a narrower grid reads a subset of the same records
    one = study.load_results(out, preset("smoke", datasets=("gsm8k",), methods=("pear",),
                                         seeds=(1,), n_questions=3, full_datasets=()))
    assert set(one.debates["method"]) == {"pear"} and set(one.debates["seed"]) == {1}
    # the view holds no texts; one debate's record is read with them
    assert "reasoning" not in res.agent_rounds.columns
    first = res.record(res.debates["debate_id"].iloc[0])
    assert first["rounds_data"][0]["agents"][0]["reasoning"]
    # a method never run is an error naming the cell
    wider = preset("smoke", datasets=("gsm8k",), methods=("cot", "star"), seeds=(0,),
                   n_questions=3, full_datasets=())
    with pytest.raises(FileNotFoundError, match=r"x gsm8k x star"):
        study.load_results(out, wider)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        study.load_results(tmp_path / "none", exp)
    with pytest.raises(ValueError, match="runs no full dataset"):
        study.load_results(out, exp, scope="full")


def test_load_results_holds_each_model_of_a_merged_run_to_its_own_grid(tmp_path):
    """A run of several study models (e.g. merged from a cluster): each model is held to
    its part of the grid (model_grid), not to the whole: Qwen3-30B-A3B never ran the
    ablations, and only Llama-3.1-8B runs the full sets."""
    import json
    from pear.core.hashing import debate_id
    from pear.core.record import IDENTITY
    from pear.runs.grid import model_grid
    from pear.runs.runner import model_dir
    from pear.store import manifest
    exp = preset("smoke", datasets=("truthfulqa",), methods=("cot", "pear_T"), seeds=(0,),
                 n_questions=2, full_datasets=("truthfulqa",), full_methods=("cot",),
                 full_n_questions=3)
    src = tmp_path / "one"
    run(exp, make_backend("simulated", exp=exp), src, progress=False)
    records = [json.loads(line) for f in src.rglob("debates.jsonl") for line in open(f)]
    out, models = tmp_path / "merged", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-30B-A3B"]
    for m in models:
        grid = {(j.question.dataset, j.question.id, j.seed, j.method.name)
                for j in jobs(model_grid(exp, m))}
        rdir = model_dir(out, m)
        rdir.mkdir(parents=True)
        with open(rdir / "debates.jsonl", "w") as fh:
            for rec in records:
                if (rec["dataset"], rec["question_id"], rec["seed"], rec["method"]) in grid:
                    rec = {**rec, "model": m}
                    rec["debate_id"] = debate_id({k: rec[k] for k in IDENTITY})
                    fh.write(json.dumps(rec) + "\n")
    old = manifest.read(src)
    manifest.write(out, {**old, "models": models, "model_ids": models,
                         "backend_settings": old["backend_settings"] * 2})
    sub = study.load_results(out, exp)
    assert sub.debates.groupby("model")["method"].unique().map(sorted).to_dict() == {
        models[0]: ["cot", "pear_T"], models[1]: ["cot"]}
    full = study.load_results(out, exp, scope="full")
    assert set(full.debates["model"]) == {models[0]} and len(full.debates) == 3


def test_run_experiments_replay_needs_records(tmp_path, sim_run):
    with pytest.raises(FileNotFoundError, match="backend 'replay' needs recorded debates"):
        experiments.run_experiments("replay", sim_run[0], tmp_path)
    assert experiments.run_experiments("replay", *sim_run) is None


def test_describe_runs_counts_debates_per_model_method_and_dataset(sim_run):
    table = experiments.describe_runs(sim_run[1])
    assert list(table.columns) == ["truthfulqa", "gsm8k"]   # the study's dataset order
    assert table.index.get_level_values("method").tolist() == ["cot", "ring", "pear"]
    assert (table.to_numpy() == 3 * 2).all()   # 3 questions x 2 seeds per cell


def test_beside_paper_matches_model_names_or_pools_over_models():
    acc = pd.DataFrame({"dataset": "truthfulqa", "method": ["pear", "cot"], "accuracy": 0.5,
                        "model": "meta-llama/Llama-3.1-8B-Instruct"})
    table, note = compare.beside_paper(acc, "full_dataset", ["accuracy"])
    assert note == ""
    row = table.loc[("TruthfulQA", "Llama-3.1-8B", "PEAR")]
    assert row["paper"] == 0.824 and row["diff"] == pytest.approx(0.5 - 0.824)
    table, note = compare.beside_paper(acc.assign(model="sim-1"), "full_dataset", ["accuracy"])
    assert "averaged over its 2 models" in note
    assert table.loc[("TruthfulQA", "PEAR"), "paper"] == pytest.approx((0.868 + 0.824) / 2)


def test_headline_numbers_recompute_the_papers_quoted_numbers():
    pap = compare.to_internal(compare.load_paper("main_results"))
    numbers = compare.headline_numbers(pap.assign(std=0.0))
    assert (numbers["diff"].dropna().abs() < 1e-9).all()  # the table against itself
    macros = compare.number_macros(numbers)
    # data/paper/README.md: the table gives PEAR 0.748, gain 4.2, over Random 5.7, Chain 6.6
    assert macros["PaperMeanAccPEAR"] == "0.748" and macros["PaperGainBestFixed"] == "4.2"
    assert macros["GainOverRandom"] == "5.7" and macros["GainOverChain"] == "6.6"
    assert macros["GainBestFixedMATHFiveZeroZero"] == "5.3"
    assert all(re.fullmatch(r"[A-Za-z]+", k) for k in macros)


def test_quoted_macros_put_the_studys_tokens_beside_the_reproduced():
    cost = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": ["pear", "cot_sc", "ring"],
                         "tokens_per_example": [30000.4, 2950.0, 24000.0]})
    table, _ = compare.beside_paper(cost, "cost", ["tokens_per_example"], keys=["method"])
    macros = compare.quoted_macros(table, "Tokens")
    # data/paper/cost.csv: PEAR 32300, CoT-SC 3100; the study quotes no Ring cost
    assert macros == {"TokensPEAR": "30000", "PaperTokensPEAR": "32300", "TokensCoTSC": "2950",
                      "PaperTokensCoTSC": "3100", "TokensRing": "24000"}
    twice = pd.DataFrame({"reproduced": [1.0, 2.0], "paper": [None, None]},
                         index=["CoT-SC", "CoTSC"])
    with pytest.raises(ValueError, match="'TokensCoTSC'"):
        compare.quoted_macros(twice, "Tokens")


def test_accuracy_hides_the_std_of_one_seed_and_select_keeps_rows(sim_run):
    exp, out = sim_run
    res = study.load_results(out, exp)
    acc = study.accuracy(res.debates)
    assert acc["n_seeds"].eq(2).all() and acc["std"].notna().all()
    one = study.accuracy(res.debates[res.debates["seed"] == 0])
    assert one["std"].isna().all()
    picked = study.select(acc, methods=["pear"], datasets=["gsm8k"])
    assert picked[["dataset", "method"]].values.tolist() == [["gsm8k", "pear"]]
    joined = study.cost_accuracy(res.debates)
    assert len(joined) == len(acc) and (joined["tokens_per_example"] > 0).all()


def test_significance_sets_tests_the_first_seed_of_each_scope(sim_run):
    exp, out = sim_run
    res = study.load_results(out, exp)
    rows, table = study.significance_sets(res)
    assert set(rows["set"]) == {"subset, seed 0"} and (rows["n_pairs"] == 3).all()
    assert table.index.names == ["Set", "Dataset", "Model"] and len(table) == 2
    cot_only = study.load_results(out, preset("smoke", datasets=("gsm8k",), methods=("cot",),
                                              seeds=(0,), n_questions=3, full_datasets=()))
    with pytest.raises(ValueError, match="nothing to test"):
        study.significance_sets(cot_only)


def test_case_study_from_simulated_records_renders(sim_run):
    exp, out = sim_run
    res = study.load_results(out, exp)
    rec, why = transcript.case_study(res)
    text = transcript.render_transcript(rec)
    assert "Simulated agents" in text and "**Final answer:" in text
    assert re.search(r"\*\*(ACCEPT|REJECT)\*\*", text)


# -- one grid definition: the analysis asks experiment.scope_debates ------------------------

@pytest.mark.parametrize("name", ["smoke", "sim"])
def test_the_scopes_together_are_the_grid_that_runs(name):
    exp = preset(name, n_questions=3) if name == "sim" else preset(name)
    ran = {(j.question.dataset, j.question.id, j.seed, j.method.name) for j in jobs(exp)}
    scoped = set(scope_debates(exp, "subset")) | set(scope_debates(exp, "full"))
    assert scoped == ran
    with pytest.raises(ValueError, match="unknown scope 'all'"):
        scope_debates(exp, "all")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke preset's whole grid (subset and the 2-question full-set stand-in)."""
    exp = preset("smoke")
    out = tmp_path_factory.mktemp("smoke")
    assert run(exp, make_backend("simulated", exp=exp), out, progress=False).complete
    return exp, out


def test_a_complete_smoke_run_misses_nothing_and_names_its_stand_in(smoke_run):
    exp, out = smoke_run
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a "debates are missing" warning fails the test
        full = study.load_results(out, exp, scope="full")
        subset = study.load_results(out, exp, scope="subset")
    assert set(full.debates["question_id"]) == {q for _, q, _, _ in scope_debates(exp, "full")}
    assert len(full.debates) == 2 * 7 and len(subset.debates) == 4 * 1 * 14
    caption = full.caption("Full-dataset accuracy.")
    assert "2-question stand-in for the full TruthfulQA set (817 questions)" in caption
    assert "Full sets" not in caption and "full sets" not in caption
    assert "1 question per dataset (question seed 0) x 1 seed" in subset.caption("T.")


def test_a_smoke_run_short_of_debates_says_how_many(smoke_run, tmp_path):
    import shutil
    exp, out = smoke_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("view"))
    path = next(copy.rglob("debates.jsonl"))
    lines = path.read_text().splitlines(keepends=True)
    full_ids = {q for _, q, _, _ in scope_debates(exp, "full")}
    keep = [ln for ln in lines if not any(f'"question_id":"{q}"' in ln and '"method":"ring"' in ln
                                          for q in sorted(full_ids)[1:])]
    path.write_text("".join(keep))
    with pytest.warns(RuntimeWarning, match=r"^1 debates of the full grid are missing"):
        study.load_results(copy, exp, scope="full")


# -- the kernel the notebooks run on ----------------------------------------------------------

def test_the_build_kernel_talks_over_ipc_in_a_private_folder():
    """No TCP port (so no "Kernel is running over TCP without encryption" warning): the
    connection file and the IPC sockets sit in a fresh 0700 folder, short enough for a
    socket path, removed at shutdown."""
    import asyncio
    import stat
    import tempfile
    from pathlib import Path

    import zmq
    if not zmq.has("ipc"):
        pytest.skip("this ZeroMQ build has no IPC transport (the manager keeps TCP)")
    km = kernels.ipc_kernel_manager()(kernel_name=kernels.KERNEL)
    other = kernels.ipc_kernel_manager()(kernel_name=kernels.KERNEL)
    folder = Path(km.connection_file).parent
    try:
        assert km.transport == "ipc"
        assert folder.parent == Path(tempfile.gettempdir())
        assert folder.name.startswith(kernels.IPC_PREFIX)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert Path(km.ip).parent == folder  # sockets <folder>/kernel-ipc-<n>, not in the cwd
        assert len(f"{km.ip}-99999".encode()) < zmq.IPC_PATH_MAX_LEN
        assert Path(other.connection_file).parent != folder  # one folder per kernel
        km.write_connection_file()
        assert sorted(os.listdir(folder)) == ["kernel.json"]
    finally:
        asyncio.run(km.cleanup_resources())
        asyncio.run(other.cleanup_resources())
    assert not folder.exists()


def test_the_build_kernel_is_shut_down_without_an_interrupt(monkeypatch):
    """jupyter_client sends a kernel SIGINT before asking it to shut down; ipykernel logs
    "KeyboardInterrupt caught in kernel." when it lands mid-message (seen after notebook 00).
    The build's manager sends none at shutdown, and interrupts as ever otherwise."""
    import asyncio
    import signal
    manager = kernels.ipc_kernel_manager()
    monkeypatch.setattr(manager, "has_kernel", property(lambda self: True))
    km = manager(kernel_name=kernels.KERNEL)
    sent, steps = [], []

    async def record_signal(signum):
        sent.append(signum)

    async def step(name, **kw):
        steps.append(name)

    km._async_signal_kernel = record_signal
    km._async_request_shutdown = lambda **kw: step("request", **kw)
    km._async_finish_shutdown = lambda **kw: step("finish", **kw)
    km._async_cleanup_resources = lambda **kw: step("cleanup", **kw)
    asyncio.run(km.interrupt_kernel())  # a user's interrupt: SIGINT, as jupyter_client sends it
    assert sent == [signal.SIGINT]
    asyncio.run(km.shutdown_kernel())
    assert sent == [signal.SIGINT] and steps == ["request", "finish", "cleanup"]


@pytest.mark.slow
def test_an_executed_notebook_carries_no_tcp_warning_and_leaves_no_socket(tmp_path, capfd,
                                                                           monkeypatch):
    """A notebook run as the build runs it (papermill, the ``pear`` kernel, the build's
    kernel manager): its outputs and the process's output hold no "without encryption"
    warning nor an interrupt at shutdown, and no socket file is left in the working
    directory or the temp folder."""
    import glob
    import tempfile

    import nbformat
    import papermill
    kernels.ensure_kernel()
    monkeypatch.chdir(tmp_path)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import json\nfrom ipykernel import get_connection_file\n"
        "print(json.load(open(get_connection_file()))['transport'])")])
    nbformat.write(nb, tmp_path / "in.ipynb")
    before = set(glob.glob(f"{tempfile.gettempdir()}/{kernels.IPC_PREFIX}*"))
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                               kernel_name=kernels.KERNEL, progress_bar=False,
                               cwd=str(tmp_path), kernel_manager_class=kernels.ipc_kernel_manager())
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[0].outputs[0]["text"].strip() == "ipc"
    assert "without encryption" not in (tmp_path / "out.ipynb").read_text()
    captured = capfd.readouterr()
    assert "without encryption" not in captured.out + captured.err
    assert "KeyboardInterrupt" not in captured.out + captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ipynb", "out.ipynb"]
    assert set(glob.glob(f"{tempfile.gettempdir()}/{kernels.IPC_PREFIX}*")) == before


# -- which notebooks run alone or side by side, and with what --------------------------------

def test_notebook_00_runs_alone_and_the_rest_side_by_side_unless_a_server_runs_the_model():
    names = ["00_run_experiments", "08_case_study", "09_theory_checks", "12_robustness",
             "13_claims"]
    for backend in kernels.SIDE_BY_SIDE:
        assert kernels.steps(names, backend) == [["00_run_experiments"], names[1:]]
    # a server or GPU engine holds one model: a notebook that calls it runs alone
    assert kernels.steps(names, "vllm") == [["00_run_experiments"], ["08_case_study",
                                            "09_theory_checks"], ["12_robustness"],
                                            ["13_claims"]]
    assert kernels.steps(["08_case_study"], "vllm") == [["08_case_study"]]
    assert kernels.steps([], "llamacpp") == []


def test_side_by_side_notebooks_start_longest_first(tmp_path):
    names = ["08_case_study", "12_robustness", "14_calibration", "13_claims"]
    # no earlier build on this backend: the registry's fallback figures (12: 56 s, 14: 38 s)
    none = registry.typical_seconds("llamacpp", tmp_path / "absent.json")
    assert kernels.start_order(names, none) == ["12_robustness", "14_calibration",
                                                "08_case_study", "13_claims"]
    # an earlier build's measured times come first
    times = BuildTimes(tmp_path / "times.json", {"backend": "llamacpp"})
    times.add("13_claims", 90.0, "ok")
    times.add("12_robustness", 1.0, "ok")
    measured = registry.typical_seconds("llamacpp", tmp_path / "times.json")
    assert kernels.start_order(names, measured) == [
        "13_claims", "14_calibration", "12_robustness", "08_case_study"]
    assert registry.typical_seconds("vllm", tmp_path / "times.json") == none  # another backend


def test_a_kernel_side_by_side_gets_its_share_of_the_cores(monkeypatch):
    """Beside another notebook a kernel's thread teams (llama.cpp's PEAR_THREADS, numpy's
    BLAS) keep to its share of the cores; alone, nothing is capped."""
    import multiprocessing
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    assert kernels.kernel_env(False) == {}
    assert kernels.kernel_env(True) == dict.fromkeys(
        (parallel.THREADS_ENV, *kernels.BLAS_THREADS_ENV), "4")
    # in one of two fork_map workers, each with a notebook to run: half the cores
    monkeypatch.setattr(parallel, "_POOL", (2, multiprocessing.Value("i", 2)))
    assert kernels.kernel_env(True) == dict.fromkeys(
        (parallel.THREADS_ENV, "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"),
        "2")


def test_environ_sets_variables_for_a_block_and_puts_them_back(monkeypatch):
    monkeypatch.setenv("PEAR_TEST_SET", "before")
    monkeypatch.delenv("PEAR_TEST_UNSET", raising=False)
    with pytest.raises(KeyError):
        with kernels.environ({"PEAR_TEST_SET": "inside", "PEAR_TEST_UNSET": "new"}):
            assert os.environ["PEAR_TEST_SET"] == "inside"
            assert os.environ["PEAR_TEST_UNSET"] == "new"
            raise KeyError("a failing notebook")
    assert os.environ["PEAR_TEST_SET"] == "before" and "PEAR_TEST_UNSET" not in os.environ


def _write_notebook(src, name: str, params: str = 'backend = ""\nruns_dir = ""\n') -> None:
    src.mkdir(exist_ok=True)
    (src / f"{name}.py").write_text(
        "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python (pear)\n"
        "#     language: python\n#     name: pear\n# ---\n\n"
        f'# %% tags=["parameters"]\n{params}\n# %%\nprint(backend)\n')


def test_a_notebook_gets_its_parameters_relative_to_the_repository_and_its_share_of_cores(
        tmp_path, monkeypatch):
    """What papermill is given for one notebook (no kernel started): the parameters the
    notebook declares, the run directory named relative to the repository root (the kernel's
    working directory: an executed notebook does not carry where it was built), the build's
    kernel and kernel manager, and, beside other notebooks, the cores' share in the
    kernel's environment, put back afterwards."""
    import multiprocessing

    import papermill
    given = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda src, out, **kw: given.append(
        {**kw, "threads": os.environ.get(parallel.THREADS_ENV)}))
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    monkeypatch.setattr(parallel, "_POOL", (2, multiprocessing.Value("i", 2)))
    monkeypatch.delenv(parallel.THREADS_ENV, raising=False)
    src, out = tmp_path / "notebooks", tmp_path / "build"
    (out / "src").mkdir(parents=True)
    _write_notebook(src, "08_case_study")
    params = {"backend": "simulated", "preset": "sim", "seeds": "",
              "runs_dir": str(REPO_ROOT / "data" / "runs" / "sim-simulated")}
    assert paper._notebook("08_case_study", src, out, params, together=True) == (
        pytest.approx(0, abs=5), None)
    paper._notebook("08_case_study", src, out, {**params, "runs_dir": str(tmp_path / "r")})
    first, alone = given
    assert first["parameters"] == {"backend": "simulated", "runs_dir": "data/runs/sim-simulated"}
    assert first["cwd"] == str(REPO_ROOT) and first["kernel_name"] == kernels.KERNEL
    assert first["kernel_manager_class"].__name__ == "IPCKernelManager"
    assert first["threads"] == "2" and alone["threads"] is None
    assert alone["parameters"]["runs_dir"] == str(tmp_path / "r")  # outside: as given
    assert parallel.THREADS_ENV not in os.environ
    assert (out / "src" / "08_case_study.ipynb").is_file()
    # in the kernel (cwd: the repository root) the relative path is the build's run
    monkeypatch.chdir(REPO_ROOT)
    assert study.runs_path("data/runs/sim-simulated", "sim", "simulated") == \
        REPO_ROOT / "data" / "runs" / "sim-simulated"
    assert paper.kernel_parameters({"population": str(REPO_ROOT / "twin.json"), "x": 1},
                                   {"population": ""}) == {"population": "twin.json"}


def _fake_notebooks(monkeypatch, results, ran):
    """``build._notebook`` replaced: each notebook "runs" in this process (one at a time),
    returning its (seconds, error) from ``results`` and its call recorded in ``ran``."""
    def fake(name, *, src_dir, out_dir, params, together=False):
        ran.append((name, together))
        return results[name]
    monkeypatch.setattr(paper, "_notebook", fake)
    monkeypatch.setattr(kernels, "at_once", lambda: 1)
    monkeypatch.setattr(kernels, "ensure_kernel", lambda: None)


def test_the_build_says_what_each_notebook_cost(tmp_path, monkeypatch, capsys):
    """Each notebook's wall time and status go to build-times.json beside the executed
    notebooks (rewritten as each ends, so a failed build keeps what finished) and into the
    build's log, one line per notebook, in build order; notebooks that only read the run
    (08, 09) are one step, each told it runs beside the other."""
    ran = []
    _fake_notebooks(monkeypatch, {"08_case_study": (1.52, None),
                                  "09_theory_checks": (0.71, "ValueError: no states")}, ran)
    rc = paper.build(backend="simulated", preset="sim", only="08,09",
                     runs=str(tmp_path / "no-run"), figures=tmp_path / "figures",
                     build_dir=tmp_path / "build", notebooks_dir=tmp_path)
    assert rc == 1
    assert sorted(ran) == [("08_case_study", True), ("09_theory_checks", True)]
    times = json.loads((tmp_path / "build" / TIMES_FILE).read_text())
    assert list(times["notebooks"]) == ["08_case_study", "09_theory_checks"]
    assert times["notebooks"] == {"08_case_study": {"seconds": 1.52, "status": "ok"},
                                  "09_theory_checks": {"seconds": 0.71, "status": "failed"}}
    assert times["total_s"] == pytest.approx(2.23)
    assert (times["backend"], times["preset"]) == ("simulated", "sim")
    out, err = capsys.readouterr()
    assert re.search(r"^  08_case_study +1\.5 s  ok$", out, re.M), out
    assert re.search(r"^  09_theory_checks +0\.7 s  failed$", out, re.M), out
    assert "FAILED 09_theory_checks after 0.7 s\nValueError: no states" in err


def test_a_replay_of_imported_debates_skips_what_they_cannot_answer_among_parallel_notebooks(
        tmp_path, monkeypatch):
    """On imported debates, 09 (read-only, so run beside 08) is skipped with its outputs saying
    why, while 08 runs; both are in build-times.json in build order."""
    monkeypatch.setattr(study, "is_imported", lambda runs_dir: True)
    fig = tmp_path / "figures"
    fig.mkdir()
    (fig / "case_study.md").write_text("x")  # what 08 writes
    ran = []
    _fake_notebooks(monkeypatch, {"08_case_study": (0.5, None)}, ran)
    out = tmp_path / "build"
    out.mkdir()
    params = {"backend": "replay", "preset": "sim", "runs_dir": str(tmp_path / "imported"),
              "commit": "abc"}
    times = BuildTimes(out / TIMES_FILE, params)
    rc = paper._execute(["08_case_study", "09_theory_checks"], tmp_path, out, fig, params, times)
    assert rc == 0 and ran == [("08_case_study", False)]  # 09 skipped: 08 runs alone
    notebooks = json.loads((out / TIMES_FILE).read_text())["notebooks"]
    assert [(n, e["status"]) for n, e in notebooks.items()] == [
        ("08_case_study", "ok"), ("09_theory_checks", "skipped")]
    assert "cannot speak to imported debates" in (fig / "theory_checks.md").read_text()
    assert (fig / "case_study.md").read_text() == "x"


@pytest.mark.parametrize("backend, together", [("simulated", [True, True]),
                                               ("vllm", [False, False])])
def test_notebooks_side_by_side_unless_one_runs_the_model_on_a_server(tmp_path, monkeypatch,
                                                                      backend, together):
    """After 00, notebooks run side by side, each told so (its kernel then keeps to its share
    of the cores); with a server or GPU engine a notebook that runs the model (12) runs alone."""
    ran = []
    _fake_notebooks(monkeypatch, {"08_case_study": (0.1, None), "12_robustness": (0.2, None)},
                    ran)
    out = tmp_path / "build"
    out.mkdir()
    params = {"backend": backend, "preset": "sim", "runs_dir": str(tmp_path / "run"),
              "commit": "abc"}
    times = BuildTimes(out / TIMES_FILE, params)
    assert paper._execute(["08_case_study", "12_robustness"], tmp_path, out, tmp_path / "fig",
                          params, times) == 1  # the fakes write none of their outputs
    assert sorted(ran) == list(zip(["08_case_study", "12_robustness"], together))
    notebooks = json.loads((out / TIMES_FILE).read_text())["notebooks"]
    assert list(notebooks) == ["08_case_study", "12_robustness"]  # build order


@pytest.mark.slow
def test_notebooks_side_by_side_run_at_once_each_on_its_share_of_the_cores(tmp_path,
                                                                           monkeypatch):
    """The one real-kernel build of the scheduling: 08 and 12 (simulated backend) run at the
    same time in two kernels, each with half of (a pretended) 4 cores, their times in
    build-times.json; a failing one is timed too."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    monkeypatch.setattr(kernels, "at_once", lambda: 2)
    monkeypatch.delenv(parallel.THREADS_ENV, raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    src = tmp_path / "notebooks"
    for name, end in (("08_case_study", ""), ("12_robustness", "raise ValueError('no run')\n")):
        _write_notebook(src, name)
        with open(src / f"{name}.py", "a") as fh:
            fh.write("import os, pathlib, time\ntime.sleep(1.5)\n"
                     f"pathlib.Path({str(tmp_path)!r}, '{name}.cores').write_text("
                     "os.environ.get('PEAR_THREADS', 'unset') + ' ' + "
                     "os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))\n" + end)
    rc = paper.build(backend="simulated", preset="sim", only="08,12",
                     runs=str(tmp_path / "no-run"), figures=tmp_path / "figures",
                     build_dir=tmp_path / "build", notebooks_dir=src)
    assert rc == 1
    assert [(tmp_path / f"{n}.cores").read_text()
            for n in ("08_case_study", "12_robustness")] == ["2 2", "2 2"]
    times = json.loads((tmp_path / "build" / TIMES_FILE).read_text())
    ok, failed = times["notebooks"]["08_case_study"], times["notebooks"]["12_robustness"]
    assert (ok["status"], failed["status"]) == ("ok", "failed")
    assert 1.5 <= ok["seconds"] < 120 and 1.5 <= failed["seconds"] < 120
    # at the same time, each in its own kernel
    assert max(ok["seconds"], failed["seconds"]) <= times["wall_s"] < 0.8 * times["total_s"]
    assert parallel.THREADS_ENV not in os.environ and "OPENBLAS_NUM_THREADS" not in os.environ
