# Everything a contributor or CI runs. `make test` works on a fresh machine: it creates .venv.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install test test-postgres test-worker lint format typecheck bench docs clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy django_paycollect
	@# Models and migrations must agree, so no user's makemigrations writes into site-packages.
	$(BIN)/python -m django makemigrations --check --dry-run --settings=tests.settings

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint
	$(BIN)/python -m pytest --cov --cov-report= $(PYTEST_ARGS)
	$(BIN)/coverage report --skip-covered
	@echo "--- django_paycollect.client (line coverage, at least 95%):"
	$(BIN)/coverage report --include='django_paycollect/client/*' --fail-under=95

# The whole suite on PostgreSQL, where row locks are real (the race tests run only there).
# Needs PAYCOLLECT_TEST_POSTGRES=host:port:dbname:user; `eval "$$(bash .ci/postgres.sh)"` starts one.
test-postgres: $(STAMP)
	@test -n "$$PAYCOLLECT_TEST_POSTGRES" || { echo "set PAYCOLLECT_TEST_POSTGRES (see .ci/postgres.sh)"; exit 2; }
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The documentation site, warnings as errors (what CI builds).
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# Real Redis broker and Celery worker processes against PostgreSQL (tests/worker).
# Needs PAYCOLLECT_TEST_POSTGRES and PAYCOLLECT_TEST_REDIS: eval "$$(bash .ci/postgres.sh)"; eval "$$(bash .ci/redis.sh)"
test-worker: $(STAMP)
	@test -n "$$PAYCOLLECT_TEST_POSTGRES" -a -n "$$PAYCOLLECT_TEST_REDIS" || { echo "set PAYCOLLECT_TEST_POSTGRES and PAYCOLLECT_TEST_REDIS (see .ci/postgres.sh, .ci/redis.sh)"; exit 2; }
	$(BIN)/python -m pytest -m worker tests/worker $(PYTEST_ARGS)

# The whole suite again on SQLite under Django 4.2 LTS, the oldest Django setup.cfg allows, in a
# virtualenv of its own (.venv-dj42, created and kept up to date by .ci/django42.sh).
.PHONY: test-django42
test-django42:
	bash .ci/django42.sh $(PYTEST_ARGS)

# The example project on http://127.0.0.1:8000: SQLite, the sandbox mounted in place of the service (no
# account), Celery eager. Prints the URLs and the demo staff login. DEMO_PORT=8080 make demo for another port.
.PHONY: demo test-browser
DEMO_HOST ?= 127.0.0.1
DEMO_PORT ?= 8000
DEMO_MANAGE = CLUBSITE_SITE_URL=http://$(DEMO_HOST):$(DEMO_PORT) $(BIN)/python example_project/manage.py

demo: $(STAMP)
	$(DEMO_MANAGE) migrate --noinput
	$(DEMO_MANAGE) demo_setup
	@# runserver is threaded: the site calls the mounted sandbox, whose callbacks call the site back.
	$(DEMO_MANAGE) runserver $(DEMO_HOST):$(DEMO_PORT)

# Chromium tests of the example project (skipped without /usr/bin/chromium and playwright; see .ci/browser.sh).
# PAYCOLLECT_UPDATE_SCREENSHOTS=1 also refreshes docs/_static/screenshots/. Artifacts: test-artifacts/browser/.
# Here a missing browser is an error, not a skip (PAYCOLLECT_REQUIRE_BROWSER=1).
test-browser: $(STAMP)
	PAYCOLLECT_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests/browser $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-dj42 build dist *.egg-info .coverage .pytest_cache .mypy_cache .ruff_cache
