# The README's two commands: `make demo` (the main job) and `make test` (all checks).
# Both create the virtualenv and install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo demo-sim test lint bench clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,examples]'
	touch $@

demo: $(BIN)/.installed
	examples/demo.sh

demo-sim: $(BIN)/.installed
	$(BIN)/python -m caldera.cli.demo

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

# The trace study (docs/trace-study.md and its plots): every shipped policy on the Pollux/Sia
# Philly sample (several seeds) and on the whole Philly trace. Takes a while: see the document.
study: $(BIN)/.installed
	$(BIN)/python scripts/trace_study.py
