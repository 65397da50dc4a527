# Every target sets itself up from a fresh clone: a .venv, then the pinned requirements.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint test-postgres test-postgres-db-events install install-dev migrate benchmarks clean check-install

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.requirements: requirements.txt constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt -c constraints.txt
	@touch $@

$(VENV)/.requirements-dev: requirements-dev.txt $(VENV)/.requirements
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	@touch $@

install: $(VENV)/.requirements
install-dev: $(VENV)/.requirements-dev

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Development: DEBUG on (tracebacks, a built-in secret key); it is off unless asked for. Exported for the
# migrate step too. Set DJANGO_DEBUG=0 (and the production settings) to try production locally.
# --no-proxy-headers: the app reads X-Forwarded-* itself, from TRUSTED_PROXIES only; uvicorn's own reading
# would believe them from 127.0.0.1 and ::1 (its --forwarded-allow-ips default), whatever TRUSTED_PROXIES says.
# BRIEFS_SCHEDULER=1: this process fires the watchlists' briefs on schedule (docs/briefs.md).
run: export DJANGO_DEBUG ?= 1
run: export BRIEFS_SCHEDULER ?= 1
run: migrate
	$(BIN)/python -m uvicorn config.asgi:application --host $(HOST) --port $(PORT) --no-proxy-headers

test: install-dev
	$(BIN)/python -m pytest

# ruff (lint and import order) over the tree, mypy over the app's code; settings in pyproject.toml.
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

# The same suite against the machine's PostgreSQL and Redis.
test-postgres: install-dev
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/15} \
	$(BIN)/python -m pytest

# The chat tests on PostgreSQL without Redis: events then live in the database there too.
test-postgres-db-events: install-dev
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} REDIS_URL= \
	$(BIN)/python -m pytest tests/chat tests/clients/test_openai_compat.py

benchmarks: install-dev
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache

# What a user without make gets: requirements.txt alone, with the Python's own pip, in a fresh venv; the app
# must then pass Django's checks, which import every module the URLs reach (trafilatura included).
CHECK_VENV := /tmp/check-install-venv
check-install:
	rm -rf $(CHECK_VENV) && $(PYTHON) -m venv $(CHECK_VENV)
	$(CHECK_VENV)/bin/pip install --quiet -r requirements.txt
	DJANGO_DEBUG=1 $(CHECK_VENV)/bin/python manage.py check
	rm -rf $(CHECK_VENV)
