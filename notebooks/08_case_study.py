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
# # 08 · Case study: one debate, round by round
#
# A debate rendered as a transcript: the graph the router chose, who critiqued whom and
# what they recommended, each ACCEPT/REJECT, every agent's answer, confidence and
# influence, and the vote. `debate_id = ""` picks the first PEAR debate where a correct
# answer held by a minority in round 0 wins at the end.

# %% tags=["parameters"]
backend: str = "llamacpp"  # llamacpp | openai | vllm | vllm-cpu | simulated | replay
preset: str = "smoke"  # smoke | paper | sim | beyond
runs_dir: str = ""  # empty: data/runs/<preset>-<backend>
model: str = ""  # model path or name; empty: the backend default
seeds: str = ""  # empty: the preset seeds, else e.g. 0,1,2
n_questions: int = 0  # questions per dataset; 0: the preset value

debate_id: str = ""  # empty: the first debate where a minority correct answer wins

# %% [markdown]
# ## Load records (subset questions, with texts)

# %%
from IPython.display import Markdown, display

from pear.analysis import report, transcript
from pear.paper import study

res = study.results(backend, preset, runs_dir, model=model, seeds=seeds,
                    n_questions=n_questions, scope="subset")

# %% [markdown]
# ## Choose the debate and render it

# %%
record, why = transcript.case_study(res, debate_id)
text = transcript.render_transcript(record)
print(f"case study: {why}; {res.label}")

# %%
display(Markdown(text))

# %% [markdown]
# ## Save

# %%
report.save_markdown(f"*Case study: {why}. {res.label}.*\n\n{text}", "case_study")
