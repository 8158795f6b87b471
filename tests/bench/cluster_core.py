"""Time the cluster's work per pod: bindings, Running and Succeeded ticks, deletions.

Run: ``python -m tests.bench.cluster_core`` (not collected by pytest).

Per scenario (nodes, pods, pods packed per node), the same inputs twice, in process:

- ``core``: the pure core alone, ``decide`` and ``next_deadline``, driven by a heap of
  node deadlines;
- ``service``: the cluster's handler as ``build_service`` wires it (the reactor over the
  core, the pod index, the changelog store, whose writes are taken, so encoded, every
  ``FLUSH_EVERY`` inputs as a flush would).

The nodes are registered, then one binding arrives every millisecond of virtual time and
the due ticks are fired after each (so a pod mostly gets a Running and a Succeeded tick of
its own), then every pod finishes and is deleted. Prints the best of ``--repeat`` runs as
CPU time (the machine's cores are shared) per pod.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import time
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from vcbus.contracts._base import Event, derive_event_id
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.cluster_commands import NodeAddRequested
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.keys import JobKey, NodeName, pod_key
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, Pod
from vcbus.contracts.quantity import parse_resources
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.runtime.reactor import Reactor
from vcbus.core.runtime.settings import Settings
from vcbus.core.step import Ctx, Tick
from vcbus.services.cluster import app
from vcbus.services.cluster.core import ClusterConf, ClusterInput, decide, next_deadline
from vcbus.services.cluster.model import SimNode
from vcbus.services.cluster.nodes import add_commands, build_nodes

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOB_SIZE = 10
PARTITIONS = 4
FLUSH_EVERY = 200
"""Inputs between two takes of the changelog's writes (about a consumer batch)."""
CONF = ClusterConf(start_delay_seconds=0.5)
RUN_SECONDS = 30.0
STEP = timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class Scenario:
    """Nodes, pods, how many pods are packed on a node, and each pod's requests."""

    name: str
    nodes: int
    pods: int
    per_node: int
    cpu: str
    memory: str


SCENARIOS = (
    Scenario("binpack", 5_000, 20_000, 8, "1", "1Gi"),
    Scenario("dense", 200, 20_000, 100, "50m", "256Mi"),
)
"""The pipeline benchmark's shape (8 one-cpu pods fill a default node), and 100 pods a node."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a run feeds the cluster."""

    adds: tuple[NodeAddRequested, ...]
    bindings: tuple[BindingCreated, ...]
    deletes: tuple[PodDeleted, ...]


def build_inputs(scenario: Scenario) -> Inputs:
    """Node additions, one binding per pod (jobs of 10, packed in order), their deletions."""
    requests = parse_resources({"cpu": scenario.cpu, "memory": scenario.memory})
    annotations = {ANNOTATION_RUN_SECONDS: f"{RUN_SECONDS:g}"}
    bindings = []
    deletes = []
    for index in range(scenario.pods):
        job, replica = divmod(index, JOB_SIZE)
        name = f"job-{job:05d}-worker-{replica}"
        key = pod_key("bench", name)
        pod = Pod(
            name=name,
            namespace="bench",
            job=JobKey(f"bench/job-{job:05d}"),
            task="worker",
            index=replica,
            podgroup=f"job-{job:05d}",
            uid=f"uid-{name}",
            requests=requests,
            annotations=annotations,
        )
        node = NodeName(f"node-{(index // scenario.per_node) % scenario.nodes}")
        bindings.append(
            BindingCreated(
                event_id=derive_event_id("bench.binding", key, node),
                occurred_at=T0,
                pod=pod,
                node=node,
            )
        )
        deletes.append(
            PodDeleted(
                event_id=derive_event_id("bench.delete", key, pod.uid),
                occurred_at=T0,
                job=pod.job,
                pod=key,
                task=pod.task,
                pod_uid=pod.uid,
            )
        )
    adds = add_commands(build_nodes(scenario.nodes), T0)
    return Inputs(adds, tuple(bindings), tuple(deletes))


def run_core(inputs: Inputs) -> float:
    """CPU seconds of ``decide`` and ``next_deadline`` over the inputs, with ticks due."""
    states: dict[str, SimNode | None] = {}
    deadlines: dict[str, datetime | None] = {}
    timers: list[tuple[datetime, str]] = []
    now = T0

    def apply(name: str, event: ClusterInput) -> None:
        state = decide(states.get(name), event, Ctx(now=now), CONF).state
        states[name] = state
        due = next_deadline(state)
        if due is not None and due != deadlines.get(name):
            heapq.heappush(timers, (due, name))
        deadlines[name] = due

    def fire() -> None:
        while timers and timers[0][0] <= now:
            due, name = heapq.heappop(timers)
            if deadlines.get(name) == due:
                apply(name, Tick(now=now))

    for add in inputs.adds:
        apply(add.node.name, add)
    gc.collect()
    start = time.process_time()
    for binding in inputs.bindings:
        now += STEP
        apply(binding.node, binding)
        fire()
    while timers:
        now = max(timers[0][0], now + STEP)
        fire()
    for binding, deleted in zip(inputs.bindings, inputs.deletes, strict=True):
        apply(binding.node, deleted)
    return time.process_time() - start


class _Clock:
    """The virtual time the reactor reads."""

    def __init__(self) -> None:
        self.at = T0

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return (self.at - T0).total_seconds()

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    async def wait_for(self, event: asyncio.Event, timeout: float) -> bool:
        raise NotImplementedError


class _Outbox:
    """Counts what ticks emit (encoding for Kafka is the shell's cost, not measured here)."""

    def __init__(self) -> None:
        self.count = 0

    def add_events(self, events: Iterable[Event]) -> None:
        self.count += sum(1 for _ in events)


def _run(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (``Reactor.fire``) without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    msg = "the coroutine waited"
    raise RuntimeError(msg)


def run_service(inputs: Inputs) -> tuple[float, int]:
    """CPU seconds of the cluster's handler over the inputs, and the changelog bytes."""
    clock = _Clock()
    kafka = Settings.from_env({}, bootstrap="localhost:9092").kafka
    service = app.build_service(Settings(kafka=kafka, partitions=PARTITIONS), clock, conf=CONF)
    reactor = cast(Reactor[SimNode, ClusterInput], service.timers[0])
    store = service.stores[0]
    outbox = cast(Outbox, _Outbox())
    written = 0

    def flush() -> None:
        nonlocal written
        written += sum(len(record.value or b"") for record in store.take_writes())

    def partition(name: str) -> int:
        return partition_for(name.encode(), PARTITIONS)

    for add in inputs.adds:
        name = add.node.name
        reactor.apply(partition(name), name, add, add.event_id)
    flush()
    written = 0
    partitions = [partition(binding.node) for binding in inputs.bindings]
    gc.collect()
    start = time.process_time()
    for number, (binding, part) in enumerate(zip(inputs.bindings, partitions, strict=True), 1):
        clock.at += STEP
        reactor.apply(part, binding.node, binding, binding.event_id)
        _run(reactor.fire(clock.at, outbox))
        if number % FLUSH_EVERY == 0:
            flush()
    fired = 0
    while (due := reactor.next_due()) is not None:
        clock.at = max(due, clock.at + STEP)
        _run(reactor.fire(clock.at, outbox))
        fired += 1
        if fired % FLUSH_EVERY == 0:
            flush()
    flush()
    for number, (binding, part, deleted) in enumerate(
        zip(inputs.bindings, partitions, inputs.deletes, strict=True), 1
    ):
        reactor.apply(part, binding.node, deleted, deleted.event_id)
        if number % FLUSH_EVERY == 0:
            flush()
    flush()
    return time.process_time() - start, written


def measure(scenario: Scenario, repeat: int) -> str:
    """The best of ``repeat`` runs of one scenario, as a printed line."""
    inputs = build_inputs(scenario)
    core = min(run_core(inputs) for _ in range(repeat))
    service, written = min(run_service(inputs) for _ in range(repeat))
    per_pod = 1e6 / scenario.pods
    return (
        f"{scenario.name:>8}: {scenario.nodes:>5} nodes, {scenario.pods} pods, "
        f"{scenario.per_node} a node: core {core * per_pod:6.1f} us/pod, "
        f"service {service * per_pod:6.1f} us/pod, changelog {written / 1e6:5.1f} MB"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", choices=[scenario.name for scenario in SCENARIOS])
    args = parser.parse_args(argv)
    for scenario in SCENARIOS:
        if args.scenario in (None, scenario.name):
            print(measure(scenario, args.repeat), flush=True)


if __name__ == "__main__":
    main()
