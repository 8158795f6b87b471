"""Real nodes' liveness on a real broker (docs/design.md#real-nodes): a node that stops
heartbeating.

The five services run on Kafka. The test plays a real node's agent: it registers node
``real`` and heartbeats it, and runs nothing (the pods bound to it stay bound). Once the
job's pods are bound there, a simulated node ``sim`` is added and the heartbeats stop:
the allocator takes ``real`` as NotReady after the grace period (nothing more is bound
there), fails its pods ``NodeLost`` after the eviction timeout, the job's
``PodFailed``/``RestartJob`` policy recreates them, and they run on ``sim`` to completion.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from datetime import timedelta

from tests.support.bus_contract import running
from vcbus.contracts import (
    BindingCreated,
    JobStatusChanged,
    NodeHeartbeat,
    NodeName,
    NodeRegistered,
    PodPhaseChanged,
    Topic,
)
from vcbus.contracts.events.cluster_commands import NodeAddRequested
from vcbus.contracts.objects import Node
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.quantity import parse_resources
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.bootstrap import SystemConf, bootstrap
from vcbus.services.submission import records_for

from .conftest import PARTITIONS
from .controller_inputs import publish
from .topic_tail import TopicTail, tailing

GRACE = 2.0
EVICTION = 2.0
BEAT = 0.25
JOB = "default/lost"
MANIFEST = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: lost, namespace: default}
spec:
  minAvailable: 2
  policies: [{event: PodFailed, action: RestartJob}]
  tasks:
    - name: worker
      replicas: 2
      template:
        metadata:
          annotations: {vcbus.io/run-seconds: "1"}
        spec:
          containers:
            - name: main
              image: busybox:1.36
              command: [sleep, "1"]
              resources: {requests: {cpu: "1", memory: 1Gi}}
"""


def _node(name: str) -> Node:
    return Node(name=name, allocatable=parse_resources({"cpu": "4", "memory": "8Gi", "pods": 110}))


def _bindings(tail: TopicTail) -> list[BindingCreated]:
    return [e for e in tail.unique(Topic.BINDINGS) if isinstance(e, BindingCreated)]


def _statuses(tail: TopicTail) -> list[PodPhaseChanged]:
    return [e for e in tail.unique(Topic.PODS_STATUS) if isinstance(e, PodPhaseChanged)]


def _completed(tail: TopicTail) -> bool:
    return any(
        isinstance(e, JobStatusChanged) and e.job == JOB and e.phase == JobPhase.COMPLETED
        for e in tail.unique(Topic.JOBS_STATUS)
    )


async def test_a_silent_real_node_loses_its_pods_and_the_job_restarts_them_on_a_ready_node(
    bus: AioKafkaBus, settings: Settings
) -> None:
    prefix = settings.topic_prefix
    clock = SystemClock()
    settings = dataclasses.replace(
        settings,
        extra={
            "VCBUS_NODE_MONITOR_GRACE_SECONDS": str(GRACE),
            "VCBUS_POD_EVICTION_TIMEOUT_SECONDS": str(EVICTION),
        },
    )
    services = bootstrap(SystemConf(), settings, clock)
    await ensure_topics(bus, services, prefix, PARTITIONS)
    real = _node("real")
    beats: list[NodeHeartbeat] = []

    async def heartbeat() -> None:
        while True:
            at = clock.now()
            beat = NodeHeartbeat(
                event_id=f"real-{at.isoformat()}",
                occurred_at=at,
                name=NodeName("real"),
                node=real,
                at=at,
                interval_seconds=BEAT,
            )
            await publish(bus, prefix, [beat])
            beats.append(beat)
            await asyncio.sleep(BEAT)

    topics = [Topic.BINDINGS, Topic.PODS_STATUS, Topic.JOBS_STATUS]
    async with tailing(bus, prefix, topics) as tail, contextlib.AsyncExitStack() as stack:
        for service in services:
            await stack.enter_async_context(running(service, bus, settings))
        await publish(
            bus, prefix, [NodeRegistered(event_id="real-r", occurred_at=clock.now(), node=real)]
        )
        beating = asyncio.create_task(heartbeat())
        try:
            submission = [item.record for item in records_for(MANIFEST, prefix, clock.now())]
            producer = bus.producer(client_id="test-submit")
            try:
                await producer.send(submission)
            finally:
                await producer.stop()
            assert await tail.wait_for(
                lambda: (
                    {str(b.node) for b in _bindings(tail)} == {"real"} and len(_bindings(tail)) == 2
                )
            ), _bindings(tail)
            sim = NodeAddRequested(event_id="sim-add", occurred_at=clock.now(), node=_node("sim"))
            await publish(bus, prefix, [sim])
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        assert await tail.wait_for(lambda: _completed(tail), timeout=60.0), _statuses(tail)

    last_beat = beats[-1].at
    on_real = [b for b in _bindings(tail) if b.node == "real"]
    lost = [s for s in _statuses(tail) if s.node == "real"]
    # every pod bound to the silent node ended Failed/NodeLost, once each
    assert sorted((s.pod, s.pod_uid) for s in lost) == sorted(
        (f"{b.pod.namespace}/{b.pod.name}", b.pod.uid) for b in on_real
    )
    assert {(s.phase, s.reason) for s in lost} == {(PodPhase.FAILED, "NodeLost")}
    # ...no earlier than the grace period and the eviction timeout after its last heartbeat
    assert all(s.occurred_at >= last_beat + timedelta(seconds=GRACE + EVICTION) for s in lost)
    # nothing was bound to it once it was NotReady; the restarted pods ran on ``sim``
    assert all(b.occurred_at < last_beat + timedelta(seconds=GRACE) for b in on_real)
    restarted = [b for b in _bindings(tail) if b.node == "sim"]
    assert len(restarted) == 2
    assert {b.pod.uid for b in restarted}.isdisjoint({b.pod.uid for b in on_real})
    succeeded = {s.pod_uid for s in _statuses(tail) if s.phase == PodPhase.SUCCEEDED}
    assert succeeded == {b.pod.uid for b in restarted}
