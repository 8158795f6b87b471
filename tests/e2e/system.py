"""The whole system for end-to-end tests: five services as processes on a real broker.

``running_system`` creates the topics under a prefix of its own, starts ``python -m
vcbus.services.cli serve <name>`` for every service (as ``vcbus up`` does), waits until each one
consumes (or holds its lease) and stops them all with SIGTERM when the block ends. The
helpers submit Volcano Jobs as ``vcbus submit`` does, wait for jobs to finish on
``jobs.status``, and read topics back from their start. Every wait is bounded and fails
with what was seen; none is a timing claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from tests.support.processes import (
    STOP_LIMIT,
    Processes,
    ProcessWaitError,
    ServiceProcess,
    event,
    service_env,
)
from vcbus.contracts import TOPIC_SPECS, Event, Topic
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import Record, TopicPartition
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.views.live import StatusView, jobs_table
from vcbus.core.views.read_model import STATUS_TOPICS
from vcbus.services.submission import Submitted, records_for

SERVICES = ("cluster", "admission", "job-controller", "podgroup-enqueue", "allocator")
"""Every service, in the order ``vcbus up`` starts them."""

SINGLETONS = frozenset({"podgroup-enqueue", "allocator"})
"""Services that run cycles once they hold their lease (they consume no routes)."""

PARTITIONS = 4
WAIT = 120.0
"""Bound of a wait for jobs to finish: generous, for a loaded 2-core machine."""


@dataclass
class System:
    """A running installation: its broker, topic prefix and service processes."""

    bootstrap: str
    prefix: str
    services: dict[str, ServiceProcess]

    @property
    def bus(self) -> AioKafkaBus:
        """A bus on the system's broker (clients made from it must be stopped)."""
        return AioKafkaBus(KafkaSettings(bootstrap_servers=self.bootstrap))

    def logs(self) -> str:
        """The last lines of every service, for failure messages."""
        return "\n".join(
            f"--- {name} ---\n{process.tail(15)}" for name, process in self.services.items()
        )

    def stop(self) -> dict[str, int]:
        """SIGTERM every service once, wait for each to exit; their exit statuses.

        One signal only: a second SIGTERM could land after the event loop closed, while
        the process flushes its spans, and kill it.
        """
        for process in self.services.values():
            process.signal_stop()
        statuses: dict[str, int] = {}
        for name, process in self.services.items():
            try:
                statuses[name] = process.exited(STOP_LIMIT)
            except ProcessWaitError:
                process.kill()
                statuses[name] = process.exited()
        return statuses


@contextlib.contextmanager
def running_system(
    bootstrap: str,
    prefix: str,
    *,
    cluster_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    wrap: Sequence[str] = (),
) -> Iterator[System]:
    """Run the five services on ``bootstrap`` under ``prefix`` for the block.

    Args:
        bootstrap: The broker's bootstrap servers.
        prefix: The topic prefix, unique to the caller.
        cluster_args: Extra arguments of ``serve cluster`` (``--nodes``, ``--node-cpu`` ...).
        env: Extra environment of every service (``OTEL_*``).
        wrap: A command that runs each service (``ip netns exec NAME``: on another host).
    """
    asyncio.run(_create_topics(bootstrap, prefix))
    with Processes() as processes:
        services: dict[str, ServiceProcess] = {}
        for name in SERVICES:
            extra = {"VCBUS_PARTITIONS": str(PARTITIONS), "VCBUS_POLL_TIMEOUT": "0.1"}
            extra.update(env or {})
            args = ["serve", name, *(cluster_args if name == "cluster" else ())]
            services[name] = processes.start(
                name,
                "vcbus.services.cli",
                *args,
                env=service_env(bootstrap, prefix, **extra),
                wrap=wrap,
            )
        for name, process in services.items():
            ready = "lease_acquired" if name in SINGLETONS else "partitions_assigned"
            process.wait_for(event(ready))
        yield System(bootstrap, prefix, services)


async def _create_topics(bootstrap: str, prefix: str) -> None:
    await ensure_topics(
        AioKafkaBus(KafkaSettings(bootstrap_servers=bootstrap)), [], prefix, PARTITIONS
    )


def with_run_seconds(text: str, seconds: float, *, name: str | None = None) -> str:
    """A Job manifest's text with ``vcbus.io/run-seconds`` on every task template.

    Args:
        text: YAML of one Volcano Job (other documents are dropped).
        seconds: How long each simulated pod runs.
        name: A new ``metadata.name``, when examples share one.

    Returns:
        The Job as YAML.
    """
    jobs = [
        doc
        for doc in yaml.safe_load_all(text)
        if isinstance(doc, dict) and doc.get("kind") == "Job"
    ]
    assert len(jobs) == 1, f"expected one Job, found {len(jobs)}"
    job: dict[str, Any] = copy.deepcopy(jobs[0])
    if name is not None:
        job["metadata"]["name"] = name
    for task in job["spec"]["tasks"]:
        metadata = task["template"].setdefault("metadata", {})
        metadata.setdefault("annotations", {})[ANNOTATION_RUN_SECONDS] = f"{seconds:g}"
    return yaml.safe_dump(job)


async def submit(system: System, text: str) -> list[Submitted]:
    """Publish a file's documents to ``jobs.submitted`` as ``vcbus submit`` does."""
    items = records_for(text, system.prefix, SystemClock().now())
    producer = system.bus.producer(client_id="e2e-submit")
    try:
        await producer.send([item.record for item in items])
    finally:
        await producer.stop()
    return items


async def wait_for_jobs(system: System, keys: Sequence[str], timeout: float = WAIT) -> StatusView:
    """Follow the status topics until every job in ``keys`` is final (or the bound passes)."""
    view = StatusView()
    table = Table("e2e-status", STATUS_TOPICS, view.apply)
    follower = asyncio.create_task(
        table.follow(system.bus, prefix=system.prefix, client_id="e2e-status")
    )
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not view.all_final(keys) and not follower.done():  # noqa: ASYNC110 - polls the table's view
                    await asyncio.sleep(0.1)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    return view


def describe(view: StatusView, system: System) -> str:
    """The jobs table and the services' last lines, for a failure message."""
    return f"{jobs_table(view)}\n{system.logs()}"


async def read_topic(system: System, topic: Topic) -> list[tuple[Record, Event]]:
    """Every event on ``topic`` from its start to its current end, in offset order per partition."""
    codec = TopicCodec[Event](TOPIC_SPECS[topic].union)
    consumer = system.bus.consumer(
        [f"{system.prefix}{topic}"], group=None, client_id=f"e2e-read-{topic}"
    )
    await consumer.start()
    out: list[tuple[Record, Event]] = []
    try:
        ends = await consumer.end_offsets(sorted(consumer.assignment()))
        positions: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
        async with asyncio.timeout(WAIT):
            while any(positions[tp] < end for tp, end in ends.items()):
                for record in await consumer.getmany(timeout=0.2, max_records=1000):
                    positions[record.tp] = record.offset + 1
                    decoded = codec.decode_all(record.value)
                    assert not isinstance(decoded, Unknown | Poison), (record, decoded)
                    out.extend((record, event) for event in decoded)
    finally:
        await consumer.stop()
    return out
