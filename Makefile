# The one entry point for people and CI. `make test` and `make run` set up what is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test check fmt lint typecheck imports schemas run up down bench simulate chaos clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

check: $(STAMP) lint typecheck imports test

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

imports: $(STAMP)
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

schemas: $(STAMP)
	$(BIN)/python -m contracts._schemas

run: $(STAMP)
	$(BIN)/vcbus up --demo

bench: $(STAMP)
	$(BIN)/python -m tests.bench

# The chaos run: 500 jobs, 20 kill -9s, the broker frozen 15 s; prints the figures, writes
# bench/results/chaos-<time>.json, exits 1 on any violation. CHAOS_ARGS="--runs 3" etc.
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos $(CHAOS_ARGS)

simulate: $(STAMP)
	$(BIN)/vcbus simulate examples/scenarios/full-depends-on.yaml

up:
	docker compose up -d

down:
	docker compose down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
