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

The scenario file (YAML or JSON), beyond DESIGN §9:

- ``jobs``: ``{at, job}`` with a Volcano Job, or ``{at, file}`` naming a Job manifest
  relative to the scenario file.
- ``events``: ``{at, pod: ns/name, phase, exitCode?, reason?, message?}`` (handed to the
  cluster for the node holding the pod), ``{at, add-node: {...}}``, ``{at, cordon: node}``,
  ``{at, uncordon: node}``, ``{at, remove-node: node}``, ``{at, delete-job: ns/name}``,
  ``{at, abort-job: ns/name}``, ``{at, resume-job: ns/name}``, ``{at, queue: {...}}``.
- ``until``: ``settled`` (default) or a time in seconds; ``quiet`` (seconds without any
  published event after which an unfinished system has settled, default 10) and ``limit``
  (the latest time, default 3600).
- ``cluster``: ``{startDelay: seconds}`` from binding to Running (default 0).
- ``config``: volcano-scheduler.conf shape for both scheduling services; the enqueue-side
  actions (elect, enqueue, reserve) go to podgroup-enqueue, the others to the allocator.

Pods run for their task template's ``vcbus.io/run-seconds`` and end Succeeded, or Failed
when ``vcbus.io/exit-code`` is not 0 (SPEC A9); without run-seconds they run until their
job ends or an event sets their phase.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import yaml

from contracts import (
    Event,
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    QueueDeclared,
    derive_event_id,
    job_key,
)
from contracts.events.cluster_commands import (
    NodeAddRequested,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
    PodPhaseSetRequested,
)
from contracts.keys import JobKey, NodeName, PodKey
from contracts.objects.node import Node
from contracts.objects.pod import PodPhase
from contracts.objects.queue import Queue
from services.admission import app as admission
from services.admission.core import queues_from_manifests
from services.allocator import app as allocator
from services.cli import terminal
from services.cli.submit import records_for
from services.cluster import app as cluster
from services.cluster.core import ClusterConf
from services.cluster.nodes import NodesError, parse_nodes
from services.job_controller import app as job_controller
from services.podgroup_enqueue import app as podgroup_enqueue
from shared.bus.kafka import AioKafkaBus, KafkaSettings
from shared.bus.memory import InMemoryBus
from shared.logging.setup import configure_logging
from shared.runtime.clock import EPOCH, Clock, SystemClock, VirtualClock
from shared.runtime.cycles import CycleLog
from shared.runtime.inprocess import (
    Input,
    Publish,
    RealPacer,
    ScaledClock,
    SetPodPhase,
    Until,
    VirtualPacer,
    run_system,
)
from shared.runtime.service import Service
from shared.runtime.settings import Settings
from shared.scheduling.actions.enqueue import TAKE_BACK
from shared.scheduling.framework.conf import ENQUEUE_SIDE_ACTIONS, ConfError, SchedulerConf
from shared.scheduling.scenario import ScenarioError, run_snapshot_scenario
from shared.scheduling.scheduler import conf_from_mapping

DEFAULT_ACTIONS = "elect, enqueue, reserve, allocate, backfill"
MEMORY_SETTINGS = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), poll_timeout=1.0)
"""In-memory settings; poll timeouts are virtual, so a longer one only saves wake-ups."""
JOB_COMMANDS = (
    ("delete-job", JobDeleteRequested),
    ("abort-job", JobAbortRequested),
    ("resume-job", JobResumeRequested),
)
"""Scenario events that are a user's command on a job, and the command each sends."""

KAFKA_QUIET = 5.0
KAFKA_GRACE = 2.0
"""Real seconds without a published event after which a run on a broker has settled
(unfinished, finished): a consumer can stall for seconds while its group rebalances."""


class ScenarioFileError(ValueError):
    """A scenario that cannot be run; the message names the entry and says why."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """A full-mode scenario, decoded: what to build and what to feed it."""

    nodes: tuple[Node, ...]
    queues: tuple[Queue, ...]
    priority_classes: Mapping[str, int]
    conf: Mapping[object, object] | None
    start_delay: float
    jobs: tuple[tuple[float, JobKey, str], ...]
    events: tuple[Mapping[str, object], ...]
    until: Until


def load_document(text: str) -> Mapping[str, object]:
    """Decode a scenario file's text (YAML or JSON).

    Raises:
        ScenarioFileError: when it is not a mapping.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioFileError(f"scenario is not YAML or JSON: {exc}") from exc
    if not isinstance(document, Mapping):
        raise ScenarioFileError("a scenario is a mapping with nodes, jobs, events ...")
    return document


def is_snapshot(document: Mapping[str, object]) -> bool:
    """Whether a scenario gives a scheduler snapshot (podgroups, pods) rather than jobs."""
    return "jobs" not in document and ("podgroups" in document or "pods" in document)


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ScenarioFileError(f"{where}: expected seconds (a number >= 0), got {value!r}")
    return float(value)


def _list(document: Mapping[str, object], name: str) -> list[object]:
    value = document.get(name) or []
    if not isinstance(value, list):
        raise ScenarioFileError(f"{name}: expected a list, got {type(value).__name__}")
    return value


def parse_scenario(document: Mapping[str, object], base: Path | None = None) -> Scenario:
    """Read a full-mode scenario.

    Args:
        document: the decoded scenario.
        base: the folder ``file`` entries are relative to.

    Returns:
        The scenario.

    Raises:
        ScenarioFileError: naming the first bad entry.
    """
    try:
        nodes = parse_nodes({"nodes": _list(document, "nodes")})
        queues = tuple(queues_from_manifests(_list(document, "queues")).values())
    except (NodesError, ValueError) as exc:
        raise ScenarioFileError(str(exc)) from exc
    classes = _priority_classes(document.get("priorityClasses") or {})
    conf = document.get("config")
    if conf is not None and not isinstance(conf, Mapping):
        raise ScenarioFileError("config: expected a mapping in volcano-scheduler.conf shape")
    cluster_options = document.get("cluster") or {}
    if not isinstance(cluster_options, Mapping):
        raise ScenarioFileError("cluster: expected a mapping such as {startDelay: 1}")
    jobs = tuple(
        _job(item, f"jobs[{index}]", base) for index, item in enumerate(_list(document, "jobs"))
    )
    events = []
    for index, item in enumerate(_list(document, "events")):
        if not isinstance(item, Mapping):
            raise ScenarioFileError(f"events[{index}]: expected a mapping with 'at'")
        events.append(item)
    return Scenario(
        nodes=nodes,
        queues=queues,
        priority_classes=classes,
        conf=conf,
        start_delay=_number(cluster_options.get("startDelay", 0), "cluster.startDelay"),
        jobs=jobs,
        events=tuple(events),
        until=_until(document),
    )


def _priority_classes(raw: object) -> dict[str, int]:
    """``{name: value}``, or a list of Kubernetes PriorityClass objects."""
    if isinstance(raw, list):
        out: dict[str, int] = {}
        for index, item in enumerate(raw):
            metadata = item.get("metadata") if isinstance(item, Mapping) else None
            value = item.get("value") if isinstance(item, Mapping) else None
            if not isinstance(metadata, Mapping) or not isinstance(value, int):
                raise ScenarioFileError(
                    f"priorityClasses[{index}]: expected a PriorityClass with metadata.name "
                    "and a whole-number value"
                )
            out[str(metadata.get("name"))] = value
        return out
    if not isinstance(raw, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in raw.values()
    ):
        raise ScenarioFileError("priorityClasses: expected a mapping of name to whole number")
    return {str(k): int(v) for k, v in raw.items()}


def _until(document: Mapping[str, object]) -> Until:
    raw = document.get("until", "settled")
    defaults = Until()
    quiet = _number(document.get("quiet", defaults.quiet), "quiet")
    limit = _number(document.get("limit", defaults.limit), "limit")
    if raw == "settled":
        return Until(quiet=quiet, limit=limit)
    return Until(seconds=_number(raw, "until"), quiet=quiet, limit=limit)


def _job(item: object, where: str, base: Path | None) -> tuple[float, JobKey, str]:
    if not isinstance(item, Mapping):
        raise ScenarioFileError(f"{where}: expected {{at, job}} or {{at, file}}")
    at = _number(item.get("at", 0), f"{where}.at")
    if "file" in item:
        path = (base or Path()) / str(item["file"])
        try:
            manifest: object = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ScenarioFileError(f"{where}.file: {exc}") from exc
    elif "job" in item:
        manifest = item["job"]
    else:
        raise ScenarioFileError(f"{where}: give the Job under 'job' or a manifest under 'file'")
    key = JobKey("")
    if isinstance(manifest, Mapping) and isinstance(manifest.get("metadata"), Mapping):
        metadata = manifest["metadata"]
        if isinstance(metadata.get("name"), str):
            namespace = metadata.get("namespace")
            key = job_key(namespace if isinstance(namespace, str) else None, metadata["name"])
    return at, key, json.dumps(manifest)


def _event_id(kind: str, entity: str, index: int) -> str:
    return derive_event_id(kind, entity, f"scenario-event-{index}")


def scenario_inputs(scenario: Scenario, settings: Settings, start: datetime) -> list[Input]:
    """The timed inputs of a scenario: job submissions and timeline events.

    Raises:
        ScenarioFileError: naming the first bad event.
    """
    prefix = settings.topic_prefix
    inputs: list[Input] = []
    for at, key, text in scenario.jobs:
        records = tuple(item.record for item in records_for(text, prefix, start))
        inputs.append(
            Publish(at=at, label=f"submit {key or '(unnamed)'}", records=records, job=key)
        )
    for index, item in enumerate(scenario.events):
        inputs.append(_event_input(item, index, start))
    return inputs


def _event_input(item: Mapping[str, object], index: int, start: datetime) -> Input:
    where = f"events[{index}]"
    at = _number(item.get("at", 0), f"{where}.at")
    if "pod" in item:
        pod, phase = str(item["pod"]), item.get("phase")
        try:
            parsed = PodPhase(str(phase))
        except ValueError:
            raise ScenarioFileError(
                f"{where}.phase: expected Running, Succeeded or Failed"
            ) from None
        exit_code = item.get("exitCode")
        request = PodPhaseSetRequested(
            event_id=_event_id("pod.phase_set_requested.v1", pod, index),
            occurred_at=start,
            pod=PodKey(pod),
            phase=parsed,
            exit_code=exit_code if isinstance(exit_code, int) else None,
            reason=str(item.get("reason", "")),
            message=str(item.get("message", "")),
        )
        return SetPodPhase(at=at, label=f"pod {pod} {parsed}", request=request)
    event: Event
    if "add-node" in item:
        try:
            (node,) = parse_nodes([item["add-node"]])
        except NodesError as exc:
            raise ScenarioFileError(f"{where}.add-node: {exc}") from exc
        event = NodeAddRequested(
            event_id=_event_id("node.add_requested.v1", node.name, index),
            occurred_at=start,
            node=node,
        )
        return Publish(at=at, label=f"add-node {node.name}", events=(event,))
    for name, command_type in (
        ("cordon", NodeCordonRequested),
        ("uncordon", NodeUncordonRequested),
        ("remove-node", NodeRemoveRequested),
    ):
        if name in item:
            node_name = str(item[name])
            event = command_type(
                event_id=_event_id(name, node_name, index),
                occurred_at=start,
                name=NodeName(node_name),
            )
            return Publish(at=at, label=f"{name} {node_name}", events=(event,))
    for name, job_command in JOB_COMMANDS:
        if name in item:
            job = JobKey(str(item[name]))
            event = job_command(event_id=_event_id(name, job, index), occurred_at=start, job=job)
            return Publish(at=at, label=f"{name} {job}", events=(event,))
    if "queue" in item:
        try:
            (queue,) = queues_from_manifests([item["queue"]]).values()
        except ValueError as exc:
            raise ScenarioFileError(f"{where}.queue: {exc}") from exc
        return Publish(at=at, label=f"queue {queue.name}", events=(_queue_event(queue, start),))
    raise ScenarioFileError(
        f"{where}: expected one of pod, add-node, cordon, uncordon, remove-node, delete-job, "
        "abort-job, resume-job, queue"
    )


def _queue_event(queue: Queue, now: datetime) -> QueueDeclared:
    content = msgspec.json.encode(queue).decode()
    return QueueDeclared(
        event_id=derive_event_id("queue.declared.v1", queue.name, content),
        occurred_at=now,
        queue=queue,
    )


def split_conf(
    raw: Mapping[object, object] | None,
) -> tuple[SchedulerConf | None, SchedulerConf | None]:
    """The podgroup-enqueue and allocator configurations of a scenario's ``config``.

    Returns:
        ``(enqueue, allocator)``; None for a service's default when there is no ``config``.
    """
    if raw is None:
        return None, None
    conf = conf_from_mapping(raw, default_actions=DEFAULT_ACTIONS)
    enqueue = tuple(a for a in conf.actions if a in ENQUEUE_SIDE_ACTIONS)
    allocate = tuple(a for a in conf.actions if a not in ENQUEUE_SIDE_ACTIONS)
    enqueue_arguments = dict(conf.arguments)
    if TAKE_BACK_ACTIONS & set(allocate):
        # The allocator takes capacity back: enqueue admits jobs that could take it back.
        enqueue_arguments.setdefault(TAKE_BACK, True)
    return (
        dataclasses.replace(conf, actions=enqueue, arguments=enqueue_arguments),
        dataclasses.replace(conf, actions=allocate),
    )


TAKE_BACK_ACTIONS = frozenset({"preempt", "reclaim"})


def conf_warnings(document: Mapping[str, object]) -> tuple[str, ...]:
    """What a scenario's ``config`` names that vcbus lacks and leaves out, one line each."""
    raw = document.get("config")
    if not isinstance(raw, Mapping):
        return ()
    return conf_from_mapping(raw, default_actions=DEFAULT_ACTIONS).skipped


def build_services(
    scenario: Scenario, settings: Settings, clock: Clock, cycles: CycleLog | None = None
) -> list[Service]:
    """Every service of the system, configured by the scenario (cycles told to ``cycles``)."""
    enqueue_conf, allocator_conf = split_conf(scenario.conf)
    return [
        admission.build_service(settings, clock),
        job_controller.build_service(settings, clock, priority_classes=scenario.priority_classes),
        podgroup_enqueue.build_service(
            settings,
            clock,
            conf=enqueue_conf,
            on_cycle=(
                cycles.observer(podgroup_enqueue.NAME, phases=True) if cycles is not None else None
            ),
        ),
        allocator.build_service(
            settings,
            clock,
            conf=allocator_conf,
            on_cycle=cycles.observer(allocator.NAME) if cycles is not None else None,
        ),
        cluster.build_service(
            settings,
            clock,
            nodes=scenario.nodes,
            conf=ClusterConf(start_delay_seconds=scenario.start_delay),
        ),
    ]


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
        before_start=[_queue_event(queue, clock.now()) for queue in scenario.queues],
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
        before_start=[_queue_event(queue, clock.now()) for queue in scenario.queues],
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


def render_json(outcome: Mapping[str, object]) -> str:
    """The outcome as JSON: keys sorted, two-space indent, one trailing newline.

    An object or list that holds only scalars (or lists or objects of scalars) is written
    on one line, so a timeline entry, a pod or a violation is one line of the output (and
    of a diff).
    """
    return _json(outcome, "") + "\n"


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_flat(value: object) -> bool:
    if isinstance(value, list | tuple):
        return all(_is_scalar(item) for item in value)
    if isinstance(value, Mapping):
        return all(_is_scalar(item) for item in value.values())
    return _is_scalar(value)


def _json(value: object, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, Mapping) and value:
        if all(_is_flat(item) for item in value.values()):
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        items = (
            f"{inner}{json.dumps(str(key), ensure_ascii=False)}: {_json(value[key], inner)}"
            for key in sorted(value)
        )
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple) and value and not _is_flat(value):
        return "[\n" + ",\n".join(f"{inner}{_json(item, inner)}" for item in value) + f"\n{pad}]"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render_text(outcome: Mapping[str, Any]) -> str:
    """A full-mode outcome as tables and a timeline, for people."""
    lines: list[str] = []
    jobs = outcome.get("jobs")
    if isinstance(jobs, Mapping) and jobs:
        rows: list[tuple[str, ...]] = [("JOB", "PHASE", "PODGROUP", "TASKS", "REASON")]
        for key, job in jobs.items():
            tasks = ", ".join(
                f"{task} "
                + "/".join(str(counts[k]) for k in ("pending", "running", "succeeded", "failed"))
                for task, counts in job["tasks"].items()
            )
            rows.append((key, job["phase"], job["podgroup"], tasks, job["reason"]))
        lines += _table(rows)
        lines.append("  (tasks: pending/running/succeeded/failed)")
    pods = outcome.get("pods")
    if isinstance(pods, Mapping) and pods:
        lines.append("")
        rows = [("POD", "NODE", "PHASE")]
        for key, pod in pods.items():
            phase = pod["phase"] + (" (deleted)" if pod["deleted"] else "")
            rows.append((key, pod["node"] or "-", phase))
        lines += _table(rows)
    rejected = outcome.get("rejected")
    if isinstance(rejected, Mapping) and rejected:
        lines.append("")
        for key, violations in rejected.items():
            lines.append(f"rejected {key or '(unnamed)'}:")
            lines += [f"  {v['path']}: {v['reason']}: {v['message']}" for v in violations]
    if outcome.get("targetJob") or outcome.get("lockedNodes"):
        locked = ", ".join(outcome.get("lockedNodes") or []) or "-"
        lines.append(f"\ntarget job: {outcome.get('targetJob') or '-'}; locked nodes: {locked}")
    dead = outcome.get("deadLetters")
    if isinstance(dead, list) and dead:
        lines.append("\ndead letters (records a service could not handle):")
        lines += [f"  {d['topic']}: {d['count']} from {d['service']}" for d in dead]
    timeline = outcome.get("timeline")
    if isinstance(timeline, list):
        lines.append("\ntimeline:")
        lines += [f"  {entry['t']:>9.3f}s  {describe(entry)}" for entry in timeline]
    lines.append(f"\nstopped: {outcome.get('stoppedBy')}")
    return "\n".join(lines) + "\n"


def describe(entry: Mapping[str, Any]) -> str:
    """One timeline entry as a sentence fragment."""
    get = entry.get
    extra = f" ({get('reason')})" if get("reason") else ""
    match get("event"):
        case "input" | "ignored":
            return f"{get('event')}: {get('input')}{extra}"
        case "node":
            return f"node {get('node')} {get('change')}"
        case "admitted":
            return f"admitted {get('job')}"
        case "rejected":
            return f"rejected {get('job') or '(unnamed)'}: {', '.join(get('reasons') or [])}"
        case "job" | "podgroup":
            return f"{get('event')} {get('job')} -> {get('phase')}{extra}"
        case "bind":
            return f"bind {get('pod')} -> {get('node')}"
        case "refused":
            return f"refused {get('pod')} on {get('node')}{extra}"
        case "pod":
            code = f", exit {get('exitCode')}" if get("exitCode") is not None else ""
            return f"pod {get('pod')} -> {get('phase')}{code}"
        case "evict":
            return f"evict {get('pod')} on {get('node')} ({get('reason')} by {get('taker')})"
        case "nominated":
            return f"nominated {', '.join(get('pods') or [])} for {get('job')}"
        case "nomination":
            return f"nomination of {get('job')} ended{extra}"
        case "elected":
            return f"target job {get('job')} elected"
        case "locked":
            return f"locked {', '.join(get('nodes') or [])} for {get('job')}"
        case "unlocked":
            return f"unlocked every node of {get('job')}"
        case _:
            return " ".join(f"{k}={v}" for k, v in sorted(entry.items()) if k != "t")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus simulate``."""
    parser = sub.add_parser("simulate", help="run a scenario through the services (DESIGN §9)")
    parser.add_argument("file", help="scenario YAML or JSON")
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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the scenario and print its outcome; 2 when the scenario cannot be run."""
    configure_logging("simulate", level="warning")
    path = Path(args.file)
    try:
        document = load_document(path.read_text())
        for warning in conf_warnings(document):
            sys.stderr.write(f"vcbus simulate: warning: config: {warning}\n")
        if args.bus == "kafka" and not is_snapshot(document):
            outcome = asyncio.run(_kafka(parse_scenario(document, path.parent), args))
        else:
            outcome = simulate_document(document, path.parent, cycles=args.cycles)
    except (OSError, ScenarioFileError, ScenarioError, ConfError) as exc:
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
    from shared.bus.broker import start_broker  # noqa: PLC0415 - only without a broker given

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
