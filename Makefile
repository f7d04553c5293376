# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PORT ?= 8000
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
# Development mode unless the caller says otherwise (production sets SERVICE_ENV=production).
# Django's debug pages stay off unless DJANGO_DEBUG=1 is asked for.
export SERVICE_ENV ?= development

.PHONY: install run test image image-test restore-drill alerts-check apicheck bench bench-queries lint format migrations-check contracts clean rehearsal soak

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python requirements.txt requirements-dev.txt cli/pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -e ./cli  # checkout-cli (cli/), for trying it here
	touch $@

# Tools from the npm registry, pinned in tools/package-lock.json: solc (contracts) and anvil (devnets).
# `npm install --no-save` rather than `npm ci`: the lock holds only the platform packages the registry
# serves here, which `npm ci` refuses; --no-save installs the locked versions and writes nothing.
TOOLS := tools/node_modules/.installed
$(TOOLS): tools/package.json tools/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd tools && npm install --no-save --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else \
		echo "npm is not installed (Debian: apt-get install npm): no anvil devnets, contract tests are skipped"; \
	fi

install: $(VENV)/.installed $(TOOLS)

# The settings it starts with are recorded first (var/run.env): manage.py in a second terminal uses them.
# The banner with what to open next comes last, once the web server answers.
run: $(VENV)/.installed $(TOOLS)
	@$(BIN)/python -m config.runenv record --port $(PORT)
	@$(MANAGE) compile_catalogs
	@$(MANAGE) create_database
	@$(MANAGE) migrate --noinput -v0
	@$(MANAGE) load_tokens
	@if [ "$(SERVICE_ENV)" = "production" ]; then $(MANAGE) collectstatic --noinput -v0; fi
	@exec $(BIN)/python -m config.supervise --port $(PORT)

# About 15 minutes on 2 cores (SQLite); the devnet, worker and browser tests are most of it.
test: $(VENV)/.installed $(TOOLS)
	@echo "make test: the whole suite takes about 15 minutes on 2 cores"
	MANAGE_USES_RUN_SETTINGS=0 $(MANAGE) compile_catalogs
	$(BIN)/pytest

# The service in production mode on two chains it did not start (tools/rehearsal.py): PostgreSQL and Redis,
# gunicorn, keystore signers, the chains added and their factories deployed by command, the relay provider's
# stand-in between them, every order type paid in one block (from the solver's inventory and through the
# provider), and the primary RPC node killed mid-run. Exit 0 only if every balance and the ledger held.
rehearsal: $(VENV)/.installed $(TOOLS)
	$(BIN)/python tools/rehearsal.py

# Two nodes (tools/cluster.py) on one PostgreSQL and Redis take 300 payments of mixed types over five minutes
# while a node is killed -9, an RPC endpoint restarts and the relay provider fails 10 % of calls (tools/soak.py).
# Prints the table of final states, duplicates and settlement times; exit 0 only if nothing was lost or doubled.
soak: $(VENV)/.installed $(TOOLS)
	$(BIN)/python tools/soak.py

# Rebuild chains/contracts/artifacts from chains/contracts/src with the pinned solc.
contracts: $(TOOLS)
	node chains/contracts/build.mjs

# The container image (Containerfile), with podman, buildah or docker, whichever is here (Debian: apt-get
# install buildah). Where the Debian base cannot be pulled, one is made from Debian's packages (debootstrap).
IMAGE ?= localhost/checkout:latest
image:
	@builder=$$(command -v podman || command -v buildah || command -v docker) || { echo "make image needs podman, buildah or docker (Debian: apt-get install buildah)"; exit 2; }; \
	base=docker.io/library/debian:bookworm-slim; \
	if ! $$builder pull -q $$base >/dev/null 2>&1; then \
		command -v debootstrap >/dev/null || { echo "$$base cannot be pulled, and debootstrap (Debian: apt-get install debootstrap) is not here to make one"; exit 2; }; \
		echo "make image: $$base cannot be pulled; making a base from Debian's packages"; \
		base=$$(deploy/debian-base.sh); \
	fi; \
	case $$builder in */docker) isolation="";; *) isolation="--isolation chroot --layers --format docker";; esac; \
	bundle=$${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}; [ -s "$$bundle" ] || { bundle=$$(mktemp); }; \
	$$builder build $$isolation --network host --secret id=ca_bundle,src=$$bundle --build-arg BASE=$$base -f Containerfile -t $(IMAGE) . && \
	$$builder images $(IMAGE)

# The image run as a deployment would run it (tools/image_test.py): its migrate, web and worker roles on
# PostgreSQL, Redis and the devnets, an order paid through it.
image-test: $(VENV)/.installed $(TOOLS)
	$(BIN)/python tools/image_test.py

# A backup taken while orders settle, the machine lost, the service restored from it (tools/restore_drill.py):
# every order finishes, nothing is paid twice, reconcile finds no difference. PostgreSQL and Redis.
restore-drill: $(VENV)/.installed $(TOOLS)
	$(BIN)/python tools/restore_drill.py

# The Prometheus alert rules: their syntax, and their unit tests (promtool, from Debian's prometheus package).
alerts-check:
	@command -v promtool >/dev/null || (apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null)) || { echo "make alerts-check needs promtool (Debian: apt-get install prometheus)"; exit 2; }
	promtool check rules deploy/prometheus/alerts.yml
	promtool check config deploy/prometheus/prometheus.yml
	cd deploy/prometheus && promtool test rules alerts_test.yml

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
