# make book | test  -- each creates .venv from constraints.txt on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PARAMS ?= params/toy.yaml
NOTEBOOKS := $(wildcard book/*.ipynb)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: book test clean-book

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[test,ray]"
	touch $@

book: $(STAMP)
	$(PY) -m srnets_lib sweep $(NOTEBOOKS) --params $(PARAMS)
	$(VENV)/bin/jupyter-book build .

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

clean-book:
	rm -rf _build book/_executed
