"""The topic table: the single source of truth for names, unions, keys and writers."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vcbus.contracts._base import Event, tag_of
from vcbus.contracts.events.bindings import BindingCreated, BindingsEvent, PodEvictionRequested
from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReservationsEvent,
    CapacityReserved,
    LocksHonoured,
    LocksLifted,
    NominationEnded,
    PodsNominated,
)
from vcbus.contracts.events.cluster_commands import (
    NodeAddRequested,
    NodeCommand,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
)
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
    JobsAdmittedEvent,
)
from vcbus.contracts.events.jobs_rejected import JobRejected, JobsRejectedEvent, RejectionsCleared
from vcbus.contracts.events.jobs_status import JobDeleted, JobsStatusEvent, JobStatusChanged
from vcbus.contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    JobsSubmittedCommand,
    RejectionsClearRequested,
)
from vcbus.contracts.events.nodes import (
    NodeChanged,
    NodeHeartbeat,
    NodeRegistered,
    NodeRemoved,
    NodesEvent,
)
from vcbus.contracts.events.podgroups import (
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupsEvent,
    PodGroupUpdated,
)
from vcbus.contracts.events.podgroups_conditions import (
    PodGroupConditionsChanged,
    PodGroupsConditionsEvent,
)
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged, PodGroupsStatusEvent
from vcbus.contracts.events.pods import PodCreated, PodDeleted, PodsEvent
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged, PodsStatusEvent
from vcbus.contracts.events.queues import QueueDeclared, QueueDeleted, QueuesEvent
from vcbus.contracts.events.reservations import (
    NodesLocked,
    NodesUnlocked,
    ReservationsEvent,
    TargetJobElected,
)

DEFAULT_PREFIX = "vcbus."
DLT_SUFFIX = ".DLT"


class Topic(enum.StrEnum):
    """Topic names (docs/design.md#topics), without the installation prefix."""

    JOBS_SUBMITTED = "jobs.submitted"
    JOBS_ADMITTED = "jobs.admitted"
    JOBS_REJECTED = "jobs.rejected"
    JOBS_STATUS = "jobs.status"
    PODGROUPS = "podgroups"
    PODGROUPS_STATUS = "podgroups.status"
    PODGROUPS_CONDITIONS = "podgroups.conditions"
    PODS = "pods"
    BINDINGS = "bindings"
    PODS_STATUS = "pods.status"
    NODES = "nodes"
    RESERVATIONS = "reservations"
    QUEUES = "queues"
    CLUSTER_COMMANDS = "cluster.commands"
    CAPACITY_RESERVATIONS = "capacity.reservations"


class KeyKind(enum.StrEnum):
    """What a topic is keyed by."""

    JOB = "job"
    NODE = "node"
    QUEUE = "queue"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One row of the topic table.

    ``union`` is the tagged union of the topic's events. ``raw_values`` marks a topic
    whose values may also be untyped text (``jobs.submitted`` takes Job manifests as
    written), decoded by its consumer rather than by the codec.
    """

    topic: Topic
    union: object
    key: KeyKind
    writer: str
    raw_values: bool = False

    @property
    def dead_letter(self) -> str:
        """The DLT of this topic, without prefix."""
        return f"{self.topic}{DLT_SUFFIX}"


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(Topic.JOBS_SUBMITTED, JobsSubmittedCommand, KeyKind.JOB, "users", raw_values=True),
    TopicSpec(Topic.JOBS_ADMITTED, JobsAdmittedEvent, KeyKind.JOB, "admission"),
    TopicSpec(Topic.JOBS_REJECTED, JobsRejectedEvent, KeyKind.JOB, "admission"),
    TopicSpec(Topic.JOBS_STATUS, JobsStatusEvent, KeyKind.JOB, "job-controller"),
    TopicSpec(Topic.PODGROUPS, PodGroupsEvent, KeyKind.JOB, "job-controller"),
    TopicSpec(Topic.PODGROUPS_STATUS, PodGroupsStatusEvent, KeyKind.JOB, "podgroup-enqueue"),
    TopicSpec(Topic.PODGROUPS_CONDITIONS, PodGroupsConditionsEvent, KeyKind.JOB, "allocator"),
    TopicSpec(Topic.PODS, PodsEvent, KeyKind.JOB, "job-controller"),
    TopicSpec(Topic.BINDINGS, BindingsEvent, KeyKind.NODE, "allocator"),
    TopicSpec(Topic.PODS_STATUS, PodsStatusEvent, KeyKind.JOB, "cluster, agent, allocator"),
    TopicSpec(Topic.NODES, NodesEvent, KeyKind.NODE, "cluster, agent"),
    TopicSpec(Topic.RESERVATIONS, ReservationsEvent, KeyKind.JOB, "podgroup-enqueue"),
    TopicSpec(Topic.QUEUES, QueuesEvent, KeyKind.QUEUE, "users"),
    TopicSpec(Topic.CLUSTER_COMMANDS, NodeCommand, KeyKind.NODE, "users"),
    TopicSpec(Topic.CAPACITY_RESERVATIONS, CapacityReservationsEvent, KeyKind.JOB, "allocator"),
)

TOPIC_SPECS: dict[Topic, TopicSpec] = {spec.topic: spec for spec in TOPICS}

TopicEvent = (
    JobsSubmittedCommand
    | JobsAdmittedEvent
    | JobsRejectedEvent
    | JobsStatusEvent
    | PodGroupsEvent
    | PodGroupsStatusEvent
    | PodGroupsConditionsEvent
    | PodsEvent
    | BindingsEvent
    | PodsStatusEvent
    | NodesEvent
    | ReservationsEvent
    | QueuesEvent
    | NodeCommand
    | CapacityReservationsEvent
)
"""Every event published on a topic: the unions of :data:`TOPICS`, for a fold of them all
(its ``match`` ends in ``assert_never``, so a new event type is a type error until folded)."""


KEYLESS: frozenset[type[Event]] = frozenset({RejectionsClearRequested, RejectionsCleared})
"""Event types written without a key: they are about no entity of their topic's key kind
(the rejected records that named no job, which are keyless too)."""


def topic_name(topic: Topic | str, prefix: str = DEFAULT_PREFIX) -> str:
    """Return the broker-side name of a topic under an installation prefix."""
    return f"{prefix}{topic}"


def _tag_table() -> dict[str, TopicSpec]:
    table: dict[str, TopicSpec] = {}
    for spec in TOPICS:
        members: tuple[type[Event], ...] = getattr(spec.union, "__args__", None) or (
            spec.union,  # type: ignore[assignment]
        )
        for member in members:
            tag = tag_of(member)
            if tag in table:
                raise ValueError(f"tag {tag} belongs to two topics")
            table[tag] = spec
    return table


TOPIC_BY_TAG: dict[str, TopicSpec] = _tag_table()


def _type_table() -> dict[type[Event], TopicSpec]:
    table: dict[type[Event], TopicSpec] = {}
    for spec in TOPICS:
        members: tuple[type[Event], ...] = getattr(spec.union, "__args__", None) or (
            spec.union,  # type: ignore[assignment]
        )
        for member in members:
            table[member] = spec
    return table


TOPIC_BY_TYPE: dict[type[Event], TopicSpec] = _type_table()
"""Each event type's topic (``TOPIC_BY_TAG`` by type: one lookup for every record made)."""


def topic_of(event: Event) -> TopicSpec:
    """Return the topic an event is published on (each type belongs to one topic)."""
    spec = TOPIC_BY_TYPE.get(type(event))
    return spec if spec is not None else TOPIC_BY_TAG[tag_of(type(event))]


def _job(event: Any) -> str:
    return event.job  # type: ignore[no-any-return]


def _job_or_empty(event: Any) -> str:
    return event.job or ""


def _podgroup_job(event: Any) -> str:
    return event.podgroup.job  # type: ignore[no-any-return]


def _pod_job(event: Any) -> str:
    return event.pod.job  # type: ignore[no-any-return]


def _node(event: Any) -> str:
    return event.node  # type: ignore[no-any-return]


def _node_name(event: Any) -> str:
    return event.node.name  # type: ignore[no-any-return]


def _name(event: Any) -> str:
    return event.name  # type: ignore[no-any-return]


def _queue_name(event: Any) -> str:
    return event.queue.name  # type: ignore[no-any-return]


def _no_key(event: Any) -> str:
    return ""  # about no job: keyless, as the rejections it clears (KEYLESS)


_KEYS: tuple[tuple[Callable[[Any], str], tuple[type[Event], ...]], ...] = (
    (
        _job,
        (
            JobAdmitted,
            JobDeleteAccepted,
            JobAbortAccepted,
            JobResumeAccepted,
            JobStatusChanged,
            JobDeleted,
            JobDeleteRequested,
            JobAbortRequested,
            JobResumeRequested,
            PodGroupDeleted,
            PodGroupPhaseChanged,
            PodGroupConditionsChanged,
            PodDeleted,
            PodPhaseChanged,
            BindingRefused,
            TargetJobElected,
            NodesLocked,
            NodesUnlocked,
            CapacityReserved,
            CapacityReleased,
            LocksHonoured,
            LocksLifted,
            PodsNominated,
            NominationEnded,
        ),
    ),
    (_job_or_empty, (JobRejected,)),
    (_podgroup_job, (PodGroupCreated, PodGroupUpdated)),
    (_pod_job, (PodCreated,)),
    (_node, (BindingCreated, PodEvictionRequested)),
    (_node_name, (NodeRegistered, NodeChanged, NodeAddRequested)),
    (
        _name,
        (
            NodeCordonRequested,
            NodeUncordonRequested,
            NodeRemoveRequested,
            NodeRemoved,
            NodeHeartbeat,
            QueueDeleted,
        ),
    ),
    (_queue_name, (QueueDeclared,)),
    (_no_key, tuple(KEYLESS)),
)
KEY_BY_TYPE: dict[type[Event], Callable[[Any], str]] = {
    kind: key for key, kinds in _KEYS for kind in kinds
}
"""How each event type names its record key (one lookup, not a match over every type)."""


def key_of(event: Event) -> str:
    """Return the record key of an event: the job key, node name or queue name it is about."""
    key = KEY_BY_TYPE.get(type(event))
    if key is None:
        raise TypeError(f"no key for event type {type(event).__name__}")
    return key(event)
