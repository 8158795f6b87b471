"""The session's working model: tasks, jobs, nodes and queues (one import for them all).

Port of volcano@v1.12.0 ``pkg/scheduler/api``, one module per file there: ``task_info``
(``TaskInfo``, ``TaskStatus``), ``job_info`` (``JobInfo`` and its counters, with the
deliberate deviations), ``node_info`` (``NodeInfo``) and ``queue_info`` (``QueueInfo``).
This module names them together, as the rest of the scheduler imports them. These objects
are mutable inside a session, as Volcano's are; snapshots and results are frozen.
"""

from __future__ import annotations

from vcbus.core.scheduling.job_info import JobInfo, LazyTasks
from vcbus.core.scheduling.node_info import NodeBoard, NodeInfo
from vcbus.core.scheduling.queue_info import QueueInfo
from vcbus.core.scheduling.resource import Missing, Resource, share
from vcbus.core.scheduling.task_info import (
    ALLOCATED_STATUSES,
    READY_STATUSES,
    SCHEDULED_STATUSES,
    TaskInfo,
    TaskStatus,
    naive_utc,
    task_priority,
)

__all__ = [
    "ALLOCATED_STATUSES",
    "READY_STATUSES",
    "SCHEDULED_STATUSES",
    "JobInfo",
    "LazyTasks",
    "Missing",
    "NodeBoard",
    "NodeInfo",
    "QueueInfo",
    "Resource",
    "TaskInfo",
    "TaskStatus",
    "naive_utc",
    "share",
    "task_priority",
]
