"""Builders of Jobs and queues for the admission tests (Volcano's test fixtures, in Python)."""

from __future__ import annotations

from typing import Any

import msgspec

from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.queue import Queue, QueueState


def fake_container(**fields: Any) -> dict[str, Any]:
    """The container Volcano's admission tests use: ``fake-name`` running ``busybox:1.24``."""
    return {"name": "fake-name", "image": "busybox:1.24", **fields}


def build_task(
    name: str = "task-1",
    replicas: int = 1,
    *,
    min_available: int | None = None,
    depends_on: list[str] | None = None,
    iteration: str | None = None,
    pod_spec: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A task in wire form (camelCase), with Volcano's test pod template by default."""
    task: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"name": "test"}},
            "spec": pod_spec if pod_spec is not None else {"containers": [fake_container()]},
        },
        **fields,
    }
    if min_available is not None:
        task["minAvailable"] = min_available
    if depends_on is not None:
        task["dependsOn"] = {"name": depends_on}
        if iteration is not None:
            task["dependsOn"]["iteration"] = iteration
    return task


def build_job(
    *tasks: dict[str, Any],
    name: str = "valid-job",
    namespace: str = "test",
    min_available: int = 0,
    queue: str = "default",
    **spec: Any,
) -> Job:
    """A Job from wire-form tasks; ``spec`` takes further camelCase spec fields."""
    document: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "queue": queue, "tasks": list(tasks), **spec},
    }
    return msgspec.convert(document, Job)


def build_queue(
    name: str, *, parent: str = "", state: QueueState = QueueState.OPEN, weight: int = 1
) -> Queue:
    """A queue as the ``queues`` topic declares it."""
    return Queue(name=name, parent=parent, state=state, weight=weight)


def manifest(job: Job) -> bytes:
    """The job as a user publishes it on ``jobs.submitted`` (JSON, with apiVersion and kind).

    The Job struct omits fields equal to their defaults, which can drop ``kind``.
    """
    document = msgspec.to_builtins(job)
    return msgspec.json.encode({"apiVersion": job.api_version, "kind": job.kind, **document})
