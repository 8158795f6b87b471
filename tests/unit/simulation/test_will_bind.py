"""Will-bind through every service: the MPI master binds as soon as its workers run.

The real job-controller creates the master's pod once the workers are Running
(docs/design.md#dependent-jobs); the allocator reserved its room when it bound the workers, so the
small jobs that arrive meanwhile cannot take it. With ``will-bind: false`` they do, and the master
waits for them to finish. "No timing assertions": times here are the virtual clock's, deterministic.
"""

from __future__ import annotations

from typing import Any

from vcbus.services.simulation.run import simulate_document


def _task(name: str, replicas: int, cpu: str, **extra: Any) -> dict[str, Any]:
    annotations = extra.pop("annotations", {})
    return {
        "name": name,
        "replicas": replicas,
        **extra,
        "template": {
            "metadata": {"annotations": annotations},
            "spec": {
                "containers": [
                    {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}}
                ]
            },
        },
    }


def _job(name: str, *tasks: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": list(tasks)},
    }


def _scenario(*, will_bind: bool) -> dict[str, Any]:
    mpi = _job(
        "mpi",
        _task("master", 1, "2", dependsOn={"name": ["worker"]}),
        _task("worker", 2, "2", annotations={"vcbus.io/start-seconds": "5"}),
    )
    small = [
        {
            "at": 1,
            "job": _job(f"s{i}", _task("w", 1, "1", annotations={"vcbus.io/run-seconds": "30"})),
        }
        for i in range(1, 5)
    ]
    return {
        "config": {
            "actions": "enqueue, allocate, backfill",
            "configurations": [{"name": "allocate", "arguments": {"will-bind": will_bind}}],
        },
        "nodes": [
            {"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}},
            {"name": "n2", "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}},
        ],
        "jobs": [{"at": 0, "job": mpi}, *small],
        "until": 20,
    }


def _events(outcome: dict[str, Any], event: str) -> list[dict[str, Any]]:
    timeline: list[dict[str, Any]] = outcome["timeline"]
    return [entry for entry in timeline if entry["event"] == event]


def _time(outcome: dict[str, Any], event: str, pod: str, **fields: str) -> float | None:
    for entry in _events(outcome, event):
        if entry.get("pod") == pod and all(entry.get(k) == v for k, v in fields.items()):
            return float(entry["t"])
    return None


def test_master_binds_when_its_workers_run_when_will_bind_reserves_its_room() -> None:
    outcome = simulate_document(_scenario(will_bind=True))
    [reserved] = _events(outcome, "reserved")
    assert reserved["pods"] == ["master-0 on n2"]
    workers_running = max(
        _time(outcome, "pod", f"default/mpi-worker-{i}", phase="Running") or 0.0 for i in (0, 1)
    )
    master_bound = _time(outcome, "bind", "default/mpi-master-0")
    assert master_bound is not None
    assert master_bound <= workers_running + 0.1
    [released] = _events(outcome, "released")
    assert (released["reason"], released["pods"]) == ("StageBound", ["master-0 on n2"])
    small = [e["pod"] for e in _events(outcome, "bind") if str(e["pod"]).startswith("default/s")]
    assert len(small) == 2


def test_small_jobs_take_the_masters_room_and_it_waits_when_will_bind_is_off() -> None:
    outcome = simulate_document(_scenario(will_bind=False))
    assert _events(outcome, "reserved") == []
    small = [e["pod"] for e in _events(outcome, "bind") if str(e["pod"]).startswith("default/s")]
    assert len(small) == 4
    assert _time(outcome, "pod", "default/mpi-worker-0", phase="Running") is not None
    assert _time(outcome, "bind", "default/mpi-master-0") is None
