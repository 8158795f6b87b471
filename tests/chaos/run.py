"""The chaos run: the whole system as processes, jobs flowing, replicas killed, the broker frozen.

Layout: a Tansu broker of the run's own (so it can be frozen), two replicas of admission,
job-controller and cluster, one active plus one standby of podgroup-enqueue and allocator,
each ``python -m vcbus.services.cli serve`` in its own process, and ``agents`` node agents
(``vcbus agent``, ``tests.chaos.agents``) whose nodes run the real jobs as host processes.
Jobs (``tests.chaos.workload``) are published evenly over the submission window
(``kills × kill_interval`` seconds); every ``kill_interval`` seconds a random process (an
agent among them, each agent at least once, once one of its pods runs or half an interval
passed) is SIGKILLed and, after ``restart_delay``, started again. Halfway through, the
broker is frozen (SIGSTOP) for ``outage`` seconds, with no kill during the outage. Then
the run waits (bounded) until every job is final and every process of a real pod has
ended, stops the services with SIGTERM, reads the topics from their start and checks them
(``tests.chaos.checks``). The broker listens on a free
port, the services' health endpoints and the agents' logs endpoints on ports the system
picks, and the agents' host ports come from ranges free when the run starts: runs at once
on one machine do not collide. The figures are printed and written to
``bench/results/chaos-<timestamp>.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random  # noqa: TID251 - the chaos run's own seeded generator, not a service's
import shutil
import statistics
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import yaml

from tests.chaos.agents import (
    PodProcess,
    agent_args,
    agents_base,
    check_pods_left,
    free_port_ranges,
    kill_pods,
    node_names,
    pod_processes,
    running_on,
)
from tests.chaos.checks import LockTiming, check_all, check_exits, figures
from tests.chaos.fleet import AGENT, Fleet, Incarnation, Replica
from tests.chaos.history import HISTORY_TOPICS, History, Violation
from tests.chaos.liveness import StepTiming, slowest_steps
from tests.chaos.load import Hogs
from tests.chaos.workload import PRIORITY_CLASSES, REAL_LABEL, REAL_TAINT, generate
from tests.support.processes import ROOT, service_env
from vcbus.contracts import TOPIC_SPECS, Event
from vcbus.contracts.topics import DLT_SUFFIX
from vcbus.core.bus.broker import EmbeddedBroker, start_broker
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, TopicPartition
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import changelog_topic, ensure_topics
from vcbus.core.views.live import StatusView
from vcbus.core.views.read_model import STATUS_TOPICS
from vcbus.services.submission import records_for

SERVICES = ("cluster", "admission", "job-controller", "podgroup-enqueue", "allocator")
SINGLETONS = frozenset({"podgroup-enqueue", "allocator"})
PARTITIONS = 4
READY_LIMIT = 120.0
"""Bound of the wait for the fleet to be ready at start (a loaded 2-core machine)."""

_clock = SystemClock()


@dataclass(frozen=True, slots=True)
class ChaosConfig:
    """What to run: how many jobs and kills, the seed, the outage and the cluster."""

    jobs: int = 500
    kills: int = 20
    seed: int = 1
    kill_interval: float = 7.0
    restart_delay: float = 1.0
    outage: float = 15.0
    """Seconds the broker is frozen halfway through the submission window (0: never)."""
    nodes: int = 8
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    big_pods: int = 6
    big_cpu: str = "6"
    session_timeout_ms: int = 6000
    lock_read_bound: float = 5.0
    """Seconds the allocator may take to read a node lock (broker freezes not counted):
    another job's pod bound later on the locked node is a violation."""
    finish_timeout: float = 900.0
    """Bound of the wait for every job to be final, after the last submission."""
    load: float = 0.0
    """Duty cycle of the CPU hogs run beside the system, one per core (0: none)."""
    agents: int = 2
    """Node agents (real nodes) beside the simulated nodes (0: none, and no real job)."""
    real_every: int = 5
    """Every this many jobs one is a real job, run by the agents."""
    agent_cpu: str = "2"
    agent_memory: str = "4Gi"
    pods_end_timeout: float = 60.0
    """Bound of the wait, once every job is final, for the real pods' processes to end."""
    results_dir: Path = ROOT / "bench" / "results"
    log_dir: Path | None = None

    @property
    def window(self) -> float:
        """Seconds over which jobs are submitted and kills happen."""
        return max(self.kills, 1) * self.kill_interval


@dataclass
class Kill:
    """One SIGKILL: whom, when, and what the victim held."""

    label: str
    service: str
    at: datetime
    elapsed: float
    held_lease: bool = False
    partitions: list[int] = field(default_factory=list)
    standby_ready: bool = False
    """For a lease holder: whether another replica was in the lease group, caught up."""
    pods_running: int | None = None
    """For an agent: how many pods ran on its node when it was killed (from the topics)."""


@dataclass
class Takeover:
    """Who took over what a killed process held, and how long after the kill."""

    service: str
    kind: str
    """``lease`` (a standby became active) or ``partitions`` (a group moved them)."""
    killed: str
    by: str
    seconds: float
    undisturbed: bool = True
    """For a lease: whether a standby was in the lease group at the kill and no other
    process of the service was killed before the takeover (else the lease waits for a
    replica to start and catch up its tables before it joins)."""
    frozen_seconds: float = 0.0
    """Of ``seconds``, how long the broker was frozen (nothing can move then)."""


@dataclass
class Report:
    """A run's figures and violations."""

    config: dict[str, Any]
    started: str
    duration_seconds: float = 0.0
    submit_seconds: float = 0.0
    settle_seconds: float = 0.0
    jobs: int = 0
    jobs_final: int = 0
    kills: list[Kill] = field(default_factory=list)
    takeovers: list[Takeover] = field(default_factory=list)
    outage: dict[str, float] = field(default_factory=dict)
    exit_statuses: dict[str, int] = field(default_factory=dict)
    topics: dict[str, object] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    log_dir: str = ""
    agents_dir: str = ""
    pods_left: list[PodProcess] = field(default_factory=list)
    """Processes of real pods still running once every job was final and the wait was over."""
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Every record about each job that did not finish or waited too long for a step, per
    job, read before the broker stopped (written beside the figures)."""

    @property
    def passed(self) -> bool:
        """No violation."""
        return not self.violations

    def summary(self) -> dict[str, Any]:
        """The figures as plain JSON values."""
        by_kind: dict[str, list[float]] = {}
        for takeover in self.takeovers:
            by_kind.setdefault(takeover.kind, []).append(takeover.seconds)
        return {
            "started": self.started,
            "config": self.config,
            "duration_seconds": round(self.duration_seconds, 1),
            "submit_seconds": round(self.submit_seconds, 1),
            "settle_seconds": round(self.settle_seconds, 1),
            "jobs": self.jobs,
            "jobs_final": self.jobs_final,
            "kills": len(self.kills),
            "kills_by_service": dict(sorted(Counter(k.service for k in self.kills).items())),
            "agent_kills": [
                f"{k.label} at {k.elapsed:.1f} s ({k.pods_running} pods running)"
                for k in self.kills
                if k.service == AGENT
            ],
            "takeovers": {kind: len(values) for kind, values in sorted(by_kind.items())},
            "lease_takeover_seconds_undisturbed": max(
                (
                    round(t.seconds - t.frozen_seconds, 2)
                    for t in self.takeovers
                    if t.kind == "lease" and t.undisturbed
                ),
                default=None,
            ),
            "takeover_seconds": {
                kind: {
                    "min": round(min(values), 2),
                    "median": round(statistics.median(values), 2),
                    "max": round(max(values), 2),
                }
                for kind, values in sorted(by_kind.items())
            },
            "outage": self.outage,
            "exit_statuses": self.exit_statuses,
            "topics": self.topics,
            "violations": len(self.violations),
            "violation_list": [asdict(v) for v in self.violations[:100]],
            "kill_list": [
                {
                    "label": k.label,
                    "at_seconds": round(k.elapsed, 1),
                    "held_lease": k.held_lease,
                    "standby_ready": k.standby_ready,
                    "partitions": k.partitions,
                }
                for k in self.kills
            ],
            "takeover_list": [asdict(t) for t in self.takeovers],
            "log_dir": self.log_dir,
            "agents_dir": self.agents_dir,
            "pods_left": len(self.pods_left),
            "histories": sorted(self.histories),
        }


def _timestamp(line: dict[str, Any]) -> datetime | None:
    raw = line.get("timestamp")
    if not isinstance(raw, str):
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromisoformat(raw)
    return None


def serving(incarnation: Incarnation) -> bool:
    """Whether the incarnation's log says it serves (see :meth:`Run.wait_serving`)."""
    service = incarnation.replica.service
    if service == AGENT:
        return bool(incarnation.lines("node_registered"))
    if service in SINGLETONS:
        return bool(incarnation.lines("lease_acquired")) or in_lease_group(incarnation)
    return bool(incarnation.lines("partitions_assigned"))


def holds_lease(incarnation: Incarnation) -> bool:
    """Whether the incarnation's log says it holds its lease now."""
    holding = False
    for line in incarnation.lines("lease_acquired", "lease_released"):
        holding = line["event"] == "lease_acquired"
    return holding


def _frozen_within(
    start: datetime, end: datetime, frozen: Sequence[tuple[datetime, datetime]]
) -> float:
    """Seconds of ``frozen`` (start, end) spells between ``start`` and ``end``."""
    spells = (min(end, until) - max(start, began) for began, until in frozen)
    return sum(max(spell.total_seconds(), 0.0) for spell in spells)


def in_lease_group(incarnation: Incarnation) -> bool:
    """Whether the incarnation runs and its log says it joined its lease group.

    A replica joins the lease group once its tables have caught up: such a standby can
    take the lease at once; one still starting cannot.
    """
    if not incarnation.alive:
        return False
    return any(
        str(line.get("event", "")).startswith("Joined group ")
        and "-lease'" in str(line.get("event", ""))
        for line in incarnation.lines()
        if line.get("logger") == "aiokafka.consumer.group_coordinator"
    )


def owned_partitions(incarnation: Incarnation) -> set[int]:
    """The partitions its log says it owns now."""
    owned: set[int] = set()
    for line in incarnation.lines("partitions_assigned", "partitions_revoked"):
        if line["event"] == "partitions_assigned":
            owned |= set(line.get("partitions", ()))
        else:
            owned -= set(line.get("partitions", ()))
    return owned


def takeovers(
    fleet: Fleet, kills: Sequence[Kill], frozen: Sequence[tuple[datetime, datetime]] = ()
) -> list[Takeover]:
    """For each kill of a lease holder or partition owner: who took over, how long after.

    Lease: the first ``lease_acquired`` of another incarnation of the service after the
    kill. Partitions: the moment other incarnations' ``partitions_assigned`` lines after
    the kill cover every partition the victim owned. ``frozen`` (start, end): when the
    broker was frozen; that time is counted apart (``Takeover.frozen_seconds``).
    """
    out: list[Takeover] = []
    for kill in kills:
        others = [i for i in fleet.incarnations(kill.service) if i.label != kill.label]
        if kill.held_lease:
            found = [
                (at, i.label)
                for i in others
                for line in i.lines("lease_acquired")
                if (at := _timestamp(line)) is not None and at > kill.at
            ]
            if found:
                at, by = min(found)
                seconds = (at - kill.at).total_seconds()
                undisturbed = kill.standby_ready and not any(
                    other.service == kill.service and kill.at < other.at < at for other in kills
                )
                out.append(
                    Takeover(
                        kill.service,
                        "lease",
                        kill.label,
                        by,
                        seconds,
                        undisturbed,
                        _frozen_within(kill.at, at, frozen),
                    )
                )
        if kill.partitions:
            assigned = sorted(
                (at, i.label, set(line.get("partitions", ())))
                for i in others
                for line in i.lines("partitions_assigned")
                if (at := _timestamp(line)) is not None and at > kill.at
            )
            covered: set[int] = set()
            for at, by, partitions in assigned:
                covered |= partitions
                if covered >= set(kill.partitions):
                    out.append(
                        Takeover(
                            kill.service,
                            "partitions",
                            kill.label,
                            by,
                            (at - kill.at).total_seconds(),
                        )
                    )
                    break
    return out


async def read_history(bus: AioKafkaBus, prefix: str) -> History:
    """Every topic the checks need, decoded, from the start to the current end."""
    history = History()
    codecs = {
        f"{prefix}{topic}": TopicCodec[Event](TOPIC_SPECS[topic].union) for topic in HISTORY_TOPICS
    }
    attribute = {f"{prefix}{topic}": name for topic, name in HISTORY_TOPICS.items()}
    dead = [f"{prefix}{spec.topic}{DLT_SUFFIX}" for spec in TOPIC_SPECS.values()]
    consumer = bus.consumer([*codecs, *dead], group=None, client_id="chaos-reader")
    await consumer.start()
    try:
        ends = await consumer.end_offsets(sorted(consumer.assignment()))
        positions: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
        per_partition: dict[TopicPartition, list[Event]] = {tp: [] for tp in ends}
        async with asyncio.timeout(300):
            # Tansu reports a partition's end as its last batch's base offset + 1, so
            # reading stops only once the ends are reached and a poll brings nothing more.
            while True:
                records = await consumer.getmany(timeout=1.0, max_records=5000)
                if not records and all(positions[tp] >= end for tp, end in ends.items()):
                    break
                for record in records:
                    positions[record.tp] = record.offset + 1
                    if record.topic not in codecs:
                        history.dead_letters[record.topic] = (
                            history.dead_letters.get(record.topic, 0) + 1
                        )
                        continue
                    decoded = codecs[record.topic].decode_all(record.value)
                    if isinstance(decoded, Unknown | Poison):
                        history.undecodable[record.topic] = (
                            history.undecodable.get(record.topic, 0) + 1
                        )
                        continue
                    per_partition[record.tp].extend(decoded)
    finally:
        await consumer.stop()
    for tp in sorted(per_partition, key=lambda tp: (tp.topic, tp.partition)):
        if tp.topic in attribute:
            getattr(history, attribute[tp.topic]).extend(per_partition[tp])
    return history


HISTORIES_LIMIT = 20
"""Jobs whose whole history a failed run writes, at most (the unfinished ones first)."""
CHANGELOGS = (("job-controller", "jobs"), ("cluster", "nodes"))
"""The stores whose changelogs hold a job's state (keyed by job) or its pods' (by node)."""


async def job_histories(
    bus: AioKafkaBus, prefix: str, jobs: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Every record about each of ``jobs``, on every topic of the run, in each topic's order.

    A record is about a job when it is keyed by the job or names it (a binding, keyed by
    its node, names the pod's job): the job's whole history, changelogs included, so a run
    that fails can be diagnosed from its artefacts alone. Topics in ``TOPIC_SPECS`` order,
    each partition by offset.
    """
    topics = [f"{prefix}{spec.topic}" for spec in TOPIC_SPECS.values()]
    topics += [changelog_topic(prefix, service, store) for service, store in CHANGELOGS]
    topics += [f"{prefix}{spec.topic}{DLT_SUFFIX}" for spec in TOPIC_SPECS.values()]
    wanted = {job.encode(): job for job in jobs}
    named = {f'"{job}"'.encode(): job for job in jobs}
    found: dict[str, list[tuple[int, int, int, dict[str, Any]]]] = {job: [] for job in jobs}
    order = {topic: index for index, topic in enumerate(topics)}
    consumer = bus.consumer(topics, group=None, client_id="chaos-histories")
    await consumer.start()
    try:
        ends = await consumer.end_offsets(sorted(consumer.assignment()))
        positions: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
        async with asyncio.timeout(300):
            while True:
                records = await consumer.getmany(timeout=1.0, max_records=5000)
                if not records and all(positions[tp] >= end for tp, end in ends.items()):
                    break
                for record in records:
                    positions[record.tp] = record.offset + 1
                    value = record.value or b""
                    about = {wanted[record.key]} if record.key in wanted else set()
                    about |= {job for text, job in named.items() if text in value}
                    for job in about:
                        found[job].append(
                            (
                                order[record.topic],
                                record.partition,
                                record.offset,
                                {
                                    "topic": record.topic.removeprefix(prefix),
                                    "partition": record.partition,
                                    "offset": record.offset,
                                    "key": (record.key or b"").decode(errors="replace"),
                                    "value": _json_or_text(value),
                                },
                            )
                        )
    finally:
        await consumer.stop()
    return {job: [entry for *_, entry in sorted(records)] for job, records in found.items()}


def _json_or_text(value: bytes) -> Any:
    try:
        return json.loads(value) if value else None
    except ValueError:
        return value.decode(errors="replace")


def dump_history(history: History, folder: Path) -> None:
    """Write each topic's events as JSON lines (``<topic>.jsonl``), for a post-mortem."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in HISTORY_TOPICS.values():
        events: list[Event] = getattr(history, name)
        with (folder / f"{name}.jsonl").open("wb") as out:
            out.writelines(msgspec.json.encode(event) + b"\n" for event in events)


CHAOS_ALLOCATOR_ACTIONS = "allocate, preempt, backfill"
"""The allocator's actions in a chaos run: the default ones and preempt."""


def preemption_args(directory: Path) -> dict[str, tuple[str, ...]]:
    """The files that switch preempt on, written under ``directory``; arguments per service.

    The deploy configurations with the allocator's actions and ``take-back: true`` for
    podgroup-enqueue, and the run's priority classes for the job-controller.
    """
    deploy = ROOT / "deploy" / "scheduler"
    allocator = yaml.safe_load((deploy / "allocator.yaml").read_text())
    allocator["actions"] = CHAOS_ALLOCATOR_ACTIONS
    enqueue = yaml.safe_load((deploy / "podgroup-enqueue.yaml").read_text())
    enqueue["take-back"] = True
    files = {
        "allocator.yaml": allocator,
        "podgroup-enqueue.yaml": enqueue,
        "priority-classes.yaml": dict(PRIORITY_CLASSES),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, document in files.items():
        (directory / name).write_text(yaml.safe_dump(document, sort_keys=False))
    return {
        "allocator": ("--scheduler-conf", str(directory / "allocator.yaml")),
        "podgroup-enqueue": ("--enqueue-conf", str(directory / "podgroup-enqueue.yaml")),
        "job-controller": ("--priority-classes", str(directory / "priority-classes.yaml")),
    }


def plan_victims(rng: random.Random, replicas: Sequence[Replica], kills: int) -> list[Replica]:
    """Whom each of ``kills`` kills hits: a replica drawn at random, each agent at least once
    when there are kills enough (put in a slot drawn among the other services' kills)."""
    victims = [rng.choice(replicas) for _ in range(kills)]
    for agent in (r for r in replicas if r.service == AGENT):
        others = [i for i, v in enumerate(victims) if v.service != AGENT]
        if agent not in victims and others:
            victims[rng.choice(others)] = agent
    return victims


class Run:
    """One chaos run (use :func:`run_chaos`)."""

    def __init__(
        self, config: ChaosConfig, broker: EmbeddedBroker, fleet: Fleet, agents_dir: Path
    ) -> None:
        self.config = config
        self.agents_dir = agents_dir
        self.broker = broker
        self.fleet = fleet
        self.prefix = f"chaos-{config.seed}-{_clock.now().strftime('%Y%m%d%H%M%S')}."
        self.bus = AioKafkaBus(KafkaSettings(bootstrap_servers=broker.bootstrap_servers))
        self.jobs = generate(
            config.jobs,
            config.seed,
            big_pods=config.big_pods,
            big_cpu=config.big_cpu,
            real_every=config.real_every if config.agents else 0,
        )
        self.rng = random.Random(f"kills-{config.seed}")
        self.view = StatusView()
        self.kills: list[Kill] = []
        self.outage: dict[str, float] = {}
        self.frozen: list[tuple[datetime, datetime]] = []
        self.thawed = asyncio.Event()
        self.thawed.set()
        self.started = 0.0

    def elapsed(self) -> float:
        """Seconds since the fleet was ready."""
        return _clock.monotonic() - self.started

    async def _until(self, moment: float) -> None:
        """Sleep until ``moment`` seconds after the fleet was ready."""
        await asyncio.sleep(max(0.0, moment - self.elapsed()))

    def declare(self) -> None:
        """Declare two replicas per service (not started)."""
        env = service_env(
            self.broker.bootstrap_servers,
            self.prefix,
            VCBUS_PARTITIONS=str(PARTITIONS),
            VCBUS_POLL_TIMEOUT="0.1",
            VCBUS_SESSION_TIMEOUT_MS=str(self.config.session_timeout_ms),
            VCBUS_HEALTH_PORT="0",
        )
        cluster = (
            "--nodes",
            str(self.config.nodes),
            "--node-cpu",
            self.config.node_cpu,
            "--node-memory",
            self.config.node_memory,
        )
        extra = {"cluster": cluster, **preemption_args(self.fleet.log_dir)}
        for service in SERVICES:
            for instance in ("a", "b"):
                self.fleet.add(service, instance, env, extra.get(service, ()))
        agent_env = {k: v for k, v in env.items() if k != "VCBUS_HEALTH_PORT"}
        ranges = free_port_ranges(self.config.agents) if self.config.agents else []
        for node, ports in zip(node_names(self.config.agents), ranges, strict=True):
            data_dir = self.agents_dir / node
            data_dir.mkdir(exist_ok=True)
            args = agent_args(
                node,
                data_dir,
                ports,
                cpu=self.config.agent_cpu,
                memory=self.config.agent_memory,
                label=REAL_LABEL,
                taint=REAL_TAINT,
            )
            self.fleet.add(AGENT, node, agent_env, args)

    async def start_fleet(self) -> None:
        """Start every replica and wait until each consumes, holds or awaits its lease."""
        await ensure_topics(self.bus, [], self.prefix, PARTITIONS)
        for service in SERVICES:
            first, second = self.fleet.of(service)
            first.start()
            if service in SINGLETONS:
                await self._wait_log(first, "lease_acquired", 1)
                second.start()
                # the standby's join rebalances the lease group: the holder gets it back
                await self._wait_log(first, "lease_acquired", 2)
            else:
                second.start()
        for service in SERVICES:
            if service not in SINGLETONS:
                for replica in self.fleet.of(service):
                    await self._wait_log(replica, "partitions_assigned", 1)
        for replica in self.fleet.of(AGENT):
            replica.start()
        for replica in self.fleet.of(AGENT):
            await self._wait_log(replica, "node_registered", 1)

    async def _wait_log(self, replica: Replica, name: str, count: int) -> None:
        incarnation = replica.current
        async with asyncio.timeout(READY_LIMIT):
            while len(incarnation.lines(name)) < count:
                if not incarnation.alive:
                    raise RuntimeError(f"{incarnation.label} exited:\n{incarnation.tail()}")
                await asyncio.sleep(0.2)

    async def submit(self) -> None:
        """Publish the jobs evenly over the window; a failed send is retried."""
        producer = self.bus.producer(client_id="chaos-submit")
        spacing = self.config.window / max(len(self.jobs), 1)
        try:
            for index, job in enumerate(self.jobs):
                await self._until(index * spacing)
                records = [item.record for item in records_for(job.text, self.prefix, _clock.now())]
                await self._send(producer, records)
        finally:
            await producer.stop()

    async def _send(self, producer: Any, records: list[OutRecord]) -> None:
        for _ in range(20):
            try:
                await producer.send(records)
            except Exception:  # noqa: BLE001 - the broker is frozen or moving: send again
                await asyncio.sleep(1.0)
                continue
            return
        raise RuntimeError("could not publish a job after 20 attempts")

    async def chaos(self) -> None:
        """Kill a random process every ``kill_interval`` seconds, restart it after a delay."""
        last = -self.config.kill_interval
        victims = plan_victims(self.rng, self.fleet.replicas, self.config.kills)
        for number, replica in enumerate(victims):
            due = (number + 0.5) * self.config.kill_interval
            await self._until(due)
            await self.thawed.wait()
            # after an outage the kills due meanwhile are spread out, not fired at once
            await self._until(last + self.config.kill_interval / 2)
            await self.thawed.wait()
            if replica.service == AGENT:
                await self._busy(replica)
                await self.thawed.wait()
            last = self.elapsed()
            victim = replica.current
            held = replica.service in SINGLETONS and holds_lease(victim)
            owned = (
                sorted(owned_partitions(victim))
                if replica.service not in SINGLETONS and replica.service != AGENT
                else []
            )
            ready = held and any(
                in_lease_group(other.current)
                for other in self.fleet.of(replica.service)
                if other is not replica
            )
            at = _clock.now()
            replica.kill(at)
            self.kills.append(
                Kill(victim.label, replica.service, at, self.elapsed(), held, owned, ready)
            )
            print(
                f"[{self.elapsed():6.1f}s] kill -9 {victim.label}"
                f"{' (lease holder)' if held else ''}{f' partitions {owned}' if owned else ''}",
                flush=True,
            )
            await asyncio.sleep(self.config.restart_delay)
            replica.start()

    async def _busy(self, replica: Replica) -> None:
        """Wait (half a kill interval at most) until a process of one of the agent's pods
        runs, so that its kill comes mid-job (real jobs come in bursts)."""
        data_dir = self.agents_dir / replica.instance
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.kill_interval / 2):
                while True:
                    if await asyncio.to_thread(pod_processes, data_dir):
                        break
                    await asyncio.sleep(0.2)

    async def freeze(self) -> None:
        """Freeze the broker for ``outage`` seconds halfway through the window."""
        if self.config.outage <= 0:
            return
        start = self.config.window / 2
        await self._until(start)
        self.thawed.clear()
        began = self.elapsed()
        print(f"[{began:6.1f}s] broker frozen (SIGSTOP)", flush=True)
        frozen_at = _clock.now()
        self.broker.pause()
        try:
            await asyncio.sleep(self.config.outage)  # the outage itself
        finally:
            self.broker.resume()
            self.frozen.append((frozen_at, _clock.now()))
            self.thawed.set()
        print(f"[{self.elapsed():6.1f}s] broker resumed (SIGCONT)", flush=True)
        self.outage = {"at_seconds": round(began, 1), "seconds": self.config.outage}

    async def follow(self) -> None:
        """Fold the status topics into the view, until cancelled."""
        table = Table("chaos-status", STATUS_TOPICS, self.view.apply)
        await table.follow(self.bus, prefix=self.prefix, client_id="chaos-status")

    def final(self) -> int:
        """How many planned jobs are final now."""
        return sum(1 for job in self.jobs if self.view.all_final([job.key]))

    async def wait_final(self, timeout: float) -> bool:
        """Wait (bounded) until every job is final; print progress now and then."""
        keys = [job.key for job in self.jobs]
        last = -1.0
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.view.all_final(keys):
                    if self.elapsed() - last >= 15:
                        last = self.elapsed()
                        print(f"[{last:6.1f}s] {self.final()}/{len(keys)} jobs final", flush=True)
                    await asyncio.sleep(0.5)
        return self.view.all_final(keys)

    async def wait_serving(self, timeout: float) -> None:
        """Wait (bounded) until every live replica serves, so the SIGTERM at the end finds
        its handlers installed: one restarted just before the end may still be starting
        (a 2-core machine under load takes over 10 s to start a Python process).

        Serving: an agent registered its node, a singleton joined its lease group, any
        other replica got its partitions.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                for replica in self.fleet.replicas:
                    while True:
                        incarnation = replica.current
                        if not incarnation.alive or serving(incarnation):
                            break
                        await asyncio.sleep(0.5)

    async def wait_pods_gone(self, timeout: float) -> list[PodProcess]:
        """Wait (bounded) until no process of a real pod runs; those left at the bound."""
        left: list[PodProcess] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while True:
                    left = await asyncio.to_thread(pod_processes, self.agents_dir)
                    if not left:
                        break
                    await asyncio.sleep(0.5)
        return left


async def _run(
    config: ChaosConfig, broker: EmbeddedBroker, fleet: Fleet, report: Report, agents_dir: Path
) -> None:
    run = Run(config, broker, fleet, agents_dir)
    run.declare()
    began = _clock.monotonic()
    await run.start_fleet()
    run.started = _clock.monotonic()
    print(
        f"fleet ready in {run.started - began:.1f}s: {len(fleet.replicas)} processes, "
        f"prefix {run.prefix}; {len(run.jobs)} jobs over {config.window:.0f}s, "
        f"{config.kills} kills, outage {config.outage:g}s, {config.agents} agents",
        flush=True,
    )
    follower = asyncio.create_task(run.follow())
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(run.submit())
            group.create_task(run.chaos())
            group.create_task(run.freeze())
        report.submit_seconds = run.elapsed()
        done = await run.wait_final(config.finish_timeout)
        report.settle_seconds = run.elapsed() - report.submit_seconds
        report.duration_seconds = run.elapsed()
        report.jobs = len(run.jobs)
        report.jobs_final = run.final()
        report.pods_left = await run.wait_pods_gone(config.pods_end_timeout)
        await run.wait_serving(READY_LIMIT)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    if not done:
        report.violations.append(
            Violation(
                "final-phase",
                f"only {report.jobs_final}/{report.jobs} jobs final after "
                f"{config.finish_timeout:.0f}s",
            )
        )
    report.violations.extend(check_pods_left(report.pods_left))
    stopped = _clock.now()
    report.exit_statuses = fleet.stop()
    report.violations.extend(check_exits(fleet.ends()))
    report.kills = run.kills
    report.outage = run.outage
    report.takeovers = takeovers(fleet, run.kills, run.frozen)
    history = await read_history(run.bus, run.prefix)
    for kill in report.kills:
        if kill.service == AGENT:
            node = kill.label.removeprefix(f"{AGENT}-").rpartition(".")[0]
            kill.pods_running = running_on(history, node, kill.at)
    dump_history(history, Path(report.log_dir) / "topics")
    timing = LockTiming(timedelta(seconds=config.lock_read_bound), run.frozen)
    steps = StepTiming(frozen=run.frozen, end=stopped)
    violations = check_all(history, run.jobs, timing, steps)
    report.violations.extend(violations)
    report.topics = {**figures(history, timing), "slowest_steps": slowest_steps(history, steps)}
    stuck = [job.key for job in run.jobs if not run.view.all_final([job.key])]
    late = sorted({v.detail.split(":", 1)[0] for v in violations if v.check == "liveness"})
    suspects = list(dict.fromkeys([*stuck, *late]))[:HISTORIES_LIMIT]
    if suspects:
        report.histories = await job_histories(run.bus, run.prefix, suspects)


def run_chaos(config: ChaosConfig) -> Report:
    """Run the chaos scenario once; the report holds the figures and any violation."""
    log_dir = config.log_dir or Path(tempfile.mkdtemp(prefix="vcbus-chaos-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    config_view = {
        k: str(v) if isinstance(v, Path) else v
        for k, v in asdict(config).items()
        if k not in ("results_dir", "log_dir")
    }
    agents_dir = agents_base()
    report = Report(
        config=config_view,
        started=_clock.now().isoformat(),
        log_dir=str(log_dir),
        agents_dir=str(agents_dir),
    )
    hogs = Hogs(config.load) if config.load else None
    broker = start_broker()
    fleet = Fleet(log_dir)
    try:
        if hogs is not None:
            hogs.start()
        asyncio.run(_run(config, broker, fleet, report, agents_dir))
    finally:
        if hogs is not None:
            hogs.stop()
        fleet.close()
        kill_pods(agents_dir)  # pods outlive their agents: none may outlive the run
        broker.stop()
    if report.passed:
        shutil.rmtree(agents_dir, ignore_errors=True)
    return report


def write_report(report: Report, results_dir: Path) -> Path:
    """Write the figures to ``results_dir/chaos-<timestamp>.json``.

    The history of each job the report holds one of goes beside it, one JSON record a
    line: ``chaos-<timestamp>.history/<namespace>_<name>.jsonl``.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = report.started.replace(":", "").replace("-", "")[:15]
    path = results_dir / f"chaos-{stamp}.json"
    path.write_text(json.dumps(report.summary(), indent=2, default=str) + "\n")
    if report.histories:
        folder = results_dir / f"chaos-{stamp}.history"
        folder.mkdir(exist_ok=True)
        for job, records in report.histories.items():
            lines = (json.dumps(record, default=str) + "\n" for record in records)
            (folder / f"{job.replace('/', '_')}.jsonl").write_text("".join(lines))
    return path


def render(report: Report) -> str:
    """The figures as text."""
    s = report.summary()
    lines = [
        f"chaos run {s['started']}: {'PASSED' if report.passed else 'FAILED'}",
        f"  jobs            {s['jobs_final']}/{s['jobs']} final  {s['topics'].get('final_phases')}",
        f"  kills           {s['kills']}  {s['kills_by_service']}",
        f"  agent kills     {'; '.join(s['agent_kills']) or 'none'}",
        f"  takeovers       {s['takeovers']}",
        f"  takeover time   {s['takeover_seconds']}",
        f"  lease takeover, standby ready and not killed: max "
        f"{s['lease_takeover_seconds_undisturbed']} s (broker freezes not counted)",
        f"  outage          {s['outage'] or 'none'}",
        f"  pods left       {s['pods_left']} (processes of real pods once every job was final)",
        f"  load            {_load(report.config.get('load', 0.0))}",
        f"  slowest steps   {s['topics'].get('slowest_steps')}",
        f"  duration        {s['duration_seconds']}s (submitting {s['submit_seconds']}s, "
        f"settling {s['settle_seconds']}s)",
        f"  topics          {s['topics']}",
        f"  violations      {s['violations']}",
    ]
    lines.extend(f"    - {v['check']}: {v['detail']}" for v in s["violation_list"][:30])
    if s["histories"]:
        lines.append(f"  histories       {len(s['histories'])} jobs, beside the figures")
    lines.append(f"  logs            {s['log_dir']}")
    if s["agents_dir"] and not report.passed:
        lines.append(f"  agents' data    {s['agents_dir']}")
    return "\n".join(lines)


def _load(duty: object) -> str:
    if not isinstance(duty, float | int) or not duty:
        return "none"
    return f"{os.cpu_count()} CPU hogs at {duty:.0%} each"
