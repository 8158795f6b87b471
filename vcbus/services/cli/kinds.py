"""The kinds ``vcbus get`` lists (jobs, podgroups, pods, nodes, queues): their rows and table.

Each ``*_rows`` function folds the status store (``vcbus.services.cli.status_store``) into one
:class:`~vcbus.services.cli.listing.Row` per thing asked for: its table cells, its ``-o wide``
cells, and its object for ``-o json|yaml``. ``KINDS`` names each kind's topics and header;
``ALIASES`` the other names a kind answers to. No I/O here.
"""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts import (
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupUpdated,
    QueueDeclared,
    Topic,
    split_key,
)
from vcbus.contracts.objects import DEFAULT_QUEUE, Queue, QueueState
from vcbus.contracts.quantity import format_quantity
from vcbus.core.views.age import human_duration, time_left
from vcbus.core.views.node_health import NodeHealth
from vcbus.core.views.read_model import JOB_TOPICS, POD_TOPICS
from vcbus.core.views.units import show_resources
from vcbus.services.cli.admissible import INADMISSIBLE, inadmissible
from vcbus.services.cli.listing import Kind, Object, Query, Row
from vcbus.services.cli.status_store import (
    UNNAMED,
    StatusStore,
    pending_reasons,
    podgroup_phase_of,
    reason_of,
)
from vcbus.services.cli.usage import node_of, used_by_node, used_by_queue

# -- jobs ---------------------------------------------------------------------------------


def job_object(store: StatusStore, key: str) -> Object | None:
    """What is known of one job, as an object (``None``: unknown or deleted)."""
    status = store.get(Topic.JOBS_STATUS, key)
    rejected = store.get(Topic.JOBS_REJECTED, key)
    if isinstance(rejected, JobRejected) and (
        not isinstance(status, JobStatusChanged | JobDeleted)
        or rejected.occurred_at > status.occurred_at
    ):
        namespace, name = split_key(key) if rejected.job else ("", key)
        first = rejected.violations[0] if rejected.violations else None
        return {
            "namespace": namespace,
            "name": name,
            "creationTimestamp": _timestamp(rejected.occurred_at),
            "phase": "Rejected",
            "reason": first.reason if first else "",
            "message": first.message if first else "",
            "violations": [
                {"path": v.path, "reason": v.reason, "message": v.message}
                for v in rejected.violations
            ],
            "violationsOmitted": rejected.violations_omitted,
            "traceId": store.trace_id(Topic.JOBS_REJECTED, key),
        }
    if not isinstance(status, JobStatusChanged):
        return None
    namespace, name = split_key(key)
    admitted = store.get(Topic.JOBS_ADMITTED, key)
    job = admitted.manifest if isinstance(admitted, JobAdmitted) else None
    reasons = pending_reasons(store, key) if status.phase == "Pending" else []
    why = reason_of(store, key, status)
    return {
        "namespace": namespace,
        "name": name,
        "queue": (job.spec.queue or DEFAULT_QUEUE) if job else "",
        "priorityClassName": job.spec.priority_class_name if job else "",
        "creationTimestamp": _timestamp(job.metadata.creation_timestamp if job else None),
        "phase": str(status.phase),
        "podGroupPhase": podgroup_phase_of(store, key),
        "minAvailable": status.min_available,
        "pending": status.pending,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "terminating": status.terminating,
        "unknown": status.unknown,
        "retryCount": status.retry_count,
        "tasks": {
            task: {
                "pending": c.pending,
                "running": c.running,
                "succeeded": c.succeeded,
                "failed": c.failed,
                "unknown": c.unknown,
            }
            for task, c in status.task_status_count.items()
        },
        "reason": why.code if why else "",
        "message": why.message if why else "",
        "admission": INADMISSIBLE if inadmissible(reasons) else "",
        "traceId": status.trace_id or store.trace_id(Topic.JOBS_STATUS, key),
    }


def _timestamp(at: datetime | None) -> str:
    return at.isoformat() if at else ""


def job_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get jobs``: one row per job."""
    keys = set(store.latest[Topic.JOBS_STATUS]) | set(store.latest[Topic.JOBS_REJECTED])
    nodes: dict[str, set[str]] = {}
    for pod in store.pods.values():
        if pod.node:
            nodes.setdefault(pod.job, set()).add(pod.node)
    out: dict[str, Row] = {}
    for key in query.select(keys):
        if not query.matches(key) or is_unnamed(key):
            continue
        obj = job_object(store, key)
        if obj is None:
            continue
        reason = str(obj["reason"])
        if reason == obj["phase"]:
            reason = ""
        cells = (
            str(obj["namespace"]),
            str(obj["name"]),
            str(obj["phase"]),
            str(obj.get("podGroupPhase", "")),
            *(str(obj.get(f, "")) for f in ("minAvailable", "pending", "running", "succeeded")),
            str(obj.get("failed", "")),
            reason,
        )
        wide = (
            str(obj.get("queue") or "-"),
            str(obj.get("priorityClassName") or "-"),
            ",".join(sorted(nodes.get(key, ()))) or "-",
        )
        created = str(obj.get("creationTimestamp") or "")
        out[key] = Row(cells, obj, wide, datetime.fromisoformat(created) if created else None)
    return out


def is_unnamed(key: str) -> bool:
    """Whether ``key`` is a rejected record's that named no job (the store's own name)."""
    return key.startswith(UNNAMED)


UNNAMED_HEADER = ("ORIGIN", "AGE", "REASON", "MESSAGE")
"""The table of rejected records that name no job, under their own heading in ``get jobs``."""


def unnamed_rejections(store: StatusStore, now: datetime) -> list[tuple[tuple[str, ...], Object]]:
    """The rejected records that name no job: each one's cells and object, oldest first.

    They belong to no namespace, so ``get jobs`` shows them once, apart from the jobs.
    """
    out: list[tuple[datetime, tuple[str, ...], Object]] = []
    for key in store.keys(Topic.JOBS_REJECTED):
        rejected = store.get(Topic.JOBS_REJECTED, key)
        if not is_unnamed(key) or not isinstance(rejected, JobRejected):
            continue
        origin = rejected.origin
        where = f"{origin.topic}/{origin.partition}:{origin.offset}" if origin else key
        first = rejected.violations[0] if rejected.violations else None
        obj: Object = {
            "origin": where,
            "rejectedAt": _timestamp(rejected.occurred_at),
            "reason": first.reason if first else "",
            "message": first.message if first else "",
            "traceId": store.trace_id(Topic.JOBS_REJECTED, key),
        }
        age = human_duration(max((now - rejected.occurred_at).total_seconds(), 0.0))
        cells = (where, age, str(obj["reason"]), str(obj["message"]))
        out.append((rejected.occurred_at, cells, obj))
    out.sort(key=lambda item: item[0])
    return [(cells, obj) for _, cells, obj in out]


# -- podgroups ----------------------------------------------------------------------------


def podgroup_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get podgroups``: one row per PodGroup (keyed by its job)."""
    out: dict[str, Row] = {}
    for key in query.select(store.latest[Topic.PODGROUPS]):
        spec = store.get(Topic.PODGROUPS, key)
        if not isinstance(spec, PodGroupCreated | PodGroupUpdated) or not query.matches(key):
            continue
        group = spec.podgroup
        phase = podgroup_phase_of(store, key)
        reasons = pending_reasons(store, key) if phase in ("Pending", "Inqueue") else []
        allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
        obj: Object = {
            "namespace": group.namespace,
            "name": group.name,
            "job": group.job,
            "queue": group.queue,
            "minMember": group.min_member,
            "minTaskMember": dict(group.min_task_member),
            "minResources": {k: format_quantity(k, v) for k, v in group.min_resources.items()},
            "priority": group.priority,
            "creationTimestamp": _timestamp(group.creation_timestamp),
            "phase": phase,
            "reason": reasons[0].code if reasons else "",
            "message": reasons[0].message if reasons else "",
            "conditions": [
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                for c in (
                    allocator.conditions if isinstance(allocator, PodGroupConditionsChanged) else ()
                )
            ],
        }
        cells = (
            group.namespace,
            group.name,
            group.job,
            group.queue,
            str(group.min_member),
            phase,
            str(obj["reason"]),
        )
        wide = (str(group.priority), show_resources(group.min_resources))
        out[key] = Row(cells, obj, wide, group.creation_timestamp)
    return out


# -- pods ---------------------------------------------------------------------------------


def pod_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get pods``: one row per pod."""
    out: dict[str, Row] = {}
    for key in query.select(store.pods):
        pod = store.pods[key]
        if not (query.matches(key) or (query.names and query.matches(pod.job))):
            continue
        namespace, name = split_key(key)
        obj: Object = {
            "namespace": namespace,
            "name": name,
            "job": pod.job,
            "task": pod.task,
            "phase": pod.phase,
            "node": pod.node,
            "uid": pod.uid,
            "hostIP": pod.host_ip,
            "restarts": pod.restarts,
            "exitCode": pod.exit_code,
            "reason": pod.reason,
            "message": pod.message,
        }
        wide = (
            pod.host_ip or "-",
            str(pod.restarts),
            "-" if pod.exit_code is None else str(pod.exit_code),
            pod.reason or "-",
        )
        out[key] = Row(
            (namespace, name, pod.job, pod.task, pod.phase, pod.node or "-"), obj, wide=wide
        )
    return out


# -- nodes --------------------------------------------------------------------------------


def node_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get nodes``: offered, held, free, pods, lock holder and end (json: why)."""
    used = used_by_node(store)
    out: dict[str, Row] = {}
    for name in store.keys(Topic.NODES):
        node = node_of(store, name)
        if node is None or not query.matches(name):
            continue
        health = store.node_health(name)
        allocatable = {k: format_quantity(k, v) for k, v in node.allocatable.items()}
        held = used.get(name, {})
        free = {k: v - held.get(k, 0) for k, v in node.allocatable.items()}
        shown = ("cpu", "memory", *sorted(set(node.allocatable) - {"cpu", "memory", "pods"}))
        pods = held.get("pods", 0)
        reservation = store.reservation
        locked = reservation.locks.get(name, "")
        until = reservation.until.isoformat() if locked and reservation.until is not None else ""
        obj: Object = {
            "name": name,
            "allocatable": allocatable,
            "allocated": {k: format_quantity(k, v) for k, v in held.items() if k != "pods"},
            "free": {k: format_quantity(k, v) for k, v in free.items() if k != "pods"},
            "labels": dict(node.labels),
            "unschedulable": node.unschedulable,
            "pods": pods,
            "lockedFor": locked,
            "lockReason": reservation.lock_reasons.get(name, "") if locked else "",
            "lockedUntil": until,
            "ready": str(health.readiness),
            "heartbeat": _heartbeat_object(health),
        }
        expires = (
            time_left(reservation.until, store.now())
            if locked and reservation.until is not None
            else "-"
        )
        cells = (
            name,
            health.status(unschedulable=node.unschedulable),
            show_resources(node.allocatable, shown),
            show_resources(held, shown),
            show_resources(free, shown),
            f"{pods}/{node.allocatable['pods']}" if "pods" in node.allocatable else str(pods),
            locked or "-",
            expires,
        )
        out[name] = Row(
            cells,
            obj,
            wide=(
                health.heartbeat_text(),
                health.limits_column(),
                node.labels.get("vcbus.io/runtime", "-"),
            ),
        )
    return out


def _heartbeat_object(health: NodeHealth) -> Object | None:
    """A real node's newest heartbeat as an object; ``None`` for a simulated node."""
    beat = health.heartbeat
    if beat is None:
        return None
    return {
        "at": beat.at.isoformat(),
        "ageSeconds": round(health.age_seconds or 0.0, 3),
        "intervalSeconds": beat.interval_seconds,
        "limitsEnforced": beat.limits_enforced,
    }


# -- queues -------------------------------------------------------------------------------


def queue_rows(store: StatusStore, query: Query) -> dict[str, Row]:
    """``vcbus get queues``: weight, share, state, parent, capability, allocated, PodGroups.

    Allocated is what the queue's jobs' pods hold; PodGroups (one per job) are counted by
    phase. The share is the queue's weight over the weights of every open queue: what the
    proportion plugin deserves it, before capability and guarantee.
    """
    queues: dict[str, Queue] = {DEFAULT_QUEUE: Queue(name=DEFAULT_QUEUE)}
    for name in store.keys(Topic.QUEUES):
        event = store.get(Topic.QUEUES, name)
        if isinstance(event, QueueDeclared):
            queues[name] = event.queue
        elif name != DEFAULT_QUEUE:
            queues.pop(name, None)
    phases: dict[str, dict[str, int]] = {}
    for key in store.keys(Topic.PODGROUPS):
        spec = store.get(Topic.PODGROUPS, key)
        if not isinstance(spec, PodGroupCreated | PodGroupUpdated):
            continue
        phase = podgroup_phase_of(store, key)
        counts = phases.setdefault(spec.podgroup.queue, {})
        counts[phase] = counts.get(phase, 0) + 1
    held = used_by_queue(store)
    open_weight = sum(q.weight for q in queues.values() if q.state is QueueState.OPEN) or 1
    out: dict[str, Row] = {}
    for name in sorted(queues):
        if not query.matches(name):
            continue
        queue, counts = queues[name], phases.get(name, {})
        share = round(100 * queue.weight / open_weight) if queue.state is QueueState.OPEN else 0
        allocated = held.get(name, {})
        obj: Object = {
            "name": name,
            "weight": queue.weight,
            "share": share,
            "state": str(queue.state),
            "parent": queue.parent,
            "priority": queue.priority,
            "capability": {k: format_quantity(k, v) for k, v in queue.capability.items()},
            "guarantee": {k: format_quantity(k, v) for k, v in queue.guarantee.items()},
            "allocated": {k: format_quantity(k, v) for k, v in allocated.items()},
            "podGroups": dict(sorted(counts.items())),
        }
        cells = (
            name,
            str(queue.weight),
            f"{share}%",
            str(queue.state),
            queue.parent or "-",
            show_resources(queue.capability),
            show_resources(allocated, ("cpu", "memory")),
            *(str(counts.get(p, 0)) for p in ("Pending", "Inqueue", "Running", "Completed")),
        )
        out[name] = Row(cells, obj)
    return out


KINDS: dict[str, Kind] = {
    "jobs": Kind(
        "jobs",
        JOB_TOPICS,
        (
            "NAMESPACE",
            "NAME",
            "PHASE",
            "PODGROUP",
            "MIN",
            "PENDING",
            "RUNNING",
            "SUCCEEDED",
            "FAILED",
            "REASON",
        ),
        job_rows,
        job_keyed=True,
        incremental=True,
        wide_header=("QUEUE", "PRIORITY", "NODES"),
        wide_topics=(Topic.PODS, Topic.PODS_STATUS),
        aged=True,
    ),
    "podgroups": Kind(
        "podgroups",
        (Topic.PODGROUPS, Topic.PODGROUPS_STATUS, Topic.PODGROUPS_CONDITIONS),
        ("NAMESPACE", "NAME", "JOB", "QUEUE", "MINMEMBER", "PHASE", "REASON"),
        podgroup_rows,
        job_keyed=True,
        incremental=True,
        wide_header=("PRIORITY", "MINRESOURCES"),
        aged=True,
    ),
    "pods": Kind(
        "pods",
        POD_TOPICS,
        ("NAMESPACE", "NAME", "JOB", "TASK", "PHASE", "NODE"),
        pod_rows,
        incremental=True,
        wide_header=("IP", "RESTARTS", "EXIT CODE", "REASON"),
    ),
    "nodes": Kind(
        "nodes",
        (Topic.NODES, *POD_TOPICS, Topic.RESERVATIONS),
        ("NAME", "STATUS", "ALLOCATABLE", "ALLOCATED", "FREE", "PODS", "LOCKED FOR", "EXPIRES"),
        node_rows,
        wide_header=("HEARTBEAT", "LIMITS", "RUNTIME"),
        state="STATUS",
    ),
    "queues": Kind(
        "queues",
        (
            Topic.QUEUES,
            Topic.PODGROUPS,
            Topic.PODGROUPS_STATUS,
            Topic.PODS,
            Topic.BINDINGS,
            Topic.PODS_STATUS,
        ),
        (
            "NAME",
            "WEIGHT",
            "SHARE",
            "STATE",
            "PARENT",
            "CAPABILITY",
            "ALLOCATED",
            "PENDING",
            "INQUEUE",
            "RUNNING",
            "COMPLETED",
        ),
        queue_rows,
        state="STATE",
    ),
}

ALIASES = {
    "job": "jobs",
    "vcjob": "jobs",
    "vcjobs": "jobs",
    "vcj": "jobs",
    "podgroup": "podgroups",
    "pg": "podgroups",
    "pod": "pods",
    "po": "pods",
    "node": "nodes",
    "no": "nodes",
    "queue": "queues",
    "q": "queues",
}
"""Singular names and kubectl's short names (Volcano's CRDs: ``vcjob``/``vcj``, ``pg``, ``q``)."""

ALL = ("jobs", "podgroups", "pods")
"""What ``vcbus get all`` lists, as kubectl's ``all`` lists a namespace's workloads (not
nodes, nor the cluster-wide queues)."""
