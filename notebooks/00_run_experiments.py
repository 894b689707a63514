# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python (pear)
#     language: python
#     name: pear
# ---

# %% [markdown]
# # 00 · Run the experiments
#
# Runs (or resumes) every debate the other notebooks read: the preset's subset grid
# (datasets x methods x seeds x seeded subset questions) and its full-set runs. Rerunning
# skips every debate already recorded. `backend = "replay"` runs nothing and only checks
# that `runs_dir` holds records.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path (llamacpp) or name (vllm, openai); empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value
base_url: str = ""  # OpenAI-compatible endpoint (backend openai)

# %%
from pear.paper import experiments, study
from pear.paths import shown

exp = study.experiment(preset, seeds=seeds, n_questions=n_questions, model=model,
                       backend=backend)
runs = study.runs_path(runs_dir, preset, backend)
print(f"preset {exp.name}: {len(exp.datasets)} datasets x {len(exp.methods)} methods x "
      f"{len(exp.seeds)} seeds x {exp.n_questions} questions; full sets {exp.full_datasets}")
print(f"run directory: {shown(runs)}")

# %% [markdown]
# ## Run (or resume) the grid

# %%
summary = experiments.run_experiments(backend, exp, runs, model=model, base_url=base_url)

# %% [markdown]
# ## Summary: debates recorded per model, method and dataset

# %%
experiments.describe_runs(runs)
