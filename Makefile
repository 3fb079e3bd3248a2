# The commands people use. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
SANDBOX_PORT ?= 8100
export SANDBOX_URL ?= http://127.0.0.1:$(SANDBOX_PORT)

.PHONY: run test lint format bench install install-dev chromium sandbox clean

$(BIN)/.installed: requirements/base.txt
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required ($(PYTHON) not found)." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements/base.txt
	@touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements/dev.txt
	$(BIN)/pip install --quiet -r requirements/dev.txt
	@touch $@

install: $(BIN)/.installed
install-dev: $(BIN)/.installed-dev

# run: everything up (sandbox + console) with demo data; Ctrl-C stops both.
run: install
	@$(MAKE) --no-print-directory chromium || echo "Without Chromium the sandbox's browser sessions are simulated."
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo
	@set -m; \
	$(BIN)/python manage.py sandbox --port $(SANDBOX_PORT) & sandbox=$$!; \
	$(BIN)/uvicorn console.asgi:application --host 127.0.0.1 --port $(PORT) --log-level warning & console=$$!; \
	trap 'echo; echo "Stopping the console and the sandbox..."; kill $$console $$sandbox 2>/dev/null; wait $$console $$sandbox 2>/dev/null; exit 0' INT TERM; \
	for i in $$(seq 1 100); do \
	  $(BIN)/python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$(PORT)/healthz', timeout=1)" 2>/dev/null && break; sleep 0.2; \
	done; \
	echo; \
	echo "  Console:  http://127.0.0.1:$(PORT)/"; \
	echo "  Sandbox:  http://127.0.0.1:$(SANDBOX_PORT)/  (a local Browser Automation Service)"; \
	$(BIN)/python -c "import json, urllib.request; s = json.load(urllib.request.urlopen('http://127.0.0.1:$(SANDBOX_PORT)/', timeout=2)); print('  Browsers: ' + ('real Chromium' if s['engine'] == 'chromium' else 'simulated browser') + ' (' + s['engine_reason'] + ')')" 2>/dev/null || true; \
	echo "  Log in:   demo / $${DEMO_PASSWORD:-demo}   (also operator / viewer, same password)"; \
	echo "  Ctrl-C stops both."; \
	echo; \
	wait $$console $$sandbox

# test: installs what the tests need (Debian's Chromium included) and runs every test.
test: install-dev chromium lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Browser tests and the sandbox's sessions drive Debian's Chromium (Playwright's own browser download
# cannot work here); the sandbox encodes replays with Debian's ffmpeg.
chromium:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/ffmpeg ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	  else echo "Chromium or ffmpeg is missing and this user cannot install them. As root, run: apt-get install -y chromium ffmpeg" >&2; exit 1; fi; \
	  echo "Installing Debian's Chromium and ffmpeg (apt-get install -y chromium ffmpeg)..."; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-liberation ffmpeg >/dev/null; \
	fi
	@/usr/bin/chromium --version

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# bench: side-by-side performance figures, written to docs/benchmarks.md.
bench: install-dev
	$(BIN)/python -m tests.bench $(BENCH_ARGS)

sandbox: install
	$(BIN)/python manage.py sandbox --port $(SANDBOX_PORT)

clean:
	rm -rf $(VENV) staticfiles
