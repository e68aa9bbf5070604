# The course's commands. Every target sets up .venv first. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The users' environment on the course's hub: what students' servers run, built from a Python
# outside every home folder (pyenv, conda and uv keep theirs in the instructor's home).
HUB_ENV    ?= /opt/tiny-gpt-08/hub-env
HUB_PYTHON ?= /usr/bin/python3
# ngshare's environment (HUB_EXCHANGE=ngshare): the exchange service, apart from the hub's
NGSHARE_ENV ?= /opt/tiny-gpt-08/ngshare-env
# nbgrader's exchange plugin for ngshare, in the course's and the users' environments
NGSHARE_EXCHANGE := ngshare-exchange==0.5.3
# make test's pytest-xdist workers (conftest.py says which tests share one); 0: one process
WORKERS    ?= 2

.PHONY: help setup grade hub hub-env ngshare-env test test-fast lint docs generate golden format bench bench-scale constraints clean

## List the commands.
help:
	@awk '/^## /{doc=substr($$0, 4); next} /^[a-z-]+:/{if (doc) printf "  make %-12s %s\n", substr($$1, 1, length($$1)-1), doc; doc=""}' $(MAKEFILE_LIST)

## Create .venv with the pinned packages, JupyterHub's proxy and axe-core (npm), and bubblewrap, chromium, npm (as root, with apt).
setup: $(VENV)/.installed
	@# The package's bytecode, written now: an editable install has none, and where
	@# PYTHONDONTWRITEBYTECODE is set (CI, containers) every process of a run (the
	@# grader, each sandbox's zygote) would compile it afresh, about 0.1 s each.
	@$(PY) -m compileall -q autograder course_config.py > /dev/null

$(VENV)/.installed: pyproject.toml constraints.txt Makefile
	@echo "setting up $(VENV) (pip's own words go to $(VENV)/setup.log)"
	@$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip > $(VENV)/setup.log 2>&1 \
		|| { cat $(VENV)/setup.log; exit 1; }
	@$(PY) -m pip install --quiet --constraint constraints.txt --editable '.[test]' \
		>> $(VENV)/setup.log 2>&1 || { cat $(VENV)/setup.log; exit 1; }
	@# ngshare's plugin for nbgrader (HUB_EXCHANGE=ngshare): without its dependencies, whose
	@# pin (jupyter_core<4.11.2) nbgrader 0.9 cannot have; it works with the ones installed.
	@$(PY) -m pip install --quiet --no-deps $(NGSHARE_EXCHANGE) >> $(VENV)/setup.log 2>&1 \
		|| { cat $(VENV)/setup.log; exit 1; }
	@# The grader sandboxes student code with bubblewrap; the tests look at pages in
	@# Chromium. Install what is missing where we can (as root, with apt).
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing="bubblewrap"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } \
				>> $(VENV)/setup.log 2>&1 || { cat $(VENV)/setup.log; exit 1; }; \
		else echo "WARNING: install$$missing (apt-get install$$missing): bubblewrap sandboxes student code, chromium runs the page tests"; fi; \
	fi
	@# From npm, beside the environment: JupyterHub's proxy (hub/jupyterhub_config.py finds it),
	@# and axe-core, which the accessibility tests run in Chromium.
	@mkdir -p $(VENV)/node && cd $(VENV)/node && \
		npm install --silent --no-audit --no-fund configurable-http-proxy@5.3.0 axe-core@4.10.3 \
		>> ../setup.log 2>&1 || { cat ../setup.log; exit 1; }
	@touch $@

## Start the course's JupyterHub on 127.0.0.1:8000, as root (students log in as Linux users; HUB_EXCHANGE=ngshare: as on Zero to JupyterHub).
hub: setup hub-env $(if $(filter ngshare,$(HUB_EXCHANGE)),ngshare-env)
	HUB_ENV=$(HUB_ENV) NGSHARE_ENV=$(NGSHARE_ENV) $(VENV)/bin/jupyterhub -f hub/jupyterhub_config.py

## Build the users' environment $(HUB_ENV) from $(HUB_PYTHON): what students' servers run.
hub-env: $(HUB_ENV)/.installed

$(HUB_ENV)/.installed: hub/users.txt hub/constraints.txt hub/student/nbgrader_config.py
	@echo "building the users' environment $(HUB_ENV) from $(HUB_PYTHON) (pip's words go to $(HUB_ENV)/setup.log)"
	@umask 022 && mkdir -p $(HUB_ENV) && $(HUB_PYTHON) -m venv $(HUB_ENV) \
		&& $(HUB_ENV)/bin/python -m pip install --quiet --upgrade pip > $(HUB_ENV)/setup.log 2>&1 \
		&& $(HUB_ENV)/bin/python -m pip install --quiet --requirement hub/users.txt \
			--constraint hub/constraints.txt >> $(HUB_ENV)/setup.log 2>&1 \
		&& $(HUB_ENV)/bin/python -m pip install --quiet --no-deps $(NGSHARE_EXCHANGE) \
			>> $(HUB_ENV)/setup.log 2>&1 \
		&& install -m 644 -D hub/student/nbgrader_config.py $(HUB_ENV)/etc/jupyter/nbgrader_config.py \
		|| { cat $(HUB_ENV)/setup.log; exit 1; }
	@touch $@

## Build ngshare's own environment $(NGSHARE_ENV) from $(HUB_PYTHON): the exchange service of HUB_EXCHANGE=ngshare.
ngshare-env: $(NGSHARE_ENV)/.installed

$(NGSHARE_ENV)/.installed: hub/ngshare/requirements.txt hub/ngshare/constraints.txt
	@echo "building ngshare's environment $(NGSHARE_ENV) from $(HUB_PYTHON) (pip's words go to $(NGSHARE_ENV)/setup.log)"
	@umask 022 && mkdir -p $(NGSHARE_ENV) && $(HUB_PYTHON) -m venv $(NGSHARE_ENV) \
		&& $(NGSHARE_ENV)/bin/python -m pip install --quiet --upgrade pip > $(NGSHARE_ENV)/setup.log 2>&1 \
		&& $(NGSHARE_ENV)/bin/python -m pip install --quiet --requirement hub/ngshare/requirements.txt \
			--constraint hub/ngshare/constraints.txt >> $(NGSHARE_ENV)/setup.log 2>&1 \
		|| { cat $(NGSHARE_ENV)/setup.log; exit 1; }
	@touch $@

## Grade the bundled sample class and print the results (a dry run into samples/graded/).
grade: setup
	$(PY) -m autograder grade samples/class --dry-run --out samples/graded

## The whole suite as CI runs it (lint, types, docs, tests, nbval), on WORKERS=2; MARKS="not cluster" narrows it.
test: setup
	@start=$$(date +%s); \
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . || exit 1; \
	$(MAKE) --no-print-directory docs || exit 1; \
	$(VENV)/bin/mypy & types=$$!; \
	$(PY) -m pytest --nbval solutions/ tests/ --durations=20 -n $(WORKERS) $(if $(MARKS),-m "$(MARKS)"); \
	tests=$$?; wait $$types; types=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s in all (lint, types, docs, tests)"; \
	[ $$types = 0 ] && exit $$tests || exit 1

## The fast layer: unit tests only (no grading runs, no stock nbgrader), in seconds, on WORKERS=2.
test-fast: setup
	$(PY) -m pytest -m "not slow" tests/ -n $(WORKERS)

## ruff (lint and format) and mypy on the package.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

## Build the documentation into docs/_build/html (warnings and dead references are errors).
docs: setup
	$(VENV)/bin/sphinx-build -W -n --keep-going -q -b html docs docs/_build/html

## Regenerate release/, solutions/ and samples/class/ after editing source/.
generate: setup
	$(PY) -m autograder generate

## Grade the corpus with stock nbgrader: the golden file the tests compare with, README table.
golden: setup
	$(PY) -m autograder corpus --table docs/corpus.md

## Fix what ruff can fix, and format.
format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

## Time stock nbgrader against ours on 60 submissions, then with failure cases mixed in; where our CPU goes.
bench: setup
	$(PY) bench/bench.py --students 60 --failures 16 --record docs/_generated/bench.txt
	$(PY) bench/serve_latency.py --students 30 --within 60 --record docs/_generated/serve_latency.txt
	$(PY) bench/where.py --students 60 --record docs/_generated/where.txt

## Grade classes of 60 and 1,000 (failure cases mixed in): time and memory per submission.
bench-scale: setup
	$(PY) bench/bench.py --scale 1000 --jobs 2 --record docs/_generated/scale.txt

## Re-pin the exact versions after changing pyproject.toml's ranges.
constraints: setup
	{ grep '^#' constraints.txt; $(PY) -m pip freeze --exclude-editable; } > constraints.tmp
	mv constraints.tmp constraints.txt
	rm -rf constraints.env && $(HUB_PYTHON) -m venv constraints.env
	constraints.env/bin/python -m pip install --quiet --upgrade pip
	constraints.env/bin/python -m pip install --quiet --requirement hub/users.txt
	{ grep '^#' hub/constraints.txt; constraints.env/bin/python -m pip freeze; } > constraints.tmp
	mv constraints.tmp hub/constraints.txt && rm -rf constraints.env
	rm -rf constraints.env && $(HUB_PYTHON) -m venv constraints.env
	constraints.env/bin/python -m pip install --quiet --upgrade pip
	constraints.env/bin/python -m pip install --quiet --requirement hub/ngshare/requirements.txt
	{ grep '^#' hub/ngshare/constraints.txt; constraints.env/bin/python -m pip freeze; } > constraints.tmp
	mv constraints.tmp hub/ngshare/constraints.txt && rm -rf constraints.env

## Remove the environment and samples/graded/ (never the gradebook, grades/ or students' work).
clean:
	rm -rf $(VENV) samples/graded
