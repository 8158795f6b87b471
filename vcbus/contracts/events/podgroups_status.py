"""``podgroups.status``: PodGroup phase changes written by podgroup-enqueue."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroupPhase


class PodGroupPhaseChanged(Event, tag="podgroup.phase_changed.v1", frozen=True, kw_only=True):
    """A PodGroup's phase or reason changed; ``conditions`` carry the reason code.

    ``uid`` is the PodGroup's uid (added later, empty from older writers), so a late phase
    change of a deleted PodGroup is not taken for its successor's.
    """

    job: JobKey
    podgroup: str
    phase: PodGroupPhase
    previous_phase: PodGroupPhase | None = None
    conditions: tuple[Condition, ...] = ()
    uid: str = ""


PodGroupsStatusEvent = PodGroupPhaseChanged
