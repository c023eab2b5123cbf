# The reader's commands. Everything they install or generate lands in build/ (git ignores it).
#   make book   measure on a real Redis, then build the site into build/site
#   make test   the test suite (what CI runs)
#   make lab    JupyterLab on the notebooks, with Redis (and toxiproxy) running
#   make serve  the site on http://127.0.0.1:8000
SHELL := /bin/bash
PYTHON ?= python3
VENV := build/venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test lab serve site tools clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	  || { echo "make: the book needs Python 3.11 or newer as '$(PYTHON)'; install it, or run: make PYTHON=python3.12 $(MAKECMDGOALS)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) \
	  || { echo "make: '$(PYTHON) -m venv' failed; install your distribution's venv package (e.g. apt-get install python3-venv)"; exit 1; }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

book: $(STAMP)
	$(BIN)/pipelab book $(if $(QUICK),--quick)

test: $(STAMP)
	@bash .ci/system-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

$(VENV)/.lab-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,lab]'
	@touch $@

lab: $(VENV)/.lab-installed
	$(BIN)/pipelab lab

serve: $(STAMP)
	$(BIN)/pipelab serve

site: $(STAMP)
	$(BIN)/pipelab site

tools: $(STAMP)
	$(BIN)/pipelab tools

clean:
	rm -rf build/results build/notebooks build/site
