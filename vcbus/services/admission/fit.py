"""Whether an admitted job's records fit in a record: violations when they cannot.

A job is admitted only if everything vcbus would write about it stays under
:data:`vcbus.contracts.limits.MAX_EVENT_BYTES`:

- its ``JobAdmitted`` (the mutated job): ``JobTooLarge``;
- each of its pods, built from one task template (labels, the annotations the cluster
  reads, the requests, node selector and tolerations of the spec) plus at most
  :data:`vcbus.contracts.limits.POD_FIXED_BYTES` of names and Volcano's labels, and all its
  pods together, at most :data:`vcbus.contracts.limits.MAX_JOB_PODS_BYTES`: ``PodsTooLarge``;
- each record of the job-controller's changelog state of it: the job's own, and each
  part of :data:`vcbus.contracts.limits.POD_PART_PODS` pods
  (:func:`vcbus.contracts.limits.job_state_bytes`): ``JobStateTooLarge``. Its statuses and
  PodGroups are parts of that state, so they fit too. The pods of a job are bounded by
  its replicas (``TooManyReplicas``, 10,000 by default), not by one record.

Each message says the size, the limit, and what to change.
"""

from __future__ import annotations

import msgspec

from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.limits import (
    MAX_EVENT_BYTES,
    MAX_JOB_PODS_BYTES,
    MAX_RECORD_BYTES,
    POD_FIXED_BYTES,
    POD_PART_PODS,
    job_state_bytes,
)
from vcbus.contracts.objects.job import Job, TaskSpec
from vcbus.contracts.objects.pod import TEMPLATE_ANNOTATIONS_CARRIED
from vcbus.contracts.objects.pod_spec import node_selector, pod_requests, tolerations

_ENCODER = msgspec.json.Encoder()

_LIMIT = (
    f"{MAX_EVENT_BYTES} bytes (a record is at most {MAX_RECORD_BYTES} bytes, 1 MiB, "
    "Kafka's default message.max.bytes; the rest is kept for its key and headers)"
)


def record_violations(admitted: JobAdmitted) -> tuple[Violation, ...]:
    """Return why the records of an admitted job could not be written, if they could not.

    Args:
        admitted: the ``JobAdmitted`` admission would publish.

    Returns:
        ``JobTooLarge``, ``PodsTooLarge`` and/or ``JobStateTooLarge``; empty when every
        record fits.
    """
    violations: list[Violation] = []
    size = len(_ENCODER.encode(admitted))
    if size > MAX_EVENT_BYTES:
        violations.append(
            Violation(
                path="",
                reason="JobTooLarge",
                message=(
                    f"the admitted job encodes to {size} bytes; the limit is {_LIMIT}: "
                    "split the job, or trim its task templates"
                ),
            )
        )
    job = admitted.manifest
    violations.extend(_pods_violations(job))
    state = _state_bytes(job)
    if state > MAX_EVENT_BYTES:
        pods = sum(task.replicas for task in job.spec.tasks)
        violations.append(
            Violation(
                path="spec.tasks",
                reason="JobStateTooLarge",
                message=(
                    f"a record of the job-controller's state of this job ({pods} pods: the "
                    f"job itself, or {POD_PART_PODS} pods with their names) could reach "
                    f"{state} bytes; the limit is {_LIMIT}: use fewer tasks or shorter "
                    "names, or split the job"
                ),
            )
        )
    return tuple(violations)


def _pods_violations(job: Job) -> list[Violation]:
    violations = []
    total = 0
    for index, task in enumerate(job.spec.tasks):
        size = _pod_bytes(task)
        total += size * max(task.replicas, 0)
        if size > MAX_EVENT_BYTES:
            violations.append(
                Violation(
                    path=f"spec.tasks[{index}].template",
                    reason="PodsTooLarge",
                    message=(
                        f"a pod of task {task.name} could be {size} bytes (its labels, the "
                        f"annotations the cluster reads, requests, node selector and "
                        f"tolerations); the limit is {_LIMIT}: trim the template's labels"
                    ),
                )
            )
    if total > MAX_JOB_PODS_BYTES and not violations:
        violations.append(
            Violation(
                path="spec.tasks",
                reason="PodsTooLarge",
                message=(
                    f"the job's pods would take {total} bytes together (replicas × pod size); "
                    f"the limit is {MAX_JOB_PODS_BYTES} bytes (128 MiB) per job: use fewer "
                    "replicas or fewer template labels"
                ),
            )
        )
    return violations


def _pod_bytes(task: TaskSpec) -> int:
    """Bound of the encoded size of one pod of ``task`` (what ``PodCreated`` carries)."""
    metadata = task.template.metadata
    spec = task.template.spec
    carried = {k: v for k, v in metadata.annotations.items() if k in TEMPLATE_ANNOTATIONS_CARRIED}
    parts = (metadata.labels, carried, pod_requests(spec), node_selector(spec), tolerations(spec))
    return POD_FIXED_BYTES + sum(len(_ENCODER.encode(part)) for part in parts)


def _state_bytes(job: Job) -> int:
    job_bytes = len(_ENCODER.encode(job)) + len(_ENCODER.encode(job.metadata.annotations))
    tasks = [task for task in job.spec.tasks if task.replicas > 0]
    longest_name = max(
        (len(f"{job.metadata.name}-{task.name}-{task.replicas - 1}") for task in tasks), default=0
    )
    timers = any(policy.timeout for policy in job.spec.policies) or any(
        policy.timeout for task in job.spec.tasks for policy in task.policies
    )
    return job_state_bytes(
        job_bytes=job_bytes,
        tasks=len(job.spec.tasks),
        longest_name=longest_name,
        longest_task=max((len(task.name) for task in tasks), default=0),
        timers=timers,
    )
