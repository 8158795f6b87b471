"""The PodGroup built from a job (Volcano's job_controller_actions.go).

Port of volcano@HEAD ``pkg/controllers/job/job_controller_actions.go``
``createOrUpdatePodGroup`` and ``calcPGMinResources``, with the task ordering of
``pkg/controllers/job/job_controller_util.go`` ``TasksPriority``.

Deliberate deviations from Volcano:

- ``minTaskMember`` has no entry for a task without ``minAvailable`` when no task of the
  job has one (docs/design.md#minavailable, fourth case: only the job-level gang applies). When some
  other task has a minimum, a task without one gets ``replicas`` (A1 counts unset ones as replicas),
  as Volcano does for every task.
- Per-pod requests are the scheduler's view (``cpu``, ``memory``, extended resources, from
  ``vcbus.contracts.objects.pod_spec.pod_requests``), not the Kubernetes quota keys
  (``requests.cpu``, ``count/pods`` ...) Volcano writes and its scheduler then ignores.
- The priority of the job's ``priorityClassName`` is resolved through the configured
  priority-class map and carried on the PodGroup (``priority``), so the scheduler needs no
  PriorityClass lister. A name that is not in the map resolves to 0, as Volcano's lister
  error does.
- A dependent job's PodGroup lists its tasks with ``dependsOn`` as ``stages`` (minimum
  pods, per-pod requests, node selector, tolerations, priority, resolved as for the real
  pods), so the allocator can reserve room for them before they exist (will-bind).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple

from vcbus.contracts.keys import JobKey, split_key
from vcbus.contracts.objects.job import ANNOTATION_DEPENDENT_JOB, Job, TaskSpec
from vcbus.contracts.objects.pod_spec import int_field, node_selector, pod_requests, string_field
from vcbus.contracts.objects.podgroup import PodGroup, StageTask
from vcbus.contracts.quantity import Resources, add
from vcbus.services.job_controller.job_pods import pod_priority, pod_tolerations


def podgroup_name(job_name: str, uid: str) -> str:
    """Return the PodGroup name of a job: ``<job>-<uid>`` (Volcano HEAD)."""
    return f"{job_name}-{uid}"


def task_priority(task: TaskSpec, priority_classes: Mapping[str, int]) -> int:
    """Return the value of the task's pod-template priority class (0 when none or unknown).

    Port of ``calcPGMinResources``: the class comes from the pod template only, and a
    class the lister cannot find counts as priority 0.
    """
    name = string_field(task.template.spec, "priorityClassName")
    return priority_classes.get(name, 0) if name else 0


def tasks_by_priority(job: Job, priority_classes: Mapping[str, int]) -> tuple[TaskSpec, ...]:
    """Return the job's tasks, highest pod-template priority first, spec order on ties.

    Go's ``sort.Sort`` is not stable in general, but for the few tasks of a job (≤ 12) it
    is an insertion sort, which keeps equal elements in order; a stable sort says so.
    """
    return tuple(sorted(job.spec.tasks, key=lambda task: -task_priority(task, priority_classes)))


def task_minimum(task: TaskSpec) -> int:
    """Return ``task.minAvailable``, else ``replicas`` (Volcano ``TotalTaskMinAvailable``)."""
    return task.replicas if task.min_available is None else task.min_available


def min_task_member(job: Job) -> dict[str, int]:
    """Return ``minTaskMember``: per-task minimums, in spec order.

    A task with ``minAvailable`` gets it. A task without one gets ``replicas`` when some
    other task of the job has a minimum (docs/design.md#minavailable, fifth case), and no entry when
    none has (docs/design.md#minavailable, fourth case).
    """
    any_minimum = any(task.min_available is not None for task in job.spec.tasks)
    out: dict[str, int] = {}
    for task in job.spec.tasks:
        if task.min_available is not None:
            out[task.name] = task.min_available
        elif any_minimum:
            out[task.name] = task.replicas
    return out


def min_resources(job: Job, priority_classes: Mapping[str, int]) -> Resources:
    """Return the resources of the job's minimum pods.

    With ``M = spec.minAvailable`` and ``T = Σ task minimum`` (unset ones as replicas):
    if ``M < T``, take up to ``replicas`` pods of each task, highest priority first, until
    ``M`` pods are taken; otherwise take each task's minimum first (never more than ``M``
    in all), then pods from each task's surplus ``replicas − minimum``, until ``M``.

    Args:
        job: the admitted job.
        priority_classes: priority class name → value.

    Returns:
        The summed per-pod requests, keys sorted.
    """
    wanted = job.spec.min_available
    tasks = tasks_by_priority(job, priority_classes)
    total_minimum = sum(task_minimum(task) for task in job.spec.tasks)
    taken = 0
    out: Resources = {}

    def take(task: TaskSpec, count: int) -> None:
        nonlocal taken, out
        count = max(0, min(count, wanted - taken))
        if count:
            out = add(out, pod_requests(task.template.spec), times=count)
            taken += count

    if wanted < total_minimum:
        for task in tasks:
            take(task, task.replicas)
        return out
    for task in tasks:
        take(task, task_minimum(task))
    for task in tasks:
        take(task, task.replicas - task_minimum(task))
    return out


def stages(job: Job, priority_classes: Mapping[str, int]) -> tuple[StageTask, ...]:
    """Return the tasks with ``dependsOn`` as the scheduler reserves for them, in spec order.

    Args:
        job: the admitted job.
        priority_classes: priority class name → value.

    Returns:
        One ``StageTask`` per task with a non-empty ``dependsOn``: its minimum pods
        (docs/design.md#minimum-pods-first: ``minAvailable``, else ``replicas``) and what each pod
        asks of a node.
    """
    out = []
    for task in job.spec.tasks:
        if task.depends_on is None or not task.depends_on.name:
            continue
        spec = task.template.spec
        out.append(
            StageTask(
                name=task.name,
                replicas=task.replicas,
                min_available=task_minimum(task),
                requests=pod_requests(spec),
                node_selector=node_selector(spec),
                tolerations=pod_tolerations(spec),
                priority=pod_priority(task, job, priority_classes),
            )
        )
    return tuple(out)


class PodGroupSpec(NamedTuple):
    """What a job's PodGroup takes from the job and the priority classes alone.

    Everything but the name, uid and creation time: :func:`podgroup_spec` computes it once
    per job (:mod:`vcbus.services.job_controller.derived` keeps it), :func:`assemble_podgroup`
    makes PodGroups of it.
    """

    queue: str
    min_member: int
    min_task_member: dict[str, int]
    min_resources: Resources
    priority_class_name: str
    priority: int
    annotations: dict[str, str]
    dependent: bool
    stages: tuple[StageTask, ...]
    deadline_seconds: int | None = None


def podgroup_spec(job: Job, priority_classes: Mapping[str, int]) -> PodGroupSpec:
    """Return what the PodGroup of ``job`` takes from the job."""
    annotations = dict(sorted(job.metadata.annotations.items()))
    dependent = annotations.get(ANNOTATION_DEPENDENT_JOB) == "true"
    return PodGroupSpec(
        queue=job.spec.queue or "default",
        min_member=job.spec.min_available,
        min_task_member=min_task_member(job),
        min_resources=min_resources(job, priority_classes),
        priority_class_name=job.spec.priority_class_name,
        priority=priority_classes.get(job.spec.priority_class_name, 0),
        annotations=annotations,
        dependent=dependent,
        stages=stages(job, priority_classes) if dependent else (),
        deadline_seconds=_deadline_seconds(job),
    )


def _deadline_seconds(job: Job) -> int | None:
    """The longest ``activeDeadlineSeconds`` of the job's templates; None if one has none."""
    limits = [int_field(task.template.spec, "activeDeadlineSeconds") for task in job.spec.tasks]
    if not limits or any(limit is None or limit <= 0 for limit in limits):
        return None
    return max(limit for limit in limits if limit is not None)


def assemble_podgroup(
    spec: PodGroupSpec,
    job_key: JobKey,
    uid: str,
    *,
    created_at: datetime | None,
    podgroup_uid: str = "",
) -> PodGroup:
    """Return the PodGroup of a job from its :class:`PodGroupSpec` (own copies of the maps)."""
    namespace, name = split_key(job_key)
    return PodGroup(
        name=podgroup_name(name, uid),
        namespace=namespace,
        job=job_key,
        queue=spec.queue,
        min_member=spec.min_member,
        min_task_member=dict(spec.min_task_member),
        min_resources=dict(spec.min_resources),
        priority_class_name=spec.priority_class_name,
        priority=spec.priority,
        annotations=dict(spec.annotations),
        dependent=spec.dependent,
        uid=podgroup_uid,
        creation_timestamp=created_at,
        stages=spec.stages,
        active_deadline_seconds=spec.deadline_seconds,
    )


def has_spec(podgroup: PodGroup, spec: PodGroupSpec) -> bool:
    """Tell whether a PodGroup agrees with ``spec`` on what an update would change."""
    return (
        podgroup.min_member == spec.min_member
        and podgroup.min_task_member == spec.min_task_member
        and podgroup.min_resources == spec.min_resources
        and podgroup.priority_class_name == spec.priority_class_name
        and podgroup.priority == spec.priority
        and podgroup.stages == spec.stages
    )
