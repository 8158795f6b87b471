"""allocator: runs ``allocate, backfill`` on its view of the state topics (docs/design.md#stages).

Reads podgroups, podgroups.status, pods, pods.status, bindings, nodes, queues and
reservations; writes ``bindings`` and ``podgroups.conditions``.
"""

__all__: list[str] = []
