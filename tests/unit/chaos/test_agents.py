"""The chaos run's real nodes: the agents' ports, the real jobs, the kills that reach the
agents, and the check that no process of a pod outlives the run."""

from __future__ import annotations

import os
import random  # noqa: TID251 - the chaos run's own seeded generator, as the run draws it
import socket
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.chaos.agents import (
    PORTS_FIRST,
    agent_args,
    check_pods_left,
    free_port_ranges,
    kill_pods,
    pod_processes,
    running_on,
)
from tests.chaos.fleet import AGENT, Fleet
from tests.chaos.history import History
from tests.chaos.run import plan_victims
from tests.chaos.workload import REAL_LABEL, REAL_SHAPES, REAL_TAINT, generate
from vcbus.contracts import PodDeleted, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, PodPhase


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Path]:
    """An agents' base; whatever a test left running under it is killed at the end."""
    folder = tmp_path / "agents"
    (folder / "real-0" / "pods" / "uid-1" / "work").mkdir(parents=True)
    yield folder
    kill_pods(folder)


def _sleep(cwd: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], cwd=cwd, env={**os.environ, **env})


def test_a_pods_process_left_running_is_found_and_is_a_violation(base: Path) -> None:
    work = base / "real-0" / "pods" / "uid-1" / "work"
    pod = _sleep(work)
    try:
        found = pod_processes(base)
        assert [(p.pid, p.name, p.cwd) for p in found] == [(pod.pid, "sleep", str(work))]
        violations = check_pods_left(found)
        assert [v.check for v in violations] == ["pods-left"]
        assert f"pid {pod.pid} (sleep) in {work} runs on" == violations[0].detail
    finally:
        pod.kill()
        pod.wait()
    assert pod_processes(base) == []
    assert check_pods_left(pod_processes(base)) == []


def test_a_process_that_left_the_pods_directory_is_known_by_its_environment(
    base: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = _sleep(elsewhere, HOME=str(base / "real-0" / "pods" / "uid-1" / "work"))
    stranger = _sleep(elsewhere)
    try:
        assert [p.pid for p in pod_processes(base)] == [moved.pid]
        assert [p.pid for p in kill_pods(base)] == [moved.pid]
        moved.wait()
        assert stranger.poll() is None
    finally:
        for process in (moved, stranger):
            process.kill()
            process.wait()


def test_the_agents_port_ranges_skip_a_port_another_listener_holds() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("0.0.0.0", 0))
        port = held.getsockname()[1]
        start = max(port - 5, PORTS_FIRST)
        ranges = free_port_ranges(2, size=10, start=start)
    spans = [tuple(int(p) for p in text.split("-")) for text in ranges]
    assert len(spans) == 2
    assert all(last - first == 9 for first, last in spans)
    assert not any(first <= port <= last for first, last in spans)
    assert spans[0][1] < spans[1][0]


def test_an_agents_node_is_labelled_and_tainted_for_the_real_jobs_alone(tmp_path: Path) -> None:
    args = agent_args(
        "real-0",
        tmp_path,
        "30000-30019",
        cpu="2",
        memory="4Gi",
        label=REAL_LABEL,
        taint=REAL_TAINT,
    )
    pairs = dict(zip(args[::2], args[1::2], strict=False))
    assert pairs["--label"] == "vcbus.io/real=true"
    assert pairs["--taint"] == "vcbus.io/real=true:NoSchedule"
    assert pairs["--port-range"] == "30000-30019"
    assert pairs["--listen-port"] == "0"
    assert pairs["--runtime"] == "process"  # the real jobs run host commands
    assert ("--run-as" in args) == (os.geteuid() == 0)


def test_real_jobs_select_and_tolerate_the_agents_nodes_and_leave_the_other_draws_alone() -> None:
    plain = generate(40, 5, big_pods=4, big_cpu="6")
    mixed = generate(40, 5, big_pods=4, big_cpu="6", real_every=4)
    real = [job for job in mixed if job.shape in REAL_SHAPES]
    assert [int(job.key.rsplit("-", 1)[1]) for job in real] == [
        3,
        7,
        11,
        15,
        19,
        23,
        27,
        31,
        35,
        39,
    ]
    ordinary = [job.shape for job in mixed if job.shape not in {*REAL_SHAPES, "big"}]
    assert ordinary == [job.shape for job in plain if job.shape != "big"][: len(ordinary)]
    assert {job.shape for job in real} == set(REAL_SHAPES)
    for job in real:
        spec = job.manifest["spec"]
        template = spec["tasks"][0]["template"]
        assert template["spec"]["nodeSelector"] == {"vcbus.io/real": "true"}
        assert template["spec"]["tolerations"] == [
            {"key": "vcbus.io/real", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ]
        assert template["spec"]["containers"][0]["command"][:2] == ["sh", "-c"]
        assert float(template["metadata"]["annotations"][ANNOTATION_RUN_SECONDS]) >= 1
        assert spec["plugins"] == {"env": []}
        expected = "Completed" if job.shape == "real-gang" else "Failed"
        assert job.expected == expected
    assert all(
        "tolerations" not in task["template"]["spec"]
        for job in mixed
        if job.shape not in REAL_SHAPES
        for task in job.manifest["spec"]["tasks"]
    )


def test_an_agent_runs_as_vcbus_agent_under_its_node_name(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    agent = fleet.add(AGENT, "real-0", {}, ("--node-name", "real-0"))
    service = fleet.add("cluster", "a", {}, ("--nodes", "8"))
    assert agent.label == "agent-real-0"
    assert agent.argv == ("agent", "--node-name", "real-0")
    assert service.argv == ("serve", "cluster", "--instance", "a", "--nodes", "8")


def test_every_agent_is_killed_at_least_once(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    for service in ("cluster", "admission", "job-controller", "podgroup-enqueue", "allocator"):
        for instance in ("a", "b"):
            fleet.add(service, instance, {})
    agents = [fleet.add(AGENT, f"real-{n}", {}) for n in range(2)]
    for seed in range(30):
        victims = plan_victims(random.Random(seed), fleet.replicas, 6)
        assert len(victims) == 6
        assert all(agent in victims for agent in agents)
    assert plan_victims(random.Random(1), fleet.replicas, 0) == []


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _phase(uid: str, node: str, phase: PodPhase, seconds: float) -> PodPhaseChanged:
    return PodPhaseChanged(
        event_id=f"{uid}-{phase}",
        occurred_at=T0 + timedelta(seconds=seconds),
        pod=PodKey(f"chaos/{uid}"),
        job=JobKey("chaos/j"),
        task="rank",
        node=NodeName(node),
        phase=phase,
        pod_uid=uid,
    )


def test_the_pods_an_agent_had_running_when_killed_are_counted_from_the_topics() -> None:
    history = History()
    history.pods_status = [
        _phase("a", "real-0", PodPhase.RUNNING, 1),
        _phase("b", "real-0", PodPhase.RUNNING, 2),
        _phase("a", "real-0", PodPhase.SUCCEEDED, 4),
        _phase("c", "real-1", PodPhase.RUNNING, 2),
        _phase("b", "real-0", PodPhase.RUNNING, 9),  # published again after a restart
        _phase("d", "real-0", PodPhase.RUNNING, 2),
    ]
    history.pods = [  # d's job restarted: d deleted, stopped by its agent, no end published
        PodDeleted(
            event_id="deleted-d",
            occurred_at=T0 + timedelta(seconds=2.5),
            job=JobKey("chaos/j"),
            pod=PodKey("chaos/d"),
            pod_uid="d",
        )
    ]
    at = T0 + timedelta(seconds=3)
    assert running_on(history, "real-0", at) == 2
    assert running_on(history, "real-0", T0 + timedelta(seconds=5)) == 1
    assert running_on(history, "real-1", at) == 1
    assert running_on(history, "real-0", T0) == 0
