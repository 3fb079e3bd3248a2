# The commands people use. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
SANDBOX_PORT ?= 8100
# The demo identity provider for trying single sign-on (console/demo_idp; make run only, never in production).
DEMO_IDP_PORT ?= 8200
export DEMO_IDP_PORT
export SANDBOX_URL ?= http://127.0.0.1:$(SANDBOX_PORT)
# The sandbox's saved state (SQLite, 0600, encrypted with .run/sandbox.sqlite3.key or SANDBOX_STATE_KEY; its
# files beside it in .run/sandbox.sqlite3.files): what an operator creates survives a restart. `make sandbox-reset` starts fresh. Set only for run/sandbox.
SANDBOX_STATE ?= .run/sandbox.sqlite3

.PHONY: run test lint format bench screenshots install install-dev system-packages chromium sandbox sandbox-reset clean

# The console's packages (requirements/base.txt, what the production image holds) and the sandbox's
# (requirements/sandbox.txt), which `make run` starts beside it.
$(BIN)/.installed: requirements/base.txt requirements/sandbox.txt
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required ($(PYTHON) not found)." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements/sandbox.txt
	@touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements/dev.txt
	$(BIN)/pip install --quiet -r requirements/dev.txt
	@touch $@

install: $(BIN)/.installed
install-dev: $(BIN)/.installed-dev

# run: everything up (sandbox, console and the worker that evaluates alerts and samples usage) with demo data; Ctrl-C stops
# them. The first run writes random keys into .env (git-ignored, mode 0600); later runs reuse them.
run: install
	@$(MAKE) --no-print-directory system-packages PACKAGES="$(RUN_PACKAGES)" || echo "Without bubblewrap \
	the sandbox refuses to run commands in browser sessions (503 exec_unavailable); without Chromium its \
	browser sessions are simulated; the rest works." >&2
	$(BIN)/python -m console.localenv
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo --url http://127.0.0.1:$(PORT)/
	$(BIN)/python manage.py demo_sso
	@set -m; \
	SANDBOX_STATE="$(SANDBOX_STATE)" $(BIN)/python manage.py sandbox --port $(SANDBOX_PORT) & sandbox=$$!; \
	DEMO_IDP_REDIRECT_URIS="http://127.0.0.1:$(PORT)/sso/callback/ http://localhost:$(PORT)/sso/callback/" $(BIN)/python -m console.demo_idp & idp=$$!; \
	$(BIN)/uvicorn console.asgi:application --host 127.0.0.1 --port $(PORT) --log-level warning \
	  --forwarded-allow-ips "$${FORWARDED_ALLOW_IPS:-127.0.0.1}" & console=$$!; \
	EMAIL_BACKEND="$${EMAIL_BACKEND:-django.core.mail.backends.console.EmailBackend}" \
	  $(BIN)/python manage.py worker -v0 & worker=$$!; \
	trap 'echo; echo "Stopping the console, the worker, the sandbox and the identity provider..."; kill $$console $$worker $$sandbox $$idp 2>/dev/null; wait $$console $$worker $$sandbox $$idp 2>/dev/null; exit 0' INT TERM; \
	PORT=$(PORT) SANDBOX_PORT=$(SANDBOX_PORT) DEMO_IDP_PORT=$(DEMO_IDP_PORT) $(BIN)/python -m console.devbanner; \
	wait $$console $$worker $$sandbox $$idp

# test: installs what the tests need (bubblewrap, Debian's Chromium, ffmpeg and PostgreSQL included), then
# runs three tiers and ends with one line for each (docs/testing.md): lint; every test on SQLite; the tests
# that use the database again on a throwaway PostgreSQL cluster (tests/database.py). Both pytest tiers run
# in TEST_WORKERS parallel workers (pytest-xdist; most tests wait on HTTP, streams or Chromium rather than
# compute, so more workers than cores pay). One file or test: PYTEST_ARGS=tests/web/test_nav.py, or the
# pytest line in docs/testing.md.
TEST_WORKERS ?= 4
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadgroup
# Bytecode caches on for the tests, even where the environment turns them off (PYTHONDONTWRITEBYTECODE, as
# container images often do): pytest keeps the test modules it rewrote (their asserts) only in those caches,
# so without them every worker of every tier rewrote the whole suite again (collecting it: about 14 s of a
# core per worker, 5 s with the caches), and every sandbox and console the tests start compiled the console
# again. They are __pycache__ folders beside the sources (git-ignored).
test: export PYTHONDONTWRITEBYTECODE :=
test: install-dev system-packages
	@mkdir -p .run && rm -f .run/test-tiers
	@start=$$(date +%s); $(MAKE) --no-print-directory lint && \
	  echo "lint: ruff check and format in $$(( $$(date +%s) - start )) s" >> .run/test-tiers
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) --tier sqlite $(PYTEST_ARGS)
	TEST_DB=postgres $(BIN)/python -m pytest $(PYTEST_PARALLEL) --tier postgres -m "not browser and not chromium" $(PYTEST_ARGS)
	@echo; cat .run/test-tiers

# Debian packages, as package=file-it-installs (a glob may stand for the file), apt-installed when missing
# (as root or with passwordless sudo). bubblewrap confines the commands the sandbox's browser sessions run;
# Debian's Chromium runs those sessions and the browser tests (Playwright's own browser download cannot
# work here); ffmpeg encodes the sessions' replays; Xvfb is the display of headful sessions' windows.
# setpriv (util-linux) runs Xvfb and ffmpeg as SANDBOX_HELPER_USER when the sandbox is root.
RUN_PACKAGES := bubblewrap=/usr/bin/bwrap chromium=/usr/bin/chromium fonts-liberation=/usr/share/fonts/truetype/liberation \
	ffmpeg=/usr/bin/ffmpeg xvfb=/usr/bin/Xvfb util-linux=/usr/bin/setpriv
# PostgreSQL's binaries serve the second test run (the tests start and remove their own cluster).
PACKAGES ?= $(RUN_PACKAGES) postgresql=/usr/lib/postgresql/*/bin/initdb
system-packages:
	@missing=""; for entry in $(PACKAGES); do ls -d $${entry#*=} >/dev/null 2>&1 || missing="$$missing $${entry%%=*}"; done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then SUDO=none; \
	  elif [ "$$(id -u)" = 0 ]; then SUDO=""; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	  else SUDO=none; fi; \
	  if [ "$$SUDO" = none ]; then \
	    echo "Missing Debian packages:$$missing, and this user cannot install them. As root: apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	  echo "Installing Debian packages:$$missing (apt-get install)..."; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
	    || { echo "apt-get could not install$$missing" >&2; exit 1; }; \
	fi

chromium:
	@$(MAKE) --no-print-directory system-packages PACKAGES="chromium=/usr/bin/chromium ffmpeg=/usr/bin/ffmpeg"
	@/usr/bin/chromium --version

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# bench: side-by-side performance figures, written to docs/benchmarks.md (wrk loads the pages; the
# browser and screen suites need what make run installs).
bench: install-dev
	@$(MAKE) --no-print-directory system-packages PACKAGES="$(RUN_PACKAGES) wrk=/usr/bin/wrk"
	$(BIN)/python -m tests.bench $(BENCH_ARGS)

# screenshots: every main page at 1440 and 400 px, light and dark, into screenshots/ (git-ignored), from a
# throwaway console and sandbox with demo data.
screenshots: install-dev
	@$(MAKE) --no-print-directory system-packages PACKAGES="chromium=/usr/bin/chromium fonts-liberation=/usr/share/fonts/truetype/liberation"
	$(BIN)/python -m tests.screenshots --dark $(SCREENSHOTS_ARGS)

sandbox: install
	SANDBOX_STATE="$(SANDBOX_STATE)" $(BIN)/python manage.py sandbox --port $(SANDBOX_PORT)

# sandbox-reset: forget the sandbox's saved state and its key (stop the sandbox first); the next start seeds the
# demo anew, under a new key.
sandbox-reset: install
	SANDBOX_STATE="$(SANDBOX_STATE)" $(BIN)/python -c "from console.sandbox.server import reset_state; reset_state()"

clean:
	rm -rf $(VENV) staticfiles
