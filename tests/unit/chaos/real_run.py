"""A real run's topics for the checks' tests: the chaos workload through the five real
services, in memory on virtual time (``vcbus simulate``'s deterministic mode, no kills).

The same seed gives the same topics, byte for byte, so a test can corrupt a copy and know
exactly what the checks must find.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass

from tests.chaos.history import HISTORY_TOPICS, History
from tests.chaos.workload import PRIORITY_CLASSES, PlannedJob, generate
from vcbus.contracts import TOPIC_SPECS, Event
from vcbus.core.bus.codec import TopicCodec
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.runtime.clock import EPOCH, VirtualClock
from vcbus.services.simulation.inprocess import VirtualPacer, run_system
from vcbus.services.simulation.run import MEMORY_SETTINGS, build_services
from vcbus.services.simulation.scenario import DEFAULT_ACTIONS, parse_scenario, scenario_inputs


@dataclass(frozen=True)
class RealRun:
    """A run's decoded topics and the jobs it was given."""

    history: History
    planned: list[PlannedJob]

    def copy(self) -> History:
        """A copy of the topics to corrupt."""
        return copy.deepcopy(self.history)


def real_run(jobs: int = 24, seed: int = 3, nodes: int = 4) -> RealRun:
    """Run ``jobs`` chaos jobs (every shape, a big target job among them) on ``nodes``
    nodes of 8 CPU, submitted half a second apart, until everything settles; the
    allocator runs preempt, as in a chaos run."""
    planned = generate(jobs, seed, big_pods=nodes, big_cpu="6")
    scenario = parse_scenario(
        {
            "config": {"actions": DEFAULT_ACTIONS.replace("backfill", "preempt, backfill")},
            "priorityClasses": dict(PRIORITY_CLASSES),
            "nodes": [
                {"name": f"node-{i}", "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 110}}
                for i in range(nodes)
            ],
            "jobs": [{"at": i * 0.5, "job": job.manifest} for i, job in enumerate(planned)],
            "until": "settled",
        }
    )
    clock = VirtualClock(EPOCH)
    bus = InMemoryBus(clock=clock, default_partitions=MEMORY_SETTINGS.partitions)
    asyncio.run(
        run_system(
            build_services(scenario, MEMORY_SETTINGS, clock),
            scenario_inputs(scenario, MEMORY_SETTINGS, clock.now()),
            bus=bus,
            pacer=VirtualPacer(bus, clock),
            clock=clock,
            settings=MEMORY_SETTINGS,
            jobs=[job.key for job in planned],
        )
    )
    history = History()
    for topic, name in HISTORY_TOPICS.items():
        codec = TopicCodec[Event](TOPIC_SPECS[topic].union)
        events: list[Event] = getattr(history, name)
        for record in bus.records(f"{MEMORY_SETTINGS.topic_prefix}{topic}"):
            decoded = codec.decode_all(record.value)
            assert isinstance(decoded, tuple), (topic, decoded)
            events.extend(decoded)
    return RealRun(history, planned)
