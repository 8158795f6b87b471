"""Volcano Job manifests for the workloads of the benchmark and the chaos run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def task_manifest(
    name: str,
    replicas: int,
    *,
    cpu: str,
    memory: str,
    annotations: Mapping[str, str],
    min_available: int | None = None,
    depends_on: str | None = None,
) -> dict[str, Any]:
    """One task of a ``batch.volcano.sh/v1alpha1`` Job: ``replicas`` busybox pods.

    Args:
        name: the task (and container) name.
        replicas: how many pods.
        cpu: each pod's CPU request.
        memory: each pod's memory request.
        annotations: the pod template's annotations (``vcbus.io/run-seconds`` ...).
        min_available: the task's ``minAvailable``, when given.
        depends_on: the task this one waits for (``dependsOn.name``), when given.

    Returns:
        The task as the manifest's ``spec.tasks`` holds it.
    """
    task: dict[str, Any] = {
        "name": name,
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": dict(annotations)},
            "spec": {
                "containers": [
                    {
                        "name": name,
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
                "restartPolicy": "Never",
            },
        },
    }
    if min_available is not None:
        task["minAvailable"] = min_available
    if depends_on is not None:
        task["dependsOn"] = {"name": [depends_on]}
    return task
