"""Running a scenario: in memory on virtual time, or on a real broker in real time.

Full mode (a scenario with ``jobs``, docs/design.md#scenarios): admission, job-controller,
podgroup-enqueue, allocator and the simulated cluster run in this process on one
``InMemoryBus`` and a ``VirtualClock`` (:mod:`vcbus.services.simulation.inprocess`), so the same
file gives the same output, byte for byte. On a broker (``KAFKA_BOOTSTRAP_SERVERS``, else
an embedded one) the same services run in real time, ``speed`` times faster; final phases
and counts match the in-memory run, while bindings may differ where nodes tie and the
timeline's times are approximate.

A scenario without ``jobs`` but with ``podgroups`` or ``pods`` is a snapshot scenario and
runs the scheduling cycles alone (:mod:`vcbus.services.simulation.snapshot`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

from vcbus.core.bus.broker import start_broker
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.runtime.clock import EPOCH, Clock, SystemClock, VirtualClock
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topic_table import SHIPPED_TABLE, load_topic_table
from vcbus.services.bootstrap import SystemConf, bootstrap
from vcbus.services.cluster.core import ClusterConf
from vcbus.services.simulation.cycles import CycleLog
from vcbus.services.simulation.inprocess import RealPacer, ScaledClock, VirtualPacer, run_system
from vcbus.services.simulation.scenario import (
    Scenario,
    check_keys,
    conf_warnings,
    is_snapshot,
    load_document,
    parse_scenario,
    queue_event,
    scenario_inputs,
    split_conf,
)
from vcbus.services.simulation.snapshot import run_snapshot_scenario

MEMORY_SETTINGS = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), poll_timeout=1.0)
"""In-memory settings; poll timeouts are virtual, so a longer one only saves wake-ups."""

KAFKA_QUIET = 5.0
KAFKA_GRACE = 2.0
"""Real seconds without a published event after which a run on a broker has settled
(unfinished, finished): a consumer can stall for seconds while its group rebalances."""


def build_services(
    scenario: Scenario, settings: Settings, clock: Clock, cycles: CycleLog | None = None
) -> list[Service]:
    """Every service of the system, configured by the scenario (cycles told to ``cycles``)."""
    enqueue_conf, allocator_conf = split_conf(scenario.conf)
    conf = SystemConf(
        priority_classes=scenario.priority_classes,
        enqueue_conf=enqueue_conf,
        allocator_conf=allocator_conf,
        nodes=scenario.nodes,
        cluster=ClusterConf(start_delay_seconds=scenario.start_delay),
        cycles=cycles,
    )
    return bootstrap(conf, settings, clock)


async def simulate_in_memory(scenario: Scenario, *, cycles: bool = False) -> dict[str, object]:
    """Run a full-mode scenario on an in-memory bus and a virtual clock (deterministic).

    With ``cycles``, the outcome also says what each scheduling cycle decided.
    """
    clock = VirtualClock(EPOCH)
    # the shipped topic table's compacted topics keep the newest record per key, as on
    # Kafka: a long replay's changelogs would otherwise hold every state each node had
    settings = dataclasses.replace(MEMORY_SETTINGS, topics=load_topic_table(SHIPPED_TABLE))
    bus = InMemoryBus(clock=clock, default_partitions=settings.partitions, compact=True)
    log = CycleLog() if cycles else None
    return await run_system(
        build_services(scenario, settings, clock, log),
        scenario_inputs(scenario, settings, clock.now()),
        bus=bus,
        pacer=VirtualPacer(bus, clock),
        clock=clock,
        settings=settings,
        jobs=[key for _, key, _ in scenario.jobs if key],
        until=scenario.until,
        before_start=[queue_event(queue, clock.now()) for queue in scenario.queues],
        cycles=log,
    )


async def simulate_on_kafka(
    scenario: Scenario, settings: Settings, *, speed: float
) -> dict[str, object]:
    """Run a full-mode scenario on a real broker in real time, ``speed`` times faster."""
    clock = ScaledClock(speed, EPOCH)
    settings = dataclasses.replace(settings, poll_timeout=min(settings.poll_timeout, 0.05))
    until = dataclasses.replace(
        scenario.until,
        quiet=max(scenario.until.quiet, KAFKA_QUIET * speed),
        grace=max(scenario.until.grace, KAFKA_GRACE * speed),
    )
    return await run_system(
        build_services(scenario, settings, clock),
        scenario_inputs(scenario, settings, clock.now()),
        bus=AioKafkaBus(settings.kafka),
        pacer=RealPacer(clock, step=0.1),
        clock=clock,
        settings=settings,
        jobs=[key for _, key, _ in scenario.jobs if key],
        until=until,
        before_start=[queue_event(queue, clock.now()) for queue in scenario.queues],
    )


def simulate_document(
    document: Mapping[str, object], base: Path | None = None, *, cycles: bool = False
) -> dict[str, object]:
    """Run a scenario in memory, full or snapshot mode; the outcome as plain data.

    ``cycles`` adds what each scheduling cycle decided (full mode).
    """
    if is_snapshot(document):
        return run_snapshot_scenario(document)
    return asyncio.run(simulate_in_memory(parse_scenario(document, base), cycles=cycles))


async def simulate_with_broker(
    scenario: Scenario, *, speed: float, prefix: str | None = None
) -> dict[str, object]:
    """Run a full-mode scenario on ``KAFKA_BOOTSTRAP_SERVERS``, else on an embedded broker.

    The topics get ``prefix`` (default: a fresh one per run), so runs do not meet.
    """
    prefix = prefix or f"sim-{int(SystemClock().now().timestamp() * 1000)}."
    try:
        settings = Settings.from_env()
        broker = None
    except ValueError:
        broker = start_broker()
        settings = Settings.from_env(bootstrap=broker.bootstrap_servers)
    try:
        return await simulate_on_kafka(
            scenario, dataclasses.replace(settings, topic_prefix=prefix), speed=speed
        )
    finally:
        if broker is not None:
            broker.stop()


def simulate_file(
    path: Path,
    *,
    document: Mapping[str, object] | None = None,
    kafka: bool = False,
    speed: float = 10.0,
    prefix: str | None = None,
    cycles: bool = False,
    warn: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, object], bool]:
    """Run the scenario in ``path``; its outcome, and whether it was a snapshot scenario.

    ``warn`` is told each warning of the scenario's configuration before the run (a
    Volcano plugin or action's arguments vcbus lacks). ``kafka``: run a full-mode scenario
    on a broker (:func:`simulate_with_broker`), else in memory. ``document``: the scenario
    already read (an SWF trace made into one, :mod:`vcbus.services.simulation.swf`); ``path``
    then only names where relative files are.
    """
    if document is None:
        document = load_document(path.read_text())
        check_keys(document, str(path))
    for warning in conf_warnings(document):
        warn(warning)
    snapshot = is_snapshot(document)
    if kafka and not snapshot:
        scenario = parse_scenario(document, path.parent)
        return asyncio.run(simulate_with_broker(scenario, speed=speed, prefix=prefix)), snapshot
    return simulate_document(document, path.parent, cycles=cycles), snapshot
