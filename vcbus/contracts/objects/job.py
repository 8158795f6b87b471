"""The Volcano Job (``batch.volcano.sh/v1alpha1``) as users write it.

Real vcjob YAML is accepted unchanged: fields vcbus does not use are ignored, and a
task's pod template ``spec`` is kept whole as a mapping (read through
``vcbus.contracts.objects.pod_spec``), so admission can report every bad value in it.
"""

from __future__ import annotations

import enum

import msgspec

from vcbus.contracts.objects.meta import ObjectMeta

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
JOB_KIND = "Job"

ANNOTATION_DEPENDENT_JOB = "volcano.sh/dependent-job"
ANNOTATION_TARGET_JOB = "volcano.sh/target-job"
ANNOTATION_TASK_PRIORITY = "volcano.sh/task-priority"
ANNOTATION_WILL_BIND = "vcbus.io/will-bind"
"""``"false"`` opts a dependsOn job out of will-bind reservations (docs/architecture.md)."""


class JobPhase(enum.StrEnum):
    """Volcano job phases (``batch/v1alpha1`` ``JobPhase``)."""

    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class LifecyclePolicy(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """``policies[]``: an event (or exit code) and the action it triggers."""

    action: str = ""
    event: str = ""
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    timeout: str | None = None


class DependsOn(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """``dependsOn``: the tasks a task waits for; ``iteration`` is ``any`` or ``all``."""

    name: tuple[str, ...] = ()
    iteration: str = ""


class PartitionPolicy(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True
):
    """``partitionPolicy`` of a task (Volcano HEAD)."""

    total_partitions: int = 0
    partition_size: int = 0
    min_partitions: int = 0


class PodTemplate(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pod template: typed metadata, and the pod ``spec`` kept as written."""

    metadata: ObjectMeta = ObjectMeta()
    spec: dict[str, object] = {}


class TaskSpec(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """One task of a job: ``replicas`` pods from one template."""

    name: str = ""
    replicas: int = 0
    min_available: int | None = None
    template: PodTemplate = PodTemplate()
    policies: tuple[LifecyclePolicy, ...] = ()
    topology_policy: str = ""
    max_retry: int = 0
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicy | None = None


class VolumeSpec(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A job volume (``spec.volumes[]``)."""

    mount_path: str = ""
    volume_claim_name: str = ""
    volume_claim: dict[str, object] | None = None


class JobSpec(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """``spec`` of a Volcano Job."""

    scheduler_name: str = ""
    min_available: int = 0
    volumes: tuple[VolumeSpec, ...] = ()
    tasks: tuple[TaskSpec, ...] = ()
    policies: tuple[LifecyclePolicy, ...] = ()
    plugins: dict[str, tuple[str, ...]] = {}
    running_estimate: str | None = None
    queue: str = ""
    max_retry: int = 0
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str = ""
    min_success: int | None = None
    network_topology: dict[str, object] | None = None


class Job(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A Volcano Job object."""

    api_version: str = JOB_API_VERSION
    kind: str = JOB_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()
