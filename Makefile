# The course's commands. `make grade` and `make test` set everything up first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: setup grade test generate lint format bench constraints clean

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

## Run the whole test suite: lint, unit tests, the answer corpus, nbval on the solutions.
test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest --nbval solutions/ tests/

## Regenerate release/, solutions/ and samples/class/ after editing source/.
generate: setup
	$(PY) -m autograder generate

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Time stock nbgrader against our grader on a 60-submission class, then grade it
## again with 16 failure cases mixed in (see "How fast" in README.md).
bench: setup
	$(PY) bench/bench.py --students 60 --failures 16

## Re-pin the exact versions after changing pyproject.toml's ranges.
constraints: setup
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable; } > constraints.tmp
	mv constraints.tmp constraints.txt

clean:
	rm -rf $(VENV) grades autograded submitted feedback gradebook.db
