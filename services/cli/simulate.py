"""``vcbus simulate FILE``: run a scenario through the real services and print the outcome.

Full mode (a scenario with ``jobs``, DESIGN §9): admission, job-controller,
podgroup-enqueue, allocator and the simulated cluster run in this process on one
``InMemoryBus`` and a ``VirtualClock`` (``shared.runtime.inprocess``), so the same file
gives the same output, byte for byte. ``--bus kafka`` runs the same services on a real
broker (``KAFKA_BOOTSTRAP_SERVERS``, else an embedded one) in real time, ``--speed`` times
faster; final phases and counts match the in-memory run, while bindings may differ where
nodes tie and the timeline's times are approximate.

A scenario without ``jobs`` but with ``podgroups`` or ``pods`` is a snapshot scenario and
runs the scheduling cycles alone (``shared.scheduling.scenario``).

The scenario file and what it feeds the system are :mod:`services.cli.scenario`; how an
outcome prints, :mod:`services.cli.outcome`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from services.bootstrap import SystemConf, bootstrap
from services.cli import swf, terminal
from services.cli.outcome import render_json, render_text
from services.cli.scenario import (
    Scenario,
    ScenarioFileError,
    conf_warnings,
    is_snapshot,
    load_document,
    parse_scenario,
    queue_event,
    scenario_inputs,
    split_conf,
)
from services.cluster.core import ClusterConf
from shared.bus.broker import start_broker
from shared.bus.kafka import AioKafkaBus, KafkaSettings
from shared.bus.memory import InMemoryBus
from shared.logging.setup import configure_logging
from shared.runtime.clock import EPOCH, Clock, SystemClock, VirtualClock
from shared.runtime.cycles import CycleLog
from shared.runtime.inprocess import RealPacer, ScaledClock, VirtualPacer, run_system
from shared.runtime.service import Service
from shared.runtime.settings import Settings
from shared.scheduling.framework.conf import ConfError
from shared.scheduling.scenario import ScenarioError, run_snapshot_scenario

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
    bus = InMemoryBus(clock=clock, default_partitions=MEMORY_SETTINGS.partitions)
    log = CycleLog() if cycles else None
    return await run_system(
        build_services(scenario, MEMORY_SETTINGS, clock, log),
        scenario_inputs(scenario, MEMORY_SETTINGS, clock.now()),
        bus=bus,
        pacer=VirtualPacer(bus, clock),
        clock=clock,
        settings=MEMORY_SETTINGS,
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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus simulate``."""
    parser = sub.add_parser("simulate", help="run a scenario through the services (DESIGN §9)")
    parser.add_argument("file", help="scenario YAML or JSON, or an SWF trace (.swf)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.add_argument(
        "--bus",
        choices=("memory", "kafka"),
        default="memory",
        help="memory: virtual time, deterministic [default]; kafka: a real broker, real time",
    )
    parser.add_argument(
        "--speed", type=float, default=10.0, help="kafka: scenario seconds per real second [10]"
    )
    parser.add_argument("--prefix", help="kafka: topic prefix (default: a fresh one per run)")
    parser.add_argument(
        "--cycles",
        action="store_true",
        help="full mode, in memory: add what each scheduling cycle decided (docs/simulate.md)",
    )
    swf.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the scenario and print its outcome; 2 when the scenario cannot be run."""
    configure_logging("simulate", level="warning")
    path = Path(args.file)
    document: Mapping[str, object]
    try:
        if swf.is_trace(path):
            document = swf.document_from_args(path, args)
        else:
            document = load_document(path.read_text())
        for warning in conf_warnings(document):
            sys.stderr.write(f"vcbus simulate: warning: config: {warning}\n")
        if args.bus == "kafka" and not is_snapshot(document):
            outcome = asyncio.run(_kafka(parse_scenario(document, path.parent), args))
        else:
            outcome = simulate_document(document, path.parent, cycles=args.cycles)
    except (OSError, ScenarioFileError, ScenarioError, ConfError, swf.TraceError) as exc:
        terminal.error(f"vcbus simulate: {exc}\n")
        return 2
    as_json = args.json or is_snapshot(document)
    terminal.write(render_json(outcome) if as_json else render_text(outcome))
    if args.bus == "kafka":
        sys.stderr.write(
            "note: on a broker the services race in real time: final phases and counts match "
            "the in-memory run; bindings may differ where nodes tie, and times are approximate\n"
        )
    return 0


async def _kafka(scenario: Scenario, args: argparse.Namespace) -> dict[str, object]:
    prefix = args.prefix or f"sim-{int(SystemClock().now().timestamp() * 1000)}."
    try:
        settings = Settings.from_env()
        broker = None
    except ValueError:
        broker = start_broker()
        settings = Settings.from_env(bootstrap=broker.bootstrap_servers)
    try:
        return await simulate_on_kafka(
            scenario, dataclasses.replace(settings, topic_prefix=prefix), speed=args.speed
        )
    finally:
        if broker is not None:
            broker.stop()
