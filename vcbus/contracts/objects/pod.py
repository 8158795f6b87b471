"""Pods as the job-controller creates them and the cluster runs them."""

from __future__ import annotations

import enum
from datetime import datetime

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import ANNOTATION_TASK_PRIORITY
from vcbus.contracts.quantity import Resources

LABEL_JOB_NAME = "volcano.sh/job-name"
LABEL_TASK_SPEC = "volcano.sh/task-spec"
LABEL_TASK_INDEX = "volcano.sh/task-index"
LABEL_QUEUE_NAME = "volcano.sh/queue-name"
LABEL_JOB_VERSION = "volcano.sh/job-version"
LABEL_JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
ANNOTATION_GROUP_NAME = "scheduling.k8s.io/group-name"

ANNOTATION_RUN_SECONDS = "vcbus.io/run-seconds"
"""How long a simulated pod runs once Running; absent: until deleted."""
ANNOTATION_EXIT_CODE = "vcbus.io/exit-code"
"""Exit code of a simulated pod when its run time ends: 0 → Succeeded, else Failed."""
ANNOTATION_START_SECONDS = "vcbus.io/start-seconds"
ANNOTATION_PREEMPTABLE = "volcano.sh/preemptable"
"""``"false"`` keeps a pod from being a preempt or reclaim victim (Volcano
``PodPreemptable``; a label of that name counts too; absent: preemptable)."""
POD_BOUND = codes.POD_BOUND
POD_STARTED = codes.POD_STARTED
POD_COMPLETED = codes.POD_COMPLETED
POD_ERROR = codes.POD_ERROR
POD_EVICTED = codes.POD_EVICTED
POD_NODE_OVERCOMMITTED = codes.POD_NODE_OVERCOMMITTED
POD_ALREADY_BOUND = codes.POD_ALREADY_BOUND
POD_NODE_LOST = codes.POD_NODE_LOST
DEFAULT_GRACE_SECONDS = 30
"""Kubernetes' default ``terminationGracePeriodSeconds``."""
"""Delay between binding and Running for a simulated pod (default: the cluster's)."""

TEMPLATE_ANNOTATIONS_CARRIED = frozenset(
    {
        ANNOTATION_RUN_SECONDS,
        ANNOTATION_EXIT_CODE,
        ANNOTATION_START_SECONDS,
        ANNOTATION_TASK_PRIORITY,
        ANNOTATION_PREEMPTABLE,
    }
)
"""The task-template annotations a pod carries: the ones the cluster and the scheduler
read. Others stay in the job (``jobs.admitted``), so a large annotation is written once,
not once per replica (docs/design.md#bounded-records)."""


class PodPhase(enum.StrEnum):
    """Kubernetes pod phases."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class Toleration(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pod toleration."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class Pod(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A pod of a job's task: ``<job>-<task>-<index>``."""

    name: str
    namespace: str
    job: JobKey
    task: str
    index: int
    podgroup: str
    uid: str = ""
    queue: str = "default"
    requests: Resources = {}
    priority: int = 1
    priority_class_name: str = ""
    node_selector: dict[str, str] = {}
    tolerations: tuple[Toleration, ...] = ()
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    scheduler_name: str = "volcano"
    creation_timestamp: datetime | None = None
    termination_grace_period_seconds: int | None = None
    """The template's ``terminationGracePeriodSeconds``: how long an evicted pod keeps
    running (and holding its node's resources) before it ends; unset means 30 s."""
    active_deadline_seconds: int | None = None
    """The template's ``activeDeadlineSeconds``: the pod's time limit from its start, which
    the allocator plans with (docs/design.md#planned-start); unset: no limit."""
    admitted_digest: str = ""
    """The digest of the admitted manifest the pod was made from (``JobAdmitted``'s
    ``manifest_digest``): its binding names the very spec admission signed."""
