"""Full-mode scenarios through every service on one in-memory bus and a virtual clock.

Each ``examples/scenarios/full-*.yaml`` is compared byte for byte with its golden output
under ``golden/``. A difference means the system's behaviour changed: review it, then
regenerate with ``VCBUS_UPDATE_GOLDEN=1 python -m pytest tests/unit/simulation``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vcbus.services.simulation.report import render_json
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import load_document

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted((ROOT / "examples" / "scenarios").glob("full-*.yaml"))
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("VCBUS_UPDATE_GOLDEN") == "1"


def simulate(path: Path) -> str:
    return render_json(simulate_document(load_document(path.read_text()), path.parent))


def test_scenarios_exist_when_examples_are_collected():
    assert len(SCENARIOS) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_outcome_matches_golden_when_scenario_runs_in_memory(path: Path):
    out = simulate(path)
    golden = GOLDEN / f"{path.stem}.json"
    if UPDATE:
        golden.write_text(out)
    assert golden.exists(), f"no golden for {path.name}; run with VCBUS_UPDATE_GOLDEN=1"
    assert out == golden.read_text()


def test_output_is_identical_when_scenario_runs_twice():
    path = ROOT / "examples" / "scenarios" / "full-gang.yaml"
    assert simulate(path) == simulate(path)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_output_matches_golden_when_another_process_uses_another_hash_seed(seed: str):
    """Set and dict orders of strings change with the hash seed; the output must not."""
    path = ROOT / "examples" / "scenarios" / "full-run-seconds.yaml"
    code = (
        "import sys; from pathlib import Path; "
        "from vcbus.services.simulation.report import render_json; "
        "from vcbus.services.simulation.scenario import load_document; "
        "from vcbus.services.simulation.run import simulate_document; "
        "from vcbus.core.logging.setup import configure_logging; "
        "configure_logging('simulate', level='error'); "
        "p = Path(sys.argv[1]); "
        "sys.stdout.write(render_json(simulate_document(load_document(p.read_text()), p.parent)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout == (GOLDEN / f"{path.stem}.json").read_text()


def _first(timeline: list[dict[str, Any]], event: str, prefix: str) -> float:
    return min(
        float(entry["t"])
        for entry in timeline
        if entry["event"] == event and str(entry.get("pod", "")).startswith(prefix)
    )


def _last(timeline: list[dict[str, Any]], event: str, prefix: str) -> float:
    return max(
        float(entry["t"])
        for entry in timeline
        if entry["event"] == event and str(entry.get("pod", "")).startswith(prefix)
    )


def test_master_is_bound_after_workers_run_when_master_depends_on_workers():
    path = ROOT / "examples" / "scenarios" / "full-depends-on.yaml"
    outcome = json.loads(simulate(path))
    timeline = outcome["timeline"]
    workers, master = "default/mpi-hello-mpiworker-", "default/mpi-hello-mpimaster-"
    running = [e for e in timeline if e["event"] == "pod" and e["phase"] == "Running"]
    assert _last(timeline, "bind", workers) < _first(timeline, "bind", master)
    assert max(e["t"] for e in running if e["pod"].startswith(workers)) < _first(
        timeline, "bind", master
    )
    assert [e["pod"] for e in timeline if e["event"] == "bind"][-1] == f"{master}0"
    assert outcome["jobs"]["default/mpi-hello"]["phase"] == "Completed"


def test_gang_is_never_partly_bound_when_it_does_not_fit():
    path = ROOT / "examples" / "scenarios" / "full-gang.yaml"
    outcome = json.loads(simulate(path))
    binds = [e for e in outcome["timeline"] if e["event"] == "bind"]
    b_times = {e["t"] for e in binds if e["pod"].startswith("default/train-b-")}
    a_done = max(
        e["t"]
        for e in outcome["timeline"]
        if e["event"] == "pod" and e["pod"].startswith("default/train-a-")
    )
    assert len(b_times) == 1
    assert b_times.pop() > a_done
    assert {job["phase"] for job in outcome["jobs"].values()} == {"Completed"}
