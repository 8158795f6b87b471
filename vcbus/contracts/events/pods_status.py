"""``pods.status``: pod phase changes and refused bindings, from the cluster."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase


class PodPhaseChanged(Event, tag="pod.phase_changed.v1", frozen=True, kw_only=True):
    """A pod changed phase on its node (Running, Succeeded, Failed) or was bound (Pending)."""

    pod: PodKey
    job: JobKey
    task: str
    node: NodeName | None = None
    phase: PodPhase
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    pod_uid: str = ""
    """The uid of the pod this status is about (``Pod.uid``); empty when unknown.

    The job-controller ignores a status whose uid is not the current pod's (a late
    status of a pod deleted by a restart, whose name was reused)."""
    restart_count: int = 0
    """Container restarts of the pod so far (Volcano's ``TaskFailed`` counts them)."""
    host_ip: str = ""
    """The address the job's other pods reach this pod at (Kubernetes' ``status.hostIP``:
    its node's address on a real node); empty on a simulated node."""
    ports: dict[int, int] = {}
    """The host port a real node allocated for each of the pod's container ports
    (``vcbus.services.agent.plugins.pod_ports``): container port → host port."""


class BindingRefused(Event, tag="binding.refused.v1", frozen=True, kw_only=True):
    """The cluster refused a binding (the node would be overcommitted, or is gone)."""

    pod: PodKey
    job: JobKey
    task: str
    node: NodeName
    reason: str
    message: str = ""
    pod_uid: str = ""
    """The uid of the refused pod (``Pod.uid``); empty when unknown."""


PodsStatusEvent = PodPhaseChanged | BindingRefused
