# The reader's commands. Everything they install or generate lands in build/ (git ignores it).
#   make book   measure on a real Redis (chapters whose inputs changed), then build the site into build/site
#   make test   lint, then the test suite (what CI runs)
#   make check  the fast loop: lint and the unit tests, prose markers and claims on the committed reference (about a minute)
#   make lab    JupyterLab on working copies of the notebooks (build/lab), with Redis (and toxiproxy) running
#   make lab-restore NB=1  the book's version of chapter 1's notebook back in the lab (yours is kept)
#   make serve  the site on http://127.0.0.1:8000
#   make prefetch  fetch and compile everything the course needs (before a training day)
#   make course    run and time every exercise's solution
#   make doctor    is this laptop ready for the course? one line per check (seconds; installs nothing)
#   make bundle    one file, build/pipelab-bundle-<platform>.tar.gz, with everything a laptop of this platform fetches
#   make offline BUNDLE=<file>  install from that file alone, no network (rm build/offline.mk to fetch online again)
#   make reference measure the whole book afresh and make it the committed reference run (pipelab/reference_run)
#   make slow-machine  the timing-sensitive examples at full size, every CPU kept busy meanwhile (about 10 min)
SHELL := /bin/bash
PYTHON ?= python3
VENV := build/venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test check lint lab lab-restore serve site tools clean system-deps prefetch course doctor lock reference slow-machine bundle offline

# Written by `make offline`: pip, uv, JBang, npm and go then fetch from build/offline, never the network.
-include build/offline.mk

# Debian tools the chapters use when they can have them: redis-benchmark (redis-tools) is the
# server's own ceiling, strace counts system calls, docker-compose v1 checks docker-compose.yml
# without a daemon, chromium runs the browser test of the built site. Installed only as root with
# apt-get; elsewhere each use says why it skips.
SYSTEM_TOOLS := redis-benchmark:redis-tools strace:strace docker-compose:docker-compose chromium:chromium
system-deps:
	@missing=""; for pair in $(SYSTEM_TOOLS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair##*:}"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "make: installing Debian packages:$$missing"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } >/dev/null 2>&1 \
	    || echo "make: could not install$$missing; the steps that need them will say so and skip."; \
	fi

# Every Python package, transitive ones included, comes from uv.lock with its hashes. uv itself is
# pinned and installed into build/uv by pip; it never downloads a Python (the reader's PYTHON is used).
UV_VERSION := 0.13.9
UV := build/uv/bin/uv
# Bytecode is compiled once at install: where PYTHONDONTWRITEBYTECODE is set, every process (each kernel,
# each site build) would otherwise compile every module it imports, a second or more each time.
UV_SYNC := UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never $(UV) sync --frozen --quiet --compile-bytecode --python $(PYTHON)

PYTHON_CHECK = $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	  || { echo "make: the book needs Python 3.11 or newer as '$(PYTHON)'; install it, or run: make PYTHON=python3.12 $(MAKECMDGOALS)"; exit 1; }

$(UV):
	@$(PYTHON_CHECK)
	@$(PYTHON) -m venv build/uv \
	  || { echo "make: '$(PYTHON) -m venv' failed; install your distribution's venv package (e.g. apt-get install python3-venv)"; exit 1; }
	build/uv/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(STAMP): pyproject.toml uv.lock | $(UV)
	$(UV_SYNC) --extra test
	@touch $@

# make book CHAPTER=3 (or CHAPTERS=3,4) measures those chapters; FRESH=1 measures again what has not changed.
book: $(STAMP) system-deps
	$(BIN)/pipelab book $(if $(QUICK),--quick) $(if $(CHAPTER)$(CHAPTERS),--chapters "$(CHAPTER) $(CHAPTERS)") $(if $(FRESH),--fresh)

# The site shows the reference run wherever the reader has no results of their own. FROM_RESULTS=1
# makes build/results the reference without measuring (refused if quick or missing a chapter).
reference: $(STAMP) system-deps
	$(BIN)/pipelab reference $(if $(FROM_RESULTS),--from-results)

test: $(VENV)/.lab-installed lint system-deps  # the tests open `make lab`'s JupyterLab too
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff from the lock: the rules and the format in pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

slow-machine: $(STAMP) system-deps
	PIPELAB_SLOW_MACHINE=1 $(BIN)/python -m pytest -m slow_machine tests/test_slow_machine.py $(PYTEST_ARGS)

# No server, JDK or notebook run: the tests marked unit (tests/conftest.py gives every test its marker).
check: lint
	$(BIN)/python -m pytest -m unit -q $(PYTEST_ARGS)

# Both extras in one sync (and so one bytecode compilation); it stands for $(STAMP) too.
$(VENV)/.lab-installed: pyproject.toml uv.lock | $(UV)
	$(UV_SYNC) --extra test --extra lab
	@touch $(STAMP) $@

lab: $(VENV)/.lab-installed
	$(BIN)/pipelab lab $(if $(LAB_ARGS),-- $(LAB_ARGS))

# make lab-restore NB=1 (or NB=ex3, NB=all): the book's version of a notebook back in the lab's workspace.
lab-restore: $(STAMP)
	$(BIN)/pipelab lab-restore "$(NB)"

prefetch: $(VENV)/.lab-installed system-deps
	$(BIN)/pipelab prefetch

# The offline room (pipelab/book/bundle.py). The bundle is made on a machine with the network, and
# only fits laptops of its platform (its name says which): system, processor, Python 3.x, and the
# glibc or macOS version as far as the lock's wheels tell them apart.
bundle: $(STAMP)
	$(BIN)/pipelab bundle --uv $(UV) --uv-version $(UV_VERSION)

# Unpacks with the reader's Python (there is no venv yet), then make and pipelab install from build/offline.
offline:
	@test -n "$(BUNDLE)" || { echo "make: say which bundle: make offline BUNDLE=build/pipelab-bundle-<platform>.tar.gz"; exit 2; }
	@$(PYTHON_CHECK)
	@$(PYTHON) -P pipelab/book/bundle.py unpack "$(BUNDLE)"
	@$(MAKE) --no-print-directory $(VENV)/.lab-installed
	$(BIN)/pipelab offline

course: $(STAMP)
	$(BIN)/pipelab course $(if $(QUICK),--quick)

# No prerequisite: a check installs nothing, so a laptop without build/venv is told what to run.
doctor:
	@if [ -x $(BIN)/pipelab ]; then $(BIN)/pipelab doctor; else \
	  echo "FIX   Python     No build/venv yet: run \`make prefetch\` (or \`make lab\`) on a good connection."; \
	  echo "1 thing needs attention (Python): fix it as said above, then run \`make doctor\` again."; exit 1; fi

serve: $(STAMP)
	$(BIN)/pipelab serve

site: $(STAMP)
	$(BIN)/pipelab site

tools: $(STAMP)
	$(BIN)/pipelab tools

lock: $(UV)  # after changing a pin in pyproject.toml: resolve again and write uv.lock
	UV_PYTHON_DOWNLOADS=never $(UV) lock --python $(PYTHON)

clean:
	rm -rf build/results build/notebooks build/site build/site-figures
