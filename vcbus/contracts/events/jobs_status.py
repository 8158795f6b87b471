"""``jobs.status``: a job's phase, per-task counts and reason, after every change."""

from __future__ import annotations

import msgspec

from vcbus.contracts.events._job import JobKeyedEvent
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.meta import Condition


class TaskCounts(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Pods of one task by phase (Volcano ``taskStatusCount[task].phase``)."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0


class JobStatusChanged(JobKeyedEvent, tag="job.status_changed.v1", frozen=True, kw_only=True):
    """The job's status after a change (Volcano ``JobStatus``)."""

    phase: JobPhase
    previous_phase: JobPhase | None = None
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    retry_count: int = 0
    version: int = 0
    task_status_count: dict[str, TaskCounts] = {}
    conditions: tuple[Condition, ...] = ()
    trace_id: str = ""


class JobDeleted(JobKeyedEvent, tag="job.deleted.v1", frozen=True, kw_only=True):
    """The job and all its pods are gone."""


JobsStatusEvent = JobStatusChanged | JobDeleted
