"""Defaults a submitted Job the way Volcano's mutating webhook does, with vcbus's minimums.

The minimums follow the table of docs/design.md#minavailable.

Port of volcano ``pkg/webhooks/admission/jobs/mutate/mutate_job.go`` ``createPatch``
(HEAD ``ed72c7c8``, same as v1.12 except partition handling), applied in its order:

1. ``spec.queue`` empty → ``default``.
2. ``spec.schedulerName`` empty → ``volcano``.
3. ``spec.maxRetry`` 0 → 3 (0 means unset; a negative value is left for validation).
4. Per task ``i``: empty name → ``default<i>``; ``hostNetwork: true`` without
   ``dnsPolicy`` → ``ClusterFirstWithHostNet``; ``maxRetry`` 0 → 3.
5. minAvailable, by docs/design.md#minavailable (which wins over B1.1 steps 4–5):

   ============================================  =============================================
   submitted                                     result
   ============================================  =============================================
   job min unset (0)                             each unset task min → its default;
                                                 job min = Σ task mins
   job min set, some task min set                unset task mins → their default (validation
                                                 then requires job min = Σ task mins)
   job min set, one task, its min unset          task min = job min
   job min set, several tasks, none with a min   unchanged: the tasks get **no** minimum
                                                 (``minAvailable`` stays absent), only the
                                                 job-level gang applies
   ============================================  =============================================

   A task's default minimum is ``minPartitions × partitionSize`` when its
   ``partitionPolicy`` has ``minPartitions > 0`` (HEAD), else its replicas. A partition
   policy with ``minPartitions > 0`` counts as a task minimum the user set.
6. Plugins: ``tensorflow``, ``mpi``, ``pytorch`` or ``ray`` without ``svc`` → add
   ``svc: []``; ``mpi`` without ``ssh`` → add ``ssh: []``.
7. docs/design.md#minavailable: any task with ``dependsOn`` → annotation ``volcano.sh/dependent-job:
"true"``.

Deviations from Volcano: step 5 (docs/design.md#minavailable) and step 7 are vcbus rules; Volcano
always fills an unset task minimum with its replicas. The function is total: it never raises,
whatever the values (negative or huge numbers are left for :mod:`vcbus.services.admission.rules`).
"""

from __future__ import annotations

from msgspec import structs

from vcbus.contracts.objects.job import ANNOTATION_DEPENDENT_JOB, Job, JobSpec, TaskSpec
from vcbus.contracts.objects.queue import DEFAULT_QUEUE

DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_NAME_PREFIX = "default"
"""``DefaultTaskSpec`` in volcano ``apis/pkg/apis/batch/v1alpha1/labels.go``."""

DNS_CLUSTER_FIRST_WITH_HOST_NET = "ClusterFirstWithHostNet"

SVC_PLUGIN = "svc"
SSH_PLUGIN = "ssh"
MPI_PLUGIN = "mpi"
PLUGINS_NEEDING_SVC: tuple[str, ...] = ("tensorflow", "mpi", "pytorch", "ray")


def mutate(job: Job, *, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Job:
    """Return the job with Volcano's defaults and docs/design.md#minavailable's minimums applied.

    Args:
        job: the job as submitted.
        scheduler_name: the scheduler name given to jobs that name none (Volcano's
            webhook ``--scheduler-name``, default ``volcano``).

    Returns:
        The mutated job; ``job`` itself is not changed (it is frozen).
    """
    spec = job.spec
    tasks = tuple(_default_task(index, task) for index, task in enumerate(spec.tasks))
    tasks, min_available = _apply_min_available(spec.min_available, tasks)
    mutated_spec = structs.replace(
        spec,
        queue=spec.queue or DEFAULT_QUEUE,
        scheduler_name=spec.scheduler_name or scheduler_name,
        max_retry=spec.max_retry or DEFAULT_MAX_RETRY,
        tasks=tasks,
        min_available=min_available,
        plugins=_default_plugins(spec),
    )
    metadata = job.metadata
    if any(task.depends_on is not None for task in tasks):
        annotations = {**metadata.annotations, ANNOTATION_DEPENDENT_JOB: "true"}
        metadata = structs.replace(metadata, annotations=annotations)
    return structs.replace(job, metadata=metadata, spec=mutated_spec)


def declared_min_available(task: TaskSpec) -> int | None:
    """Return the minimum the user gave a task, or ``None`` when it has none.

    An explicit ``minAvailable`` wins; else a partition policy with ``minPartitions > 0``
    declares ``minPartitions × partitionSize`` (volcano HEAD ``mutateSpec``).
    """
    if task.min_available is not None:
        return task.min_available
    policy = task.partition_policy
    if policy is not None and policy.min_partitions > 0:
        return policy.min_partitions * policy.partition_size
    return None


def default_min_available(task: TaskSpec) -> int:
    """Return the minimum an unset task gets: its declared one, else its replicas."""
    declared = declared_min_available(task)
    return task.replicas if declared is None else declared


def _default_task(index: int, task: TaskSpec) -> TaskSpec:
    name = task.name or f"{DEFAULT_TASK_NAME_PREFIX}{index}"
    template = task.template
    pod_spec = template.spec
    if pod_spec.get("hostNetwork") is True and not pod_spec.get("dnsPolicy"):
        template = structs.replace(
            template, spec={**pod_spec, "dnsPolicy": DNS_CLUSTER_FIRST_WITH_HOST_NET}
        )
    return structs.replace(
        task,
        name=name,
        template=template,
        max_retry=task.max_retry or DEFAULT_MAX_RETRY,
    )


def _apply_min_available(
    job_min: int, tasks: tuple[TaskSpec, ...]
) -> tuple[tuple[TaskSpec, ...], int]:
    """The table of docs/design.md#minavailable; ``0`` is "unset" as in Volcano."""
    any_declared = any(declared_min_available(task) is not None for task in tasks)
    if job_min == 0 or any_declared:
        filled = tuple(
            structs.replace(task, min_available=default_min_available(task)) for task in tasks
        )
        if job_min == 0:
            job_min = sum(task.min_available or 0 for task in filled)
        return filled, job_min
    if len(tasks) == 1:
        return (structs.replace(tasks[0], min_available=job_min),), job_min
    return tasks, job_min


def _default_plugins(spec: JobSpec) -> dict[str, tuple[str, ...]]:
    plugins = dict(spec.plugins)
    if any(name in plugins for name in PLUGINS_NEEDING_SVC):
        plugins.setdefault(SVC_PLUGIN, ())
    if MPI_PLUGIN in plugins:
        plugins.setdefault(SSH_PLUGIN, ())
    return plugins
