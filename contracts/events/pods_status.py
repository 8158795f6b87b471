"""``pods.status``: pod phase changes and refused bindings, from the cluster."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import JobKey, NodeName, PodKey
from contracts.objects.pod import PodPhase


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


class BindingRefused(Event, tag="binding.refused.v1", frozen=True, kw_only=True):
    """The cluster refused a binding (the node would be overcommitted, or is gone)."""

    pod: PodKey
    job: JobKey
    task: str
    node: NodeName
    reason: str
    message: str = ""


PodsStatusEvent = PodPhaseChanged | BindingRefused
