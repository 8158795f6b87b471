"""The job's pods by address and host port, and Volcano's names for them. Pure.

``helpers.go`` of Volcano's ``pkg/controllers/job/helpers``: ``MakePodName``,
``MakeDomainName``, ``GetTaskIndexUnderJob``.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcbus.contracts.objects.job import Job, TaskSpec
from vcbus.services.agent.plugins.model import Peer


class Hosts:
    """Names the job's pods by address and host port, noting the peers not known."""

    def __init__(self, job: Job, peers: Mapping[tuple[str, int], Peer]) -> None:
        self.job = job
        self.peers = peers
        self._missing: set[tuple[str, int]] = set()

    def address(self, task: TaskSpec, index: int) -> str:
        """The pod's address; Volcano's ``MakeDomainName`` when it is not known."""
        peer = self.peers.get((task.name, index))
        if peer is not None:
            return peer.address
        self._missing.add((task.name, index))
        return domain_name(self.job, task, index)

    def port(self, task: TaskSpec, index: int, container_port: int) -> int:
        """The pod's host port for ``container_port`` (that port itself when it has none)."""
        peer = self.peers.get((task.name, index))
        if peer is None:
            self._missing.add((task.name, index))
            return container_port
        return peer.ports.get(container_port, container_port)

    def missing(self) -> tuple[tuple[str, int], ...]:
        """The peers named but not known, in job order."""
        order = {task.name: position for position, task in enumerate(self.job.spec.tasks)}
        return tuple(sorted(self._missing, key=lambda key: (order.get(key[0], 0), key[1])))


def host_indexes(task: TaskSpec) -> range:
    """The pods a task's hosts list: one when its template sets ``hostname`` (svc, mpi)."""
    return range(min(task.replicas, 1) if template_string(task, "hostname") else task.replicas)


def domain_name(job: Job, task: TaskSpec, index: int) -> str:
    """``helpers.MakeDomainName``: ``<hostname or pod name>.<subdomain or job name>``."""
    hostname = template_string(task, "hostname") or pod_name(job, task, index)
    return f"{hostname}.{template_string(task, 'subdomain') or job.metadata.name}"


def pod_name(job: Job, task: TaskSpec, index: int) -> str:
    """``helpers.MakePodName``: ``<job>-<task>-<index>``."""
    return f"{job.metadata.name}-{task.name}-{index}"


def template_string(task: TaskSpec, field: str) -> str:
    """A string field of the task's pod template spec; empty when unset."""
    value = task.template.spec.get(field)
    return value if isinstance(value, str) else ""


def find_task(job: Job, name: str) -> TaskSpec | None:
    """``helpers.GetTaskIndexUnderJob``: the first task of that name."""
    return next((task for task in job.spec.tasks if task.name == name), None)
