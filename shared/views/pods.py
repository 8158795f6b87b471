"""Pods as users see them, folded per pod from ``pods``, ``bindings`` and ``pods.status``.

Those topics are keyed by job or node, with many pods per key, so each pod is folded
into a small row. A pod's incarnation is its uid: events of an incarnation that was
deleted are dropped, so a late event of a deleted pod does not bring it back or change
its successor's row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts import BindingCreated, BindingRefused, Event, PodCreated, PodDeleted, PodPhaseChanged
from contracts.quantity import Resources


@dataclass(slots=True)
class PodRow:
    """One pod: job, task, phase, node, the incarnation (uid) it is and what it requests."""

    job: str
    task: str = ""
    phase: str = "Pending"
    node: str = ""
    uid: str = ""
    requests: Resources = field(default_factory=dict)


class PodFold:
    """The pods, by ``namespace/name``, folded from their events."""

    def __init__(self) -> None:
        self.rows: dict[str, PodRow] = {}
        self._gone_uids: set[str] = set()

    def apply(self, event: Event) -> str | None:
        """Fold one event; the key of the pod it was about (``None``: not a pod's event)."""
        rows = self.rows
        match event:
            case PodCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                if pod.uid and pod.uid in self._gone_uids:
                    return None
                row = rows.get(key)
                if row is None or (row.uid and pod.uid and row.uid != pod.uid):
                    row = rows[key] = PodRow(job=pod.job)
                row.job, row.task, row.uid = pod.job, pod.task, pod.uid or row.uid
                row.requests = pod.requests
            case PodDeleted():
                key = event.pod
                row = rows.get(key)
                if event.pod_uid:
                    self._gone_uids.add(event.pod_uid)
                if row is not None and (not event.pod_uid or row.uid in ("", event.pod_uid)):
                    del rows[key]
            case BindingCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                row = self._row(key, pod.job, pod.uid)
                if row is not None:
                    row.node, row.task = event.node, row.task or pod.task
            case PodPhaseChanged():
                key = event.pod
                row = self._row(key, event.job, event.pod_uid)
                if row is not None:
                    row.phase, row.task = str(event.phase), row.task or event.task
                    row.node = event.node or row.node
            case BindingRefused():
                key = event.pod
                row = self._row(key, event.job, event.pod_uid)
                if row is not None and row.node == event.node:
                    row.node = ""
            case _:
                return None
        return key

    def _row(self, key: str, job: str, uid: str) -> PodRow | None:
        if uid and uid in self._gone_uids:
            return None
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = PodRow(job=job, uid=uid)
        elif uid and row.uid and row.uid != uid:
            return None
        row.uid = row.uid or uid
        return row
