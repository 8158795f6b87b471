"""``bindings``: the allocator's pod → node decisions, keyed by node."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import NodeName
from contracts.objects.pod import Pod


class BindingCreated(Event, tag="binding.created.v1", frozen=True, kw_only=True):
    """Bind ``pod`` to ``node``; the cluster accepts it or refuses it on ``pods.status``."""

    pod: Pod
    node: NodeName
    attempt: int = 0
    """How many earlier bindings of this pod the cluster refused; part of the event id, so a
    retry to the same node is a new event, and lets a late echo of a refused one be ignored."""


BindingsEvent = BindingCreated
