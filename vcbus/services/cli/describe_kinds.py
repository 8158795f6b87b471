"""``vcbus describe pod|podgroup|queue NAME``: one object of ``vcbus get``'s kinds, in full.

The object is the one ``vcbus get KIND NAME -o yaml`` prints (:mod:`vcbus.services.cli.kinds`),
laid out as ``kubectl describe`` lays objects out: one ``Label:`` line per field (words
from the camelCase name), a mapping as ``key=value`` pairs, a list of mappings (a
PodGroup's conditions) as a table. A PodGroup and a pod also name their job, whose
``vcbus describe job`` gives the job's reasons and events. No I/O here but :func:`describe_kind`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from vcbus.core.bus.protocol import Bus
from vcbus.core.runtime.settings import Settings
from vcbus.core.views.table import render_table
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Object, Query
from vcbus.services.cli.status_store import read_store

DESCRIBED = {
    "pod": "pods",
    "pods": "pods",
    "po": "pods",
    "podgroup": "podgroups",
    "podgroups": "podgroups",
    "pg": "podgroups",
    "queue": "queues",
    "queues": "queues",
    "q": "queues",
}
"""The names ``describe`` takes for the kinds this module describes, and the kind each is."""

SINGULAR = {"pods": "pod", "podgroups": "podgroup", "queues": "queue"}

_WIDTH = 18


def _label(field: str) -> str:
    """``minMember`` → ``Min Member``, as kubectl's describe titles its fields."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", field)
    return words[:1].upper() + words[1:]


def _value(value: object) -> str:
    if value is None or value in ("", {}, []):
        return "<none>"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def describe_object(obj: Object) -> str:
    """``obj`` as ``kubectl describe`` lays it out, ending with a newline."""
    lines: list[str] = []
    for field, value in obj.items():
        label = _label(field) + ":"
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            rows: Sequence[Mapping[str, object]] = value
            header = tuple(dict.fromkeys(k for row in rows for k in row))
            lines.append(label)
            table = render_table(
                tuple(h.upper() for h in header),
                [[str(r.get(h, "")) for h in header] for r in rows],
            )
            lines += ["  " + line for line in table]
            continue
        lines.append(f"{label:<{_WIDTH}}{_value(value)}")
    return "\n".join(lines) + "\n"


async def describe_kind(
    bus: Bus, settings: Settings, kind: str, name: str, namespace: str
) -> str | None:
    """Read what ``vcbus get KIND`` reads and describe the one ``name`` (``None``: not found).

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        kind: ``pods``, ``podgroups`` or ``queues``.
        name: the name, or ``namespace/name`` (a queue has no namespace).
        namespace: the namespace of a plain name.
    """
    listed = KINDS[kind]
    store = await read_store(bus, settings, listed.topics)
    rows = listed.rows(store, Query((), None))
    wanted = name if kind == "queues" or "/" in name else f"{namespace}/{name}"
    found = [row.obj for row in rows.values() if wanted in _names(kind, row.obj)]
    if len(found) != 1:
        return None
    return describe_object(found[0])


def _names(kind: str, obj: Object) -> tuple[str, ...]:
    """What an object answers to: a queue its name, a pod ``ns/name``, a PodGroup both.

    A PodGroup answers to its own ``ns/name`` and to its job's.
    """
    if kind == "queues":
        return (str(obj["name"]),)
    own = f"{obj['namespace']}/{obj['name']}"
    return (own, str(obj["job"])) if kind == "podgroups" else (own,)
