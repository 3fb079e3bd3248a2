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
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements/base.txt
	@touch $@

$(BIN)/.installed-dev: $(BIN)/.installed requirements/dev.txt
	$(BIN)/pip install --quiet -r requirements/dev.txt
	@touch $@

install: $(BIN)/.installed
install-dev: $(BIN)/.installed-dev

## run: everything up (sandbox + console) with demo data; Ctrl-C stops both
run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo
	@bash scripts/run.sh "$(PORT)" "$(SANDBOX_PORT)"

## test: installs what the tests need (Chromium included) and runs every test
test: install-dev chromium lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

chromium:
	@bash scripts/ensure-chromium.sh

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## bench: side-by-side performance figures (see docs/benchmarks.md)
bench: install-dev
	$(BIN)/python -m bench $(BENCH_ARGS)

sandbox: install
	$(BIN)/python manage.py sandbox --port $(SANDBOX_PORT)

clean:
	rm -rf $(VENV) staticfiles .run
