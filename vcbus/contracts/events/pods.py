"""``pods``: pods created and deleted by the job-controller."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.pod import Pod


class PodCreated(Event, tag="pod.created.v1", frozen=True, kw_only=True):
    """A pod of a job's task was created (Pending, not yet bound)."""

    pod: Pod


class PodDeleted(Event, tag="pod.deleted.v1", frozen=True, kw_only=True):
    """A pod was deleted (job deleted, restarted, scaled down)."""

    job: JobKey
    pod: PodKey
    task: str = ""
    pod_uid: str = ""
    """The uid of the deleted pod (``Pod.uid``); empty when unknown.

    When set, the cluster deletes only that incarnation: a late delete of a pod whose name
    was reused by a restart never removes the new pod."""


PodsEvent = PodCreated | PodDeleted
