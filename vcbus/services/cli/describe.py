"""``vcbus describe job NAME``: everything known of one job, and why it waits.

It shows the phase and per-task counts, the PodGroup and its phase, the highest-ranked
pending reason with its message (docs/design.md#pending-reasons) and the other candidates, every
condition with where it was read, the nodes locked for the job (or the reservation it waits behind),
its pods, its will-bind reservation (capacity held for its later dependsOn stages), and its
trace id with a link to Jaeger (``VCBUS_JAEGER_URL``), and ends with the job's Events
(:mod:`vcbus.core.views.events`: newest last, with ages); a waiting job's place in its queue,
and ``Inadmissible`` when its reason says it cannot be enqueued as it is
(:mod:`vcbus.services.cli.admissible`). Only the job's own partition of the job-keyed topics is
read, but for the PodGroups (read whole, for the place in the queue) and the nodes (a pod
on a NotReady node, or on one whose limits are not enforced, says so).

``vcbus describe node NAME`` is :mod:`vcbus.services.cli.describe_node`'s, ``describe
pod|podgroup|queue`` :mod:`vcbus.services.cli.describe_kinds`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from datetime import datetime

from vcbus.contracts import (
    CapacityReleased,
    CapacityReserved,
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    NominationEnded,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    PodsNominated,
    Topic,
    split_key,
)
from vcbus.contracts.objects import Condition, JobPhase, JobSpec
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import Record
from vcbus.core.reasons import EVICTION_CONDITIONS
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.views.age import age
from vcbus.core.views.events import MAX_EVENTS, JobEvent, events_lines, job_events
from vcbus.core.views.failures import (
    DEFAULT_MAX_RETRY,
    Failures,
    acting_policies,
    job_failures,
)
from vcbus.core.views.read_model import JOB_KEYED_TOPICS
from vcbus.core.views.units import show_resources
from vcbus.services.cli import terminal
from vcbus.services.cli.admissible import INADMISSIBLE, inadmissible, place_in_queue
from vcbus.services.cli.describe_kinds import DESCRIBED, SINGULAR, describe_kind
from vcbus.services.cli.describe_layout import field as _field
from vcbus.services.cli.describe_layout import table as _table
from vcbus.services.cli.describe_node import NODE_KINDS, describe_node_on, node_cell
from vcbus.services.cli.status_store import (
    StatusStore,
    add_verbose,
    job_trace_id,
    pending_reasons,
    podgroup_phase_of,
    read_store,
    reason_of,
)

DEFAULT_JAEGER_URL = "http://localhost:16686"

TOPICS = (*JOB_KEYED_TOPICS, Topic.NODES)
"""What ``describe job`` reads: the job-keyed topics on the job's partition, but these whole:
the reservation (the target may be another job), the PodGroups (the job's place in its
queue) and the nodes (whether its pods' nodes are Ready)."""

_WAITING = frozenset({JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})
"""The phases in which a job may wait for something (and ``describe`` says what)."""

JOB_KINDS = ("job", "jobs", "vcjob", "vcjobs", "vcj")

DELETED_LINE = f"{'Phase:':<18}Deleted"
"""The phase line of a deleted job's last state."""

WHOLE = frozenset({Topic.RESERVATIONS, Topic.PODGROUPS, Topic.PODGROUPS_STATUS, Topic.NODES})


def jaeger_link(base: str, trace_id: str) -> str:
    """The Jaeger UI page of a trace."""
    return f"{base.rstrip('/')}/trace/{trace_id}"


def _conditions(source: str, conditions: Sequence[Condition]) -> list[tuple[str, ...]]:
    return [(source, c.type, c.status, c.reason, c.message) for c in conditions]


def describe_job(
    store: StatusStore,
    key: str,
    *,
    jaeger_url: str,
    events: Sequence[JobEvent] = (),
    failures: Failures | None = None,
    now: datetime | None = None,
) -> str | None:
    """The description of job ``key`` as text (``None`` when the job is unknown).

    Args:
        store: the status read from the job's partition (and the reservation).
        key: the job key.
        jaeger_url: the Jaeger UI's base address.
        events: the job's events, oldest first (:func:`vcbus.core.views.events.job_events`).
        failures: its failed pods and the policies that acted
            (:func:`vcbus.core.views.failures.job_failures`).
        now: the time the events' ages are counted to.

    Returns:
        The description, ending with a newline.
    """
    admitted = store.get(Topic.JOBS_ADMITTED, key)
    status = store.get(Topic.JOBS_STATUS, key)
    rejected = store.get(Topic.JOBS_REJECTED, key)
    namespace, name = split_key(key)
    if isinstance(rejected, JobRejected) and (
        not isinstance(status, JobStatusChanged | JobDeleted)
        or rejected.occurred_at > status.occurred_at
    ):
        lines = [_field("Name", name), _field("Namespace", namespace), _field("Phase", "Rejected")]
        lines.append("Violations:")
        lines += _table(
            ("PATH", "REASON", "MESSAGE"),
            [(v.path, v.reason, v.message) for v in rejected.violations],
        )
        if rejected.violations_omitted:
            lines.append(f"  … and {rejected.violations_omitted} more, not listed")
        lines += _trace(store.trace_id(Topic.JOBS_REJECTED, key), jaeger_url)
        lines += _events(events, now)
        return "\n".join(lines) + "\n"
    if not isinstance(status, JobStatusChanged) and not isinstance(admitted, JobAdmitted):
        return None
    lines = [_field("Name", name), _field("Namespace", namespace)]
    spec = admitted.manifest.spec if isinstance(admitted, JobAdmitted) else None
    if isinstance(status, JobDeleted):
        lines.append(DELETED_LINE)
    elif isinstance(status, JobStatusChanged):
        lines.append(_field("Phase", status.phase))
    else:
        lines.append(_field("Phase", "Admitted"))
    if spec is not None:
        lines.append(_field("Queue", spec.queue or "default"))
    if isinstance(status, JobStatusChanged):
        lines.append(_field("Min Available", status.min_available))
        lines.append(_field("Retry Count", status.retry_count))
        lines.append(_field("Pod Counts", _counts(status)))
    lines += _tasks(spec, status)
    lines += _podgroup(store, key)
    lines += _reasons(store, key, status)
    lines += _place(store, key)
    lines += _all_conditions(store, key, status)
    lines += _reservation(store, key)
    lines += _will_bind(store, key)
    lines += _preemption(store, key, status)
    lines += _pods(store, key)
    retried = status.retry_count if isinstance(status, JobStatusChanged) else 0
    lines += failure_lines(failures, now, spec, retried)
    shown = status if isinstance(status, JobStatusChanged) else None
    lines += _trace(job_trace_id(store, key, shown), jaeger_url)
    lines += _events(events, now)
    return "\n".join(lines) + "\n"


def _counts(status: JobStatusChanged) -> str:
    names = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
    return ", ".join(f"{getattr(status, n)} {n}" for n in names if getattr(status, n)) or "none"


def _tasks(spec: JobSpec | None, status: object) -> list[str]:
    counts = status.task_status_count if isinstance(status, JobStatusChanged) else {}
    tasks = spec.tasks if spec is not None else ()
    names = [t.name for t in tasks] + sorted(n for n in counts if n not in {t.name for t in tasks})
    if not names:
        return []
    by_name = {t.name: t for t in tasks}
    rows = []
    for task in names:
        c = counts.get(task)
        spec_task = by_name.get(task)
        replicas = str(spec_task.replicas) if spec_task else "-"
        minimum = spec_task.min_available if spec_task else None
        numbers = (c.pending, c.running, c.succeeded, c.failed) if c else (0, 0, 0, 0)
        rows.append((task, replicas, "-" if minimum is None else str(minimum), *map(str, numbers)))
    header = ("NAME", "REPLICAS", "MIN", "PENDING", "RUNNING", "SUCCEEDED", "FAILED")
    return ["Tasks:", *_table(header, rows)]


def _podgroup(store: StatusStore, key: str) -> list[str]:
    spec = store.get(Topic.PODGROUPS, key)
    status = store.get(Topic.PODGROUPS_STATUS, key)
    if not isinstance(spec, PodGroupCreated | PodGroupUpdated) and not isinstance(
        status, PodGroupPhaseChanged
    ):
        return [_field("PodGroup", "<not created yet>")]
    lines = ["PodGroup:"]
    if isinstance(spec, PodGroupCreated | PodGroupUpdated):
        group = spec.podgroup
        lines.append(_field("Name", group.name, 2))
        lines.append(_field("Queue", group.queue, 2))
        lines.append(_field("Min Member", group.min_member, 2))
        if group.min_task_member:
            task_minimums = ", ".join(f"{t}={n}" for t, n in group.min_task_member.items())
            lines.append(_field("Min Task Member", task_minimums, 2))
        if group.min_resources:
            resources = show_resources(group.min_resources, group.min_resources)
            lines.append(_field("Min Resources", resources, 2))
    lines.append(_field("Phase", podgroup_phase_of(store, key), 2))
    return lines


def _reasons(store: StatusStore, key: str, status: object) -> list[str]:
    """Why the job waits (:func:`~vcbus.core.views.reason.job_reason`), and the others."""
    if not isinstance(status, JobStatusChanged) or status.phase not in _WAITING:
        return []
    why = reason_of(store, key, status)
    reasons = pending_reasons(store, key)
    if why is None or (status.phase != JobPhase.PENDING and not reasons):
        return []
    lines = [_field("Pending Reason", why.code), _field("Message", why.message, 2)]
    if not reasons:
        return lines
    never = inadmissible(reasons)
    if never is not None:
        lines.insert(0, _field("Admission", f"{INADMISSIBLE} ({never.code})"))
    lines.append(_field("From", why.source, 2))
    lines += [_field("Also", f"{r.code}: {r.message} ({r.source})", 2) for r in reasons if r != why]
    return lines


def _place(store: StatusStore, key: str) -> list[str]:
    place = place_in_queue(store, key)
    if place is None:
        return []
    where = f"{place.position} of {place.waiting} waiting in queue {place.queue}"
    return [_field("Queue Position", where)]


def _all_conditions(store: StatusStore, key: str, status: object) -> list[str]:
    rows: list[tuple[str, ...]] = []
    if isinstance(status, JobStatusChanged):
        rows += _conditions("jobs.status", status.conditions)
    podgroup = store.get(Topic.PODGROUPS_STATUS, key)
    if isinstance(podgroup, PodGroupPhaseChanged):
        rows += _conditions("podgroups.status", podgroup.conditions)
    allocator = store.get(Topic.PODGROUPS_CONDITIONS, key)
    if isinstance(allocator, PodGroupConditionsChanged):
        rows += _conditions("podgroups.conditions", allocator.conditions)
    if not rows:
        return []
    return ["Conditions:", *_table(("SOURCE", "TYPE", "STATUS", "REASON", "MESSAGE"), rows)]


def _reservation(store: StatusStore, key: str) -> list[str]:
    reservation = store.reservation
    locked = reservation.locked_for(key)
    lines = [_field("Locked Nodes", ", ".join(locked) if locked else "<none>")]
    target = reservation.target
    until = f" until {reservation.until.isoformat()}" if reservation.until is not None else ""
    if target and target != key:
        lines.append(_field("Reservation", f"nodes are reserved for {target}{until}"))
    elif target == key:
        why = f" ({reservation.why})" if reservation.why else ""
        lines.append(_field("Reservation", f"this job is the target{why}{until}"))
    return lines


def _will_bind(store: StatusStore, key: str) -> list[str]:
    """The capacity the allocator holds for the job's later stages (will-bind), if any."""
    event = store.get(Topic.CAPACITY_RESERVATIONS, key)
    if not isinstance(event, CapacityReserved | CapacityReleased):
        return []
    if event.held:
        pods = ", ".join(f"{p.task}-{p.index} on {p.node}" for p in event.held)
        until = f" (until {event.expires_at.isoformat()})" if event.expires_at else ""
        return [_field("Will-Bind", f"{pods}{until}")]
    if isinstance(event, CapacityReleased):
        return [_field("Will-Bind", f"released: {event.reason}: {event.message}")]
    return []


def _preemption(store: StatusStore, key: str, status: object) -> list[str]:
    """Both sides of preempt and reclaim: who took this job's pods, and what it waits for."""
    lines = []
    if isinstance(status, JobStatusChanged):
        lines += [
            _field(c.type, c.message) for c in status.conditions if c.type in EVICTION_CONDITIONS
        ]
    event = store.get(Topic.CAPACITY_RESERVATIONS, key)
    if isinstance(event, PodsNominated):
        pods = ", ".join(f"{p.pod} on {p.node}" for p in event.pods)
        victims = ", ".join(event.victims) or "-"
        lines.append(
            _field("Nominated", f"{pods} ({event.reason}; until {event.until.isoformat()})")
        )
        lines.append(_field("Victims", victims, 2))
    elif isinstance(event, NominationEnded):
        lines.append(_field("Nominated", f"ended: {event.reason}: {event.message}"))
    return lines


def _pods(store: StatusStore, key: str) -> list[str]:
    rows = [
        (split_key(pod_key)[1], pod.task, pod.phase, node_cell(store, pod.node))
        for pod_key, pod in sorted(store.pods.items())
        if pod.job == key
    ]
    if not rows:
        return []
    return ["Pod List:", *_table(("NAME", "TASK", "PHASE", "NODE"), rows)]


def failure_lines(
    failures: Failures | None, now: datetime | None, spec: JobSpec | None = None, retried: int = 0
) -> list[str]:
    """Why the job failed or restarted: failed pods, the policies that matched, what acted.

    The pods that failed, the lifecycle policies that matched them (with ``maxRetry``), and
    the phases the job-controller moved the job into, with its reasons.

    Nothing for a job none of whose pods failed and that no policy restarted, aborted or
    failed.
    """
    if failures is None:
        return []
    actions = [a for a in failures.actions if a.phase != JobPhase.COMPLETING]
    if not failures.pods and not actions:
        return []
    lines: list[str] = []
    if failures.pods:
        rows = [
            (
                split_key(failure.pod)[1],
                failure.task,
                "-" if failure.index is None else str(failure.index),
                failure.node or "-",
                "-" if failure.exit_code is None else str(failure.exit_code),
                failure.reason or "-",
                age(failure.at, now or failure.at),
                failure.message[:80] or "-",
            )
            for failure in failures.pods
        ]
        header = ("POD", "TASK", "INDEX", "NODE", "EXIT CODE", "REASON", "AGE", "MESSAGE")
        lines += ["Failed Pods:", *_table(header, rows)]
        if failures.omitted:
            lines.append(f"  … and {failures.omitted} older failed pods, not listed")
    if spec is not None:
        matched = acting_policies(spec, failures)
        limit = spec.max_retry or DEFAULT_MAX_RETRY
        shown = "; ".join(matched) or "none matched the failed pods"
        lines.append(_field("Policy", f"{shown}; maxRetry {limit}, retried {retried}"))
    if actions:
        acted = [
            (action.phase, age(action.at, now or action.at), action.message or action.reason)
            for action in actions
        ]
        lines += ["Policy Actions:", *_table(("PHASE", "AGE", "WHY"), acted)]
    return lines


def _trace(trace_id: str, jaeger_url: str) -> list[str]:
    if not trace_id:
        return [_field("Trace ID", "<none>")]
    return [_field("Trace ID", trace_id), _field("Jaeger", jaeger_link(jaeger_url, trace_id))]


def _events(events: Sequence[JobEvent], now: datetime | None) -> list[str]:
    """The closing section, as kubectl has it: ``Events:`` and its table, or ``<none>``."""
    if not events:
        return [_field("Events", "<none>")]
    rows = events_lines(events, now or events[-1].at)
    lines = ["Events:", *_table(("TYPE", "REASON", "AGE", "FROM", "MESSAGE"), rows)]
    if len(events) > MAX_EVENTS:
        lines.insert(1, f"  ({len(events) - MAX_EVENTS} older events not shown)")
    return lines


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus describe``."""
    parser = sub.add_parser(
        "describe",
        help="show one job, pod, podgroup, queue or node in detail (a job: why it waits)",
    )
    parser.add_argument(
        "kind",
        choices=(*JOB_KINDS, *NODE_KINDS, *DESCRIBED),
        metavar="KIND",
        help="job, pod, podgroup, queue or node (kubectl's short names too: vcjob, po, pg, q)",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add what names the job described: its name, its namespace, and verbose."""
    parser.add_argument("name", metavar="NAME", help="name or namespace/name")
    parser.add_argument("-n", "--namespace", default="default")
    add_verbose(parser)


def run(args: argparse.Namespace) -> int:
    """Print the description; 1 when the job (or node) is unknown or deleted, as ``delete`` says."""
    settings = Settings.from_env()
    if args.kind in DESCRIBED:
        kind = DESCRIBED[args.kind]
        text = asyncio.run(
            describe_kind(AioKafkaBus(settings.kafka), settings, kind, args.name, args.namespace)
        )
        if text is None:
            terminal.error(f'{SINGULAR[kind]} "{args.name}" not found\n')
            return 1
        terminal.write(text)
        return 0
    if args.kind in NODE_KINDS:
        described = asyncio.run(
            describe_node_on(AioKafkaBus(settings.kafka), settings, args.name, verbose=args.verbose)
        )
        if described is None:
            terminal.error(f'node "{args.name}" not found\n')
            return 1
        terminal.write(described)
        return 0
    key = args.name if "/" in args.name else f"{args.namespace}/{args.name}"
    jaeger = os.environ.get("VCBUS_JAEGER_URL") or DEFAULT_JAEGER_URL
    text = asyncio.run(
        describe(
            AioKafkaBus(settings.kafka), settings, key, jaeger_url=jaeger, verbose=args.verbose
        )
    )
    if text is None:
        terminal.error(f'job "{key}" not found\n')
        return 1
    terminal.write(text)
    if DELETED_LINE in text.splitlines():
        terminal.error(f'job "{key}" not found: deleted (its last state is shown)\n')
        return 1
    return 0


async def describe(
    bus: Bus,
    settings: Settings,
    key: str,
    *,
    jaeger_url: str = DEFAULT_JAEGER_URL,
    verbose: int = 0,
    now: datetime | None = None,
) -> str | None:
    """Read the job's partition and describe it (``None`` when unknown).

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        key: the job key.
        jaeger_url: the Jaeger UI's base address.
        verbose: at 1 and more, say how many records were skipped.
        now: the time the events' ages are counted to (the clock's when not given).

    Returns:
        The description, or ``None``.
    """
    mine: list[Record] = []
    wanted = key.encode()
    reservations = f"{settings.topic_prefix}{Topic.RESERVATIONS}"

    def accept(record: Record) -> bool:
        if record.key == wanted or record.topic == reservations:
            mine.append(record)
        return True

    store = await read_store(
        bus,
        settings,
        TOPICS,
        keys=[key],
        whole=WHOLE,
        accept=accept,
        verbose=verbose,
        now=(lambda: now) if now is not None else None,
    )
    records = [
        (topic, event)
        for record in mine
        for topic in (Topic(record.topic.removeprefix(settings.topic_prefix)),)
        for event in store.events(topic, record.value)  # every event of a joined record
    ]
    return describe_job(
        store,
        key,
        jaeger_url=jaeger_url,
        events=job_events(key, records),
        failures=job_failures(key, records),
        now=now or SystemClock().now(),
    )
