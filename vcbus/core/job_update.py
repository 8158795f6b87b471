"""Updates of an admitted job: what may change (Volcano's admit_job.go), the rule, pure.

Port of volcano@v1.12 / HEAD ``pkg/webhooks/admission/jobs/validate/admit_job.go``
``validateJobUpdate`` (messages kept word for word). In vcbus a resubmitted job with a
different spec digest reaches the job-controller as a new ``JobAdmitted``; the
controller, which knows the previous spec, applies these rules (and says
``UpdateRejected`` when one fails). The read model (:mod:`vcbus.core.views.jobs`) applies the
same rule, so a refused update never replaces the spec it shows, and ``vcbus submit``
applies it before publishing, so it can say "updated" or the refusal. Imports nothing but
the contracts and msgspec.

Deliberate deviations from Volcano:

- The first failing rule wins, as in Volcano; nothing is concatenated.
- Both specs are compared as admission left them (vcbus admission defaults every
  submission, while Volcano's mutating webhook runs on CREATE only); generated PVC names
  do not exist in vcbus, so there is nothing to blank for them.
"""

from __future__ import annotations

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts.objects.job import Job, JobSpec, TaskSpec

UPDATE_REJECTED = codes.UPDATE_REJECTED

NO_PODS = codes.NO_PODS


def creation_error(job: Job) -> str | None:
    """Why ``vcbus submit`` refuses to create ``job``, or ``None``.

    vcbus: a job whose tasks all have 0 replicas would show Running with no pod forever (a
    misspelt ``replicas`` gives exactly that), so ``vcbus submit`` refuses to create one.
    Admission admits it, as Volcano does, since it cannot tell a creation from an update,
    and a running job may be scaled to 0 (``validateJobUpdate`` refuses only replicas < 0;
    the controller then keeps the job's phase, as Volcano's ``running.go`` does).
    """
    if job.spec.tasks and all(task.replicas == 0 for task in job.spec.tasks):
        return "the job has no pods: every task has 0 replicas"
    return None


def _partition_error(task: TaskSpec, job_name: str) -> str | None:
    policy = task.partition_policy
    if policy is None:
        return None
    where = f"in task: {task.name}, job: {job_name}"
    if policy.total_partitions <= 0:
        return f"'TotalPartitions' must be greater than 0 {where}"
    if policy.partition_size <= 0:
        return f"'PartitionSize' must be greater than 0 {where}"
    if task.replicas != policy.total_partitions * policy.partition_size:
        return f"'Replicas' are not equal to TotalPartitions*PartitionSize {where}"
    if (
        task.min_available is not None
        and policy.min_partitions > 0
        and policy.min_partitions * policy.partition_size != task.min_available
    ):
        return f"'MinAvailable' is not equal to MinPartitions*PartitionSize {where}"
    return None


def _blank(spec: JobSpec) -> JobSpec:
    tasks = tuple(
        msgspec.structs.replace(task, replicas=0, min_available=None) for task in spec.tasks
    )
    return msgspec.structs.replace(spec, min_available=0, priority_class_name="", tasks=tasks)


def changed_fields(old: Job, new: Job) -> tuple[str, ...]:
    """The fields an update changes, as the manifest spells them.

    Of the fields an update may change: ``minAvailable``, ``priorityClassName``, then each
    task's ``tasks[NAME].replicas`` and ``tasks[NAME].minAvailable`` in spec order. When
    none of them differs and the jobs still do (labels, annotations), ``metadata``; when
    nothing differs, none.
    """
    changed: list[str] = []
    if new.spec.min_available != old.spec.min_available:
        changed.append("minAvailable")
    if new.spec.priority_class_name != old.spec.priority_class_name:
        changed.append("priorityClassName")
    before = {task.name: task for task in old.spec.tasks}
    for task in new.spec.tasks:
        was = before.get(task.name)
        if was is None:
            changed.append(f"tasks[{task.name}]")
            continue
        if task.replicas != was.replicas:
            changed.append(f"tasks[{task.name}].replicas")
        if task.min_available != was.min_available:
            changed.append(f"tasks[{task.name}].minAvailable")
    if not changed and (_blank(new.spec) != _blank(old.spec) or _meta(new) != _meta(old)):
        changed.append("metadata" if _blank(new.spec) == _blank(old.spec) else "spec")
    return tuple(changed)


def _meta(job: Job) -> tuple[object, ...]:
    """What of a job's metadata a user writes (not the uid or time admission sets)."""
    meta = job.metadata
    return (meta.labels, meta.annotations)


def update_error(old: Job, new: Job) -> str | None:
    """Return why ``new`` may not replace ``old``, or ``None`` when the update is allowed.

    Only job ``minAvailable``, ``priorityClassName`` and each task's ``replicas`` and
    ``minAvailable`` may change (Volcano's admit_job.go); the first failing rule gives the message.

    Args:
        old: the job as currently admitted.
        new: the resubmitted job.

    Returns:
        Volcano's message for the first rule that fails, or ``None``.
    """
    total_replicas = 0
    for task in new.spec.tasks:
        if task.replicas < 0:
            return f"'replicas' must be >= 0 in task: {task.name}"
        if task.min_available is not None:
            if task.min_available < 0:
                return f"'minAvailable' must be >= 0 in task: {task.name}"
            if task.min_available > task.replicas:
                return f"'minAvailable' must be <= 'replicas' in task: {task.name}"
        error = _partition_error(task, new.metadata.name)
        if error is not None:
            return error
        total_replicas += task.replicas
    if new.spec.min_available > total_replicas:
        return "job 'minAvailable' must not be greater than total replicas"
    if new.spec.min_available < 0:
        return "job 'minAvailable' must be >= 0"
    topology = new.spec.network_topology or {}
    if "highestTierAllowed" in topology and "highestTierName" in topology:
        return (
            "must not specify 'highestTierAllowed' and 'highestTierName' "
            "in networkTopology simultaneously"
        )
    if len(new.spec.tasks) != len(old.spec.tasks):
        return "job updates may not add or remove tasks"
    if _blank(new.spec) != _blank(old.spec):
        return (
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec` and `PriorityClassName`"
        )
    return None
