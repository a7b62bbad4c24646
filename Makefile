# Everything a contributor or CI runs. `make test` works on a fresh machine: it creates .venv.
#
# Virtualenvs. `.venv` (python3, Django 5.2 LTS on Python 3.11) is the one `make test`, `make demo` and
# `make docs` use. DJANGO=6.0 or DJANGO=6.1 selects a virtualenv of its own, .venv-django6.1, holding that
# Django on the Python that CI runs it with (PYTHON_<version> below, found by .ci/python.sh):
#   make test-suite DJANGO=6.1        the whole suite on SQLite under Django 6.1 / Python 3.13
#   make test-postgres DJANGO=6.1     the PostgreSQL suite there (CI runs PostgreSQL, worker and browser there)
#   make test-matrix                  test-suite on every Django of MATRIX
#   make test-fuzz                    the property and fuzz tests with every example (CI runs it once)
DJANGO ?=
PYTHON_5.2 := 3.11
PYTHON_6.0 := 3.12
PYTHON_6.1 := 3.13
# The runs of `make test-matrix`, beside `make test`'s (Django 5.2 LTS on Python 3.11).
MATRIX := 6.0 6.1

ifeq ($(strip $(DJANGO)),)
VENV ?= .venv
PYTHON ?= python3
EXTRAS ?= test,dev,api,metrics,tasks
DJANGO_REQUIREMENT :=
else
ifeq ($(PYTHON_$(DJANGO)),)
$(error DJANGO=$(DJANGO) is not supported: choose one of 5.2, 6.0, 6.1)
endif
VENV ?= .venv-django$(DJANGO)
PYTHON ?= $(shell bash .ci/python.sh $(PYTHON_$(DJANGO)))
EXTRAS ?= test,api,metrics,tasks
DJANGO_REQUIREMENT := 'Django~=$(DJANGO).0'
endif

BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# pytest-xdist processes (0: one process). worksteal hands the long fuzz tests' neighbours to the idle worker.
WORKERS ?= auto
XDIST = $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist worksteal)
# Hypothesis profile of the property and fuzz tests: quick (a tenth of the examples, every rule exercised:
# make test and every suite run) or full (every example: make test-fuzz). See tests/hypothesis_profiles.py.
HYPOTHESIS_PROFILE ?= quick
PYTEST = PAYCOLLECT_HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/python -m pytest
# The tests of a project with save receivers (django-simple-history on Transaction): settings of their own.
RECEIVERS = $(PYTEST) --ds=tests.receivers.settings tests/receivers

.PHONY: install install-browser test test-suite test-matrix test-fuzz test-postgres test-worker test-browser lint format typecheck \
	bench docs dist demo clean messages compile-messages test-alerts

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# One resolve with the Django pin, so no extra can pull another Django in.
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]' $(DJANGO_REQUIREMENT)
	@$(BIN)/python -c 'import django, sys; print("$(VENV): Django", django.get_version(), "on Python", sys.version.split()[0])'
	touch $(STAMP)

# The translation catalogues: the .po files and the .mo files Django reads, both committed (as Django's
# own are), so a plain `pip install` of a checkout or a git URL carries every language: the app's, the
# sandbox's and the example project's (its JavaScript's too, djangojs). Nothing else compiles them (not the
# tests, the demo or the build); `make lint` fails when a .mo does not hold what its .po holds. Updating
# them needs GNU gettext (Debian: apt-get install gettext); compiling does not.

# After marking or changing strings: the catalogues made anew from the sources, and the .mo files compiled
# (then translate, and run it again: that compiles the translations).
messages: $(STAMP)
	$(BIN)/python .ci/messages.py update
	$(BIN)/python .ci/messages.py compile

# After editing a .po by hand: its .mo compiled again (each .mo is rewritten only when what it holds changed).
compile-messages: $(STAMP)
	$(BIN)/python .ci/messages.py compile

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy django_paycollect
	@# Every marked string in the catalogues, translated, and each .mo current (see .ci/messages.py).
	$(BIN)/python .ci/messages.py check
	@# Models and migrations must agree, so no user's makemigrations writes into site-packages.
	$(BIN)/python -m django makemigrations --check --dry-run --settings=tests.settings

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The browser suite is test-browser's: Playwright's event loop must not share a process with the others.
test: lint
	$(PYTEST) $(XDIST) -m "not browser" --cov --cov-report= $(PYTEST_ARGS)
	$(RECEIVERS) --cov --cov-append --cov-report=
	$(BIN)/coverage report --skip-covered
	@echo "--- django_paycollect.client (line coverage, at least 95%):"
	$(BIN)/coverage report --include='django_paycollect/client/*' --fail-under=95

# The whole suite on SQLite, without coverage, and the migrations check: one run of the matrix. Worker and
# PostgreSQL tests skip here as they do without their services; the browser suite is test-browser's.
test-suite: $(STAMP)
	$(BIN)/python -m django makemigrations --check --dry-run --settings=tests.settings
	env -u PAYCOLLECT_TEST_POSTGRES -u PAYCOLLECT_TEST_REDIS $(PYTEST) $(XDIST) -m "not browser" $(PYTEST_ARGS)
	env -u PAYCOLLECT_TEST_POSTGRES -u PAYCOLLECT_TEST_REDIS $(RECEIVERS)

# test-suite under each Django of MATRIX, each in its own virtualenv.
test-matrix:
	@for version in $(MATRIX); do \
		$(MAKE) --no-print-directory test-suite DJANGO=$$version || exit 1; \
	done

# The long hunt: every property and fuzz test (marked fuzz: each test built with hypothesis's @given, and the
# schema fuzz of the example API) with all of its examples, and the check that each kind of input was
# generated often enough. make test runs the same tests with a tenth of the examples.
test-fuzz: HYPOTHESIS_PROFILE = full
test-fuzz: $(STAMP)
	env -u PAYCOLLECT_TEST_POSTGRES -u PAYCOLLECT_TEST_REDIS $(PYTEST) $(XDIST) -m "fuzz and not browser" $(PYTEST_ARGS)

# Every test that uses the test database, on PostgreSQL, where row locks are real (the race tests run only
# there). The others (marked by tests/conftest.py: the client's, the standalone sandbox's, the example
# project's on its own SQLite file) run the same code whatever the test database is: test-suite runs them.
# Needs PAYCOLLECT_TEST_POSTGRES=host:port:dbname:user; `eval "$$(bash .ci/postgres.sh)"` starts one.
test-postgres: $(STAMP)
	@test -n "$$PAYCOLLECT_TEST_POSTGRES" || { echo "set PAYCOLLECT_TEST_POSTGRES (see .ci/postgres.sh)"; exit 2; }
	env -u PAYCOLLECT_TEST_REDIS $(PYTEST) $(XDIST) -m "database and not browser" $(PYTEST_ARGS)
	env -u PAYCOLLECT_TEST_REDIS $(RECEIVERS)

# Real Redis broker and Celery worker processes against PostgreSQL (tests/worker), and the Django runner's
# db_worker processes on PostgreSQL and on an SQLite file (tests/worker/test_db_worker*.py: no Redis needed,
# PYTEST_ARGS="-k db_worker" runs them alone), in one pytest process: the tests start the workers themselves.
# Needs PAYCOLLECT_TEST_POSTGRES and PAYCOLLECT_TEST_REDIS: eval "$$(bash .ci/postgres.sh)"; eval "$$(bash .ci/redis.sh)"
test-worker: $(STAMP)
	@test -n "$$PAYCOLLECT_TEST_POSTGRES" -a -n "$$PAYCOLLECT_TEST_REDIS" || { echo "set PAYCOLLECT_TEST_POSTGRES and PAYCOLLECT_TEST_REDIS (see .ci/postgres.sh, .ci/redis.sh)"; exit 2; }
	$(PYTEST) -m worker tests/worker $(PYTEST_ARGS)

# The documentation site, warnings as errors (what CI builds). The docs extra is installed only when
# missing or when setup.cfg changed: reinstalling would restart a running `make demo`.
DOCS_STAMP := $(VENV)/.installed-docs
docs: $(DOCS_STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]' $(DJANGO_REQUIREMENT)
	touch $(DOCS_STAMP)

# The sdist and the wheel in dist/, built without a warning, checked by twine, each carrying every compiled
# catalogue of the package (see .ci/dist.sh).
dist: $(STAMP)
	bash .ci/dist.sh $(BIN)/python

# The example project on http://127.0.0.1:8000: SQLite, the sandbox mounted in place of the service (no
# account), Celery eager. Prints the URLs and the demo staff login. DEMO_PORT=8080 make demo for another port.
DEMO_HOST ?= 127.0.0.1
DEMO_PORT ?= 8000
DEMO_MANAGE = CLUBSITE_SITE_URL=http://$(DEMO_HOST):$(DEMO_PORT) $(BIN)/python example_project/manage.py

demo: $(STAMP)
	$(DEMO_MANAGE) migrate --noinput
	$(DEMO_MANAGE) demo_setup
	@# runserver is threaded: the site calls the mounted sandbox, whose callbacks call the site back.
	$(DEMO_MANAGE) runserver $(DEMO_HOST):$(DEMO_PORT)

# Playwright for Python, which drives Debian's Chromium (never a downloaded browser; see .ci/browser.sh).
BROWSER_STAMP := $(VENV)/.installed-browser
install-browser: $(BROWSER_STAMP)

$(BROWSER_STAMP): $(STAMP)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(BIN)/python -m pip install --quiet -e '.[browser]' $(DJANGO_REQUIREMENT)
	touch $(BROWSER_STAMP)

# Chromium tests of the example project, of the quick start's shop (built from docs/quickstart.md in a temporary
# directory) and of the documentation site (built first). Skipped by `make test`
# without /usr/bin/chromium and playwright (see .ci/browser.sh); here a missing browser is an error.
# PAYCOLLECT_UPDATE_SCREENSHOTS=1 also refreshes docs/_static/screenshots/. Artifacts: test-artifacts/browser/.
test-browser: $(BROWSER_STAMP)
	@test -f docs/_build/html/quickstart.html || { echo "build the docs first: make docs"; exit 2; }
	PAYCOLLECT_REQUIRE_BROWSER=1 $(PYTEST) tests/browser $(PYTEST_ARGS)

# The Prometheus alerting rules shipped in the package: valid (promtool check rules) and firing when, and only
# when, their unit tests say (promtool test rules). promtool is in Debian's prometheus package (CI installs it).
ALERTS := django_paycollect/prometheus
test-alerts:
	@command -v promtool >/dev/null || { echo "promtool is missing: apt-get install --no-install-recommends prometheus"; exit 2; }
	promtool check rules $(ALERTS)/alerts.yml
	promtool test rules $(ALERTS)/alerts_test.yml

# Each script's seconds are printed: the whole run must stay under 15 minutes (benchmarks/README.md).
# PAYCOLLECT_BENCH_SHARED: the sandbox's payments and the migrated database, made once per run and copied.
bench: $(STAMP)
	@shared=$$(mktemp -d); trap 'rm -rf "$$shared"' EXIT; export PAYCOLLECT_BENCH_SHARED=$$shared; \
	for b in benchmarks/*.py; do echo "== $$b"; s=$$(date +%s); $(BIN)/python $$b || exit 1; \
	  echo "== $$b took $$(( $$(date +%s) - s )) s"; done

clean:
	rm -rf .venv .venv-django* build dist *.egg-info .coverage .coverage.* .pytest_cache .mypy_cache .ruff_cache
