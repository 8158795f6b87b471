"""``pods``: pods created and deleted by the job-controller."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import JobKey, PodKey
from contracts.objects.pod import Pod


class PodCreated(Event, tag="pod.created.v1", frozen=True, kw_only=True):
    """A pod of a job's task was created (Pending, not yet bound)."""

    pod: Pod


class PodDeleted(Event, tag="pod.deleted.v1", frozen=True, kw_only=True):
    """A pod was deleted (job deleted, restarted, scaled down)."""

    job: JobKey
    pod: PodKey
    task: str = ""


PodsEvent = PodCreated | PodDeleted
