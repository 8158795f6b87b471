"""Wiring of the admission service: jobs.submitted in; jobs.admitted and jobs.rejected out.

Each submission is handled at its own microsecond (:class:`ArrivalStamps`): a job's
creation time is when admission read it, and jobs read in one instant keep the order they
were read in (partition offset order; a scenario's file order), docs/design.md#arrival-order.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.contracts import (
    Event,
    JobAdmitted,
    JobRejected,
    QueueDeclared,
    QueueDeleted,
    SubmissionOrigin,
    Topic,
)
from vcbus.contracts.objects import Queue
from vcbus.core.authority import Role, sign_admitted, signing_key_from
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.records import Record
from vcbus.core.bus.router import Route
from vcbus.core.reasons import QUEUE_NOT_FOUND
from vcbus.core.runtime.clock import ArrivalStamps, Clock, SystemClock
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.core.runtime.table import Table
from vcbus.core.step import Ctx
from vcbus.core.tracing.spans import current_trace_id

from .core import AdmissionLimits, Submission, apply_queue_event, decide
from .fields import FIELD_VALIDATION_HEADER, field_validation_of

NAME = "admission"


class _Queues:
    """The queue view folded from the ``queues`` topic."""

    def __init__(self) -> None:
        self.queues: dict[str, Queue] = {}

    def apply(self, event: Event, record: Record) -> None:
        if isinstance(event, QueueDeclared | QueueDeleted):
            self.queues = apply_queue_event(self.queues, event)


def build_service(settings: Settings, clock: Clock) -> Service:
    """The admission service: stateless over jobs, with the queues as a table."""
    view = _Queues()
    limits = AdmissionLimits(max_payload_bytes=settings.max_payload_bytes)
    stamps = ArrivalStamps(clock)
    live = isinstance(clock, SystemClock)  # a simulation's in-memory bus is read in order
    try:
        key = signing_key_from(settings.extra, Role.ADMISSION)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None

    async def handle(envelope: Envelope[bytes]) -> Sequence[Event]:
        origin = SubmissionOrigin(
            topic=f"{settings.topic_prefix}{envelope.topic}",
            partition=envelope.partition,
            offset=envelope.offset,
        )
        ctx = Ctx(now=stamps.next(), trace_id=current_trace_id())
        header = dict(envelope.headers).get(FIELD_VALIDATION_HEADER)
        submission = Submission(
            envelope.event, origin, field_validation_of(header), key=envelope.key
        )
        events = decide(view.queues, submission, ctx, limits)
        if live and _queue_not_found(events) and await queues.read_to_end(QUEUE_CATCH_UP_SECONDS):
            # the queue may have been created a moment before the job: judge it again on
            # everything the queues topic holds now (read-your-writes)
            events = decide(view.queues, submission, ctx, limits)
        if key is None:
            return events
        # what a node agent will run carries admission's signature (docs/security.md)
        return [sign_admitted(key, e) if isinstance(e, JobAdmitted) else e for e in events]

    queues = Table("queues", [Topic.QUEUES], view.apply)
    return Service(
        name=NAME,
        routes=[Route(Topic.JOBS_SUBMITTED, handle, "admission.validate", raw=True)],
        tables=[queues],
    )


QUEUE_CATCH_UP_SECONDS = 2.0
"""How long admission waits for its queues to catch up before refusing a job's unknown queue."""


def _queue_not_found(events: Sequence[Event]) -> bool:
    return any(
        isinstance(event, JobRejected)
        and any(violation.reason == QUEUE_NOT_FOUND for violation in event.violations)
        for event in events
    )
