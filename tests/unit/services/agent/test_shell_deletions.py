"""The agent's shell and what it read: a binding read again after a kill -9 never runs a
deleted pod a second time (the chaos run saw such a pod end twice), and a pod another node
has bound is refused (the chaos run saw one pod bound to two agents)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from vcbus.contracts import BindingCreated, BindingRefused, Event, PodDeleted, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.records import Record
from vcbus.core.runtime.clock import SystemClock
from vcbus.services.agent.app import shell
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.app.shell import Agent, AgentOptions
from vcbus.services.agent.core import AgentConf
from vcbus.services.agent.launch import Policy

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ALLOCATABLE = {"cpu": 2000, "memory": 4 * 2**30, "pods": 10}
JOB = msgspec.convert(
    {
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "m", "command": ["true"]}]}},
                }
            ]
        },
    },
    Job,
)
RECORD = Record(topic="pods", partition=0, offset=0, key=None, value=None)


def _agent(data_dir: Path) -> Agent:
    options = AgentOptions(
        conf=AgentConf(node="host-a", host_ip="127.0.0.1", allocatable=ALLOCATABLE),
        node=Node(name="host-a", allocatable=ALLOCATABLE),
        data_dir=data_dir,
        policy=Policy(),
    )
    agent = Agent(options, HostProcesses(data_dir, None), SystemClock())
    agent.jobs[JobKey("default/j")] = JOB
    return agent


def _binding(index: int) -> Envelope[Event]:
    pod = Pod(
        name=f"j-worker-{index}",
        namespace="default",
        job=JobKey("default/j"),
        task="worker",
        index=index,
        podgroup="j",
        uid=f"uid-{index}",
        requests={"cpu": 100},
    )
    event = BindingCreated(event_id=f"b-{index}", occurred_at=T0, pod=pod, node=NodeName("host-a"))
    return Envelope(topic="bindings", key="host-a", event=event, partition=0, offset=index)


def _deleted(index: int) -> PodDeleted:
    return PodDeleted(
        event_id=f"d-{index}",
        occurred_at=T0,
        job=JobKey("default/j"),
        pod=PodKey(f"default/j-worker-{index}"),
        pod_uid=f"uid-{index}",
    )


async def test_a_binding_of_a_pod_read_deleted_is_not_bound(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.on_pod(_deleted(0), RECORD)
    assert await agent.on_binding(_binding(0)) == ()
    assert agent.state.pods == {}
    published = await agent.on_binding(_binding(1))
    assert [(e.pod, e.reason) for e in published if isinstance(e, PodPhaseChanged)] == [
        ("default/j-worker-1", "Bound")
    ]
    assert sorted(agent.state.pods) == ["uid-1"]


def test_only_the_newest_deletions_are_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "DELETIONS_KEPT", 2)
    agent = _agent(tmp_path)
    for index in range(3):
        agent.on_pod(_deleted(index), RECORD)
    assert list(agent.deleted) == ["uid-1", "uid-2"]


async def test_a_binding_of_a_pod_bound_to_another_node_is_refused(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    elsewhere = PodPhaseChanged(
        event_id="s-0",
        occurred_at=T0,
        pod=PodKey("default/j-worker-0"),
        job=JobKey("default/j"),
        task="worker",
        node=NodeName("host-b"),
        phase=PodPhase.PENDING,
        reason="Bound",
        pod_uid="uid-0",
    )
    agent.on_status(elsewhere, RECORD)
    published = await agent.on_binding(_binding(0))
    assert [(type(e), e.reason) for e in published if isinstance(e, BindingRefused)] == [
        (BindingRefused, "AlreadyBound")
    ]
    assert agent.state.pods == {}
    (tmp_path / "other").mkdir()
    other = _agent(tmp_path / "other")
    other.on_status(msgspec.structs.replace(elsewhere, pod_uid="uid-old"), RECORD)
    published = await other.on_binding(_binding(0))  # an older incarnation's node: not this pod
    assert [e.reason for e in published if isinstance(e, PodPhaseChanged)] == ["Bound"]
