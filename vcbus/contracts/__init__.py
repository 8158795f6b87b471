"""vcbus wire contracts: resources, one tagged union of events per topic, the topic table."""

from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.bindings import BindingCreated, BindingsEvent, PodEvictionRequested
from vcbus.contracts.events.capacity_reservations import (
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
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
    JobsAdmittedEvent,
)
from vcbus.contracts.events.jobs_rejected import (
    JobRejected,
    JobsRejectedEvent,
    RejectionsCleared,
    SubmissionOrigin,
    Violation,
)
from vcbus.contracts.events.jobs_status import (
    JobDeleted,
    JobsStatusEvent,
    JobStatusChanged,
    TaskCounts,
)
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
from vcbus.contracts.keys import JobKey, NodeName, PodKey, job_key, pod_key, split_key
from vcbus.contracts.topics import (
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
    "RejectionsClearRequested",
    "RejectionsCleared",
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
