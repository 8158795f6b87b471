"""The read side's one declaration of what it folds: each fold's union, and so its topics.

A fold declares the union of the events it matches (``JobFoldEvent``, ``PodFoldEvent``,
:data:`ClusterFoldEvent`), and ends its ``match`` in ``assert_never``; the topics it reads
are derived here from that union (:func:`folded_topics`), never listed by hand. So an
event type added to a topic is a type error in each fold of that topic until folded, and a
topic a fold starts to read is read by every reader of that fold:

- :data:`JOB_TOPICS`: a job's and its PodGroup's (``vcbus.core.views.jobs.JobFold``;
  ``submit --wait``, ``get jobs``);
- :data:`POD_TOPICS`: a pod's life (``vcbus.core.views.pod_fold.PodFold``);
- :data:`STATUS_TOPICS`: ``vcbus up``'s view (``vcbus.core.views.live.StatusView``),
  the jobs', the pods', the nodes and the reservation;
- :data:`STORE_TOPICS`: the CLI's compact store (``get``, ``describe``, the dashboard),
  which also keeps the newest record of the queues and of the will-bind reservations
  (:data:`LATEST_TOPICS`), folded as records, not events.
"""

from __future__ import annotations

import typing

from vcbus.contracts import (
    TOPIC_SPECS,
    TOPICS,
    CapacityReservationsEvent,
    KeyKind,
    NodesEvent,
    QueuesEvent,
    ReservationsEvent,
    Topic,
)
from vcbus.core.views.jobs import JobFoldEvent
from vcbus.core.views.pod_fold import PodFoldEvent


def _members(union: object) -> frozenset[object]:
    return frozenset(typing.get_args(union) or (union,))


def folded_topics(union: object) -> tuple[Topic, ...]:
    """The topics whose every event type is in ``union``, in the topic table's order."""
    members = _members(union)
    return tuple(spec.topic for spec in TOPICS if _members(spec.union) <= members)


ClusterFoldEvent = PodFoldEvent | NodesEvent | ReservationsEvent
"""What ``vcbus up``'s view folds besides the jobs' topics: pods, nodes and reservations."""

StatusFoldEvent = JobFoldEvent | ClusterFoldEvent
"""Everything ``vcbus up``'s view folds."""

JOB_TOPICS = folded_topics(JobFoldEvent)
"""The topics of a job and its PodGroup."""

POD_TOPICS = folded_topics(PodFoldEvent)
"""The topics of a pod's life: keyed by job or node, with many pods per key."""

STATUS_TOPICS = folded_topics(StatusFoldEvent)
"""The topics ``vcbus up``'s view folds."""

LATEST_TOPICS = folded_topics(JobFoldEvent | NodesEvent | QueuesEvent | CapacityReservationsEvent)
"""The topics whose newest record per key is all the CLI's store needs (what compaction
would keep)."""

STORE_TOPICS = folded_topics(StatusFoldEvent | QueuesEvent | CapacityReservationsEvent)
"""Every topic the CLI's store folds: :data:`LATEST_TOPICS`, the pods' and the reservation."""

JOB_KEYED_TOPICS = tuple(t for t in STORE_TOPICS if TOPIC_SPECS[t].key is KeyKind.JOB)
"""The topics of the store keyed by job: one job's questions read them on its partition."""
