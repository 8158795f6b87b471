"""Pods as users see them, folded per pod from ``pods``, ``bindings`` and ``pods.status``.

The one fold of pods: ``vcbus up``'s view (:mod:`vcbus.core.views.live`), the CLI's store
(``get``, ``describe``, ``delete``, ``submit --wait``, the dashboard) and ``simulate``'s
outcome read it. Those topics are keyed by job or node, with many pods per key, so each
pod is folded into a small row.

- A pod's incarnation is its uid. An event of an incarnation older than the pod's latest is
  dropped, so a late event of a deleted pod never brings it back or changes its
  successor's row.
- A pod deleted leaves :attr:`PodFold.rows` and is kept in :attr:`PodFold.gone` (the last
  incarnation deleted, with the deleted flag) until it is created again; a late event of
  that incarnation (the cluster's last word on a pod it ended) still updates that row.
- A refused binding takes the pod off the node it named; a pod holds its node's capacity
  while it is bound and Pending or Running (:data:`ACTIVE`, :func:`active_by_node`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import assert_never

from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    BindingsEvent,
    Event,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodPhaseChanged,
    PodsEvent,
    PodsStatusEvent,
)
from vcbus.contracts.quantity import Resources

MESSAGE_KEPT = 200
"""How much of a status message a row keeps."""
ACTIVE = frozenset({"Pending", "Running"})
"""Pod phases that hold a node's capacity (once the pod is bound)."""


@dataclass(slots=True)
class PodRow:
    """One pod: job, task, phase, node, the incarnation (uid) it is and what it requests."""

    job: str
    task: str = ""
    phase: str = "Pending"
    node: str = ""
    uid: str = ""
    requests: Resources = field(default_factory=dict)
    queue: str = ""
    exit_code: int | None = None
    deleted: bool = False
    reason: str = ""
    """The reason of its newest status (``Bound``, ``Error``, ``OOMKilled``, ``NodeLost``…)."""
    message: str = ""
    """The message of its newest status, cut to :data:`MESSAGE_KEPT` characters."""
    restarts: int = 0
    """Container restarts so far, as its node counts them."""
    host_ip: str = ""
    """Where its job's other pods reach it (a real node's address); empty when simulated."""

    @property
    def is_active(self) -> bool:
        """Whether the pod holds its node's capacity: bound, not deleted, not finished."""
        return bool(self.node) and not self.deleted and self.phase in ACTIVE


PodFoldEvent = PodsEvent | BindingsEvent | PodsStatusEvent
"""What :class:`PodFold` folds: every event of the topics of a pod's life."""


class PodFold:
    """The pods, by ``namespace/name``, folded from their events."""

    def __init__(self) -> None:
        self.rows: dict[str, PodRow] = {}
        """The pods that exist."""
        self.gone: dict[str, PodRow] = {}
        """The last incarnation deleted of each pod not created again since."""
        self._gone_uids: set[str] = set()

    def row(self, key: str) -> PodRow | None:
        """The pod's latest incarnation: the live row, else the one deleted last."""
        return self.rows.get(key) or self.gone.get(key)

    def apply(self, event: Event) -> str | None:
        """Fold one event; the key of the pod it was about.

        ``None`` when it is not a pod's event, or when it is about an incarnation older
        than the pod's latest (dropped).
        """
        if not isinstance(event, PodFoldEvent):
            return None
        rows = self.rows
        match event:
            case PodCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                if pod.uid and pod.uid in self._gone_uids:
                    return None
                row = rows.get(key)
                if row is None or (row.uid and pod.uid and row.uid != pod.uid):
                    row = rows[key] = PodRow(job=pod.job)
                    self.gone.pop(key, None)
                row.job, row.task, row.uid = pod.job, pod.task, pod.uid or row.uid
                row.requests, row.queue = pod.requests, pod.queue
            case PodDeleted():
                key = event.pod
                row = rows.get(key)
                if event.pod_uid:
                    self._gone_uids.add(event.pod_uid)
                if row is None or (event.pod_uid and row.uid not in ("", event.pod_uid)):
                    return None
                del rows[key]
                row.deleted = True
                self.gone[key] = row
            case BindingCreated():
                key, pod = f"{event.pod.namespace}/{event.pod.name}", event.pod
                row = self._row(key, pod.job, pod.uid)
                if row is None:
                    return None
                row.node, row.task = event.node, row.task or pod.task
            case PodPhaseChanged():
                key = event.pod
                row = self._row(key, event.job, event.pod_uid)
                if row is None:
                    return None
                row.phase, row.task = str(event.phase), row.task or event.task
                row.node = event.node or row.node
                row.exit_code = event.exit_code
                row.reason, row.message = event.reason, event.message[:MESSAGE_KEPT]
                row.restarts = max(row.restarts, event.restart_count)
                row.host_ip = event.host_ip or row.host_ip
            case BindingRefused():
                key = event.pod
                row = self._row(key, event.job, event.pod_uid)
                if row is None:
                    return None
                if row.node == event.node:
                    row.node = ""
            case PodEvictionRequested():
                return None  # the pod's phase says when it ended
            case _:
                assert_never(event)
        return key

    def _row(self, key: str, job: str, uid: str) -> PodRow | None:
        """The row an event of incarnation ``uid`` updates, or ``None`` (a stale event)."""
        if uid and uid in self._gone_uids:
            gone = self.gone.get(key)
            return gone if gone is not None and gone.uid == uid else None
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = PodRow(job=job, uid=uid)
            self.gone.pop(key, None)
        elif uid and row.uid and row.uid != uid:
            return None
        row.uid = row.uid or uid
        return row


def active_by_node(rows: Iterable[PodRow]) -> dict[str, list[PodRow]]:
    """The pods that hold each node's capacity (:attr:`PodRow.is_active`), by node."""
    held: dict[str, list[PodRow]] = {}
    for row in rows:
        if row.is_active:
            held.setdefault(row.node, []).append(row)
    return held
