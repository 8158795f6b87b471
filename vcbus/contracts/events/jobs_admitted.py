"""``jobs.admitted``: jobs that passed admission, mutated, and accepted commands."""

from __future__ import annotations

import msgspec

from vcbus.contracts._base import Event
from vcbus.contracts.events._job import JobKeyedEvent
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job


class JobAdmitted(Event, tag="job.admitted.v1", frozen=True, kw_only=True):
    """A job passed validation; ``manifest`` is the mutated job.

    ``spec_digest`` identifies the submitted spec: resubmitting the same spec is a no-op.
    """

    job: JobKey = msgspec.field(name="job_key")
    """The job's key. On the wire it keeps its first name, ``job_key``: there ``job`` has
    carried the mutated manifest since v1 (:attr:`manifest`)."""
    manifest: Job = msgspec.field(name="job")
    spec_digest: str
    manifest_digest: str = ""
    """The digest of ``manifest`` as admitted (``vcbus.core.authority.manifest_digest``);
    empty when admission signs nothing. Each pod made from it carries it to its binding."""
    signature: str = ""
    """Admission's signature of the job key and ``manifest_digest``
    (``ed25519:<key id>:<base64>``): a node agent that trusts admission's key runs only
    what admission signed (docs/security.md). Empty when admission has no key."""


class JobDeleteAccepted(JobKeyedEvent, tag="job.delete_accepted.v1", frozen=True, kw_only=True):
    """A delete request for a job, checked by admission."""


class JobAbortAccepted(JobKeyedEvent, tag="job.abort_accepted.v1", frozen=True, kw_only=True):
    """An abort request for a job, checked by admission."""


class JobResumeAccepted(JobKeyedEvent, tag="job.resume_accepted.v1", frozen=True, kw_only=True):
    """A resume request for a job, checked by admission."""


JobsAdmittedEvent = JobAdmitted | JobDeleteAccepted | JobAbortAccepted | JobResumeAccepted
