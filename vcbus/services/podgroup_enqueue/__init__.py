"""podgroup-enqueue: elect a starving target job, enqueue PodGroups, reserve nodes.

Reads ``podgroups``, ``podgroups.conditions``, ``pods``, ``pods.status``, ``bindings``,
``nodes``, ``queues`` and its own ``podgroups.status`` and ``reservations`` into a
``ClusterView``; writes ``podgroups.status`` and ``reservations``.
"""

__all__: list[str] = []
