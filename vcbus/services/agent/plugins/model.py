"""What the job plugins read and give: a pod's peers, its ports, its grants. Pure."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

Env = tuple[tuple[str, str], ...]


class PodPort(msgspec.Struct, frozen=True, kw_only=True):
    """A container port a pod needs a host port for."""

    name: str
    container_port: int


class Peer(msgspec.Struct, frozen=True, kw_only=True):
    """A pod of the job, as the other pods reach it."""

    task: str
    index: int
    address: str
    """An address of the pod's node that the job's other pods can reach."""
    ports: Mapping[int, int] = {}
    """Its host port for each container port of ``pod_ports``."""
    node: str = ""
    """The node it is bound to (empty: not said)."""


class PluginGrants(msgspec.Struct, frozen=True, kw_only=True):
    """What the job's plugins give one pod (see :mod:`vcbus.services.agent.plugins`)."""

    env: Env = ()
    """Appended to every container's env, in this order."""
    init_env: Env = ()
    """Appended to every init container's env, in this order."""
    init_containers: tuple[dict[str, object], ...] = ()
    """Init containers to run after the pod's own (Kubernetes container shape), except
    one whose name the pod's own init containers already have, as Volcano skips it."""
    files: dict[str, str] = {}
    """File contents by path relative to the ``directory`` given."""
    missing: tuple[tuple[str, int], ...] = ()
    """``(task, index)`` of the peers named but not in ``peers``, in job order."""
