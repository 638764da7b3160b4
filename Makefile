# mha-notebooks. On a fresh machine (Python 3.11 and make) two commands do all the set-up:
#   make lab    read the collection in JupyterLab
#   make test   run the unit tests and execute every notebook against its stored outputs
# Both create the virtual environment .venv on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=300 --nbval-sanitize-with tests/nbval_sanitize.cfg
PORT ?= 8888
# JupyterLab refuses to start as root unless told to; containers and CI machines often run as root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.DEFAULT_GOAL := help
.PHONY: help setup lab test test-unit test-notebooks lint outputs bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv and install mha_lib with everything the notebooks and tests need

# Reinstall whenever the dependencies change. constraints.txt pins torch to the local CPU build.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable '.[dev]'
	touch $@

lab: $(STAMP) ## open the notebooks in JupyterLab on 127.0.0.1 (the URL with its token is printed)
	$(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) $(ALLOW_ROOT)

test: test-unit test-notebooks ## run the unit tests, then execute every notebook with nbval (strict)

test-unit: $(STAMP) ## the unit tests only
	$(BIN)/python -m pytest tests

test-notebooks: $(STAMP) ## execute every notebook and compare each output with the stored one
	$(BIN)/python -m pytest $(NBVAL) notebooks

lint: $(STAMP) ## ruff on the library, tests, benchmarks and notebooks
	$(BIN)/ruff check .

outputs: $(STAMP) ## re-execute every notebook in place, top to bottom, each in a fresh kernel
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=600 \
		--ExecutePreprocessor.record_timing=False $(NOTEBOOKS)

bench: $(STAMP) ## time mha_lib against torch.nn.MultiheadAttention (prints median ratios)
	$(BIN)/python benchmarks/bench_mha.py

clean: ## remove the virtual environment, caches and build output
	rm -rf $(VENV) build student .pytest_cache .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
