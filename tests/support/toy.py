"""A toy keyed service on the real runtime, for bus and runtime tests (in-process or as a process).

``upstream`` consumes JobDeleteAccepted on jobs.admitted, counts them per key in a changelog
store and emits one JobDeleted per input (its id derived from the input's id).
``downstream`` consumes JobDeleted on jobs.status and counts them per key, dropping
duplicates by event id. Run as ``python -m tests.support.toy ROLE``: it then logs JSON lines
to stderr (``configure_logging``: ``partitions_assigned``, ``store_restored``,
``lease_acquired``, ``record_handled`` ...), exports spans as the ``OTEL_*`` variables say
(``configure_tracing``), and on SIGTERM stops after its current batch and flushes its spans.
With ``--crash-after-produce`` it logs ``crash_point_reached`` and SIGKILLs itself once its
outputs are acknowledged, before the changelog is written and the offsets are committed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from vcbus.contracts import JobDeleteAccepted, JobDeleted, JobKey, Topic, derive_event_id
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.protocol import Bus, Producer
from vcbus.core.bus.records import OutRecord
from vcbus.core.bus.router import Route
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.clock import Clock, SystemClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.runtime.service import Runtime, Service, run_service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing

log = structlog.get_logger("vcbus.toy")


def count_up(state: int | None, event: object, ctx: Ctx) -> Step[int | None]:
    """Upstream core: count inputs and emit a JobDeleted whose id derives from the input."""
    assert isinstance(event, JobDeleteAccepted)
    out = JobDeleted(
        event_id=derive_event_id("toy.out", event.job, event.event_id),
        occurred_at=ctx.now,
        job=event.job,
    )
    return Step((state or 0) + 1, (out,))


def count(state: int | None, event: object, ctx: Ctx) -> Step[int | None]:
    """Downstream core: count inputs."""
    return Step((state or 0) + 1)


def build(role: str, clock: Clock) -> tuple[Service, ChangelogStore[Entry[int]]]:
    """Build the toy service of ``role`` with its store."""
    store = ChangelogStore[Entry[int]]("counts", Entry[int])
    if role == "upstream":
        reactor = Reactor[int, object](count_up, store, clock)
        route = Route(Topic.JOBS_ADMITTED, reactor.handle, "toy.count")
    else:
        reactor = Reactor[int, object](count, store, clock)
        route = Route(Topic.JOBS_STATUS, reactor.handle, "toy.count")
    return Service(name=f"toy-{role}", routes=[route], stores=[store]), store


def delete_event(job: str, n: int) -> JobDeleteAccepted:
    """An input event for the upstream toy."""
    return JobDeleteAccepted(
        event_id=derive_event_id("toy.in", job, n),
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        job=JobKey(job),
    )


class _KillAfterSend:
    """Producer wrapper: SIGKILL this process right after outputs are acked (before commit)."""

    def __init__(self, inner: Producer, topic: str) -> None:
        self._inner = inner
        self._topic = topic

    async def send(self, records: Sequence[OutRecord]) -> None:
        await self._inner.send(records)
        if any(record.topic == self._topic for record in records):
            log.info("crash_point_reached", records=len(records))  # flushed per line
            os.kill(os.getpid(), signal.SIGKILL)

    async def stop(self) -> None:
        await self._inner.stop()


class _CrashingBus(AioKafkaBus):
    def __init__(self, inner: AioKafkaBus, topic: str) -> None:
        super().__init__(inner.settings)
        self._topic = topic

    def producer(self, *, client_id: str) -> Producer:  # type: ignore[override]
        return _KillAfterSend(super().producer(client_id=client_id), self._topic)


async def _main(args: argparse.Namespace) -> None:
    settings = Settings.from_env()
    bus: Bus = AioKafkaBus(settings.kafka)
    clock = SystemClock()
    service, _ = build(args.role, clock)
    service.singleton = args.singleton
    await ensure_topics(bus, [service], settings.topic_prefix, settings.partitions)
    if args.crash_after_produce:
        bus = _CrashingBus(
            AioKafkaBus(settings.kafka), f"{settings.topic_prefix}{Topic.JOBS_STATUS}"
        )
    runtime = Runtime(service.name, bus, clock, settings, bus.producer(client_id=service.name))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, runtime.stopping.set)
    await run_service(service, bus, settings, clock=clock, runtime=runtime, instance=args.instance)


def main() -> None:
    """Run a toy service until SIGTERM (graceful: the current batch is finished and committed)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["upstream", "downstream"])
    parser.add_argument("--instance", default="0")
    parser.add_argument("--crash-after-produce", action="store_true")
    parser.add_argument("--singleton", action="store_true")
    args = parser.parse_args()
    name = f"toy-{args.role}"
    configure_logging(name, json=True)
    configure_tracing(name)
    try:
        asyncio.run(_main(args))
    finally:
        shutdown_tracing()
    log.info("process_exited")


if __name__ == "__main__":
    main()
