"""``podgroups.status``: PodGroup phase changes written by podgroup-enqueue."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import JobKey
from contracts.objects.meta import Condition
from contracts.objects.podgroup import PodGroupPhase


class PodGroupPhaseChanged(Event, tag="podgroup.phase_changed.v1", frozen=True, kw_only=True):
    """A PodGroup's phase changed; ``conditions`` carry the reason code (SPEC A8)."""

    job: JobKey
    podgroup: str
    phase: PodGroupPhase
    previous_phase: PodGroupPhase | None = None
    conditions: tuple[Condition, ...] = ()


PodGroupsStatusEvent = PodGroupPhaseChanged
