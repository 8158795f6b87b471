"""Validation of a submitted Job: every violation at once, each with a path and a reason.

Port of volcano v1.12 ``pkg/webhooks/admission/jobs/validate/admit_job.go``
``validateJobCreate`` and ``util.go`` (Volcano's admit_job.go), the HEAD additions (Volcano's
admit_job.go: partition policy, network topology, the CRD schema's bounds), lifecycle policies
(Volcano's validate/util.go, :mod:`vcbus.services.admission.policies`), ``dependsOn`` (Volcano's
validate/util.go with A2, :mod:`vcbus.services.admission.dependencies`) and
docs/design.md#minavailable's minAvailable equality rule.

**Order: mutate, then validate — seeing both.** :func:`validate` takes the job *as
submitted*, applies :func:`vcbus.services.admission.mutate.mutate` itself, and checks the
mutated job, as Kubernetes runs the mutating webhook before the validating one (so task
names are checked after ``default<i>`` is filled in, the queue after ``default``, the
mpi tasks after defaulting, ``svc``/``ssh`` are known plugins). The rules about numbers
the user wrote read the submitted job instead, so a value admission filled in is never
blamed on the user: negative job/task ``minAvailable`` (E1, T2), task ``minAvailable``
above replicas (T3, only for a minimum the user set) and A1's equality check (which must
tell "the user set a task minimum" from "mutation filled one in"). Callers therefore
pass the submitted job and never validate a job they mutated themselves.

Deviations from Volcano, all from docs/design.md#every-violation unless noted:

- No early return: E1–E5 are reported with everything else; T5 reports every duplicate
  task name and does not stop the task loop (where Volcano breaks out of it).
- Messages are Volcano's texts without the concatenation framing (leading space,
  trailing ``;``); :func:`volcano_message` joins them back the Volcano way.
- J5 reports every volume problem, not the first; J6 names the queue in Kubernetes'
  lister wording; ``root`` is always refused (Volcano's root queue always exists).
- vcbus additions: docs/design.md#minavailable's equality rule (``MinAvailableMismatch``), a
  per-task and per-job replica limit (``TooManyReplicas``), 32-bit bounds of Volcano's int32 fields
  (``OutOfRange``), namespace and path-segment name checks, ``minSuccess ≥ 1`` and task
  ``maxRetry ≥ 0`` (HEAD's CRD schema), ``minPartitions`` within ``totalPartitions``.
- docs/design.md#names-and-numbers: the job name is a DNS-1123 subdomain, as the API server requires
  of a custom resource's name (Volcano's J1 checks only a qualified name, which lets ``A``,
  ``a_b`` through); labels and annotations of the job and of each task template are
  validated as the API server does (:mod:`vcbus.services.admission.metadata`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.objects.job import Job, JobSpec, TaskSpec, VolumeSpec
from vcbus.contracts.objects.queue import DEFAULT_QUEUE, ROOT_QUEUE, Queue, QueueState
from vcbus.core.reasons import QUEUE_NOT_FOUND
from vcbus.services.admission.dependencies import validate_dependencies
from vcbus.services.admission.metadata import validate_annotations, validate_labels
from vcbus.services.admission.mutate import declared_min_available, mutate
from vcbus.services.admission.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    go_list,
    path_segment_errors,
)
from vcbus.services.admission.pod_template import (
    validate_pod_name,
    validate_template,
    validate_topology,
)
from vcbus.services.admission.policies import validate_policies

DEFAULT_MAX_REPLICAS = 10_000
"""Default limit of pods per task and per job (configurable; absurd numbers are refused)."""

INT32_MAX = 2**31 - 1
"""Volcano's counts are ``int32``: larger values cannot reach a real cluster."""

KNOWN_PLUGINS: frozenset[str] = frozenset(
    {"env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"}
)
"""Job plugins Volcano's controller registers (``pkg/controllers/job/plugins/factory.go``)."""

CONFLICTING_VOLUME_CLAIM_MESSAGE = (
    "conflict: If you want to use an existing PVC, just specify VolumeClaimName."
    "If you want to create a new PVC, you do not need to specify VolumeClaimName"
)

MPI_DEFAULT_MASTER = "master"
MPI_DEFAULT_WORKER = "worker"


def validate(
    job: Job, queues: Mapping[str, Queue], *, max_replicas: int = DEFAULT_MAX_REPLICAS
) -> tuple[Violation, ...]:
    """Return every reason to refuse a submitted job; empty when it is admitted.

    Args:
        job: the job **as submitted** (this function mutates it itself, see the module
            docstring).
        queues: the queues vcbus knows, by name; ``default`` exists even if absent.
        max_replicas: the largest number of pods a task, and a job, may ask for.

    Returns:
        The violations in a stable order: job fields, tasks in spec order, then
        job-level rules (name, minAvailable, policies, plugins, volumes, queue,
        dependencies, topology).
    """
    mutated = mutate(job)
    return tuple(
        chain(
            _job_numbers(job.spec),
            _mpi_tasks(mutated.spec),
            _tasks(job, mutated, max_replicas),
            _names(job),
            _metadata(job),
            _min_available(job.spec, mutated.spec),
            validate_policies(job.spec.policies, "spec.policies"),
            _plugins(job.spec),
            _volumes(job.spec.volumes),
            _queue(mutated.spec.queue, queues),
            validate_dependencies(mutated.spec.tasks),
            _network_topology(job.spec),
        )
    )


def volcano_message(violations: Iterable[Violation]) -> str:
    """Join violation messages the way Volcano's webhook concatenates them (``a; b;``)."""
    return " ".join(f"{violation.message};" for violation in violations)


def _out_of_range(path: str, value: int) -> Violation:
    return Violation(
        path=path,
        reason="OutOfRange",
        message=f"{path}: Invalid value: {value}: must be at most {INT32_MAX} (a 32-bit integer)",
    )


def _job_numbers(spec: JobSpec) -> Iterator[Violation]:
    """E1–E4 and the bounds of the job's own numbers."""
    if spec.min_available < 0:
        yield Violation(
            path="spec.minAvailable",
            reason="NegativeMinAvailable",
            message="job 'minAvailable' must be >= 0.",
        )
    if spec.max_retry < 0:
        yield Violation(
            path="spec.maxRetry",
            reason="NegativeMaxRetry",
            message="'maxRetry' cannot be less than zero.",
        )
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        yield Violation(
            path="spec.ttlSecondsAfterFinished",
            reason="NegativeTtl",
            message="'ttlSecondsAfterFinished' cannot be less than zero.",
        )
    if spec.min_success is not None and spec.min_success < 1:
        yield Violation(
            path="spec.minSuccess",
            reason="InvalidMinSuccess",
            message=f"spec.minSuccess: Invalid value: {spec.min_success}: must be >= 1",
        )
    for path, value in (
        ("spec.minAvailable", spec.min_available),
        ("spec.maxRetry", spec.max_retry),
        ("spec.ttlSecondsAfterFinished", spec.ttl_seconds_after_finished),
        ("spec.minSuccess", spec.min_success),
    ):
        if value is not None and value > INT32_MAX:
            yield _out_of_range(path, value)
    if not spec.tasks:
        yield Violation(
            path="spec.tasks", reason="NoTasks", message="No task specified in job spec"
        )
    # vcbus refused a job whose tasks all have 0 replicas here; Volcano admits it, and a
    # running job may be scaled to 0 (``validateJobUpdate`` refuses only replicas < 0), so
    # the refusal is ``vcbus submit``'s, at creation
    # (:func:`vcbus.core.job_update.creation_error`).


def _mpi_tasks(spec: JobSpec) -> Iterator[Violation]:
    """E5: the mpi plugin's master and worker tasks must exist (v1.12 checks both)."""
    if "mpi" not in spec.plugins:
        return
    master, worker = _mpi_roles(spec.plugins["mpi"])
    names = {task.name for task in spec.tasks}
    if master not in names:
        yield Violation(
            path="spec.plugins.mpi",
            reason="MpiMasterTaskNotFound",
            message="The specified mpi master task was not found",
        )
    if worker not in names:
        yield Violation(
            path="spec.plugins.mpi",
            reason="MpiWorkerTaskNotFound",
            message="The specified mpi worker task was not found",
        )


def _mpi_roles(arguments: Sequence[str]) -> tuple[str, str]:
    """Read ``--master``/``--worker`` as Go's ``flag`` package does (``-x v``, ``--x=v``)."""
    roles = {"master": MPI_DEFAULT_MASTER, "worker": MPI_DEFAULT_WORKER}
    index = 0
    while index < len(arguments):
        flag = arguments[index].lstrip("-")
        name, sep, value = flag.partition("=")
        if name in roles:
            if sep:
                roles[name] = value
            elif index + 1 < len(arguments):
                index += 1
                roles[name] = arguments[index]
        index += 1
    return roles["master"], roles["worker"]


def _tasks(job: Job, mutated: Job, max_replicas: int) -> Iterator[Violation]:
    """T1–T9, partition policy and bounds, per task in spec order."""
    job_name = job.metadata.name
    job_name_ok = not dns1123_subdomain_errors(job_name)
    seen: set[str] = set()
    any_task_over_limit = False
    for index, (submitted, task) in enumerate(zip(job.spec.tasks, mutated.spec.tasks, strict=True)):
        here = f"spec.tasks[{index}]"
        where = f"task: {task.name}, job: {job_name}"
        if task.replicas > INT32_MAX:
            yield _out_of_range(f"{here}.replicas", task.replicas)
            any_task_over_limit = True
        elif task.replicas > max_replicas:
            any_task_over_limit = True
            yield Violation(
                path=f"{here}.replicas",
                reason="TooManyReplicas",
                message=(
                    f"task {task.name} asks for {task.replicas} replicas; "
                    f"the limit is {max_replicas} pods per task"
                ),
            )
        if task.replicas < 0:
            yield Violation(
                path=f"{here}.replicas",
                reason="NegativeReplicas",
                message=f"'replicas' < 0 in {where}",
            )
        yield from _task_min_available(submitted, here, where)
        if task.max_retry < 0:
            yield Violation(
                path=f"{here}.maxRetry",
                reason="NegativeTaskMaxRetry",
                message=f"'maxRetry' < 0 in {where}",
            )
        elif task.max_retry > INT32_MAX:
            yield _out_of_range(f"{here}.maxRetry", task.max_retry)
        name_errors = dns1123_label_errors(task.name)
        if name_errors:
            yield Violation(
                path=f"{here}.name", reason="InvalidTaskName", message=go_list(name_errors)
            )
        if task.name in seen:
            yield Violation(
                path=f"{here}.name",
                reason="DuplicateTaskName",
                message=f"duplicated task name {task.name}",
            )
        seen.add(task.name)
        yield from validate_policies(task.policies, f"{here}.policies")
        yield from _partition(submitted, here, where)
        if job_name_ok and not name_errors:
            yield from validate_pod_name(job_name, task, index)
        yield from validate_template(task, index)
        yield from validate_topology(task, index)
    total = sum(task.replicas for task in job.spec.tasks)
    if not any_task_over_limit and total > max_replicas:
        yield Violation(
            path="spec.tasks",
            reason="TooManyReplicas",
            message=(
                f"the job asks for {total} pods in total; the limit is {max_replicas} pods per job"
            ),
        )


def _task_min_available(submitted: TaskSpec, here: str, where: str) -> Iterator[Violation]:
    """T2/T3 on the minimum the user wrote (never on one mutation filled in)."""
    minimum = submitted.min_available
    if minimum is None:
        return
    if minimum < 0:
        yield Violation(
            path=f"{here}.minAvailable",
            reason="NegativeTaskMinAvailable",
            message=f"'minAvailable' < 0 in {where}",
        )
    elif minimum > submitted.replicas:
        yield Violation(
            path=f"{here}.minAvailable",
            reason="GreaterThanReplicas",
            message=f"'minAvailable' is greater than 'replicas' in {where}",
        )


def _partition(task: TaskSpec, here: str, where: str) -> Iterator[Violation]:
    """HEAD ``validateJobCreate``: first failing check, plus minPartitions bounds."""
    policy = task.partition_policy
    if policy is None:
        return
    path = f"{here}.partitionPolicy"
    if policy.total_partitions <= 0:
        yield Violation(
            path=f"{path}.totalPartitions",
            reason="InvalidTotalPartitions",
            message=f"'TotalPartitions' must be greater than 0 in {where}",
        )
    elif policy.partition_size <= 0:
        yield Violation(
            path=f"{path}.partitionSize",
            reason="InvalidPartitionSize",
            message=f"'PartitionSize' must be greater than 0 in {where}",
        )
    elif task.replicas != policy.total_partitions * policy.partition_size:
        yield Violation(
            path=f"{here}.replicas",
            reason="ReplicasNotPartitioned",
            message=f"'Replicas' are not equal to TotalPartitions*PartitionSize in {where}",
        )
    elif (
        task.min_available is not None
        and policy.min_partitions > 0
        and policy.min_partitions * policy.partition_size != task.min_available
    ):
        yield Violation(
            path=f"{here}.minAvailable",
            reason="MinAvailableNotPartitioned",
            message=f"'MinAvailable' is not equal to MinPartitions*PartitionSize in {where}",
        )
    if policy.min_partitions < 0 or policy.min_partitions > max(policy.total_partitions, 0):
        yield Violation(
            path=f"{path}.minPartitions",
            reason="InvalidMinPartitions",
            message=(
                "'MinPartitions' must be between 0 and TotalPartitions "
                f"({policy.total_partitions}) in {where}"
            ),
        )


def _names(job: Job) -> Iterator[Violation]:
    """J1 (a DNS-1123 subdomain, docs/design.md#names-and-numbers), path-segment, namespace."""
    name = job.metadata.name
    errors = dns1123_subdomain_errors(name) + path_segment_errors(name)
    if errors:
        yield Violation(
            path="metadata.name",
            reason="InvalidJobName",
            message=f"create job with name {name} validate failed {go_list(errors)}",
        )
    namespace = job.metadata.namespace
    if namespace:
        namespace_errors = dns1123_label_errors(namespace)
        if namespace_errors:
            yield Violation(
                path="metadata.namespace",
                reason="InvalidNamespace",
                message=(
                    f'metadata.namespace: Invalid value: "{namespace}": '
                    f"{'; '.join(namespace_errors)}"
                ),
            )


def _metadata(job: Job) -> Iterator[Violation]:
    """Labels and annotations of the job and of each task template."""
    yield from validate_labels(job.metadata.labels, "metadata.labels")
    yield from validate_annotations(job.metadata.annotations, "metadata.annotations")
    for index, task in enumerate(job.spec.tasks):
        here = f"spec.tasks[{index}].template.metadata"
        yield from validate_labels(task.template.metadata.labels, f"{here}.labels")
        yield from validate_annotations(task.template.metadata.annotations, f"{here}.annotations")


def _min_available(submitted: JobSpec, mutated: JobSpec) -> Iterator[Violation]:
    """J2 (job minimum ≤ Σ replicas) and docs/design.md#minavailable's equality rule."""
    if not mutated.tasks:
        return
    total_replicas = sum(task.replicas for task in mutated.tasks)
    if total_replicas < mutated.min_available:
        yield Violation(
            path="spec.minAvailable",
            reason="MinAvailableExceedsReplicas",
            message="job 'minAvailable' should not be greater than total replicas in tasks",
        )
    job_min = submitted.min_available
    declared = [declared_min_available(task) for task in submitted.tasks]
    if job_min <= 0 or all(minimum is None for minimum in declared):
        return
    if any(minimum is not None and minimum < 0 for minimum in declared):
        return  # already refused by T2; a sum of negative minimums explains nothing
    task_sum = sum(task.min_available or 0 for task in mutated.tasks)
    if task_sum == job_min:
        return
    parts = ", ".join(
        f"{task.name} {task.min_available}"
        + (" (replicas; minAvailable unset)" if declared_min_available(original) is None else "")
        for original, task in zip(submitted.tasks, mutated.tasks, strict=True)
    )
    yield Violation(
        path="spec.minAvailable",
        reason="MinAvailableMismatch",
        message=(
            f"job 'minAvailable' is {job_min} but the tasks' minimums add up to {task_sum} "
            f"({parts}); when they differ Volcano silently ignores the task minimums. "
            f"Set spec.minAvailable to {task_sum} (or remove it: it then defaults to the sum), "
            f"or change the tasks' minAvailable so they add up to {job_min}"
        ),
    )


def _plugins(spec: JobSpec) -> Iterator[Violation]:
    """J4: one violation per unknown plugin, in name order."""
    for name in sorted(spec.plugins):
        if name not in KNOWN_PLUGINS:
            yield Violation(
                path=f"spec.plugins.{name}",
                reason="UnknownPlugin",
                message=f"unable to find job plugin: {name}",
            )


def _volumes(volumes: Sequence[VolumeSpec]) -> Iterator[Violation]:
    """J5 (``validateIO``), every problem of every volume."""
    mount_paths: set[str] = set()
    for index, volume in enumerate(volumes):
        here = f"spec.volumes[{index}]"
        if not volume.mount_path:
            yield Violation(
                path=f"{here}.mountPath", reason="MissingMountPath", message="mountPath is required"
            )
        elif volume.mount_path in mount_paths:
            yield Violation(
                path=f"{here}.mountPath",
                reason="DuplicateMountPath",
                message=f"duplicated mountPath: {volume.mount_path}",
            )
        mount_paths.add(volume.mount_path)
        if volume.volume_claim is None and not volume.volume_claim_name:
            yield Violation(
                path=here,
                reason="MissingVolumeClaim",
                message="either VolumeClaim or VolumeClaimName must be specified",
            )
        if volume.volume_claim_name:
            if volume.volume_claim is not None:
                yield Violation(
                    path=here,
                    reason="ConflictingVolumeClaim",
                    message=CONFLICTING_VOLUME_CLAIM_MESSAGE,
                )
            errors = dns1123_subdomain_errors(volume.volume_claim_name)
            if errors:
                yield Violation(
                    path=f"{here}.volumeClaimName",
                    reason="InvalidVolumeClaimName",
                    message=(
                        f"invalid VolumeClaimName {volume.volume_claim_name} : {go_list(errors)}"
                    ),
                )


def _queue(name: str, queues: Mapping[str, Queue]) -> Iterator[Violation]:
    """J6–J9 against the known queues (``default`` always exists)."""
    if name == ROOT_QUEUE:
        yield Violation(
            path="spec.queue", reason="RootQueue", message="can not submit job to root queue"
        )
        return
    known = {DEFAULT_QUEUE: Queue(name=DEFAULT_QUEUE), **queues}
    queue = known.get(name)
    if queue is None:
        yield Violation(
            path="spec.queue",
            reason=QUEUE_NOT_FOUND,
            message=f'unable to find job queue: queue.scheduling.volcano.sh "{name}" not found',
        )
        return
    if queue.state != QueueState.OPEN:
        yield Violation(
            path="spec.queue",
            reason="QueueNotOpen",
            message=(
                f"can only submit job to queue with state `Open`, "
                f"queue `{name}` status is `{queue.state}`"
            ),
        )
    children = sum(1 for other in known.values() if other.parent == name)
    if children:
        yield Violation(
            path="spec.queue",
            reason="QueueNotLeaf",
            message=(
                f"can only submit job to leaf queue, queue `{name}` has {children} child queues"
            ),
        )


def _network_topology(spec: JobSpec) -> Iterator[Violation]:
    """Volcano's admit_job.go: ``highestTierAllowed`` and ``highestTierName`` exclude each other."""
    topology = spec.network_topology
    if topology and "highestTierAllowed" in topology and "highestTierName" in topology:
        yield Violation(
            path="spec.networkTopology",
            reason="ConflictingNetworkTopology",
            message=(
                "must not specify 'highestTierAllowed' and 'highestTierName' "
                "in networkTopology simultaneously"
            ),
        )
