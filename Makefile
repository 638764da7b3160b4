# mha-notebooks. On a fresh machine (Python 3.11 or newer, and make) two commands do all the set-up:
#   make lab    read the collection in JupyterLab
#   make test   run the unit tests and execute every notebook against its stored outputs
# Both create the virtual environment .venv on first use and install exactly the versions in requirements.lock.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# The reader edition (tools/editions.py): the same chapters with the exercises unsolved, made from notebooks/.
CHAPTERS := $(patsubst notebooks/%,chapters/%,$(NOTEBOOKS))
# tools/wakeful_kernel.py: a client that cannot sleep through a cell's reply (once it waited 600 s for one);
# python -m puts the repository root on the import path, so that tools imports.
# MHA_STORE_OUTPUTS: the outputs are to be stored, so a timing cell first waits for quiet (mha_chapters/bench/quiet.py).
EXECUTE := MHA_STORE_OUTPUTS=1 $(BIN)/python -m jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.kernel_name=python3 \
	--ExecutePreprocessor.kernel_manager_class=tools.wakeful_kernel.WakefulKernelManager \
	--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.record_timing=False
# A stored output must not carry facts of the machine that ran it (CPU model, caches, cores): tools/machine_facts.py
# replaces them in the live-timing cells after executing, and fails where a checked cell printed one.
SCRUB := $(BIN)/python -m tools.machine_facts scrub
NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=300 --nbval-sanitize-with tests/nbval_sanitize.cfg
PORT ?= 8888
# JupyterLab refuses to start as root unless told to; containers and CI machines often run as root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# --- The set-up: tools/start.py ----------------------------------------------------------------------------------
# `make setup` and `make lab` call the launcher that a reader without make runs (python -m tools.start, the same on
# Linux, macOS and Windows): it makes .venv, installs the checkout with its extras at the versions of the lock, and
# on Linux asks for PyTorch's CPU build (PyPI's torch is the CUDA build there, about 4.5 GB more). TORCH=cuda takes
# PyPI's build instead; TORCH_INDEX=URL names a mirror of PyTorch's CPU index; PIP_FIND_LINKS=DIR a folder (or a web
# page) with the wheel. Its docstring says how the index is probed and what the error says where torch is out of
# reach; docs/platforms.md ("Behind a firewall") and docs/platforms.zh-CN.md (国内网络) tell where to find it.
# A reader gets the `lab` extra (READER_STAMP); the targets for tests, outputs and the course get `dev` (STAMP).
TORCH ?= cpu
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
START := $(PYTHON) -m tools.start
START_ARGS = --torch $(TORCH) --torch-index $(TORCH_INDEX)
READER_STAMP := $(VENV)/.installed-lab

.DEFAULT_GOAL := help
.PHONY: help help-all setup lab reset refresh lab-instructor test test-quick test-unit test-notebooks test-portable test-kernels test-torch-newest lint outputs editions bench bench-batching record-gpu record-cpu clean lock

# `make help` shows a reader's targets, in this order; `make help-all` every target with a `## ` description, in the
# order of this file (lecturers, translators, maintainers, CI). tests/test_setup.py checks both lists.
READER_TARGETS := setup lab lab-zh reset refresh test-quick test
TARGET_LINES = grep -E '^[a-z-]+:.*\#\# ' $(MAKEFILE_LIST)
help: ## a reader's targets (make help-all lists every target)
	@$(TARGET_LINES) | awk -F':.*## ' -v keep='$(READER_TARGETS)' \
		'{text[$$1] = $$2} END {n = split(keep, name, " "); for (i = 1; i <= n; i++) printf "  make %-18s %s\n", name[i], text[name[i]]}'
	@echo "  Every target, for lecturers, translators and maintainers too: make help-all"

help-all: ## every target
	@$(TARGET_LINES) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

setup: $(READER_STAMP) ## create .venv and install what a reader needs (the `lab` extra), as locked (TORCH=cuda: CUDA build)

# Each install is made again whenever the dependencies change (tools/start.py keeps the stamps).
$(READER_STAMP): pyproject.toml $(LOCK)
	$(START) setup $(START_ARGS)

$(STAMP): pyproject.toml $(LOCK)
	$(START) setup --extras dev $(START_ARGS)

# A reader's JupyterLab (tools/reader_lab.py): it opens my-chapters/, the reader's own copy of the reader edition
# chapters/ (exercises unsolved), which git ignores, so `git pull` never meets an answer. The copy is made on first
# use; a chapter added to chapters/ later is copied in, and nothing in the copy is ever overwritten
# (tools/workcopy.py). nbgrader's menu, Validate button and formgrader stay off (.jupyter/reader, added to
# JUPYTER_CONFIG_PATH); the defaults come from .jupyter/lab/settings; a reader's own settings in ~/.jupyter still win.
lab: ## open JupyterLab at chapter 00 of your copy my-chapters/ on 127.0.0.1, port 8888 or the next free one (choose: make lab PORT=8899)
	$(START) lab --port $(PORT) $(START_ARGS)

# A chapter of the copy as the edition has it: the reader's file goes to my-chapters/backups/ first.
reset: $(READER_STAMP) ## start one chapter of my-chapters/ afresh: make reset CHAPTER=04 (your file is kept in my-chapters/backups/)
	$(if $(CHAPTER),,$(error make reset needs CHAPTER, the chapter's number: make reset CHAPTER=04))
	$(BIN)/python -m tools.workcopy reset '$(CHAPTER)'

refresh: $(READER_STAMP) ## take the chapters that changed in chapters/ (after git pull) into my-chapters/, yours kept in backups/
	$(BIN)/python -m tools.workcopy refresh

# The lecturers' JupyterLab: the instructor edition notebooks/ with nbgrader's tools (Create Assignment, Validate,
# the formgrader); it serves the whole checkout, the course directory of nbgrader's formgrader.
lab-instructor: $(STAMP) ## JupyterLab on the solved notebooks/ with nbgrader's menu, Create Assignment and formgrader
	$(BIN)/jupyter lab --notebook-dir=. --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) $(ALLOW_ROOT) \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb --LabApp.app_settings_dir=.jupyter/lab/settings

test: test-unit test-notebooks ## the unit tests, then every notebook of every edition (nbval, strict), each edition on other kernels

# The unit tests run on every core (pytest-xdist): they are independent of each other and of their order.
test-unit: $(STAMP) ## the unit tests only
	$(BIN)/python -m pytest -n auto tests

# The tests marked slow (pyproject.toml) execute notebooks, start kernels, build a wheel or a course, download, train
# or time; tests/test_quick.py checks that every one that executes or builds is marked.
test-quick: $(STAMP) ## the unit tests but the slow ones: no notebook executed, no wheel built (a minute or two)
	$(BIN)/python -m pytest -n auto -m "not slow" tests

# Another CPU runs other kernels: PyTorch picks AVX-512, AVX2 or plain code at start-up and sums in another order, and
# a laptop has another number of cores. The stored outputs must not depend on either. The four editions run the same
# code cells (tests/test_editions.py and tests/test_translations.py say so; the reader editions have answer stubs where
# the solutions are), so each edition runs under another setting and one pass checks them all:
#   notebooks/            this CPU's own kernels, every thread
#   zh-CN/notebooks/      PyTorch's plain kernels and one thread (PORTABLE): the solved code once more, elsewhere
#   chapters/             on a CPU with AVX-512 (an Intel Xeon), the AVX2 kernels an AMD EPYC before Zen 4 and most
#                         laptops run (KERNELS); on any other CPU its own kernels, which are those
#   zh-CN/chapters/       this CPU's own kernels, every thread
# The editions run one after the other: run side by side on 2 cores (4 min 22 s against 5 min 31 s), the other's load
# failed chapter 09's timing assertion in CI.
PORTABLE := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
CAPABILITY = $(shell $(BIN)/python -c "import torch; print(torch.backends.cpu.get_cpu_capability())" 2>/dev/null)
KERNELS = $(if $(filter AVX512,$(CAPABILITY)),ATEN_CPU_CAPABILITY=avx2)
test-notebooks: $(STAMP) ## execute every notebook of the four editions against its stored outputs, each edition on other kernels
	$(BIN)/python -m pytest $(NBVAL) notebooks zh-CN/chapters
	$(PORTABLE) $(BIN)/python -m pytest $(NBVAL) zh-CN/notebooks
	$(KERNELS) $(BIN)/python -m pytest $(NBVAL) chapters

# One edition on one setting, for a developer who wants notebooks/ alone on the plain kernels or the AVX2 ones.
test-portable: $(STAMP) ## execute notebooks/ on PyTorch's plain CPU kernels and one thread, against the stored outputs
	$(PORTABLE) $(BIN)/python -m pytest $(NBVAL) notebooks

test-kernels: $(STAMP) ## on a CPU with AVX-512: execute notebooks/ on the AVX2 kernels, as an AMD EPYC runs them
	@if [ "$(CAPABILITY)" = AVX512 ]; then set -x; ATEN_CPU_CAPABILITY=avx2 $(BIN)/python -m pytest $(NBVAL) notebooks; \
	else echo "==> make test-kernels: this CPU runs PyTorch's $(CAPABILITY) kernels, which make test-notebooks ran"; fi

# The newest PyTorch that pyproject.toml admits (torch<X.Y there), as a Colab user or `pip install mha-notebooks`
# gets it: PyPI's build (on Linux the CUDA one, several GB; it runs on the CPU too), in its own environment
# .venv-torch-newest. Every chapter must run top to bottom on it (--nbval-lax: a raised error fails, outputs may
# differ: another release may print another repr). The other packages keep their locked versions.
NEWEST := .venv-torch-newest
TORCH_RANGE := $(shell sed -n 's/^ *"torch\([^"]*\)".*/\1/p' pyproject.toml)
test-torch-newest: ## execute every chapter with the newest PyTorch the package admits, in .venv-torch-newest (downloads GBs)
	@test -x $(NEWEST)/bin/python || $(PYTHON) -m venv $(NEWEST)
	@mkdir -p build && grep -v -E '^(torch|triton|nvidia-|cuda-)' $(LOCK) > build/lock-without-torch.txt
	$(NEWEST)/bin/python -m pip install --quiet --upgrade 'torch$(TORCH_RANGE)'
	$(NEWEST)/bin/python -m pip install --quiet --constraint build/lock-without-torch.txt --editable '.[test]'
	$(NEWEST)/bin/python -c "import torch; print('==> torch', torch.__version__, 'admitted by torch$(TORCH_RANGE)')"
	$(NEWEST)/bin/python -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=300 -p no:cacheprovider notebooks

lint: $(STAMP) ## ruff on the library, tests, benchmarks and notebooks
	$(BIN)/ruff check .

outputs: $(STAMP) ## re-execute every notebook in place, each in a fresh kernel, then remake and execute chapters/ and zh-CN/
	$(BIN)/python -m tools.quiet
	$(EXECUTE) $(NOTEBOOKS)
	$(SCRUB) $(NOTEBOOKS)
	$(MAKE) editions
	$(MAKE) zh
	$(BIN)/python -m tools.quiet --check $(NOTEBOOKS) $(CHAPTERS) $(ZH_NOTEBOOKS) $(ZH_CHAPTERS)

# tools/editions.py: refresh nbgrader's metadata in notebooks/ (a no-op unless an exercise was added or changed),
# then their slide metadata (slide breaks depend on how tall cells and outputs are: tools/lecture), write the reader
# edition chapters/ from notebooks/, and execute it (its checkers print "❌ Not yet").
editions: $(STAMP) ## remake the reader edition chapters/ from notebooks/ and execute it
	$(BIN)/python -m tools.editions nbgrader $(NOTEBOOKS)
	$(BIN)/python -m tools.lecture metadata $(NOTEBOOKS)
	$(BIN)/python -m tools.editions reader $(NOTEBOOKS)
	$(EXECUTE) $(CHAPTERS)
	$(SCRUB) $(CHAPTERS)

bench: $(STAMP) ## time mha_lib against torch.nn.MultiheadAttention, the chapter 05 explorer and grouped-query attention
	$(BIN)/python benchmarks/bench_mha.py
	$(BIN)/python benchmarks/bench_explorer.py
	$(BIN)/python benchmarks/bench_grouped.py

bench-batching: $(STAMP) ## chapter 07's sweeps, recorded in mha_chapters/bench/results/ (ARGS="--device cuda" for a GPU)
	$(BIN)/python benchmarks/bench_batching.py $(ARGS)

# Every CPU recording the chapters load (chapters 05, 07, 10, 11), one after another, each waiting for a quiet machine
# and refusing a busy result (tools/record_cpu.py). Run it alone. OUT=dir records elsewhere; QUICK=1 tiny sizes.
record-cpu: $(VENV)/.installed-browser ## chapters 05, 07, 10 and 11's CPU recordings by the quiet-machine rule, into mha_chapters/bench/results/ (about 15 min; run alone)
	$(BIN)/python -m tools.record_cpu $(if $(OUT),--out '$(OUT)') $(if $(QUICK),--quick)

# The GPU half of chapter 07 (issue 51 item 4). No $(STAMP): a machine lent with a GPU carries its own PyTorch and
# nothing is installed there; the script runs from the source tree on the python3 it finds (.venv's where it exists).
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
record-gpu: ## on a machine with an NVIDIA GPU: chapter 07's sweeps recorded on it by the quiet-machine rule, and their figures
	$(GPU_PYTHON) benchmarks/record_gpu.py

clean: ## remove the virtual environments, caches and build output
	rm -rf $(VENV) $(NEWEST) build course course-zh .pytest_cache .ruff_cache *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# requirements.lock pins every package for Linux, macOS and Windows, Python 3.11 and newer. `uv pip compile` keeps
# the pins it finds in the lock; LOCK_ARGS=--upgrade (or --upgrade-package NAME) moves them, after which
# `make outputs` refreshes the notebooks that strict nbval compares. uv comes from `pip install uv`.
UV ?= uv
lock: ## regenerate requirements.lock from pyproject.toml with uv (LOCK_ARGS=--upgrade to take new releases)
	$(UV) pip compile pyproject.toml --extra dev --extra browser --extra hub --extra book --universal --python-version 3.11 \
		--custom-compile-command "make lock" --output-file $(LOCK) $(LOCK_ARGS)

# Lecture mode (tools/lecture): reveal.js slides that work offline. reveal.js and MathJax (which the book uses too)
# come from two PyPI packages, pinned with hashes in tools/lecture/requirements-assets.txt and installed once
# into build/vendor (the only step that needs the network); no Node.js, no CDN.
.PHONY: slides
LECTURE_VENDOR := build/vendor
LECTURE_ASSETS := $(LECTURE_VENDOR)/.installed

$(LECTURE_ASSETS): tools/lecture/requirements-assets.txt | $(STAMP)
	rm -rf $(LECTURE_VENDOR)
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes --target $(LECTURE_VENDOR) \
		--requirement tools/lecture/requirements-assets.txt
	touch $@

# Each chapter's lecture deck (the cells it selects with the cell metadata "lecture": tools/lecture/deck.py, at most
# 30 numbered slides with speaker notes, no solution shown) and its handout (the whole solved notebook, cell by cell).
slides: $(STAMP) $(LECTURE_ASSETS) ## lecture decks (about 20 slides, speaker notes: S) and solved handouts of every chapter, offline, in build/slides/
	rm -rf build/slides
	$(BIN)/python -m tools.lecture slides --assets $(LECTURE_VENDOR) --out build/slides $(NOTEBOOKS)

# --- The book (issue 35): the reader edition as a static web site, to read without installing anything --------------
# tools/book builds chapters/ and zh-CN/chapters/ with their stored outputs (nothing is executed) into build/book/en and
# build/book/zh-CN, with Sphinx, MyST-NB and the Sphinx Book Theme from the `book` extra (at the versions of the lock).
# MathJax is the vendored copy of the slides; no page loads anything from the network. Open build/book/index.html,
# or serve build/book with any static web server. `make test-book` opens it in headless Chromium (needs chromium).
# `make html` builds the instructor edition (notebooks/, zh-CN/notebooks/: solved) the same way, for lecturers; it
# replaced tools/lecture's hand-made pages (and `make html-zh`: both languages are in it).
.PHONY: book test-book html
BOOK_STAMP := $(VENV)/.installed-book

$(BOOK_STAMP): $(STAMP)
	$(START) setup --extras dev,book $(START_ARGS)

book: $(BOOK_STAMP) $(LECTURE_ASSETS) ## the reader edition, English and Chinese, as a static web site in build/book/ (open index.html)
	$(BIN)/python -m tools.book --assets $(LECTURE_VENDOR) --out build/book

html: $(BOOK_STAMP) $(LECTURE_ASSETS) ## the instructor edition (solved), English and Chinese, as a static web site in build/html/
	$(BIN)/python -m tools.book --assets $(LECTURE_VENDOR) --out build/html --solved

test-book: book $(BROWSER_STAMP) ## build the book, then read it in headless Chromium: chapters, figures, math, search, folds
	timeout --kill-after=30 600 $(BIN)/python -m pytest tests/book

# --- The real-browser test (issue 7): JupyterLab in headless Chromium, as a reader uses it. ---
# Needs Debian's chromium (`apt-get install chromium`; .ci/run installs it). Playwright drives it and never
# downloads a browser. Screenshots of every step go to build/screenshots/. `timeout` stops a hung run.
.PHONY: test-browser
BROWSER_STAMP := $(VENV)/.installed-browser

$(BROWSER_STAMP): $(STAMP)
	$(START) setup --extras dev,browser $(START_ARGS)

test-browser: $(BROWSER_STAMP) ## run chapters/ 03, 05, 11 and zh-CN/chapters/ 03 in JupyterLab in headless Chromium, open every reader chapter and count its figures (needs chromium)
	timeout --kill-after=30 1200 $(BIN)/python -m pytest tests/browser

# The graded course (tools/nbgrader_course.py, grading/): hidden tests, written questions, rubrics in course/rubrics/.
# A new course draws its own numbers (SEED=text chooses them, SEED=public keeps the chapters'); a file you edited is never
# overwritten: the build stops and lists it, unless FORCE=1 (your version is copied to course/backups/ first).
.PHONY: assignments test-course test-course-full
COURSE ?= course
# CHAPTERS="09 10" on the command line builds those chapters only (CHAPTERS above is the reader edition's files).
COURSE_ARGS = $(if $(SEED),--seed '$(SEED)') $(if $(FORCE),--force) \
	$(if $(filter command line,$(origin CHAPTERS)),--chapters $(CHAPTERS))
# PACK=path: the instructor pack (model answers, rubrics, variants' solutions); STUDENTS=@roster.csv or a,b: numbers per student
COURSE_ARGS += $(if $(PACK),--pack '$(PACK)') $(if $(STUDENTS),--students '$(STUDENTS)')
assignments: $(STAMP) ## an nbgrader course in course/ (COURSE=path, SEED=your course's numbers, CHAPTERS="09 10" only those, PACK=, STUDENTS=, FORCE=1 replaces your edits)
	$(BIN)/python -m tools.nbgrader_course $(COURSE) $(COURSE_ARGS)

# Every graded chapter through nbgrader autograde with four submissions: right, partly right, blank, cheating.
# One pytest worker per core, one thread per kernel (several threads per kernel on a busy machine only wait for each
# other); -rP prints each chapter's scores, --durations where the time went.
# The cheat bank (tests/autograde/cheats.py) runs on chapters 04 and 09 here (each chapter's attacks autograded together,
# once), on every graded chapter in test-course-full. Autograde runs the
# answers under bubblewrap (apt-get install bubblewrap; docs/teaching.md, "How grading works").
test-course: $(STAMP) ## autograde every graded chapter: right, partly right, blank and cheating submissions score as they should
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout --kill-after=30 3000 $(BIN)/python -m pytest -n auto -rP --durations=0 tests/autograde

test-course-full: $(STAMP) ## test-course with every attack of the cheat bank on every graded chapter (about an hour on 2 cores)
	MHA_CHEAT_BANK=full OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout --kill-after=30 7200 $(BIN)/python -m pytest -n auto -rP --durations=0 tests/autograde

# --- 简体中文版: the Chinese edition -----------------------------------------------------------------------------------
# zh-CN/notebooks/ is built from notebooks/ and the translations in translations/zh_CN/ by tools/translate.py (the code
# cells are the English ones, plus one cell that switches what mha_lib and mha_chapters print to Chinese); zh-CN/chapters/ is
# its reader edition. Both are committed and executed, and `make test` runs them with nbval like the English ones.
# JupyterLab's own menus come in Chinese from the jupyterlab-language-pack-zh-cn package, chosen by settings-zh.
ZH_NOTEBOOKS := $(patsubst notebooks/%,zh-CN/notebooks/%,$(NOTEBOOKS))
ZH_CHAPTERS := $(patsubst notebooks/%,zh-CN/chapters/%,$(NOTEBOOKS))
.PHONY: lab-zh reset-zh refresh-zh zh slides-zh assignments-zh

lab-zh: ## 中文版：JupyterLab in Chinese at chapter 00 of your copy my-chapters-zh/ of zh-CN/chapters/
	$(START) lab --edition zh_CN --port $(PORT) $(START_ARGS)

reset-zh: $(READER_STAMP) ## 中文版：start one chapter of my-chapters-zh/ afresh: make reset-zh CHAPTER=04
	$(if $(CHAPTER),,$(error make reset-zh needs CHAPTER, the chapter's number: make reset-zh CHAPTER=04))
	$(BIN)/python -m tools.workcopy reset --edition zh_CN '$(CHAPTER)'

refresh-zh: $(READER_STAMP) ## 中文版：take the chapters that changed in zh-CN/chapters/ into my-chapters-zh/
	$(BIN)/python -m tools.workcopy refresh --edition zh_CN

zh: $(STAMP) ## rebuild the Chinese edition from notebooks/ and translations/zh_CN/ (python -m tools.translate), execute it
	$(BIN)/python -m tools.translate build zh_CN
	$(EXECUTE) $(ZH_NOTEBOOKS)
	$(SCRUB) $(ZH_NOTEBOOKS)
	$(BIN)/python -m tools.lecture metadata $(ZH_NOTEBOOKS)
	$(BIN)/python -m tools.editions reader --language zh_CN
	$(EXECUTE) $(ZH_CHAPTERS)
	$(SCRUB) $(ZH_CHAPTERS)

slides-zh: $(STAMP) $(LECTURE_ASSETS) ## the Chinese lecture decks and solved handouts in build/slides-zh/
	rm -rf build/slides-zh
	$(BIN)/python -m tools.lecture slides --assets $(LECTURE_VENDOR) --out build/slides-zh $(ZH_NOTEBOOKS)

# Every deck of both languages as a PDF, one page a slide, for lecturers who teach from a PDF (issue 52): reveal.js's
# print view printed by headless Chromium (tools/lecture/pdf.py, Debian's chromium as test-slides uses it). Built
# into build/pdfs/, never committed; tests/slides/test_pdfs.py (make test-slides) checks the pages.
.PHONY: pdfs
pdfs: slides slides-zh $(BROWSER_STAMP) ## every lecture deck as a PDF, one page a slide, in build/pdfs/en and build/pdfs/zh-CN (needs chromium)
	rm -rf build/pdfs
	$(BIN)/python -m tools.lecture.pdf --out build/pdfs/en build/slides/[0-9][0-9]_*.slides.html
	$(BIN)/python -m tools.lecture.pdf --out build/pdfs/zh-CN build/slides-zh/[0-9][0-9]_*.slides.html

assignments-zh: $(STAMP) ## the nbgrader course of the Chinese chapters in course-zh/ (SEED=..., FORCE=1 as for assignments)
	$(BIN)/python -m tools.nbgrader_course course-zh $(ZH_NOTEBOOKS) $(COURSE_ARGS)

# --- A trial course on JupyterHub (issue 30): hub/jupyterhub_config.py, docs/teaching.md "A course on JupyterHub" ---
# JupyterHub from the `hub` extra, its proxy configurable-http-proxy from npm (hub/package-lock.json, `npm ci`, needs
# Node.js 20 or newer). `make hub` writes the course of every chapter into build/hub/course (make assignments), prints
# new passwords once and runs the hub on 127.0.0.1 in the foreground: Ctrl+C stops it and everything it started.
# `make test-hub` runs the course loop (tests/hub) on a hub of its own, with Debian's chromium as test-browser does.
.PHONY: hub test-hub
HUB_PORT ?= 8000
HUB_STAMP := $(VENV)/.installed-hub
HUB_PROXY := hub/node_modules/.installed

$(HUB_STAMP): $(STAMP)
	$(START) setup --extras dev,hub $(START_ARGS)

$(HUB_PROXY): hub/package.json hub/package-lock.json
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' 2>/dev/null || { \
		echo "error: the hub's proxy (configurable-http-proxy) needs Node.js 20 or newer and npm; found: $$(node --version 2>&1)"; exit 1; }
	cd hub && npm ci --no-audit --no-fund
	touch $@

# The course is made again only when a chapter changed; the hub keeps its users' files and gradebook in build/hub.
HUB_COURSE := build/hub/course/.made
$(HUB_COURSE): $(NOTEBOOKS) tools/nbgrader_course.py $(wildcard grading/*.py) | $(STAMP)
	$(MAKE) assignments COURSE=build/hub/course
	touch $@

hub: $(HUB_STAMP) $(HUB_PROXY) $(HUB_COURSE) ## a trial course on JupyterHub at http://127.0.0.1:8000 (needs Node.js 20; Ctrl+C stops it)
	$(BIN)/python hub/start.py --port $(HUB_PORT) --state build/hub

test-hub: $(BROWSER_STAMP) $(HUB_STAMP) $(HUB_PROXY) ## release, fetch, submit, collect, autograde through a JupyterHub, and a student in chromium
	timeout --kill-after=30 900 $(BIN)/python -m pytest tests/hub tests/test_hub_config.py

# --- A course that grades the exercises (issue 39): everything students may see, without solutions ------------------
# build/student/ holds, in English and Chinese: the lecture decks and handouts (answer cells as unsolved stubs,
# no checker output), the book without its "Show a solution" folds, and the notebooks likewise. `make test-slides`
# opens every deck in headless Chromium and searches these builds for solution markers and solution code.
.PHONY: student test-slides
STUDENT_DIR := build/student

student: $(BOOK_STAMP) $(LECTURE_ASSETS) ## slides, book and notebooks without any solution, both languages, in build/student/ (for a graded course)
	rm -rf $(STUDENT_DIR)
	$(BIN)/python -m tools.lecture slides --handout student --assets $(LECTURE_VENDOR) --out $(STUDENT_DIR)/slides/en $(NOTEBOOKS)
	$(BIN)/python -m tools.lecture slides --handout student --assets $(LECTURE_VENDOR) --out $(STUDENT_DIR)/slides/zh-CN $(ZH_NOTEBOOKS)
	$(BIN)/python -m tools.editions student --out $(STUDENT_DIR)/notebooks/en
	$(BIN)/python -m tools.editions student --language zh_CN --out $(STUDENT_DIR)/notebooks/zh-CN
	$(BIN)/python -m tools.book --student --assets $(LECTURE_VENDOR) --out $(STUDENT_DIR)/book

# One Chromium per pytest-xdist worker: a deck's test mostly waits for its browser, so two workers on 2 cores took
# 3 min 5 s where one took 5 min 30 s (Intel Xeon, 2026-12-03).
test-slides: slides slides-zh student $(BROWSER_STAMP) ## every lecture deck in headless Chromium (fit, numbers, notes, no solution) and printed to PDF (a whole page a slide); the student builds searched for solutions
	timeout --kill-after=30 900 $(BIN)/python -m pytest -n auto tests/slides
