"""What the job-controller remembers about one job: :class:`JobRecord`.

The record is the per-key state of the reactor (kept in a changelog by the shell). It is
a frozen msgspec Struct so that it encodes as it is; every change makes a new record.

It plays the part of Volcano's ``JobInfo`` (the job, its pods by task, ``status``) plus
what Volcano keeps elsewhere: the pending delayed policy actions
(``job_controller.go`` ``delayActionMap``), the PodGroup as last written, and what an
event-sourced core needs for deterministic event ids (a generation counter). Idempotency
by event id is the shell's (``shared.runtime.reactor``): records written before kept a
bounded ``applied_ids`` too, which decoding ignores.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from contracts.events.jobs_status import TaskCounts
from contracts.keys import JobKey
from contracts.objects.job import Job, JobPhase
from contracts.objects.meta import Condition
from contracts.objects.pod import PodPhase
from contracts.objects.podgroup import PodGroup, PodGroupPhase


class PodState(msgspec.Struct, frozen=True, kw_only=True):
    """One pod of the job as the controller knows it.

    ``version`` is the job version the pod was created under (Volcano's
    ``volcano.sh/job-version``); ``node`` is set once the pod is bound.
    """

    name: str
    task: str
    index: int
    uid: str
    version: int
    phase: PodPhase = PodPhase.PENDING
    node: str | None = None
    exit_code: int | None = None
    restarts: int = 0
    refused: bool = False
    """The cluster refused its last binding: it waits to be placed again (a pod it then
    reports on clears this)."""


class PolicyTimer(msgspec.Struct, frozen=True, kw_only=True):
    """A policy action that runs later (a matched policy with ``timeout``).

    Port of Volcano's ``delayAction`` (``job_controller.go``): at most one per pod name
    (``pod`` is empty for a job-level request such as ``Unknown``), dropped when the job
    version changes, cancelled by the pod events Volcano's
    ``CleanPodDelayActionsIfNeed`` names.
    """

    deadline: datetime
    action: str
    event: str
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    version: int = 0


class StatusView(msgspec.Struct, frozen=True, kw_only=True):
    """The job status as last published on ``jobs.status`` (compared to skip no-ops)."""

    phase: JobPhase
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    retry_count: int = 0
    version: int = 0
    task_status_count: tuple[tuple[str, TaskCounts], ...] = ()
    reason: str = ""
    message: str = ""


class JobRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the job-controller knows about one admitted job.

    Attributes:
        job_key: ``namespace/name``.
        job: the admitted (mutated) job, with accepted updates applied.
        spec_digest: digest of the spec last accepted.
        uid: the job's uid (from admission, else derived from the admission event).
        created_at: when the job was admitted (creation time of its first PodGroup).
        phase: Volcano job phase.
        version: Volcano ``status.version``, bumped by every full kill that removed something.
        retry_count: Volcano ``status.retryCount``.
        podgroup: the PodGroup as last written, ``None`` while it does not exist.
        podgroup_phase: its phase as podgroup-enqueue last reported (``None``: not yet).
        podgroup_reason: reason code of the PodGroup's last condition.
        podgroup_message: message of that condition.
        pods: the job's pods, in task order then index.
        timers: pending delayed policy actions, by deadline.
        phase_reason: reason code of the last phase transition.
        phase_message: its message.
        rejected_digest: spec digest of the last refused update (resubmitting it is a no-op).
        last_status: the status last published, ``None`` before the first.
        generation: counter that makes emitted event ids deterministic.
        incarnations: per pod name, how many times it was created; a pod's uid counts its
            own creations only, so replaying inputs in another interleaving after a crash
            re-creates a pod under the same uid.
        finished_at: when the job reached a finished phase (Completed, Failed or
            Terminated), ``None`` before: ``ttlSecondsAfterFinished`` counts from it.
        eviction: the condition of the job's latest evicted pod (``Preempted`` or
            ``Reclaimed``, naming who took the capacity), published with every status after.
    """

    job_key: JobKey
    job: Job
    spec_digest: str
    uid: str
    created_at: datetime
    phase: JobPhase = JobPhase.PENDING
    version: int = 0
    retry_count: int = 0
    podgroup: PodGroup | None = None
    podgroup_phase: PodGroupPhase | None = None
    podgroup_reason: str = ""
    podgroup_message: str = ""
    pods: tuple[PodState, ...] = ()
    timers: tuple[PolicyTimer, ...] = ()
    phase_reason: str = ""
    phase_message: str = ""
    rejected_digest: str = ""
    last_status: StatusView | None = None
    generation: int = 0
    incarnations: dict[str, int] = {}
    eviction: Condition | None = None
    finished_at: datetime | None = None

    def pod(self, name: str) -> PodState | None:
        """Return the pod called ``name``, or ``None``."""
        for pod in self.pods:
            if pod.name == name:
                return pod
        return None

    def task_pods(self, task: str) -> tuple[PodState, ...]:
        """Return the pods of one task, by index."""
        return tuple(pod for pod in self.pods if pod.task == task)
