# Thin wrapper: every target only calls the package, its tests or its benchmarks.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-all test-integration bench check docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,plot,torch,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/schedsearch demo

test: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest -q

test-all: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -q -m "slow or not slow"

# torchtitan (the client the plans are written for) in its own environment: the versions the
# hand-off is checked with; the CPU build of torch suffices.
TITAN_VENV ?= .venv-titan
TITAN_STAMP := $(TITAN_VENV)/.installed

$(TITAN_STAMP): pyproject.toml
	$(PYTHON) -m venv $(TITAN_VENV)
	$(TITAN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TITAN_VENV)/bin/python -m pip install --quiet 'torch==2.13.0' 'torchtitan==0.3.0' triton -e '.[test]'
	touch $(TITAN_STAMP)

test-integration: $(TITAN_STAMP)
	SCHEDSEARCH_REQUIRE_TORCHTITAN=1 $(TITAN_VENV)/bin/python -m pytest -q -s -m integration tests/integration

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(PY) -m benchmarks

# the benchmark gate: a quick, reproducible subset of every benchmark against benchmarks/results/check.json
check: $(STAMP)
	$(PY) -m benchmarks check

clean:
	rm -rf $(VENV) $(TITAN_VENV) build site *.egg-info
