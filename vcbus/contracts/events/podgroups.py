"""``podgroups``: the PodGroup of each job, as the job-controller builds it."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroup


class PodGroupCreated(Event, tag="podgroup.created.v1", frozen=True, kw_only=True):
    """A job's PodGroup was created."""

    podgroup: PodGroup


class PodGroupUpdated(Event, tag="podgroup.updated.v1", frozen=True, kw_only=True):
    """A job's PodGroup changed (minMember, minTaskMember, minResources, priority)."""

    podgroup: PodGroup


class PodGroupDeleted(Event, tag="podgroup.deleted.v1", frozen=True, kw_only=True):
    """A job's PodGroup was deleted (job deleted, or a full kill on restart)."""

    job: JobKey
    name: str


PodGroupsEvent = PodGroupCreated | PodGroupUpdated | PodGroupDeleted
