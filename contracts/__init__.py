"""vcbus wire contracts: resources, one tagged union of events per topic, the topic table."""

from contracts._base import Event, derive_event_id, tag_of
from contracts.events.bindings import BindingCreated, BindingsEvent, PodEvictionRequested
from contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReservationsEvent,
    CapacityReserved,
    LocksHonoured,
    LocksLifted,
    NominatedPod,
    NominationEnded,
    PodsNominated,
    ReservedPod,
)
from contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
    JobsAdmittedEvent,
)
from contracts.events.jobs_rejected import (
    JobRejected,
    JobsRejectedEvent,
    SubmissionOrigin,
    Violation,
)
from contracts.events.jobs_status import JobDeleted, JobsStatusEvent, JobStatusChanged, TaskCounts
from contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    JobsSubmittedCommand,
)
from contracts.events.nodes import (
    NodeChanged,
    NodeHeartbeat,
    NodeRegistered,
    NodeRemoved,
    NodesEvent,
)
from contracts.events.podgroups import (
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupsEvent,
    PodGroupUpdated,
)
from contracts.events.podgroups_conditions import (
    PodGroupConditionsChanged,
    PodGroupsConditionsEvent,
)
from contracts.events.podgroups_status import PodGroupPhaseChanged, PodGroupsStatusEvent
from contracts.events.pods import PodCreated, PodDeleted, PodsEvent
from contracts.events.pods_status import BindingRefused, PodPhaseChanged, PodsStatusEvent
from contracts.events.queues import QueueDeclared, QueueDeleted, QueuesEvent
from contracts.events.reservations import (
    NodesLocked,
    NodesUnlocked,
    ReservationsEvent,
    TargetJobElected,
)
from contracts.keys import JobKey, NodeName, PodKey, job_key, pod_key, split_key
from contracts.topics import (
    DEFAULT_PREFIX,
    TOPIC_SPECS,
    TOPICS,
    KeyKind,
    Topic,
    TopicSpec,
    key_of,
    topic_name,
    topic_of,
)

__all__ = [
    "DEFAULT_PREFIX",
    "TOPICS",
    "TOPIC_SPECS",
    "BindingCreated",
    "BindingRefused",
    "BindingsEvent",
    "CapacityReleased",
    "CapacityReservationsEvent",
    "CapacityReserved",
    "Event",
    "JobAbortAccepted",
    "JobAbortRequested",
    "JobAdmitted",
    "JobDeleteAccepted",
    "JobDeleteRequested",
    "JobDeleted",
    "JobKey",
    "JobRejected",
    "JobResumeAccepted",
    "JobResumeRequested",
    "JobStatusChanged",
    "JobsAdmittedEvent",
    "JobsRejectedEvent",
    "JobsStatusEvent",
    "JobsSubmittedCommand",
    "KeyKind",
    "LocksHonoured",
    "LocksLifted",
    "NodeChanged",
    "NodeHeartbeat",
    "NodeName",
    "NodeRegistered",
    "NodeRemoved",
    "NodesEvent",
    "NodesLocked",
    "NodesUnlocked",
    "NominatedPod",
    "NominationEnded",
    "PodCreated",
    "PodDeleted",
    "PodEvictionRequested",
    "PodGroupConditionsChanged",
    "PodGroupCreated",
    "PodGroupDeleted",
    "PodGroupPhaseChanged",
    "PodGroupUpdated",
    "PodGroupsConditionsEvent",
    "PodGroupsEvent",
    "PodGroupsStatusEvent",
    "PodKey",
    "PodPhaseChanged",
    "PodsEvent",
    "PodsNominated",
    "PodsStatusEvent",
    "QueueDeclared",
    "QueueDeleted",
    "QueuesEvent",
    "ReservationsEvent",
    "ReservedPod",
    "SubmissionOrigin",
    "TargetJobElected",
    "TaskCounts",
    "Topic",
    "TopicSpec",
    "Violation",
    "derive_event_id",
    "job_key",
    "key_of",
    "pod_key",
    "split_key",
    "tag_of",
    "topic_name",
    "topic_of",
]
