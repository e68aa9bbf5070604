# The course's commands. Every target sets up .venv first. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: help setup grade test test-fast lint generate format bench constraints clean

## List the commands.
help:
	@awk '/^## /{doc=substr($$0, 4); next} /^[a-z-]+:/{if (doc) printf "  make %-12s %s\n", substr($$1, 1, length($$1)-1), doc; doc=""}' $(MAKEFILE_LIST)

## Create .venv with the pinned packages (and bubblewrap, as root, with apt).
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[test]'
	@# The grader sandboxes student code with bubblewrap; install it where we can.
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } \
		|| echo "WARNING: bubblewrap is missing: install it (apt-get install bubblewrap) to sandbox student code"
	touch $@

## Grade the bundled sample class and print the results.
grade: setup
	$(PY) -m autograder grade samples/class

## The whole test suite, as CI runs it: lint, types, unit and end-to-end tests, nbval.
test: lint
	$(PY) -m pytest --nbval solutions/ tests/

## The fast layer: unit tests only (no grading runs, no stock nbgrader), in seconds.
test-fast: setup
	$(PY) -m pytest -m "not slow" tests/

## ruff (lint and format) and mypy on the package.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

## Regenerate release/, solutions/ and samples/class/ after editing source/.
generate: setup
	$(PY) -m autograder generate

## Fix what ruff can fix, and format.
format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Time stock nbgrader against ours on 60 submissions, then with failure cases mixed in.
bench: setup
	$(PY) bench/bench.py --students 60 --failures 16

## Re-pin the exact versions after changing pyproject.toml's ranges.
constraints: setup
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable; } > constraints.tmp
	mv constraints.tmp constraints.txt

## Remove the environment and everything grading wrote.
clean:
	rm -rf $(VENV) grades autograded submitted feedback gradebook.db .gradebook.db.*
