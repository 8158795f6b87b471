"""``podgroups.conditions``: why a gang cannot be placed now, from the allocator."""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.meta import Condition


class PodGroupConditionsChanged(
    Event, tag="podgroup.conditions_changed.v1", frozen=True, kw_only=True
):
    """The allocator's view of a gang changed: unschedulable with fit errors, or scheduled."""

    job: JobKey
    podgroup: str
    conditions: tuple[Condition, ...] = ()


PodGroupsConditionsEvent = PodGroupConditionsChanged
