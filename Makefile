# Thin wrapper: every target only calls the package, its tests or its benchmarks.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench check docs clean

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

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(PY) -m benchmarks

# the benchmark gate: a quick, reproducible subset of every benchmark against benchmarks/results/check.json
check: $(STAMP)
	$(PY) -m benchmarks check

clean:
	rm -rf $(VENV) build site *.egg-info
