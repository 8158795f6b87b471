"""``jobs.submitted``: Volcano Jobs as JSON or YAML text, and these user commands.

A Job is published as its manifest text (any Kafka client can do it); admission tells a
command from a manifest by the ``type`` field, which a Volcano Job never has.
"""

from __future__ import annotations

import msgspec

from vcbus.contracts._base import Event
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.keys import JobKey
from vcbus.contracts.limits import MAX_CLEARED_ORIGINS


class JobDeleteRequested(Event, tag="job.delete_requested.v1", frozen=True, kw_only=True):
    """A user asks to delete a job and its pods."""

    job: JobKey


class JobAbortRequested(Event, tag="job.abort_requested.v1", frozen=True, kw_only=True):
    """A user asks to abort a job (Volcano ``AbortJob``: kill pods, keep finished ones)."""

    job: JobKey


class JobResumeRequested(Event, tag="job.resume_requested.v1", frozen=True, kw_only=True):
    """A user asks to resume an aborted job (Volcano ``ResumeJob``: restart it)."""

    job: JobKey


class RejectionsClearRequested(
    Event, tag="rejections.clear_requested.v1", frozen=True, kw_only=True
):
    """A user asks to remove the rejected records that named no job (``delete --rejected``).

    Every one so far, or those read at ``origins`` (at most
    :data:`vcbus.contracts.limits.MAX_CLEARED_ORIGINS`). Admission answers
    ``RejectionsCleared`` on ``jobs.rejected``. Published without a key: it is about no job.
    """

    origins: tuple[SubmissionOrigin, ...] = msgspec.field(default=())

    def __post_init__(self) -> None:
        if len(self.origins) > MAX_CLEARED_ORIGINS:
            raise ValueError(f"at most {MAX_CLEARED_ORIGINS} origins, not {len(self.origins)}")


JobsSubmittedCommand = (
    JobDeleteRequested | JobAbortRequested | JobResumeRequested | RejectionsClearRequested
)
