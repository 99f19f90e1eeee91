# Two commands set everything up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
DEV := DJANGO_DEBUG=1
# Unit tests always use the embedded default, whatever the caller's environment says.
EMBEDDED := env -u DATABASE_URL -u CELERY_BROKER_URL -u CACHE_URL -u INTEGRATION_SERVICES $(DEV)

.PHONY: gettext help demo test tour test-unit test-clients test-js test-integration test-slow test-mutation test-mutation-all lint lock bench serve worker clean messages docs dist

help:
	@echo "make demo    create .venv, migrate the SQLite default, run the demo consultation"
	@echo "make test    the whole suite: JS, unit and API (SQLite), browser, integration (PostgreSQL, Redis, Celery)"
	@echo "make lint    ruff, mypy --strict on the pure maths, and their import contract (part of make test)"
	@echo "make test-slow  strict statistical checks (two-sided coverage over hundreds of simulated surveys; minutes)"
	@echo "make test-mutation  mutation testing (mutmut) of the privacy-critical modules changed against BASE (default main)"
	@echo "make tour    refresh the organisers' tour screenshots (docs/tour/) from the browser tour test"
	@echo "make bench   the benchmarks (bench/run): a summary table, exit status 1 on a missed target"
	@echo "make serve   runserver on the embedded default (PORT=8000; make serve PORT=8080)"
	@echo "make docs    serve the documentation site (MkDocs) at http://127.0.0.1:$(DOCS_PORT)"
	@echo "make dist    the release files in dist/: server image context, npm tarball, Python wheel and sdist"
	@echo "make messages  extract new translatable strings into locale/*/django.po, compile the .mo files"
	@echo "make lock    re-pin requirements*.lock (with hashes) after changing requirements*.txt"

# requirements*.txt name the direct dependencies; requirements*.lock pin every package with
# its hashes (uv pip compile --generate-hashes) and are what gets installed. After changing
# a requirements*.txt, run `make lock` and commit both files.
# The portal client package of this repository (-e ./clients/python) is installed from its
# folder, not from the lock (a folder has no hash).
LOCK := $(VENV)/bin/uv pip compile --quiet --generate-hashes --no-header --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --no-emit-package consultation-client

$(VENV)/.runtime: requirements.lock
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version' 
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e ./clients/python
	@touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.lock
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.lock
	@touch $@

lock: $(VENV)/.dev
	$(LOCK) requirements.txt -o requirements.lock
	$(LOCK) requirements-dev.txt -o requirements-dev.lock

# Translations: locale/{de,pl}/LC_MESSAGES/django.po are the only source (translators edit
# them directly or in Poedit/Weblate/Transifex). The .mo files are built, never committed:
# by the rule below (make demo, serve, test) and in the Docker image. `make messages`
# extracts new strings (makemessages; the header's POT date is dropped so that two
# branches adding strings do not conflict on it) and compiles them (compilemessages).
# Both need GNU gettext (installed with apt-get when missing and allowed).
LANGUAGES := de pl
CATALOGUES := $(foreach language,$(LANGUAGES),locale/$(language)/LC_MESSAGES/django.mo)
MAKEMESSAGES := makemessages $(foreach language,$(LANGUAGES),-l $(language)) --add-location=file --no-obsolete \
	--ignore=.venv --ignore=clients --ignore=tests --ignore=bench --ignore=docs --ignore=locale --ignore=site --ignore=dist

gettext:
	@command -v msgfmt >/dev/null || $(PYTHON) -c 'import sys; sys.path.insert(0, "."); from tests.servers import apt_install; apt_install("gettext")'

locale/%/LC_MESSAGES/django.mo: locale/%/LC_MESSAGES/django.po | gettext
	msgfmt --check -o $@ $<

messages: $(VENV)/.runtime gettext
	$(EMBEDDED) $(PY) manage.py $(MAKEMESSAGES)
	sed -i '/^"POT-Creation-Date: /d' $(foreach language,$(LANGUAGES),locale/$(language)/LC_MESSAGES/django.po)
	$(EMBEDDED) $(PY) manage.py compilemessages $(foreach language,$(LANGUAGES),-l $(language)) --ignore=.venv --ignore=clients --ignore=tests

demo: $(VENV)/.runtime $(CATALOGUES)
	$(EMBEDDED) $(PY) manage.py migrate --verbosity 0
	$(EMBEDDED) $(PY) manage.py demo

test: $(VENV)/.dev lint test-js test-unit test-integration

test-js:
	@command -v node >/dev/null || $(PY) -c 'from tests.servers import apt_install; apt_install("nodejs")'
	@command -v npm >/dev/null || $(PY) -c 'from tests.servers import apt_install; apt_install("npm")'
	node --test tests/js/ clients/js/test/

# The unit, API and browser tests run on every CPU (pytest-xdist; each worker has its own
# SQLite test database and live server): 10 min -> under 8 on the 2-CPU reference machine.
TEST_JOBS ?= auto
test-unit: $(VENV)/.dev test-clients $(CATALOGUES)
	$(EMBEDDED) $(PY) -m pytest -m "not integration and not slow" -q -n $(TEST_JOBS)

# The portal client package's own tests (no Django), run from its own directory.
test-clients: $(VENV)/.dev
	cd clients/python && ../../$(PY) -m pytest -q

test-integration: $(VENV)/.dev $(CATALOGUES)
	$(DEV) $(PY) -m tests.servers -- $(PY) -m pytest -m "integration and not slow" -q

# Strict statistical checks marked @pytest.mark.slow (tests/README.md lists them), then
# mutation testing of every privacy-critical module (overnight-style, about an hour).
test-slow: $(VENV)/.dev $(CATALOGUES)
	$(EMBEDDED) $(PY) -m pytest -m "slow and not integration" -q
	$(MAKE) test-mutation-all

# Mutation testing (mutation/modules.toml, docs/reference/mutation-testing.md): the
# privacy-critical modules whose code or tests differ from BASE (a smoke run on one small module
# when none does), each mutant against that module's tests; fails below 90% per module.
# Writes bench/results/mutation-YYYY-MM-DD.md. Not part of `make test`.
# MUTATION_JOBS: mutants run at once (default 1: the team's machine is shared; 0 = one per CPU).
BASE ?= main
MUTATION_JOBS ?= 1
test-mutation: $(VENV)/.dev $(CATALOGUES)
	$(EMBEDDED) $(PY) mutation/run.py --jobs $(MUTATION_JOBS) --changed $(BASE)

test-mutation-all: $(VENV)/.dev $(CATALOGUES)
	$(EMBEDDED) $(PY) mutation/run.py --jobs $(MUTATION_JOBS) --all

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(DEV) $(VENV)/bin/mypy privacy/mechanisms reconstruction/algorithms

# The browser tour writes its screenshots to a temp dir during `make test`; this target
# writes them to docs/tour/ (commit the changed images).
tour: $(VENV)/.dev $(CATALOGUES)
	TOUR_DIR=docs/tour $(EMBEDDED) $(PY) -m pytest -q tests/browser/test_organiser_tour.py

bench: $(VENV)/.dev
	bash bench/run

PORT ?= 8000
SERVER_VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
serve: $(VENV)/.runtime $(CATALOGUES)
	$(EMBEDDED) $(PY) manage.py migrate --verbosity 0
	$(EMBEDDED) $(PY) manage.py runserver 127.0.0.1:$(PORT)

# The documentation site (docs/, mkdocs.yml); `make test` builds it strictly (tests/test_docs.py).
DOCS_PORT ?= 8001
docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

# Release files (docs/reference/releases.md): the server's image context (the committed tree,
# what `docker build` needs), the browser library's npm tarball and the Python client's wheel
# and sdist, all built offline. Versions: the compatibility table in CHANGELOG.md.
dist: $(VENV)/.dev
	rm -rf dist && mkdir -p dist
	git archive --format=tar.gz --prefix=consultations-server-$(SERVER_VERSION)/ -o dist/consultations-server-$(SERVER_VERSION).tar.gz HEAD
	cd clients/js && npm pack --silent --pack-destination ../../dist >/dev/null
	$(PY) -m build --no-isolation --wheel --sdist --outdir dist clients/python >/dev/null
	rm -rf clients/python/build
	@ls -1 dist

clean:
	rm -rf $(VENV) var staticfiles site dist .pytest_cache .mypy_cache .ruff_cache
