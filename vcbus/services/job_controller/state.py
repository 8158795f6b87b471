"""What the job-controller remembers about one job: :class:`JobRecord`.

The record is the per-key state of the reactor (kept in a changelog by the shell). It is
a frozen msgspec Struct so that it encodes as it is; every change makes a new record.

It plays the part of Volcano's ``JobInfo`` (the job, its pods by task, ``status``) plus
what Volcano keeps elsewhere: the pending delayed policy actions
(``job_controller.go`` ``delayActionMap``), the PodGroup as last written, and what an
event-sourced core needs for deterministic event ids (a generation counter). Idempotency
by event id is the shell's (``vcbus.core.runtime.reactor``): records written before kept a
bounded ``applied_ids`` too, which decoding ignores.

:class:`RecordCodec` writes a job's record as changelog records of at most 1 MiB: a job
with more than :data:`vcbus.contracts.limits.POD_PART_PODS` pods (or creation counts, or policy
timers) keeps them in parts, by ranges of pods, beside the record of the job itself; a
record written whole before reads as it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

import msgspec

from vcbus.contracts.events.jobs_status import TaskCounts
from vcbus.contracts.keys import JobKey
from vcbus.contracts.limits import POD_PART_PODS
from vcbus.contracts.objects.job import Job, JobPhase
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.services.job_controller.pod_index import summary


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
        admitted_digest: the ``manifest_digest`` of the admitted manifest ``job`` is (empty
            when admission signs nothing); each pod made from ``job`` carries it.
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
    admitted_digest: str = ""
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
    parts: int = 0
    """In a changelog head only: how many part records hold its pods (:class:`RecordCodec`)."""

    def pod(self, name: str) -> PodState | None:
        """Return the pod called ``name``, or ``None``."""
        position = summary(self.pods).positions.get(name)
        return None if position is None else self.pods[position]

    def task_pods(self, task: str) -> tuple[PodState, ...]:
        """Return the pods of one task, by index."""
        return tuple(pod for pod in self.pods if pod.task == task)


class PodPart(msgspec.Struct, frozen=True, kw_only=True):
    """One part record of a job's state: a range of its pods, creation counts and timers."""

    pods: tuple[PodState, ...] = ()
    incarnations: dict[str, int] = {}
    timers: tuple[PolicyTimer, ...] = ()


ENCODED_MEMO_LIMIT = 256
"""How many jobs in parts :class:`RecordCodec` keeps the latest encoding of (oldest first
out)."""


@dataclass(frozen=True, slots=True)
class _Encoded:
    """A job's pods, creation counts and timers, and their parts as encoded."""

    pods: tuple[PodState, ...]
    incarnations: dict[str, int]
    timers: tuple[PolicyTimer, ...]
    parts: list[bytes]


E = TypeVar("E", bound=msgspec.Struct)
"""A changelog entry holding a :class:`JobRecord` (or ``None``) as its ``state``."""


class RecordCodec(Generic[E]):
    """A job's changelog entry as records: the job's own, then parts of its pods.

    Entries are the reactor's (``vcbus.core.runtime.reactor.Entry``) of a :class:`JobRecord`;
    ``entry_type`` is that type. A record with at most ``pods_per_part`` pods, creation
    counts and timers is one record, as before parts; a larger one is a head (the record
    without them, ``parts`` saying how many) and parts holding ``pods_per_part`` of each,
    in order.
    """

    def __init__(self, entry_type: type[E], pods_per_part: int = POD_PART_PODS) -> None:
        self._decoder: msgspec.json.Decoder[E] = msgspec.json.Decoder(entry_type)
        self._part_decoder = msgspec.json.Decoder(PodPart)
        self._encoder = msgspec.json.Encoder()
        self._per_part = pods_per_part
        self._last: dict[str, _Encoded] = {}
        """Per job in parts, its latest encoding (a cache: a miss encodes every part)."""

    def encode(self, entry: E) -> list[bytes]:
        """The entry's records: one, or its head then its parts.

        A part whose pods are the same objects as at the job's previous encoding, with the
        same creation counts and timers, is not encoded again: a step changes a pod or
        two, and re-encoding 10,000 pods per step would cost more than the step.
        """
        record = getattr(entry, "state", None)
        if not isinstance(record, JobRecord):
            return [self._encoder.encode(entry)]
        size = self._per_part
        longest = max(len(record.pods), len(record.incarnations), len(record.timers))
        if longest <= size:
            self._last.pop(record.job_key, None)
            return [self._encoder.encode(entry)]
        count = -(-longest // size)
        last = self._last.pop(record.job_key, None)
        same_rest = (
            last is not None
            and last.incarnations is record.incarnations
            and last.timers is record.timers
        )
        counted: list[tuple[str, int]] | None = None
        parts: list[bytes] = []
        for n in range(count):
            pods = record.pods[n * size : (n + 1) * size]
            if (
                same_rest
                and last is not None
                and n < len(last.parts)
                and last.pods[n * size : (n + 1) * size] == pods
            ):
                parts.append(last.parts[n])
                continue
            if counted is None:
                counted = list(record.incarnations.items())
            part = PodPart(
                pods=pods,
                incarnations=dict(counted[n * size : (n + 1) * size]),
                timers=record.timers[n * size : (n + 1) * size],
            )
            parts.append(self._encoder.encode(part))
        if len(self._last) >= ENCODED_MEMO_LIMIT:
            del self._last[next(iter(self._last))]
        self._last[record.job_key] = _Encoded(
            record.pods, record.incarnations, record.timers, parts
        )
        head = msgspec.structs.replace(record, pods=(), incarnations={}, timers=(), parts=count)
        return [self._encoder.encode(msgspec.structs.replace(entry, state=head)), *parts]

    def decode(self, head: bytes, parts: Sequence[bytes]) -> E:
        """The entry from its head and parts.

        Raises:
            ValueError: the head names more or fewer parts than there are.
        """
        entry = self._decoder.decode(head)
        record = getattr(entry, "state", None)
        if not isinstance(record, JobRecord) or record.parts == 0:
            return entry
        if len(parts) != record.parts:
            raise ValueError(
                f"the state of {record.job_key} has {len(parts)} part(s) of {record.parts}"
            )
        decoded = [self._part_decoder.decode(part) for part in parts]
        joined = msgspec.structs.replace(
            record,
            pods=tuple(pod for part in decoded for pod in part.pods),
            incarnations={k: v for part in decoded for k, v in part.incarnations.items()},
            timers=tuple(timer for part in decoded for timer in part.timers),
            parts=0,
        )
        return msgspec.structs.replace(entry, state=joined)
