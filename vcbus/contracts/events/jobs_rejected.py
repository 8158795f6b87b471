"""``jobs.rejected``: submissions refused, with every reason and the original payload."""

from __future__ import annotations

from datetime import datetime

import msgspec

from vcbus.contracts._base import Event
from vcbus.contracts.events._job import OptionalJobKeyedEvent


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    """One reason a submission was refused.

    ``path`` is a Kubernetes-style field path (``spec.tasks[1].minAvailable``),
    ``reason`` a stable code (``GreaterThanReplicas``), ``message`` the text for people
    (Volcano's wording where Volcano has one).
    """

    path: str
    reason: str
    message: str


class SubmissionOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Where a submission was read: topic, partition and offset."""

    topic: str
    partition: int
    offset: int


class JobRejected(OptionalJobKeyedEvent, tag="job.rejected.v1", frozen=True, kw_only=True):
    """A submission was refused. ``job`` is ``None`` when no name could be read.

    ``payload`` is the original text (bytes that are not UTF-8 are replaced); when it is
    longer than the limit it is cut and ``payload_truncated`` is set. ``violations``
    lists at most ``vcbus.contracts.limits.MAX_VIOLATIONS``; ``violations_omitted`` counts the
    others (docs/design.md#bounded-records: every record bounded).
    """

    violations: tuple[Violation, ...]
    payload: str
    payload_truncated: bool = False
    origin: SubmissionOrigin | None = None
    violations_omitted: int = 0


class RejectionsCleared(Event, tag="rejections.cleared.v1", frozen=True, kw_only=True):
    """Rejected records that named no job are gone (docs/design.md#junk-records).

    Admission's answer to ``RejectionsClearRequested``.
    With ``origins`` empty, every such ``JobRejected`` that occurred at ``before`` or earlier;
    otherwise those of these origins only. A reader drops them whatever order it reads the
    partitions in: the test is each rejection's own ``occurred_at`` and ``origin``. A
    rejection that names a job is not one of them (``vcbus delete job`` ends it). Written
    without a key, as the records it clears were.
    """

    before: datetime
    origins: tuple[SubmissionOrigin, ...] = ()


JobsRejectedEvent = JobRejected | RejectionsCleared
