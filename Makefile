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
.PHONY: help setup lab test test-unit test-notebooks lint outputs bench bench-batching clean

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
	# Slide breaks depend on how tall the outputs are, so the slide metadata follows every run (tools/lecture).
	$(BIN)/python -m tools.lecture metadata $(NOTEBOOKS)

bench: $(STAMP) ## time mha_lib against torch.nn.MultiheadAttention, and one change of the chapter 05 explorer
	$(BIN)/python benchmarks/bench_mha.py
	$(BIN)/python benchmarks/bench_explorer.py

bench-batching: $(STAMP) ## chapter 07's sweeps, recorded in mha_lib/_bench/results/ (ARGS="--device cuda" for a GPU)
	$(BIN)/python benchmarks/bench_batching.py $(ARGS)

clean: ## remove the virtual environment, caches and build output
	rm -rf $(VENV) build student .pytest_cache .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Lecture mode (tools/lecture): reveal.js slides and static HTML pages that work offline. reveal.js and MathJax
# come from two PyPI packages, pinned with hashes in tools/lecture/requirements-assets.txt and installed once
# into build/vendor (the only step that needs the network); no Node.js, no CDN.
.PHONY: slides html
LECTURE_VENDOR := build/vendor
LECTURE_ASSETS := $(LECTURE_VENDOR)/.installed

$(LECTURE_ASSETS): tools/lecture/requirements-assets.txt | $(STAMP)
	rm -rf $(LECTURE_VENDOR)
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes --target $(LECTURE_VENDOR) \
		--requirement tools/lecture/requirements-assets.txt
	touch $@

slides: $(STAMP) $(LECTURE_ASSETS) ## reveal.js slides of every chapter, offline, in build/slides/ (open index.html)
	rm -rf build/slides
	$(BIN)/python -m tools.lecture slides --assets $(LECTURE_VENDOR) --out build/slides $(NOTEBOOKS)

html: $(STAMP) $(LECTURE_ASSETS) ## every chapter as a static HTML page, with an index, in build/html/
	rm -rf build/html
	$(BIN)/python -m tools.lecture html --assets $(LECTURE_VENDOR) --out build/html $(NOTEBOOKS)

# Student copies (tools/make_student.py): the notebooks with every cell tagged `solution` replaced by a stub.
.PHONY: student
student: $(STAMP) ## student copies of the notebooks, solutions replaced by stubs, in student/
	rm -rf student
	$(BIN)/python tools/make_student.py notebooks student

# --- The real-browser test (issue 7): JupyterLab in headless Chromium, as a reader uses it. ---
# Needs Debian's chromium (`apt-get install chromium`; .ci/run installs it). Playwright drives it and never
# downloads a browser. Screenshots of every step go to build/screenshots/. `timeout` stops a hung run.
.PHONY: test-browser
BROWSER_STAMP := $(VENV)/.installed-browser

$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable '.[dev,browser]'
	touch $@

test-browser: $(BROWSER_STAMP) ## run chapters 03 and 05 in JupyterLab in headless Chromium (needs chromium)
	timeout --kill-after=30 1200 $(BIN)/python -m pytest tests/browser
