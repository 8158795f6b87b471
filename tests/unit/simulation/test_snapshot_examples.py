"""The example snapshot scenarios under examples/scenarios: each shows what its header says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vcbus.contracts.events.reservations import NodesUnlocked
from vcbus.contracts.keys import JobKey
from vcbus.services.simulation.snapshot import run_snapshot_scenario, simulation_of

EXAMPLES = Path(__file__).parents[3] / "examples" / "scenarios"
A = JobKey("ns/a")


def _load(name: str) -> dict[str, object]:
    document = yaml.safe_load((EXAMPLES / name).read_text())
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize(
    "name",
    ["starvation-without-reservation.yaml", "priority-starvation-without-reservation.yaml"],
)
def test_big_job_starves_when_the_example_has_no_reservation(name: str) -> None:
    out = run_snapshot_scenario(_load(name))
    bindings = out["bindings"]
    assert isinstance(bindings, dict)
    assert not [pod for pod in bindings if pod.startswith("ns/a-")]
    assert len(bindings) >= 15
    podgroups = out["podgroups"]
    assert isinstance(podgroups, dict)
    assert podgroups["ns/a"]["phase"] == "Pending"
    assert podgroups["ns/a"]["reason"]["reason"] in ("QueueOverCapability", "ClusterOverused")


@pytest.mark.parametrize(
    ("name", "locked_per_cycle"),
    [
        ("reservation-single.yaml", [1, 2, 2]),
        ("reservation-multi.yaml", [2, 4, 4]),
        ("reservation-cluster.yaml", [4, 4, 4]),
        ("reservation-lock-timeout.yaml", [1, 1, 4]),
        ("priority-reservation.yaml", [1, 2, 2]),
    ],
)
def test_big_job_runs_once_locked_nodes_drain_when_the_example_reserves(
    name: str, locked_per_cycle: list[int]
) -> None:
    simulation = simulation_of(_load(name))
    records = [simulation.run_cycle() for _ in range(5)]
    assert [len(r.reservation.locked_nodes) for r in records[:3]] == locked_per_cycle
    for record in records:
        held = record.reservation_at_allocation
        if record.locks_lifted:
            continue  # the target was placed first; the others may use the freed nodes
        for decision in record.decisions:
            if decision.job != held.target_job:
                assert decision.node not in held.locked_nodes
    a_nodes = {d.node for d in records[2].decisions if d.job == A}
    assert len(a_nodes) == 2
    assert a_nodes & records[2].reservation_at_allocation.locked_nodes
    unlocked = records[3].reservation_events[0]
    assert isinstance(unlocked, NodesUnlocked)
    assert unlocked.job == A


def test_example_output_is_identical_when_run_twice() -> None:
    first = json.dumps(run_snapshot_scenario(_load("reservation-single.yaml")), sort_keys=True)
    second = json.dumps(run_snapshot_scenario(_load("reservation-single.yaml")), sort_keys=True)
    assert first == second


def test_timeline_shows_the_target_and_locked_nodes_when_an_example_runs() -> None:
    out = run_snapshot_scenario(_load("reservation-single.yaml"))
    timeline = out["timeline"]
    assert isinstance(timeline, list)
    first = timeline[0]
    assert first["targetJob"] == "ns/a"
    assert first["lockedNodes"] == ["n1"]
    assert first["reservation"][0].startswith("elected ns/a")
    assert timeline[2]["bindings"] == {"ns/a-w-0": "n1", "ns/a-w-1": "n3"}
    assert timeline[2]["locksLifted"] is True
    assert timeline[3]["reservation"] == ["unlocked n1, n3 for ns/a (target job is ready)"]
    assert timeline[3]["phases"]["ns/a"] == "Running"


def test_small_jobs_take_the_masters_room_and_it_waits_when_will_bind_is_off() -> None:
    """Without the guarantee: the small jobs arriving after the workers fill the room the
    master needs; the master's pod exists once the workers run, and it is never bound."""
    out = run_snapshot_scenario(_load("will-bind-mpi-off.yaml"))
    bindings = out["bindings"]
    assert isinstance(bindings, dict)
    assert sorted(p for p in bindings if p.startswith("ns/s")) == [
        "ns/s1-w-0",
        "ns/s2-w-0",
        "ns/s3-w-0",
        "ns/s4-w-0",
    ]
    assert "ns/mpi-master-0" not in bindings
    timeline = out["timeline"]
    assert isinstance(timeline, list)
    assert all(entry["willBind"] == [] for entry in timeline)


def test_master_binds_as_soon_as_the_workers_run_when_will_bind_reserves_its_room() -> None:
    """With the guarantee: the master's room is reserved with the workers (cycle 0), the
    small jobs get only what is left, and the master binds on the reserved node in the
    cycle its pod appears (t=4, workers Running), releasing the reservation."""
    out = run_snapshot_scenario(_load("will-bind-mpi.yaml"))
    timeline = out["timeline"]
    assert isinstance(timeline, list)
    assert timeline[0]["bindings"] == {"ns/mpi-worker-0": "n1", "ns/mpi-worker-1": "n1"}
    assert timeline[0]["willBind"] == ["reserved master-0 on n2 for ns/mpi"]
    small = [p for entry in timeline for p in entry["bindings"] if p.startswith("ns/s")]
    assert sorted(small) == ["ns/s1-w-0", "ns/s2-w-0"]
    assert timeline[4]["bindings"] == {"ns/mpi-master-0": "n2"}
    assert timeline[4]["willBind"] == ["released master-0 on n2 of ns/mpi (StageBound)"]
    assert out["willBind"] == {}
    podgroups = out["podgroups"]
    assert isinstance(podgroups, dict)
    assert podgroups["ns/mpi"]["phase"] == "Running"
