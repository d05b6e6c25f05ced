# Two commands on a fresh machine (Python 3.11 + pip): `make run` and `make test`.
# Each role installs only what it needs, from a lock with hashes (requirements/, made by `make lock`):
#   run, serve-prod, worker, beat: the runtime (requirements/runtime.txt): no torch, Playwright or test tools;
#   test, test-fast, lint, bench: the runtime plus the test and profiler extras (requirements/test.txt).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_LOCK := requirements/runtime.txt
TEST_LOCK := requirements/test.txt
RUNTIME_STAMP := $(VENV)/.runtime-installed
TEST_STAMP := $(VENV)/.test-installed
PIP_INSTALL := $(BIN)/pip install --quiet --require-hashes
HOST ?= 127.0.0.1
PORT ?= 8000
# The embedded default: SQLite file, in-process tasks, bundled data; DEBUG on for local serving.
RUN_ENV := DEBUG=$${DEBUG:-1}
# One command makes both locks from pyproject.toml (pip-tools, in the test extra). The test lock adds
# requirements/test-pins.txt (torch's CPU build these machines hold on disk). Extras stay in the lock
# (fonttools[woff]==...): a fresh venv's pip 23.2 resolves a dependency's "fonttools[woff]>=4.59" as its own
# requirement, takes the newest release and refuses it as unpinned under --require-hashes (fonttools 4.69.1, 2026-12).
LOCK := $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --no-emit-index-url --no-emit-find-links
# Libraries WeasyPrint loads to render PDFs (Debian/Ubuntu package names).
PDF_LIBS := libpango-1.0-0 libpangoft2-1.0-0

.PHONY: install install-test lock run user test test-fast lint typecheck audit worker beat bench serve-prod e2e-deps pdf-deps clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 1; }
	@echo "== creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

# The locked packages first (every one pinned and hashed), then the project itself without dependencies.
$(RUNTIME_STAMP): $(RUNTIME_LOCK) pyproject.toml | $(BIN)/python
	@echo "== installing the runtime from $(RUNTIME_LOCK) (hashed; no test tools, no torch)"
	$(PIP_INSTALL) -r $(RUNTIME_LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(TEST_STAMP): $(TEST_LOCK) pyproject.toml | $(BIN)/python
	@echo "== installing the runtime, test and profiler extras from $(TEST_LOCK) (hashed; torch 2.13.0 CPU build)"
	$(PIP_INSTALL) -r $(TEST_LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@ $(RUNTIME_STAMP)

# The runtime, the database migrated and the bundled data loaded: `manage.py advise` works after this.
install: $(RUNTIME_STAMP)
	@echo "== migrating the database and loading the bundled prices, quotes and calibration"
	$(RUN_ENV) $(BIN)/python manage.py bootstrap

install-test: $(TEST_STAMP)

# Regenerate both locks after editing dependencies in pyproject.toml (needs the index; minutes).
lock: $(TEST_STAMP)
	$(LOCK) -o $(RUNTIME_LOCK) pyproject.toml
	$(LOCK) --extra test --extra profiler -c requirements/test-pins.txt -o $(TEST_LOCK) pyproject.toml

run: install pdf-deps
	@echo "== serving GPU Advisor at http://$(HOST):$(PORT)/ (SQLite db.sqlite3, tasks in-process; Ctrl-C stops)"
	@echo "   an account to save scenarios: $(BIN)/python manage.py createsuperuser"
	$(RUN_ENV) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# An account to sign in with (saving scenarios, proposals, API tokens). Prompts for name and password;
# DJANGO_SUPERUSER_USERNAME/_EMAIL/_PASSWORD and ARGS=--noinput make it non-interactive.
user: install
	$(RUN_ENV) $(BIN)/python manage.py migrate --noinput --verbosity 0
	$(RUN_ENV) $(BIN)/python manage.py createsuperuser $(ARGS)

# The whole suite: lint, import contracts, migrations check, then pytest (unit, integration, e2e).
# The whole suite: lint, import contracts, declared dependencies, migrations check, then pytest (unit,
# integration, e2e). The dependency audit comes last as a report: offline it says NOT AUDITED and is
# not counted as a passing check (`make audit` is the check, where a vulnerability database answers).
test: $(TEST_STAMP) e2e-deps pdf-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/deptry .
	SECRET_KEY=check-only DEBUG=0 $(BIN)/python manage.py makemigrations --check --dry-run
	DEBUG=1 $(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadgroup
	@echo "== checks passed: ruff (lint, format), import contracts, deptry, migrations, mypy, pytest. Dependency audit (report only):"
	@$(BIN)/python .ci/audit.py; status=$$?; \
	  if [ $$status -eq 3 ]; then echo "== dependency audit: NOT AUDITED (not a pass; run make audit where PyPI is reachable)"; \
	  elif [ $$status -ne 0 ]; then exit $$status; fi

# Types: strict on advisor/advice, normal elsewhere ([tool.mypy] in pyproject.toml); also run by `make test`.
typecheck: $(TEST_STAMP)
	DEBUG=1 $(BIN)/mypy

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -x -q -m "not e2e"

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/deptry .

# pip-audit --strict over both locks: fails on a known vulnerability and on any package it cannot look up.
audit: $(TEST_STAMP)
	$(BIN)/python .ci/audit.py --strict

# Debian's chromium for the end-to-end tests (Playwright drives it via executable_path).
e2e-deps:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing Debian's chromium for the end-to-end tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null; \
	else echo "== the end-to-end tests need Chromium; install it with: sudo apt-get install chromium fonts-dejavu-core"; exit 1; fi

# Pango for WeasyPrint's PDFs: installed where apt-get may run (root), otherwise named. Without it the
# app still serves; the PDF links answer 503 with this same advice.
pdf-deps:
	@if ldconfig -p 2>/dev/null | grep -q libpango-1.0; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing Pango for PDF proposals: $(PDF_LIBS)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PDF_LIBS) >/dev/null; \
	else echo "== PDF proposals need Pango; install it with: sudo apt-get install $(PDF_LIBS) (macOS: brew install pango)"; fi

worker: $(RUNTIME_STAMP)
	$(BIN)/celery -A config worker --loglevel=info --concurrency=2

beat: $(RUNTIME_STAMP)
	$(BIN)/celery -A config beat --loglevel=info

serve-prod: $(RUNTIME_STAMP)
	$(BIN)/python manage.py bootstrap
	$(BIN)/python manage.py collectstatic --noinput
	$(BIN)/gunicorn -c config/gunicorn.conf.py --bind $(HOST):$(PORT)

bench: $(TEST_STAMP)
	$(RUN_ENV) $(BIN)/python manage.py bootstrap
	@for script in bench/*.py; do echo "== $$script"; $(RUN_ENV) $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) staticfiles db.sqlite3 .pytest_cache test-artifacts celerybeat-schedule*
