"""Every reason code vcbus writes or reads, one definition each: the one list of codes.

A code is a stable CamelCase word on the wire (a condition's or a pod status's ``reason``,
a refusal's, a release's). Each producer and each reader names it from here, so a code is
added in one place and a test (``tests/unit/contracts/test_reasons.py``) finds any defined
elsewhere. How the pending reasons rank is ``vcbus.core.reasons``'s. Admission's
violation reasons are Volcano's and Kubernetes' field errors, named where each rule is.
"""

from __future__ import annotations

# Why a PodGroup waits: the scheduler's and the job-controller's codes and condition types
# (ranked by ``vcbus.core.reasons``; docs/design.md#pending-reasons).

UNSCHEDULABLE = "Unschedulable"
"""The condition type that carries a reason code."""
SCHEDULABLE = "Schedulable"
"""A task's reason once it is allocated and waits only for its job's minimum."""
SCHEDULED = "Scheduled"
"""Gang's condition type once a job's tasks are ready to be scheduled."""
QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_CLOSED = "QueueClosed"
INFEASIBLE = "Infeasible"
"""No node could ever hold a minimum pod of the job, with the fit errors."""
QUEUE_OVER_CAPABILITY = "QueueOverCapability"
"""The job's minimum does not fit its queue's own capability: beside the queue's running and
inqueue jobs (it waits for them), or alone (``vcbus.core.reasons.NEVER_ADMITTED`` ends
the message)."""
CLUSTER_OVERUSED = "ClusterOverused"
GANG_UNSCHEDULABLE = "GangUnschedulable"
QUEUE_OVERUSED = "QueueOverused"
"""Allocate skips a job whose queue is overused this session (ranks with gang's)."""
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
"""Gang's ``validJobFn``: a task can no longer meet its minimum (ranks with gang's)."""
NOT_ENOUGH_TASKS = "NotEnoughTasks"
"""Gang's ``validJobFn``: the job can no longer meet its minimum (ranks with gang's)."""
WILL_BIND_TIMEOUT = "WillBindTimeout"
"""A dependent job's will-bind reservation for its later stages timed out (vcbus)."""
WAITING_FOR_DEPENDENCY = "WaitingForDependency"
WAITING_FOR_RESERVATION = "WaitingForReservation"
WAITING_FOR_EVICTION = "WaitingForEviction"
"""A preemptor's pods wait for their victims to end (``framework.nomination``)."""
RESERVATION_EXPIRED = "ReservationExpired"
"""The job's reservation reached ``lock-max``; it is not elected again for ``lock-backoff``."""
PODGROUP_PENDING = "PodGroupPending"
"""The job controller's reason while it has not seen its PodGroup enqueued."""
PODS_PENDING = "PodsPending"
"""The job controller's reason while an enqueued job's minimum pods are not all started."""
PREEMPTED = "Preempted"
RECLAIMED = "Reclaimed"


# A job's update refused, as Volcano's admission refuses it.

UPDATE_REJECTED = "UpdateRejected"
"""Reason code of a refused update."""
NO_PODS = "NoPods"
"""Reason code of a job created with no pod at all."""


# A pod's status: the reason beside its phase on ``pods.status``.

POD_BOUND = "Bound"
"""The reason of the pod status that accepts a binding: ``Pending`` on its node, or
``Running`` when the pod starts as it is bound (no start delay)."""
POD_STARTED = "Started"
"""The reason of a pod status ``Running`` that started after it was bound."""
POD_COMPLETED = "Completed"
"""The reason of a pod that ended ``Succeeded`` (exit code 0)."""
POD_ERROR = "Error"
"""The reason of a pod that ended ``Failed`` with a non-zero exit code."""
POD_EVICTED = "Evicted"
"""The reason of a pod ended by an eviction (preempt, reclaim); the job-controller raises
``PodEvicted`` for it."""
POD_NODE_OVERCOMMITTED = "NodeOvercommitted"
"""The reason of a binding refused because the pod would overcommit its node."""
POD_ALREADY_BOUND = "AlreadyBound"
"""The reason of a binding refused because the pod is bound to another node already."""
POD_NODE_LOST = "NodeLost"
"""The reason of a pod that ended ``Failed`` because its node is gone: removed, or a real
node whose heartbeats stopped past the pod-eviction timeout (docs/design.md#real-nodes)."""


# The simulated cluster's answers to a binding.

REASON_INVALID_ANNOTATION = "InvalidAnnotation"
REASON_NODE_NOT_FOUND = "NodeNotFound"
REASON_NODE_UNSCHEDULABLE = "NodeUnschedulable"


# A node agent's pods: how a process ended or why it never ran.

REASON_OOM = "OOMKilled"
REASON_DEADLINE = "DeadlineExceeded"
REASON_STOPPED = "Stopped"
REASON_START_ERROR = "StartError"
REASON_INIT_ERROR = "InitError"
REASON_PEERS_UNKNOWN = "PeersUnknown"
REASON_NO_COMMAND = "NoCommand"
REASON_CONFIG_ERROR = "CreateContainerConfigError"
REASON_HOST_PATH = "HostPathNotAllowed"
REASON_USER_NOT_ALLOWED = "RunAsUserNotAllowed"
REASON_LOST = "Lost"
REASON_PORTS_EXHAUSTED = "PortsExhausted"
REASON_POD_USERS_EXHAUSTED = "PodUsersExhausted"
REASON_INVALID_BINDING = "InvalidBinding"
REASON_INVALID_SPEC = "InvalidSpec"
REASON_VOLUME_UNSUPPORTED = "VolumeNotSupported"
"""A volume of a kind a node does not provide (a claim, a configMap, a secret…), named."""
REASON_NEVER_PULL = "ErrImageNeverPull"
REASON_PULL = "ErrImagePull"
REASON_PULL_BACKOFF = "ImagePullBackOff"
"""A pull failed: the pod waits (``Pending``) to pull again, then fails with it."""


# What a node agent refuses to run: a record without admission's or the allocator's signature
# (docs/security.md).

REASON_UNSIGNED = "Unsigned"
REASON_UNTRUSTED_KEY = "UntrustedKey"
REASON_BAD_SIGNATURE = "BadSignature"
REASON_DIGEST_MISMATCH = "DigestMismatch"
REASON_SPEC_NOT_ADMITTED = "SpecNotAdmitted"


# The will-bind reservation's condition and its release reasons (``CapacityReleased``).

WILL_BIND_CONDITION = "WillBind"
"""The allocator condition that shows a job's reservation (or its timeout)."""
CAPACITY_RESERVED = "CapacityReserved"
STAGE_BOUND = "StageBound"
JOB_ENDED = "JobEnded"
JOB_DELETED = "JobDeleted"
WILL_BIND_DISABLED = "WillBindDisabled"
WILL_BIND_NOT_NEEDED = "NotNeeded"


# Why a nomination ended (``NominationEnded``).

NOMINATION_EXPIRED = "NominationExpired"
