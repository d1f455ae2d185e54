# make book | test | bench  -- each creates .venv from constraints.txt on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PARAMS ?= params/toy.yaml
EXECUTOR ?= ray
# make book-full passes SWEEP_FLAGS=--full: the opt-in pages' runs too
SWEEP_FLAGS ?=
# PART=1 (the SRNets paper) or PART=2 (TAMT): sweep only that part's runs; the book is built whole,
# the other part's pages saying their runs are not in the store
PART ?=
PART_FLAG := $(if $(PART),--part $(PART),)
# the HTML goes to $(BOOK_OUT)/_build/html (no comment on the assignment line: make keeps
# the spaces before a trailing comment in the value)
BOOK_OUT ?= .
NOTEBOOKS := $(wildcard book/*.ipynb)
# The toy build (the default PARAMS) and the tests never reach the hub; a paper-scale build
# (make book PARAMS=params/paper.yaml) downloads bert-base-uncased and the datasets.
ifeq ($(PARAMS),params/toy.yaml)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
endif
test: export HF_HUB_OFFLINE = 1
test: export TRANSFORMERS_OFFLINE = 1
test: export HF_DATASETS_OFFLINE = 1

.PHONY: book book-full robustness browser test check bench clean-book lab notebook-filter

# the pinned environment: with uv where it installs (under a minute), else pip (about 1.5 minutes)
$(STAMP): pyproject.toml constraints.txt tools/install.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) tools/install.py
	touch $@
	@$(MAKE) --no-print-directory notebook-filter

# the notebooks read their default params_file from SRNETS_PARAMS; the sweep computes every run,
# then the book build only gathers (SRNETS_COMPUTE=0: missing runs show as missing)
book: export SRNETS_PARAMS = $(PARAMS)
book: export SRNETS_COMPUTE = 0
# A run that fails (exit 1: each is listed, and kept in its runs/<key>/failed.json) does not stop
# the book: it is built with those runs shown as failed, then make exits 1. An interrupted sweep
# (SIGTERM 143, Ctrl-C 130) stops make book there.
book: $(STAMP)
	@status=0; $(PY) -m srnets_lib sweep $(NOTEBOOKS) --params $(PARAMS) --executor $(EXECUTOR) $(SWEEP_FLAGS) $(PART_FLAG) \
	  || status=$$?; [ $$status -le 1 ] || exit $$status; \
	$(VENV)/bin/jupyter-book build --all --path-output $(BOOK_OUT) . || exit $$?; \
	$(PY) -m srnets_lib.tools.browser_check --html $(BOOK_OUT)/_build/html --screenshot $(BOOK_OUT)/_build/screenshots \
	  || exit $$?; \
	if [ $$status -ne 0 ]; then echo "make book: built, but some runs failed (listed above, shown as failed on" \
	  "their pages); make book again retries them"; exit 1; fi

# the book with its opt-in runs too: TAMT figures 6, 7 and 9, and Part I's curves at the preset's
# sparsities where sections.judged_only narrows them (docs/MEASUREMENTS.md gives its time)
book-full:
	$(MAKE) book SWEEP_FLAGS=--full

# the core claims (4.2, 4.3, 4.4, 5.2) judged again at 4 other data seeds and 4 bias strengths, one
# field changed at a time (srnets_lib/book/robustness.py; about 8 minutes a setting on 2 cores, docs/MEASUREMENTS.md); make book then shows the
# table on the scorecard page
robustness: $(STAMP)
	$(PY) -m srnets_lib robustness --params $(PARAMS) --executor $(EXECUTOR)

# Debian's chromium and chromedriver for make book's browser check (a system install: root, or
# sudo without a password; make book itself installs nothing and skips the check without them)
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
	  echo "chromium and chromedriver are installed"; \
	else \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

# JupyterLab on the book's notebooks, in this environment: a page's kernel is the venv's own python3
# (nothing to register); a saved notebook's outputs never reach a commit (the nbstripout git filter,
# set up here and by make book/test: .gitattributes names it)
lab: $(STAMP) notebook-filter
	$(VENV)/bin/jupyter lab --notebook-dir=book $(if $(filter 0,$(shell id -u)),--allow-root,)

notebook-filter: $(STAMP)
	@git rev-parse --git-dir >/dev/null 2>&1 \
	  && git config filter.nbstripout.clean "$(abspath $(VENV))/bin/nbstripout --keep-id" \
	  && git config filter.nbstripout.smudge cat && git config diff.ipynb.textconv "$(abspath $(VENV))/bin/nbstripout --keep-id -t" \
	  && echo "notebook outputs are stripped when staged (git filter nbstripout)" || true

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

# about a minute: the pinned numbers of the architecture trace (tests/trace/test_golden.py), the house's
# rules, the settings, schedules, the plan's digests of every run key and the verdict rule (the rest
# of test_plan.py, which plans the whole paper through the command line, is make test's)
CHECK := tests/trace/test_golden.py tests/house/test_architecture.py tests/settings/test_config.py tests/methods/test_schedule.py \
  tests/methods/test_hparams.py tests/sweeps/test_plan.py::test_the_books_runs_keep_their_keys tests/book/test_verdict_rule.py
check: export HF_HUB_OFFLINE = 1
check: export TRANSFORMERS_OFFLINE = 1
check: export HF_DATASETS_OFFLINE = 1
check: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(CHECK)

clean-book:
	rm -rf _build book/_executed

bench: $(STAMP)
	$(PY) -m srnets_lib.tools.bench --models tiny packaged-2 packaged
	$(PY) -m srnets_lib.tools.bench --models bert-base --workloads mask --steps 3 --warmup 1
