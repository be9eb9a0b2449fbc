# Thin wrapper: every target only calls the package, its tests or its benchmarks.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch for the tests: an exact release, so pip takes a CPU build where one is at hand;
# a bare range can pull a CUDA build of several GB. Override: make test TORCH='torch==2.14.1'
TORCH ?= torch==2.13.0
CORE := $(VENV)/.core
TESTED := $(VENV)/.test
DOCS := $(VENV)/.docs
# the full test environment, for targets that need everything
STAMP := $(TESTED)

.PHONY: demo test test-all test-integration bench check docs clean

# the library and its four solver and graph packages: all that the demo and the benchmarks need
$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

# what the tests need: pytest, hypothesis, matplotlib (pictures), torch (runtime), mkdocs (docs build)
$(TESTED): $(CORE)
	$(PY) -m pip install --quiet '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[test,plot,torch,docs]'
	touch $@

$(DOCS): $(CORE)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

demo: $(CORE)
	$(VENV)/bin/schedsearch demo

test: $(TESTED)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q

test-all: $(TESTED)
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -q -m "slow or not slow"

# torchtitan (the client the plans are written for) in its own environment, with the torch its trainer
# runs with: torchtitan 0.3.0's trainer calls the schedule's step(arg_mbs=..., kwarg_mbs=...), which torch
# takes from 2.14 on (2.13's step does not), so torch 2.14.1, the release pip pairs with torchtitan 0.3.0
# (train.sh and docs/plan.md name the same pair). The library's own tests keep TORCH above (2.13.0), where
# everything else works. An exact release, so pip takes the wheel at hand.
TITAN_VENV ?= .venv-titan
TITAN_TORCH ?= torch==2.14.1
TITAN_STAMP := $(TITAN_VENV)/.installed

$(TITAN_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(TITAN_VENV)
	$(TITAN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TITAN_VENV)/bin/python -m pip install --quiet '$(TITAN_TORCH)' 'torchtitan==0.3.0' triton -e '.[test]'
	touch $(TITAN_STAMP)

test-integration: $(TITAN_STAMP)
	SCHEDSEARCH_REQUIRE_TORCHTITAN=1 $(TITAN_VENV)/bin/python -m pytest -q -s -m integration tests/integration

docs: $(DOCS)
	$(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(CORE)
	$(PY) -m benchmarks

# the benchmark gate: a quick, reproducible subset of every benchmark against benchmarks/results/check.json
check: $(STAMP)
	$(PY) -m benchmarks check

clean:
	rm -rf $(VENV) $(TITAN_VENV) build site *.egg-info
