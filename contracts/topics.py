"""The topic table: the single source of truth for names, unions, keys and writers."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from contracts.events.bindings import BindingsEvent
from contracts.events.jobs_admitted import JobsAdmittedEvent
from contracts.events.jobs_rejected import JobsRejectedEvent
from contracts.events.jobs_status import JobsStatusEvent
from contracts.events.jobs_submitted import JobsSubmittedCommand
from contracts.events.nodes import NodesEvent
from contracts.events.podgroups import PodGroupsEvent
from contracts.events.podgroups_conditions import PodGroupsConditionsEvent
from contracts.events.podgroups_status import PodGroupsStatusEvent
from contracts.events.pods import PodsEvent
from contracts.events.pods_status import PodsStatusEvent
from contracts.events.queues import QueuesEvent
from contracts.events.reservations import ReservationsEvent

DEFAULT_PREFIX = "vcbus."
DLT_SUFFIX = ".DLT"


class Topic(enum.StrEnum):
    """DESIGN §2 topic names, without the installation prefix."""

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
    TopicSpec(Topic.PODS_STATUS, PodsStatusEvent, KeyKind.JOB, "cluster"),
    TopicSpec(Topic.NODES, NodesEvent, KeyKind.NODE, "cluster"),
    TopicSpec(Topic.RESERVATIONS, ReservationsEvent, KeyKind.JOB, "podgroup-enqueue"),
    TopicSpec(Topic.QUEUES, QueuesEvent, KeyKind.QUEUE, "users"),
)

TOPIC_SPECS: dict[Topic, TopicSpec] = {spec.topic: spec for spec in TOPICS}


def topic_name(topic: Topic | str, prefix: str = DEFAULT_PREFIX) -> str:
    """Return the broker-side name of a topic under an installation prefix."""
    return f"{prefix}{topic}"
