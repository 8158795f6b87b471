"""The PodGroup the job-controller builds from a job (Volcano ``scheduling/v1beta1``)."""

from __future__ import annotations

import enum
from datetime import datetime

import msgspec

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import Toleration
from vcbus.contracts.quantity import Resources


class PodGroupPhase(enum.StrEnum):
    """PodGroup phases (``scheduling/v1beta1`` ``PodGroupPhase``)."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class StageTask(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A task of a dependent job whose pods are created later (it has ``dependsOn``).

    What the allocator needs to reserve capacity for the task's minimum pods before they
    exist (will-bind, docs/architecture.md): how many, and what each pod asks of a node,
    resolved as the job-controller resolves them for the real pods.
    """

    name: str
    replicas: int = 0
    min_available: int = 0
    """The task's minimum pods: its ``minAvailable``, else ``replicas``."""
    requests: Resources = {}
    node_selector: dict[str, str] = {}
    tolerations: tuple[Toleration, ...] = ()
    priority: int = 1
    """The task's pod priority (task priority annotation, priority class, ``priority``)."""


class PodGroup(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A gang: at least ``min_member`` pods (and per-task minimums) placed together.

    ``min_task_member`` has no entry for a task without a minimum (docs/design.md#minavailable,
    fourth row). ``dependent`` marks a job with ``dependsOn`` (docs/design.md#dependent-jobs); gang
    checks skip its tasks that have no pods yet. ``stages`` (added later, empty from older writers)
    describes the tasks with ``dependsOn`` of such a job, so the allocator can reserve room for
    them.
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
    stages: tuple[StageTask, ...] = ()
    active_deadline_seconds: int | None = None
    """The longest ``activeDeadlineSeconds`` of the job's pod templates; unset when one
    has none: how long the gang runs at most once started, for planning
    (docs/design.md#planned-start)."""
