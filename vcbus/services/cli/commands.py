"""A user's command on a job (delete, suspend, resume): the record, and the jobs it may name.

A command goes to ``jobs.submitted`` keyed by its job, so it stays ordered with the job's
submission. Only jobs that exist are named (kubectl answers "not found" for the others),
and each command continues its job's trace: its span's parent is the context of the job's
newest record, so the job's life and what was asked of it are one trace.
"""

from __future__ import annotations

from datetime import datetime

from opentelemetry.context import Context

from vcbus.contracts import (
    JobAbortRequested,
    JobAdmitted,
    JobDeleted,
    JobDeleteRequested,
    JobKey,
    JobRejected,
    JobResumeRequested,
    JobStatusChanged,
    Topic,
    derive_event_id,
    tag_of,
)
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord
from vcbus.core.runtime.settings import Settings
from vcbus.core.tracing.spans import business_span, context_of, current_trace_id, job_span
from vcbus.services.cli.status_store import StatusStore, read_store

JobCommand = JobDeleteRequested | JobAbortRequested | JobResumeRequested


def command_record(
    command: type[JobCommand], key: str, prefix: str, now: datetime, parent: Context | None
) -> tuple[OutRecord, str]:
    """The command ``command`` for job ``key``, and the trace id it travels in.

    The event id derives from the command, the job and the time of asking: asking again
    later is a new command, a retry of the same publish is not. With ``parent`` the
    command continues that trace (its span is ``cli.delete``, ``cli.abort``, ...).
    """
    tag = tag_of(command)
    event = command(
        event_id=derive_event_id(tag, key, now.isoformat()), occurred_at=now, job=JobKey(key)
    )
    name = f"cli.{tag.split('.')[1].removesuffix('_requested')}"
    span = business_span(name, job=key) if parent is None else job_span(name, parent, job=key)
    with span:
        record = event_record(event, prefix)
        trace_id = current_trace_id()
    return record, trace_id


async def existing(
    bus: Bus, settings: Settings, keys: list[str], *, verbose: int = 0, rejected: bool = False
) -> dict[str, Context]:
    """The jobs of ``keys`` that exist now (:func:`exists`), with their trace context.

    With ``rejected``, the jobs whose rejection is what ``get jobs`` shows of them
    (:func:`is_rejected`) too: ``delete`` takes them, as ``kubectl delete`` would.
    """
    topics = (Topic.JOBS_ADMITTED, Topic.JOBS_STATUS, *((Topic.JOBS_REJECTED,) if rejected else ()))
    store = await read_store(bus, settings, topics, keys=keys, verbose=verbose)
    return {
        key: trace_context(store, key)
        for key in keys
        if exists(store, key) or (rejected and is_rejected(store, key))
    }


def is_rejected(store: StatusStore, key: str) -> bool:
    """Whether job ``key``'s newest word is its rejection (no status of a later life)."""
    rejected = store.get(Topic.JOBS_REJECTED, key)
    if not isinstance(rejected, JobRejected):
        return False
    status = store.get(Topic.JOBS_STATUS, key)
    return (
        not isinstance(status, JobStatusChanged | JobDeleted)
        or rejected.occurred_at > status.occurred_at
    )


def exists(store: StatusStore, key: str) -> bool:
    """Whether job ``key`` exists: it has a status, or was admitted after its last deletion.

    A job is not there before admission accepts it, nor after it is deleted.
    """
    status = store.get(Topic.JOBS_STATUS, key)
    if isinstance(status, JobStatusChanged):
        return True
    admitted = store.get(Topic.JOBS_ADMITTED, key)
    if not isinstance(admitted, JobAdmitted):
        return False
    return not isinstance(status, JobDeleted) or admitted.occurred_at > status.occurred_at


def trace_context(store: StatusStore, key: str) -> Context:
    """The trace context of the job's newest status, else of its admission (or rejection)."""
    if is_rejected(store, key):
        return context_of(store.latest[Topic.JOBS_REJECTED][key].headers)
    status = store.latest[Topic.JOBS_STATUS].get(key)
    if status is not None and isinstance(store.get(Topic.JOBS_STATUS, key), JobStatusChanged):
        return context_of(status.headers)
    admitted = store.latest[Topic.JOBS_ADMITTED].get(key)
    return context_of(admitted.headers) if admitted is not None else Context()
