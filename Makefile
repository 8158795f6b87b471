# The one entry point for people and CI. `make test` and `make run` set up what is missing.
# Every install comes from the committed lock (uv.lock): exact versions with hashes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The lock tool, itself pinned, in a venv of its own (a sync of .venv would remove it).
UV_VERSION := 0.13.9
UV_VENV := .uv
UV := $(UV_VENV)/bin/uv
LATEST_VENV := .venv-latest
export UV_PYTHON_DOWNLOADS := never

.PHONY: install lock test test-latest check fmt lint typecheck imports schemas run up down bench quality simulate chaos clean

$(UV):
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# --locked: refuse to install when pyproject.toml and uv.lock disagree (run `make lock`).
$(STAMP): pyproject.toml uv.lock $(UV)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --locked --extra dev --quiet
	touch $(STAMP)

install: $(STAMP)

# Re-resolve the lock to the newest versions the ranges in pyproject.toml allow. A
# deliberate change: commit uv.lock with the test run that went with it.
lock: $(UV)
	$(UV) lock --upgrade

test: $(STAMP)
	$(BIN)/python -m pytest

# The newest versions the ranges allow, in a venv of their own, against the whole suite:
# drift seen before it bites. Not part of CI; the lock is what CI installs.
test-latest: $(UV)
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(UV) pip install --quiet --python $(LATEST_VENV)/bin/python --upgrade -e '.[dev]'
	$(LATEST_VENV)/bin/python -m pytest -p no:cacheprovider \
		--deselect tests/unit/deploy/test_lock.py::test_installed_versions_are_the_locked_ones

check: $(STAMP) lint typecheck imports test

lint: $(STAMP)
	$(UV) lock --check
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
	$(BIN)/python -m vcbus.contracts._schemas

run: $(STAMP)
	$(BIN)/vcbus up --demo --agent

bench: $(STAMP)
	$(BIN)/python -m tests.bench

# Scheduling quality with a feature on and off (reservation, ...): makespan, occupancy and
# per-round starts of the scenarios in tests/bench/quality.py, from the simulated timeline.
quality: $(STAMP)
	$(BIN)/python -m tests.bench.quality

# The chaos run: 500 jobs, 20 kill -9s, the broker frozen 15 s; prints the figures, writes
# bench/results/chaos-<time>.json, exits 1 on any violation. CHAOS_ARGS="--runs 3" etc.
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos $(CHAOS_ARGS)

simulate: $(STAMP)
	$(BIN)/vcbus simulate examples/scenarios/full-depends-on.yaml

# Builds the image from this tree, then starts Kafka, Jaeger, the topics step and every service.
up:
	docker compose up -d --build

down:
	docker compose down

clean:
	rm -rf $(VENV) $(UV_VENV) $(LATEST_VENV) .pytest_cache .mypy_cache .ruff_cache
