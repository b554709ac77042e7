PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test test-fast test-real lint fmt bench bench-real canary demo clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The whole suite: the fast tests, then the end-to-end tests against the real llama-server.
test: install
	$(BIN)/pytest -q
	$(MAKE) test-real

test-fast: install
	$(BIN)/pytest -q

# The real model comes from the package's engine manager (aforo engine ...) through scripts/real-model.
# The server it starts serves the 0.5B, named: the tests of the governor's mechanics were written and
# measured on it, it is three times lighter on 2 cores, and a weaker model tests them harder. The tests
# of what a user meets first (tests/real/test_real_defaults.py, test_real_engine.py) run `aforo --local`
# as a user does, on the engine's default model (the 1.5B).
REAL_TEST_MODEL = qwen2.5-coder-0.5b-instruct
# Under the same lock as bench-real and canary: two llama-servers on 2 cores slow both about tenfold.
test-real: install
	flock /tmp/aforo-real.lock $(BIN)/python scripts/real-model run --reproducible --allow-unavailable \
		--model $(REAL_TEST_MODEL) -- $(BIN)/pytest -q -m real

lint: install
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts
	$(BIN)/mypy

fmt: install
	$(BIN)/ruff format src tests bench examples scripts
	$(BIN)/ruff check --fix src tests bench examples scripts

bench: install
	$(BIN)/python bench/run.py

# The real-model task suite (docs/real-model.md, "Small models, real tasks"): ten tasks on examples/, with an
# exact counter, then again as a server without one; then the real-code suite (bench/real_code.py):
# questions about real third-party packages at aforo's defaults, through the window --local gives.
# One real model at a time on this machine. The task suite names the 0.5B: its numbers, round after
# round (docs/real-model.md), are that model's. The real-code suite runs on the engine's default, as a
# user's `aforo --local` does; REAL_CODE_FLAGS passes flags to it (--model 0.5b).
bench-real: install
	flock /tmp/aforo-real.lock $(BIN)/python scripts/real-model run --reproducible --model $(REAL_TEST_MODEL) -- sh -c \
		'$(BIN)/python bench/real_prompt_cost.py; cost=$$?; $(BIN)/python bench/real_tasks.py && exit $$cost'; \
	tasks=$$?; flock /tmp/aforo-real.lock $(BIN)/python bench/real_code.py $(REAL_CODE_FLAGS) && exit $$tasks


# The governor's canaries on the real model, once per lane (docs/real-model.md, "Canaries"): two llama-servers at
# most, one real model at a time on this machine.
canary: install
	flock /tmp/aforo-real.lock $(BIN)/python bench/real_canary.py

# `aforo --local` builds the local engine on first use (6-15 minutes on 2 cores), then answers.
demo: install
	$(BIN)/aforo --local --yes --workspace examples/demo "Read wordfreq/counter.py and explain it."

clean:
	rm -rf $(VENV) build dist *.egg-info
