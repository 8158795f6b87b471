"""How large a record vcbus writes may be, and what each answer keeps within it (SPEC A12).

Apache Kafka refuses a record over ``message.max.bytes``, 1 MiB by default: every record
vcbus writes (outputs, dead letters, changelog state) stays under
:data:`MAX_RECORD_BYTES`, counting its key, value and headers. Admission refuses a job
whose records could not fit, before any of them is written: its ``JobAdmitted``, each of
its pods and all of them together (:data:`MAX_JOB_PODS_BYTES`), and the job-controller's
state of it (:func:`job_state_bytes`).
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


def job_state_bytes(
    *, job_bytes: int, pods: int, names_bytes: int, tasks: int, timers: bool
) -> int:
    """Bound of the job-controller's changelog state of one job, in bytes.

    The state holds the job, then per pod its name three times (name, uid, creations
    count) and its task's name, and a policy timer with the name twice more when the job
    has a policy with a timeout.

    Args:
        job_bytes: size of the encoded (mutated) job.
        pods: how many pods the job has at most (Σ replicas).
        names_bytes: Σ over the pods of ``len(pod name)``, plus the length of its task
            name.
        tasks: how many tasks the job has.
        timers: whether a policy of the job has a ``timeout``.

    Returns:
        The bound; admission refuses the job when it is over :data:`MAX_EVENT_BYTES`.
    """
    per_pod = pods * POD_STATE_BYTES + 3 * names_bytes
    if timers:
        per_pod += pods * POD_TIMER_BYTES + 2 * names_bytes
    return job_bytes + JOB_STATE_BYTES + tasks * TASK_STATE_BYTES + per_pod
