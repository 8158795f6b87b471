"""The PodGroup the job-controller builds from a job (Volcano ``scheduling/v1beta1``)."""

from __future__ import annotations

import enum
from datetime import datetime

import msgspec

from contracts.keys import JobKey
from contracts.quantity import Resources


class PodGroupPhase(enum.StrEnum):
    """PodGroup phases (``scheduling/v1beta1`` ``PodGroupPhase``)."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class PodGroup(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A gang: at least ``min_member`` pods (and per-task minimums) placed together.

    ``min_task_member`` has no entry for a task without a minimum (SPEC A1, fourth row).
    ``dependent`` marks a job with ``dependsOn`` (SPEC A5); ``stages`` lists the tasks that
    have no pods yet for such a job, with their minimums, so gang checks can skip them.
    """

    name: str
    namespace: str
    job: JobKey
    queue: str = "default"
    min_member: int = 0
    min_task_member: dict[str, int] = {}
    min_resources: Resources = {}
    priority_class_name: str = ""
    priority: int = 0
    annotations: dict[str, str] = {}
    dependent: bool = False
    uid: str = ""
    creation_timestamp: datetime | None = None
