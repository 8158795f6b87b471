"""Pods of a job: how they are built and when a dependsOn task may have them.

Ports volcano@HEAD ``pkg/controllers/job/job_controller_util.go`` ``createJobPod`` and
the dependsOn gate of ``pkg/controllers/job/job_controller_actions.go`` ``syncJob``
(``isDependsOnPodsReady``).

Deliberate deviations from Volcano:

- docs/design.md#dependent-jobs: a dependency task without ``minAvailable`` is ready when all its
  replicas are Running or Succeeded (Volcano: always ready). A Running pod counts as ready: the
  simulated cluster has no container readiness.
- A pod carries only the template annotations the cluster and the scheduler read
  (``TEMPLATE_ANNOTATIONS_CARRIED``); Volcano copies all of them. The rest stay in the
  job, so a large annotation is not written once per replica (docs/design.md#bounded-records).
- The pod carries what the scheduler reads, resolved here: requests (``pod_requests``),
  priority (Volcano's job_info.go: the pod's priority class value, else the template's ``priority``,
  else 1; the ``volcano.sh/task-priority`` annotation overrides), node selector and
  tolerations. The PodGroup annotation ``scheduling.k8s.io/group-name`` is the PodGroup
  name ``<job>-<uid>``, as at Volcano HEAD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts.keys import JobKey, split_key
from vcbus.contracts.objects.job import ANNOTATION_TASK_PRIORITY, Job, TaskSpec
from vcbus.contracts.objects.pod import (
    ANNOTATION_GROUP_NAME,
    LABEL_JOB_NAME,
    LABEL_JOB_RETRY_COUNT,
    LABEL_JOB_VERSION,
    LABEL_QUEUE_NAME,
    LABEL_TASK_INDEX,
    LABEL_TASK_SPEC,
    TEMPLATE_ANNOTATIONS_CARRIED,
    Pod,
    PodPhase,
    Toleration,
)
from vcbus.contracts.objects.pod_spec import (
    int_field,
    node_selector,
    pod_requests,
    string_field,
    tolerations,
)
from vcbus.services.job_controller.state import PodState

DEFAULT_TASK_PRIORITY = 1
"""Task priority of a pod without priority (Volcano ``TaskInfo``: nil priority → 1)."""

_READY_PHASES = frozenset({PodPhase.RUNNING, PodPhase.SUCCEEDED})


def pod_name(job_name: str, task: str, index: int) -> str:
    """Return a pod's name: ``<job>-<task>-<index>`` (Volcano ``MakePodName``)."""
    return f"{job_name}-{task}-{index}"


def pod_priority_class(task: TaskSpec, job: Job) -> str:
    """Return the pod's priority class: the template's, else the job's (``createJobPod``)."""
    return string_field(task.template.spec, "priorityClassName") or job.spec.priority_class_name


def pod_priority(task: TaskSpec, job: Job, priority_classes: Mapping[str, int]) -> int:
    """Return the scheduling priority of the task's pods (Volcano's job_info.go).

    The ``volcano.sh/task-priority`` annotation of the template wins; then the value of
    the pod's priority class; then the template's ``priority``; then 1.
    """
    override = task.template.metadata.annotations.get(ANNOTATION_TASK_PRIORITY, "")
    if override.lstrip("-").isdigit():
        return int(override)
    name = pod_priority_class(task, job)
    if name in priority_classes:
        return priority_classes[name]
    explicit = int_field(task.template.spec, "priority")
    return DEFAULT_TASK_PRIORITY if explicit is None else explicit


def pod_tolerations(spec: Mapping[str, object]) -> tuple[Toleration, ...]:
    """Return the tolerations of a pod template's spec as contract values."""
    return tuple(
        Toleration(
            key=item.get("key", ""),
            operator=item.get("operator", "Equal"),
            value=item.get("value", ""),
            effect=item.get("effect", ""),
        )
        for item in tolerations(spec)
    )


@dataclass(frozen=True, slots=True)
class PodTemplateFacts:
    """What every pod of a task takes from its template, the job and the configuration.

    Computed once per job (:mod:`vcbus.services.job_controller.derived` keeps it): the template's
    requests, priority, node selector and tolerations parsed, the scheduler resolved.
    """

    requests: dict[str, int]
    priority: int
    priority_class_name: str
    node_selector: dict[str, str]
    tolerations: tuple[Toleration, ...]
    scheduler_name: str
    grace_seconds: int | None = None
    """The template's ``terminationGracePeriodSeconds`` (``None``: unset, 30 s)."""
    deadline_seconds: int | None = None
    """The template's ``activeDeadlineSeconds`` (``None``: unset, no limit).

    See docs/design.md#planned-start.
    """


def template_facts(
    task: TaskSpec, job: Job, priority_classes: Mapping[str, int], default_scheduler: str
) -> PodTemplateFacts:
    """Return what the pods of ``task`` take from their template."""
    spec = task.template.spec
    return PodTemplateFacts(
        requests=pod_requests(spec),
        priority=pod_priority(task, job, priority_classes),
        priority_class_name=pod_priority_class(task, job),
        node_selector=node_selector(spec),
        tolerations=pod_tolerations(spec),
        scheduler_name=string_field(spec, "schedulerName")
        or job.spec.scheduler_name
        or default_scheduler,
        grace_seconds=_grace_seconds(spec),
        deadline_seconds=_deadline_seconds(spec),
    )


def _deadline_seconds(spec: Mapping[str, object]) -> int | None:
    """The template's ``activeDeadlineSeconds`` when it is an integer > 0."""
    value = int_field(spec, "activeDeadlineSeconds")
    return value if value is not None and value > 0 else None


def _grace_seconds(spec: Mapping[str, object]) -> int | None:
    """The template's ``terminationGracePeriodSeconds`` when it is an integer ≥ 0."""
    value = int_field(spec, "terminationGracePeriodSeconds")
    return value if value is not None and value >= 0 else None


def build_pod(
    *,
    job_key: JobKey,
    job: Job,
    task: TaskSpec,
    index: int,
    uid: str,
    podgroup: str,
    version: int,
    retry_count: int,
    priority_classes: Mapping[str, int],
    default_scheduler: str,
    now: datetime,
    facts: PodTemplateFacts | None = None,
) -> Pod:
    """Build one pod of a task (Volcano's job_controller_actions.go, Volcano ``createJobPod``).

    Args:
        job_key: the job's ``namespace/name``.
        job: the job.
        task: the pod's task.
        index: the pod's index in the task.
        uid: the pod's uid.
        podgroup: the PodGroup name.
        version: the job version the pod belongs to.
        retry_count: the job's retry count when the pod is created.
        priority_classes: priority class name → value.
        default_scheduler: scheduler name when neither the template nor the job has one.
        now: the creation time.
        facts: the task's :func:`template_facts`, when already computed (the same
            ``task``, ``job``, ``priority_classes`` and ``default_scheduler``).

    Returns:
        The pod, with the template's labels, the template annotations the cluster and the
        scheduler read (``TEMPLATE_ANNOTATIONS_CARRIED``), and Volcano's.
    """
    if facts is None:
        facts = template_facts(task, job, priority_classes, default_scheduler)
    namespace, job_name = split_key(job_key)
    queue = job.spec.queue or "default"
    ours = {
        LABEL_JOB_NAME: job_name,
        LABEL_TASK_SPEC: task.name,
        LABEL_TASK_INDEX: str(index),
        LABEL_QUEUE_NAME: queue,
        LABEL_JOB_VERSION: str(version),
        LABEL_JOB_RETRY_COUNT: str(retry_count),
    }
    labels = {**task.template.metadata.labels, **ours}
    carried = {
        key: value
        for key, value in task.template.metadata.annotations.items()
        if key in TEMPLATE_ANNOTATIONS_CARRIED
    }
    annotations = {**carried, **ours, ANNOTATION_GROUP_NAME: podgroup}
    return Pod(
        name=pod_name(job_name, task.name, index),
        namespace=namespace,
        job=job_key,
        task=task.name,
        index=index,
        podgroup=podgroup,
        uid=uid,
        queue=queue,
        requests=dict(facts.requests),
        priority=facts.priority,
        priority_class_name=facts.priority_class_name,
        node_selector=dict(facts.node_selector),
        tolerations=facts.tolerations,
        labels=dict(sorted(labels.items())),
        annotations=dict(sorted(annotations.items())),
        scheduler_name=facts.scheduler_name,
        creation_timestamp=now,
        termination_grace_period_seconds=facts.grace_seconds,
        active_deadline_seconds=facts.deadline_seconds,
    )


def is_task_ready(task: TaskSpec, pods: Sequence[PodState]) -> bool:
    """Tell whether a dependency task is ready (docs/design.md#dependent-jobs).

    At least ``minAvailable`` of its pods (all its replicas when it has no minimum) are
    Running or Succeeded; pods with an index beyond ``replicas`` and missing pods do not
    count.
    """
    needed = task.replicas if task.min_available is None else task.min_available
    ready = sum(
        1
        for pod in pods
        if pod.task == task.name and pod.index < task.replicas and pod.phase in _READY_PHASES
    )
    return ready >= needed


@dataclass(frozen=True, slots=True)
class Gate:
    """Why a task has no pods yet: the tasks it waits for and how (``all``/``any``)."""

    task: str
    waits_for: tuple[str, ...]
    iteration: str

    def describe(self) -> str:
        """Return a short sentence for condition messages."""
        how = "any" if self.iteration == "any" else "all"
        return f"{self.task} waits for {how} of [{', '.join(self.waits_for)}]"


def dependency_gate(job: Job, task: TaskSpec, pods: Sequence[PodState]) -> Gate | None:
    """Return the gate that keeps a task's pods from being created, or ``None`` when open.

    ``iteration: any`` with two or more names opens when one listed task is ready;
    otherwise (one name, ``all``, empty, anything else) every listed task must be ready
    (Volcano's job_controller_actions.go). A name that is not a task of the job never becomes ready.
    """
    depends_on = task.depends_on
    if depends_on is None or not depends_on.name:
        return None
    by_name = {spec.name: spec for spec in job.spec.tasks}
    ready = [name in by_name and is_task_ready(by_name[name], pods) for name in depends_on.name]
    any_mode = depends_on.iteration == "any" and len(depends_on.name) > 1
    opened = any(ready) if any_mode else all(ready)
    if opened:
        return None
    pending = tuple(
        name for name, is_ready in zip(depends_on.name, ready, strict=True) if not is_ready
    )
    return Gate(task=task.name, waits_for=pending, iteration="any" if any_mode else "all")


def waiting_tasks(job: Job, pods: Sequence[PodState]) -> tuple[Gate, ...]:
    """Return the gates of the tasks that have no pod yet because of dependsOn, in spec order."""
    out = []
    for task in job.spec.tasks:
        if task.depends_on is None or not task.depends_on.name:
            continue  # no gate (``dependency_gate`` is None): skip the scan of the pods
        if any(pod.task == task.name for pod in pods):
            continue
        gate = dependency_gate(job, task, pods)
        if gate is not None:
            out.append(gate)
    return tuple(out)
