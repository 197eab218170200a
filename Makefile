# The two commands of the README. Each creates .venv (Python >= 3.11) on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test lint bench setup

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "symtrace needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[frameworks,test]"
	touch $@

# Main job on the embedded default: stub endpoint + bundled example MAS, recorded and replayed.
demo: setup
	$(VENV)/bin/symtrace demo --workdir out/demo

# The whole test suite (what CI runs).
test: setup
	$(VENV)/bin/ruff check symtrace adapters tests examples benchmarks experiments
	$(PY) -m pytest -q -p no:cacheprovider

lint: setup
	$(VENV)/bin/ruff check symtrace adapters tests examples benchmarks experiments

bench: setup
	$(PY) benchmarks/overhead_and_size.py
