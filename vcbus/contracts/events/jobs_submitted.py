"""``jobs.submitted``: Volcano Jobs as JSON or YAML text, and these user commands.

A Job is published as its manifest text (any Kafka client can do it); admission tells a
command from a manifest by the ``type`` field, which a Volcano Job never has.
"""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey


class JobDeleteRequested(Event, tag="job.delete_requested.v1", frozen=True, kw_only=True):
    """A user asks to delete a job and its pods."""

    job: JobKey


class JobAbortRequested(Event, tag="job.abort_requested.v1", frozen=True, kw_only=True):
    """A user asks to abort a job (Volcano ``AbortJob``: kill pods, keep finished ones)."""

    job: JobKey


class JobResumeRequested(Event, tag="job.resume_requested.v1", frozen=True, kw_only=True):
    """A user asks to resume an aborted job (Volcano ``ResumeJob``: restart it)."""

    job: JobKey


JobsSubmittedCommand = JobDeleteRequested | JobAbortRequested | JobResumeRequested
