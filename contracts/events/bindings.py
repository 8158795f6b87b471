"""``bindings``: the allocator's pod → node decisions, keyed by node."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import NodeName
from contracts.objects.pod import Pod


class BindingCreated(Event, tag="binding.created.v1", frozen=True, kw_only=True):
    """Bind ``pod`` to ``node``; the cluster accepts it or refuses it on ``pods.status``."""

    pod: Pod
    node: NodeName


BindingsEvent = BindingCreated
