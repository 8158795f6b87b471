"""``jobs.admitted``: jobs that passed admission, mutated, and accepted commands."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import JobKey
from contracts.objects.job import Job


class JobAdmitted(Event, tag="job.admitted.v1", frozen=True, kw_only=True):
    """A job passed validation; ``job`` is the mutated job (SPEC B1.1 with A1).

    ``spec_digest`` identifies the submitted spec: resubmitting the same spec is a no-op.
    """

    job_key: JobKey
    job: Job
    spec_digest: str


class JobDeleteAccepted(Event, tag="job.delete_accepted.v1", frozen=True, kw_only=True):
    """A delete request for a job, checked by admission."""

    job_key: JobKey


class JobAbortAccepted(Event, tag="job.abort_accepted.v1", frozen=True, kw_only=True):
    """An abort request for a job, checked by admission."""

    job_key: JobKey


class JobResumeAccepted(Event, tag="job.resume_accepted.v1", frozen=True, kw_only=True):
    """A resume request for a job, checked by admission."""

    job_key: JobKey


JobsAdmittedEvent = JobAdmitted | JobDeleteAccepted | JobAbortAccepted | JobResumeAccepted
