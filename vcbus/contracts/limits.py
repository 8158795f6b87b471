"""How large a record vcbus writes may be, and what each answer keeps within it.

Apache Kafka refuses a record over ``message.max.bytes``, 1 MiB by default: every record
vcbus writes (outputs, dead letters, changelog state) stays under
:data:`MAX_RECORD_BYTES`, counting its key, value and headers. Admission refuses a job
whose records could not fit, before any of them is written: its ``JobAdmitted``, each of
its pods and all of them together (:data:`MAX_JOB_PODS_BYTES`), and each record of the
job-controller's state of it (:func:`job_state_bytes`): that state is split, the job in
one record and its pods in parts of :data:`POD_PART_PODS` pods, so a job's size is bounded
by its replicas (10,000 by default), not by one record.
"""

from __future__ import annotations

MAX_RECORD_BYTES = 1 << 20
"""Largest record (key + value + headers) vcbus writes: Kafka's default 1 MiB."""

RECORD_FRAMING_BYTES = 512
"""What a record costs beyond its key, value and headers (Kafka's batch and record
framing), counted by every size check so a real broker never sees a record over its
limit."""

RECORD_HEADROOM_BYTES = 8 * 1024
"""Room an event leaves for its key, its headers (event type and id, trace context) and
the framing: an event's encoded value is at most ``MAX_RECORD_BYTES`` minus this."""

MAX_EVENT_BYTES = MAX_RECORD_BYTES - RECORD_HEADROOM_BYTES
"""Largest encoded event value admission lets a job's records reach."""

MAX_RECORD_EVENTS = 512
"""Most events one record carries: the outbox writes the consecutive events of one topic,
key, type and trace, answering the same input, as one record (``vcbus.core.bus.batch``),
within this count and :data:`MAX_RECORD_BYTES`."""

MAX_CLEARED_ORIGINS = 100
"""Most origins one ``RejectionsClearRequested`` (and its ``RejectionsCleared``) names."""

MAX_VIOLATIONS = 100
"""Most violations one ``JobRejected`` lists; the rest are counted."""

MAX_VIOLATION_TEXT_BYTES = 1024
"""Longest path or message of one listed violation, as JSON text (longer ones are cut,
marked ``…``)."""

MAX_PAYLOAD_ECHO_BYTES = 64 * 1024
"""Most bytes of the refused payload a ``JobRejected`` echoes (as JSON text)."""

POD_STATE_BYTES = 256
"""What the job-controller keeps per pod beyond its names: the index, uid suffix,
version, phase, exit code, restarts and a node name of up to 63 characters, with the
field names of the encoding."""

POD_TIMER_BYTES = 224
"""What a pending policy timer of a pod takes beyond its names (deadline, action, event,
version, field names): kept only for policies with a ``timeout``."""

JOB_STATE_BYTES = 64 * 1024
"""What the job-controller keeps per job beyond the job and its pods: the PodGroup, the
last status, the ids of the last events applied, reasons and messages."""

POD_FIXED_BYTES = 6 * 1024
"""What a pod carries beyond its template's labels, the annotations the cluster reads, its
requests, node selector and tolerations: its names (each at most a DNS name), Volcano's
labels and annotations, priority, scheduler, creation time."""

MAX_JOB_PODS_BYTES = 128 << 20
"""Most bytes the ``PodCreated`` records of one job may take together (replicas × pod
size): what one admitted job can make the job-controller write in one step."""

TASK_STATE_BYTES = 160
"""What the job-controller keeps per task in the job's last status (task counts)."""


POD_PART_PODS = 512
"""Most pods (and their creation counts and policy timers) one part record of the
job-controller's state of a job holds; a job with more pods is kept in several parts."""


def job_state_bytes(
    *, job_bytes: int, tasks: int, longest_name: int, longest_task: int, timers: bool
) -> int:
    """Bound of the largest record of the job-controller's changelog state of one job.

    The state is split (``vcbus/services/job_controller/state.py``): one record holds the job
    and what it keeps per job and per task; each part record holds at most
    :data:`POD_PART_PODS` pods, with per pod its name three times (name, uid, creations
    count) and its task's name, and a policy timer with the name twice more when the job
    has a policy with a timeout.

    Args:
        job_bytes: size of the encoded (mutated) job.
        tasks: how many tasks the job has.
        longest_name: the length of the job's longest pod name.
        longest_task: the length of its longest task name.
        timers: whether a policy of the job has a ``timeout``.

    Returns:
        The bound; admission refuses the job when it is over :data:`MAX_EVENT_BYTES`.
    """
    head = job_bytes + JOB_STATE_BYTES + tasks * TASK_STATE_BYTES
    per_pod = POD_STATE_BYTES + 3 * longest_name + longest_task
    if timers:
        per_pod += POD_TIMER_BYTES + 2 * longest_name
    return max(head, POD_PART_PODS * per_pod)
