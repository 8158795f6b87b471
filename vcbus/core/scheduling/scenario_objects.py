"""Reading the objects of a docs/design.md#scenarios snapshot scenario document.

Each reader takes one entry of the document (a node, queue, PodGroup, pod or will-bind
reservation, as plain data) and returns the object it describes, or raises
``ScenarioError`` naming the entry. ``ClusterView.from_scenario`` puts them together.

A document holds ``nodes``, ``queues``, ``podgroups`` (optional ``firstSeen`` and, for a
dependent one, ``stages``: ``[{name, replicas, minAvailable, requests, nodeSelector,
tolerations, priority}]``), ``pods``, the optional ``reservation`` (``{target, locked,
electedAt, generation}``), ``willBind`` (``[{job, pods: [{task, index, node, requests}],
reservedAt, expiresAt, timedOut}]``) and ``priorityClasses``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TypeVar

import msgspec

from vcbus.contracts.events.capacity_reservations import ReservedPod
from vcbus.contracts.keys import JobKey, NodeName, job_key
from vcbus.contracts.manifests import ManifestError
from vcbus.contracts.objects.pod import Pod, PodPhase, Toleration
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase, StageTask
from vcbus.contracts.objects.queue import DEFAULT_QUEUE
from vcbus.contracts.quantity import parse_resources
from vcbus.core.scheduling.holds import Reservation, WillBind

T = TypeVar("T")


class ScenarioError(ValueError):
    """A snapshot scenario entry that cannot be read; the message names it."""


def as_list(raw: object, where: str) -> list[object]:
    """The list at ``where`` (absent: empty)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ScenarioError(f"{where} must be a list")
    return raw


def as_mapping(raw: object, where: str) -> Mapping[str, object]:
    """The mapping at ``where`` with string keys (absent: empty)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a mapping")
    return {str(k): v for k, v in raw.items()}


def _quantities(raw: object, where: str) -> dict[str, int]:
    values = as_mapping(raw, where)
    clean: dict[str, str | int | float] = {}
    for name, value in values.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ScenarioError(f"{where}.{name} must be a quantity, got {value!r}")
        clean[name] = value
    try:
        return parse_resources(clean)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def _str_map(raw: object, where: str) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(as_mapping(raw, where).items())}


def as_int(raw: object, where: str, default: int) -> int:
    """The integer at ``where`` (absent: ``default``)."""
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ScenarioError(f"{where} must be an integer, got {raw!r}")
    return raw


def read_manifest(reader: Callable[[object], T], raw: object, where: str) -> T:
    """Read a Kubernetes object with :mod:`vcbus.contracts.manifests`, naming its place on error."""
    try:
        return reader(raw)
    except ManifestError as exc:
        raise ScenarioError(exc.at(where)) from None


def _priority(raw: Mapping[str, object], classes: Mapping[str, object], where: str) -> int:
    if "priority" in raw and raw["priority"] is not None:
        return as_int(raw["priority"], f"{where} priority", 0)
    class_name = raw.get("priorityClassName")
    if isinstance(class_name, str) and class_name:
        if class_name not in classes:
            raise ScenarioError(f"{where}: unknown priorityClassName {class_name!r}")
        return as_int(classes[class_name], f"priorityClasses.{class_name}", 0)
    return 0


def as_timestamp(raw: object, where: str) -> datetime | None:
    """The time at ``where`` (absent: ``None``)."""
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw
    try:
        return msgspec.convert(str(raw), datetime)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"{where}: creationTimestamp {raw!r} is not a time") from exc


def read_podgroup(raw: object, classes: Mapping[str, object]) -> tuple[PodGroup, PodGroupPhase]:
    """A ``podgroups`` entry: the PodGroup and its phase."""
    entry = as_mapping(raw, "podgroups[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError("every podgroup needs a name")
    namespace = str(entry.get("namespace", "default") or "default")
    where = f"podgroup {namespace}/{name}"
    phase_text = str(entry.get("phase", PodGroupPhase.PENDING.value))
    try:
        phase = PodGroupPhase(phase_text)
    except ValueError as exc:
        raise ScenarioError(f"{where}: unknown phase {phase_text!r}") from exc
    min_task = {
        k: as_int(v, f"{where} minTaskMember.{k}", 0)
        for k, v in as_mapping(entry.get("minTaskMember"), f"{where} minTaskMember").items()
    }
    pg = PodGroup(
        name=name,
        namespace=namespace,
        job=job_key(namespace, name),
        queue=str(entry.get("queue", DEFAULT_QUEUE) or DEFAULT_QUEUE),
        min_member=as_int(entry.get("minMember"), f"{where} minMember", 0),
        min_task_member=dict(sorted(min_task.items())),
        min_resources=_quantities(entry.get("minResources"), f"{where} minResources"),
        priority=_priority(entry, classes, where),
        priority_class_name=str(entry.get("priorityClassName", "") or ""),
        annotations=_str_map(entry.get("annotations"), f"{where} annotations"),
        dependent=bool(entry.get("dependent", False)),
        uid=str(entry.get("uid", "") or f"{namespace}-{name}"),
        creation_timestamp=as_timestamp(entry.get("creationTimestamp"), where),
        stages=tuple(
            _stage(raw_stage, classes, where)
            for raw_stage in as_list(entry.get("stages"), f"{where} stages")
        ),
    )
    return pg, phase


def _stage(raw: object, classes: Mapping[str, object], where: str) -> StageTask:
    entry = as_mapping(raw, f"{where} stages[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError(f"{where}: every stage needs a name")
    where = f"{where} stage {name}"
    replicas = as_int(entry.get("replicas"), f"{where} replicas", 1)
    return StageTask(
        name=name,
        replicas=replicas,
        min_available=as_int(entry.get("minAvailable"), f"{where} minAvailable", replicas),
        requests=_quantities(entry.get("requests"), f"{where} requests"),
        node_selector=_str_map(entry.get("nodeSelector"), f"{where} nodeSelector"),
        tolerations=_tolerations(entry.get("tolerations"), where),
        priority=_priority(entry, classes, where)
        if ("priority" in entry or "priorityClassName" in entry)
        else 1,
    )


def _tolerations(raw: object, where: str) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            **{
                k: str(v)
                for k, v in as_mapping(t, f"{where} toleration").items()
                if k in ("key", "operator", "value", "effect")
            }
        )
        for t in as_list(raw, f"{where} tolerations")
    )


def read_will_bind(raw: object, podgroups: Mapping[JobKey, PodGroup]) -> WillBind:
    """A ``willBind`` entry; its PodGroup's name and uid default to those in ``podgroups``."""
    entry = as_mapping(raw, "willBind[]")
    job = JobKey(str(entry.get("job", "")))
    if "/" not in job:
        raise ScenarioError(f"willBind: job must be namespace/name, got {job!r}")
    where = f"willBind {job}"
    pods = []
    for raw_pod in as_list(entry.get("pods"), f"{where} pods"):
        pod = as_mapping(raw_pod, f"{where} pods[]")
        task = str(pod.get("task", ""))
        node = str(pod.get("node", ""))
        if not task or not node:
            raise ScenarioError(f"{where}: every pod needs a task and a node")
        pods.append(
            ReservedPod(
                task=task,
                index=as_int(pod.get("index"), f"{where} {task} index", 0),
                node=NodeName(node),
                requests=_quantities(pod.get("requests"), f"{where} {task} requests"),
            )
        )
    group = podgroups.get(job)
    return WillBind(
        job=job,
        podgroup=str(entry.get("podgroup", "") or (group.name if group else "")),
        uid=str(entry.get("uid", "") or (group.uid if group else "")),
        pods=tuple(sorted(pods, key=lambda p: (p.task, p.index))),
        reserved_at=as_timestamp(entry.get("reservedAt"), f"{where} reservedAt"),
        expires_at=as_timestamp(entry.get("expiresAt"), f"{where} expiresAt"),
        timed_out=bool(entry.get("timedOut", False)),
    )


def read_reservation(raw: object) -> Reservation | None:
    """The ``reservation`` entry, or ``None`` when the document has none."""
    reservation = as_mapping(raw, "reservation")
    if not reservation:
        return None
    target = reservation.get("target")
    locked = as_list(reservation.get("locked"), "reservation.locked")
    generation = as_int(reservation.get("generation"), "reservation.generation", 1)
    return Reservation(
        target_job=JobKey(str(target)) if target else None,
        locked_nodes=frozenset(str(n) for n in locked),
        elected_at=as_timestamp(reservation.get("electedAt"), "reservation.electedAt"),
        generation=generation if target else 0,
    )


def pod_index(name: str) -> int:
    """Return a pod's index from its name: the last ``-`` segment when the name has ≥ 3."""
    parts = name.split("-")
    if len(parts) >= 3 and parts[-1].isdigit():
        return int(parts[-1])
    return 0


def read_pod(raw: object, classes: Mapping[str, object]) -> tuple[Pod, PodPhase, str | None]:
    """A ``pods`` entry: the pod, its phase and its node (if any)."""
    entry = as_mapping(raw, "pods[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError("every pod needs a name")
    namespace = str(entry.get("namespace", "default") or "default")
    where = f"pod {namespace}/{name}"
    group = str(entry.get("podgroup", "") or "")
    if not group:
        raise ScenarioError(f"{where}: podgroup is required")
    phase_text = str(entry.get("phase", PodPhase.PENDING.value))
    try:
        phase = PodPhase(phase_text)
    except ValueError as exc:
        raise ScenarioError(f"{where}: unknown phase {phase_text!r}") from exc
    node = entry.get("node")
    tolerations = _tolerations(entry.get("tolerations"), where)
    pod = Pod(
        name=name,
        namespace=namespace,
        job=job_key(namespace, group),
        task=str(entry.get("task", "") or ""),
        index=as_int(entry.get("index"), f"{where} index", pod_index(name)),
        podgroup=group,
        uid=str(entry.get("uid", "") or f"{namespace}-{name}"),
        queue=str(entry.get("queue", DEFAULT_QUEUE) or DEFAULT_QUEUE),
        requests=_quantities(entry.get("requests"), f"{where} requests"),
        priority=_priority(entry, classes, where)
        if ("priority" in entry or "priorityClassName" in entry)
        else 1,
        node_selector=_str_map(entry.get("nodeSelector"), f"{where} nodeSelector"),
        tolerations=tolerations,
        annotations=_str_map(entry.get("annotations"), f"{where} annotations"),
        creation_timestamp=as_timestamp(entry.get("creationTimestamp"), where),
    )
    return pod, phase, (str(node) if node else None)
