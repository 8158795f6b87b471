"""Keys of the entities that travel on topics, and how they are written."""

from __future__ import annotations

from typing import NewType

JobKey = NewType("JobKey", str)
"""``namespace/name`` of a Volcano Job: the key of jobs, podgroups and pods topics."""

PodKey = NewType("PodKey", str)
"""``namespace/name`` of a pod."""

NodeName = NewType("NodeName", str)
"""A node's name: the key of the nodes and bindings topics."""

DEFAULT_NAMESPACE = "default"


def job_key(namespace: str | None, name: str) -> JobKey:
    """Return the key of a job from its namespace (``default`` when empty) and name."""
    return JobKey(f"{namespace or DEFAULT_NAMESPACE}/{name}")


def pod_key(namespace: str | None, name: str) -> PodKey:
    """Return the key of a pod from its namespace (``default`` when empty) and name."""
    return PodKey(f"{namespace or DEFAULT_NAMESPACE}/{name}")


def split_key(key: str) -> tuple[str, str]:
    """Split ``namespace/name`` into its two parts."""
    namespace, _, name = key.partition("/")
    return namespace, name
