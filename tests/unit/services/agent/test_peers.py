"""A pod's peers are the pods of its own incarnation of the job, never the run before.

Seen across hosts: after ``PodFailed -> RestartJob``, and after a job deleted and submitted
again, a worker on a host without the master got the old master's ``MASTER_PORT`` (the old
master's ``Running`` status was the newest its agent had of that name) and failed with
ConnectionRefused. The agent here reads what another host's agent published, as it would
from ``pods`` and ``pods.status``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec

from vcbus.contracts import BindingCreated, Event, PodCreated, PodDeleted, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import LABEL_JOB_VERSION, Pod, PodPhase
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.records import Record
from vcbus.core.runtime.clock import SystemClock
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.app.shell import Agent, AgentOptions
from vcbus.services.agent.core import AgentConf
from vcbus.services.agent.launch import Policy
from vcbus.services.agent.plugins import pod_plugins

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ALLOCATABLE = {"cpu": 2000, "memory": 4 * 2**30, "pods": 10}
JOB_KEY = JobKey("default/j")
_TEMPLATE = {"spec": {"containers": [{"name": "m", "command": ["true"]}]}}
JOB = msgspec.convert(
    {
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "plugins": {"pytorch": ["--port=23456"], "svc": []},
            "tasks": [
                {"name": "master", "replicas": 1, "template": _TEMPLATE},
                {"name": "worker", "replicas": 1, "template": _TEMPLATE},
            ],
        },
    },
    Job,
)
RECORD = Record(topic="pods", partition=0, offset=0, key=None, value=None)


def _agent(data_dir: Path) -> Agent:
    """The agent of host ``10.0.0.2``, where the worker runs."""
    options = AgentOptions(
        conf=AgentConf(node="host-b", host_ip="10.0.0.2", allocatable=ALLOCATABLE),
        node=Node(name="host-b", allocatable=ALLOCATABLE),
        data_dir=data_dir,
        policy=Policy(),
    )
    agent = Agent(options, HostProcesses(data_dir, None), SystemClock())
    agent.jobs[JOB_KEY] = JOB
    return agent


def _pod(task: str, uid: str, version: int) -> Pod:
    return Pod(
        name=f"j-{task}-0",
        namespace="default",
        job=JOB_KEY,
        task=task,
        index=0,
        podgroup="j",
        uid=uid,
        requests={"cpu": 100},
        labels={LABEL_JOB_VERSION: str(version)},
    )


def _created(task: str, uid: str, version: int) -> PodCreated:
    return PodCreated(event_id=f"c-{uid}", occurred_at=T0, pod=_pod(task, uid, version))


def _deleted(task: str, uid: str) -> PodDeleted:
    key = PodKey(f"default/j-{task}-0")
    return PodDeleted(
        event_id=f"d-{uid}", occurred_at=T0, job=JOB_KEY, pod=key, task=task, pod_uid=uid
    )


def _master_status(uid: str, phase: PodPhase, port: int) -> PodPhaseChanged:
    """What the master's agent on host ``10.0.0.1`` published of it."""
    return PodPhaseChanged(
        event_id=f"s-{uid}-{phase}",
        occurred_at=T0,
        pod=PodKey("default/j-master-0"),
        job=JOB_KEY,
        task="master",
        node=NodeName("host-a"),
        phase=phase,
        reason="Started" if phase is PodPhase.RUNNING else "Bound",
        pod_uid=uid,
        host_ip="10.0.0.1",
        ports={23456: port},
    )


def _binding(uid: str, version: int) -> Envelope[Event]:
    event = BindingCreated(
        event_id=f"b-{uid}",
        occurred_at=T0,
        pod=_pod("worker", uid, version),
        node=NodeName("host-b"),
    )
    return Envelope(topic="bindings", key="host-b", event=event, partition=0, offset=0)


def _master_of_worker(agent: Agent, uid: str) -> dict[str, str] | None:
    """The worker's ``MASTER_*`` as the agent would start it now; None: it waits."""
    pod = agent.state.pods[uid]
    grants = pod_plugins(JOB, "worker", 0, agent._peers(pod), directory="/d")
    if grants.missing:
        return None
    return {k: v for k, v in grants.env if k.startswith("MASTER_")}


async def _first_run(agent: Agent) -> None:
    """Version 0 ran: the master was Running on host-a with host port 30112."""
    agent.on_pod(_created("master", "m-v0", 0), RECORD)
    agent.on_pod(_created("worker", "w-v0", 0), RECORD)
    agent.on_status(_master_status("m-v0", PodPhase.RUNNING, 30112), RECORD)
    await agent.on_binding(_binding("w-v0", 0))
    assert _master_of_worker(agent, "w-v0") == {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "30112"}


async def test_a_restarted_job_waits_for_its_new_master_and_never_takes_the_old_port(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path)
    await _first_run(agent)
    # RestartJob: every pod deleted, then created again for version 1
    agent.on_pod(_deleted("master", "m-v0"), RECORD)
    agent.on_pod(_deleted("worker", "w-v0"), RECORD)
    agent.on_pod(_created("master", "m-v1", 1), RECORD)
    agent.on_pod(_created("worker", "w-v1", 1), RECORD)
    await agent.on_binding(_binding("w-v1", 1))
    assert _master_of_worker(agent, "w-v1") is None  # the new master's place is not known yet
    agent.on_status(_master_status("m-v1", PodPhase.PENDING, 30126), RECORD)
    assert _master_of_worker(agent, "w-v1") == {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "30126"}


async def test_a_late_status_of_the_deleted_master_is_not_taken(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    await _first_run(agent)
    agent.on_pod(_deleted("master", "m-v0"), RECORD)
    agent.on_pod(_deleted("worker", "w-v0"), RECORD)
    agent.on_pod(_created("master", "m-v1", 1), RECORD)
    agent.on_pod(_created("worker", "w-v1", 1), RECORD)
    agent.on_status(_master_status("m-v1", PodPhase.PENDING, 30126), RECORD)
    agent.on_status(_master_status("m-v0", PodPhase.RUNNING, 30112), RECORD)  # late
    await agent.on_binding(_binding("w-v1", 1))
    assert _master_of_worker(agent, "w-v1") == {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "30126"}


async def test_a_job_deleted_and_submitted_again_waits_for_its_own_master(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    await _first_run(agent)
    agent.on_pod(_deleted("master", "m-v0"), RECORD)
    agent.on_pod(_deleted("worker", "w-v0"), RECORD)
    # the same name, version 0 again, new uids
    agent.on_pod(_created("master", "m-again", 0), RECORD)
    agent.on_pod(_created("worker", "w-again", 0), RECORD)
    await agent.on_binding(_binding("w-again", 0))
    assert _master_of_worker(agent, "w-again") is None
    agent.on_status(_master_status("m-again", PodPhase.PENDING, 30126), RECORD)
    assert _master_of_worker(agent, "w-again") == {
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "30126",
    }


async def test_a_master_that_ended_is_no_ones_peer(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    await _first_run(agent)
    agent.on_status(_master_status("m-v0", PodPhase.FAILED, 30112), RECORD)
    assert _master_of_worker(agent, "w-v0") is None


async def test_a_pod_of_an_older_version_not_yet_deleted_is_not_a_peer(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    agent.on_pod(_created("master", "m-v0", 0), RECORD)
    agent.on_status(_master_status("m-v0", PodPhase.RUNNING, 30112), RECORD)
    agent.on_pod(_created("worker", "w-v1", 1), RECORD)
    await agent.on_binding(_binding("w-v1", 1))
    assert _master_of_worker(agent, "w-v1") is None
