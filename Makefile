# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PORT ?= 8000
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
# Development mode unless the caller says otherwise (production sets SERVICE_ENV=production).
# Django's debug pages stay off unless DJANGO_DEBUG=1 is asked for.
export SERVICE_ENV ?= development

.PHONY: install run test apicheck bench bench-queries lint format migrations-check clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python requirements.txt requirements-dev.txt
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(MANAGE) migrate --noinput
	$(MANAGE) load_tokens
	@if [ "$(SERVICE_ENV)" = "production" ]; then $(MANAGE) collectstatic --noinput -v0; fi
	@echo
	@echo "Web server:    http://127.0.0.1:$(PORT)/   (API docs: /api/docs/, admin: /admin/)"
	@echo "Staff user:    $(MANAGE) createsuperuser"
	@echo "First API key: $(MANAGE) create_api_key --org acme --name dev --permissions admin"
	@echo
	exec $(BIN)/python -m config.supervise --port $(PORT)

test: $(VENV)/.installed
	$(BIN)/pytest

# schemathesis against both interfaces of a real server: no 5xx, no schema-valid request refused.
apicheck: $(VENV)/.installed
	$(BIN)/python tests/apicheck/run.py

# Hot paths over HTTP with wrk, side by side with a bare Django view (PostgreSQL + Redis); writes docs/benchmarks.md.
bench: $(VENV)/.installed
	@command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null 2>&1 || { echo "make bench needs wrk (Debian: apt-get install wrk)"; exit 2; }
	$(BIN)/python tests/benchmarks/http_bench.py

# Queries and peak memory per request, in-process (SQLite unless BENCH_DATABASE_URL).
bench-queries: $(VENV)/.installed
	$(BIN)/python tests/benchmarks/bench.py

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

migrations-check: $(VENV)/.installed
	$(MANAGE) makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
