"""A full-mode scenario file: reading it, and the timed inputs it feeds the system.

The scenario file (YAML or JSON), beyond docs/design.md#scenarios:

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
when ``vcbus.io/exit-code`` is not 0 (docs/design.md#simulated-pods); without run-seconds they run
until their job ends or an event sets their phase.

A scenario without ``jobs`` but with ``podgroups`` or ``pods`` is a snapshot scenario
(:func:`is_snapshot`), read by ``vcbus.services.simulation.snapshot``. Running a scenario is
:mod:`vcbus.services.simulation.run`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import msgspec
import yaml

from vcbus.contracts import (
    Event,
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    QueueDeclared,
    derive_event_id,
    job_key,
    tag_of,
)
from vcbus.contracts.events.cluster_commands import (
    NodeAddRequested,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
    PodPhaseSetRequested,
)
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.manifests import ManifestError, read_priority_class
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.queue import Queue
from vcbus.core.runtime.settings import Settings
from vcbus.core.scheduling import scheduler
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.scheduler import conf_from_mapping
from vcbus.services.admission.core import queues_from_manifests
from vcbus.services.admission.fields import Shape, unknown_fields
from vcbus.services.cluster.nodes import NodesError, parse_nodes
from vcbus.services.simulation.inprocess import Input, Publish, SetPodPhase, Until
from vcbus.services.submission import records_for

DEFAULT_ACTIONS = "elect, enqueue, reserve, allocate, backfill"
"""The actions of a ``config`` that names none (split between the two services)."""
JOB_COMMANDS = (
    ("delete-job", JobDeleteRequested),
    ("abort-job", JobAbortRequested),
    ("resume-job", JobResumeRequested),
)
"""Scenario events that are a user's command on a job, and the command each sends."""


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


_JOB_ENTRY = Shape(frozenset({"at", "job", "file"}))
FULL_SHAPE = Shape(
    frozenset(
        {"nodes", "queues", "priorityClasses", "config", "cluster", "jobs", "events"}
        | {"until", "quiet", "limit"}
    ),
    {"jobs": _JOB_ENTRY, "cluster": Shape(frozenset({"startDelay"}))},
)
"""The keys of a full-mode scenario (and of its job entries and cluster options)."""
SNAPSHOT_SHAPE = Shape(
    frozenset(
        {"nodes", "queues", "podgroups", "pods", "priorityClasses", "reservation", "willBind"}
        | {"events", "config", "now", "step", "cycles"}
    )
)
"""The keys of a snapshot scenario: the snapshot's own (read by
:mod:`vcbus.core.scheduling.scenario_objects`) and the run's (read by
:mod:`vcbus.services.simulation.snapshot`); docs/design.md#scenarios."""


def check_keys(document: Mapping[str, object], name: str = "the file") -> None:
    """Refuse a document that is not a scenario, or one with a key no scenario has.

    A misspelt key would otherwise be ignored and the run would answer another question;
    each unknown key is named with the closest known one, in the words admission uses for
    a Job's unknown fields (:func:`vcbus.services.admission.fields.unknown_fields`).

    Raises:
        ScenarioFileError: naming what is wrong.
    """
    if not any(key in document for key in ("nodes", "jobs", "podgroups", "pods")):
        kind = document.get("kind")
        looks = f" (it is a {kind}: `vcbus submit` publishes one)" if isinstance(kind, str) else ""
        raise ScenarioFileError(
            f"{name} is not a scenario{looks}: a scenario has nodes and jobs, or nodes, "
            "podgroups and pods (see docs/simulate.md)"
        )
    shape = SNAPSHOT_SHAPE if is_snapshot(document) else FULL_SHAPE
    unknown = unknown_fields(document, shape)
    if unknown:
        raise ScenarioFileError("; ".join(field.message for field in unknown))


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
            try:
                name, value = read_priority_class(item)
            except ManifestError as exc:
                raise ScenarioFileError(exc.at(f"priorityClasses[{index}]")) from None
            out[name] = value
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
            event_id=_event_id(tag_of(PodPhaseSetRequested), pod, index),
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
            event_id=_event_id(tag_of(NodeAddRequested), node.name, index),
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
        return Publish(at=at, label=f"queue {queue.name}", events=(queue_event(queue, start),))
    raise ScenarioFileError(
        f"{where}: expected one of pod, add-node, cordon, uncordon, remove-node, delete-job, "
        "abort-job, resume-job, queue"
    )


def queue_event(queue: Queue, now: datetime) -> QueueDeclared:
    """The event declaring ``queue`` at ``now`` (its id derived from its content)."""
    content = msgspec.json.encode(queue).decode()
    return QueueDeclared(
        event_id=derive_event_id(tag_of(QueueDeclared), queue.name, content),
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
    return scheduler.split_conf(conf_from_mapping(raw, default_actions=DEFAULT_ACTIONS))


def conf_warnings(document: Mapping[str, object]) -> tuple[str, ...]:
    """What a scenario's ``config`` names that vcbus lacks and leaves out, one line each."""
    raw = document.get("config")
    if not isinstance(raw, Mapping):
        return ()
    return conf_from_mapping(raw, default_actions=DEFAULT_ACTIONS).skipped
