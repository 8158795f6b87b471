"""Carrying out a resolved action on one job: Volcano's ``syncJob`` and ``killJob``.

Port of volcano@HEAD ``pkg/controllers/job/job_controller_actions.go`` (``syncJob``,
``killJob``, ``createOrUpdatePodGroup``) and of ``job_controller.go`` ``processNextReq``
(resolve the action, delay it or execute the state, cancel delayed actions). The phase
table itself is :mod:`vcbus.services.job_controller.machine`.

:class:`Execution` is the scratch of one ``decide`` call: it starts from a frozen record,
replaces it step by step, and collects the events to publish. Nothing leaks out of it but
the final record and the events.

Deliberate deviations from Volcano are listed in :mod:`vcbus.services.job_controller.core`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import assert_never

import msgspec

from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.keys import pod_key, split_key
from vcbus.contracts.objects.job import JobPhase, TaskSpec
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Ctx, Step
from vcbus.services.job_controller import machine, policies
from vcbus.services.job_controller.conf import ControllerConf
from vcbus.services.job_controller.derived import JobFacts, job_facts
from vcbus.services.job_controller.job_pods import build_pod, dependency_gate
from vcbus.services.job_controller.job_status import count_pods, status_event, status_view
from vcbus.services.job_controller.machine import Counts, Operation
from vcbus.services.job_controller.pod_index import summary
from vcbus.services.job_controller.podgroup import assemble_podgroup, has_spec
from vcbus.services.job_controller.policies import Action, PolicyEvent, Request
from vcbus.services.job_controller.state import JobRecord, PodState, StatusView

FOLLOW_UPS = 8
"""At most this many follow-up syncs after an action changed the phase."""


class Execution:
    """The mutable scratch of one ``decide`` call: the record so far and the events to emit."""

    def __init__(self, record: JobRecord, ctx: Ctx, conf: ControllerConf) -> None:
        self.record = record
        self.ctx = ctx
        self.conf = conf
        self.emits: list[Event] = []
        self.terminating = 0
        self.held: StatusView | None = None
        self._facts = job_facts(record.job, conf)

    @property
    def facts(self) -> JobFacts:
        """What the current job's spec gives (an accepted update replaces the job)."""
        if self._facts.job is not self.record.job:
            self._facts = job_facts(self.record.job, self.conf)
        return self._facts

    # -- bookkeeping -------------------------------------------------------------------

    def update(self, **changes: object) -> None:
        """Replace fields of the record."""
        self.record = msgspec.structs.replace(self.record, **changes)

    def next_generation(self) -> int:
        """Return the record generation and advance it (ids and uids derive from it)."""
        generation = self.record.generation
        self.update(generation=generation + 1)
        return generation

    def job_event_id(self, kind: type[Event]) -> str:
        """Return the id of the next job-level event of this kind."""
        generation = self.next_generation()
        return derive_event_id(tag_of(kind), self.record.job_key, f"{self.record.uid}:{generation}")

    def step(self) -> Step[JobRecord | None]:
        """Publish the held status and return the record and the events."""
        self.flush()
        return Step(self.record, tuple(self.emits))

    # -- status ------------------------------------------------------------------------

    def hold_status(self, counts: Counts | None = None) -> None:
        """Note the status after an operation; publish the previous one if the phase moved on.

        ``counts`` are the record's pod counts with ``terminating``, when already taken.
        """
        view = status_view(self.record, self.terminating, counts=counts)
        if self.held is not None and self.held.phase != view.phase:
            self.flush()
        self.held = view

    def flush(self, extra: tuple[Condition, ...] = (), *, force: bool = False) -> None:
        """Publish the held status if it differs from the last one (or carries ``extra``).

        ``force`` publishes it even when unchanged (a new eviction condition to show).
        """
        view = self.held
        self.held = None
        if view is None or (view == self.record.last_status and not extra and not force):
            return
        event = status_event(
            self.record,
            view,
            generation=self.next_generation(),
            now=self.ctx.now,
            trace_id=self.ctx.trace_id,
            extra=extra,
        )
        self.emits.append(event)
        self.update(last_status=view)

    # -- PodGroup ----------------------------------------------------------------------

    def ensure_podgroup(self) -> None:
        """Create the PodGroup if missing, else update it (``createOrUpdatePodGroup``)."""
        record = self.record
        current = record.podgroup
        spec = self.facts.podgroup
        if current is None:
            first = record.version == 0 and record.retry_count == 0
            created = assemble_podgroup(
                spec,
                record.job_key,
                record.uid,
                created_at=record.created_at if first else self.ctx.now,
                podgroup_uid=derive_event_id(
                    "podgroup.uid", record.job_key, f"{record.uid}:{record.version}"
                ),
            )
            self.emits.append(
                PodGroupCreated(
                    event_id=self.job_event_id(PodGroupCreated),
                    occurred_at=self.ctx.now,
                    podgroup=created,
                )
            )
            self.update(
                podgroup=created, podgroup_phase=None, podgroup_reason="", podgroup_message=""
            )
            return
        if not has_spec(current, spec):
            wanted = assemble_podgroup(
                spec,
                record.job_key,
                record.uid,
                created_at=current.creation_timestamp,
                podgroup_uid=current.uid,
            )
            self.emits.append(
                PodGroupUpdated(
                    event_id=self.job_event_id(PodGroupUpdated),
                    occurred_at=self.ctx.now,
                    podgroup=wanted,
                )
            )
            self.update(podgroup=wanted)

    def delete_podgroup(self) -> bool:
        """Delete the PodGroup if it exists; tell whether it did."""
        current = self.record.podgroup
        if current is None:
            return False
        self.emits.append(
            PodGroupDeleted(
                event_id=self.job_event_id(PodGroupDeleted),
                occurred_at=self.ctx.now,
                job=self.record.job_key,
                name=current.name,
            )
        )
        self.update(podgroup=None, podgroup_phase=None, podgroup_reason="", podgroup_message="")
        return True

    # -- pods --------------------------------------------------------------------------

    def _with_pod(self, state: PodState) -> tuple[PodState, ...]:
        """The pods with ``state`` added in its place: task order, then index."""
        order = self.facts.order

        def place(pod: PodState) -> tuple[int, str, int]:
            return (order.get(pod.task, len(order)), pod.task, pod.index)

        pods = list(self.record.pods)
        bisect.insort(pods, state, key=place)
        return tuple(pods)

    def create_pod(self, task: TaskSpec, index: int) -> None:
        """Create one pod, and start its PodPending policy timer if a policy has one."""
        record = self.record
        namespace, job_name = split_key(record.job_key)
        name = f"{job_name}-{task.name}-{index}"
        key = pod_key(namespace, name)
        incarnation = record.incarnations.get(name, 0)
        self.update(incarnations={**record.incarnations, name: incarnation + 1})
        # Readable and unique: the job incarnation, the pod, the job version, and how many
        # times this pod was created before (its own history only, not the job's counter).
        uid = f"{record.uid[:8]}-{name}-v{record.version}-i{incarnation}"
        assert record.podgroup is not None
        pod = build_pod(
            job_key=record.job_key,
            job=record.job,
            task=task,
            index=index,
            uid=uid,
            podgroup=record.podgroup.name,
            version=record.version,
            retry_count=record.retry_count,
            priority_classes=self.conf.priority_classes,
            default_scheduler=self.conf.default_scheduler_name,
            now=self.ctx.now,
            facts=self.facts.template(task),
        )
        if record.admitted_digest:
            pod = msgspec.structs.replace(pod, admitted_digest=record.admitted_digest)
        self.emits.append(
            PodCreated(
                event_id=derive_event_id(tag_of(PodCreated), key, uid),
                occurred_at=self.ctx.now,
                pod=pod,
            )
        )
        state = PodState(name=name, task=task.name, index=index, uid=uid, version=record.version)
        self.update(pods=self._with_pod(state))
        # Volcano raises PodPending when a pod is added: a PodPending policy with a
        # timeout starts its timer now (``addPod``).
        request = Request(
            event=PolicyEvent.POD_PENDING,
            task=task.name,
            pod=name,
            pod_uid=uid,
            version=record.version,
        )
        resolution = policies.resolve_action(self.record.job, request, self.record.version)
        if resolution.delay is not None:
            self.update(
                timers=policies.add_timer(
                    self.record.timers, request, resolution, self.ctx.now, self.record.version
                )
            )

    def delete_pods(self, doomed: Callable[[PodState], bool]) -> int:
        """Delete the pods ``doomed`` selects; return how many."""
        if not any(doomed(pod) for pod in self.record.pods):
            return 0
        namespace, _ = split_key(self.record.job_key)
        kept: list[PodState] = []
        deleted = 0
        for pod in self.record.pods:
            if not doomed(pod):
                kept.append(pod)
                continue
            key = pod_key(namespace, pod.name)
            self.emits.append(
                PodDeleted(
                    event_id=derive_event_id(tag_of(PodDeleted), key, pod.uid),
                    occurred_at=self.ctx.now,
                    job=self.record.job_key,
                    pod=key,
                    task=pod.task,
                    pod_uid=pod.uid,
                )
            )
            deleted += 1
        if deleted:
            self.update(pods=tuple(kept))
        return deleted

    # -- operations (``syncJob``, ``killJob``) -----------------------------------------

    def sync(self) -> int:
        """Volcano ``syncJob``: PodGroup, then pods once the PodGroup left Pending."""
        record = self.record
        if record.phase in (JobPhase.PENDING, JobPhase.RUNNING):
            self.ensure_podgroup()
        record = self.record
        if record.podgroup is None or record.podgroup_phase in (None, PodGroupPhase.PENDING):
            return 0
        facts = self.facts
        replicas = facts.replicas
        deleted = 0
        pods = summary(record.pods)
        if any(top >= replicas.get(task, 0) for task, top in pods.top.items()):
            deleted = self.delete_pods(lambda pod: pod.index >= replicas.get(pod.task, 0))
        before = self.record.pods
        if summary(before).slots >= facts.total_replicas:
            # Every pod left is a (task, index < replicas) of the spec: none is missing.
            return deleted
        for task in record.job.spec.tasks:
            if dependency_gate(record.job, task, before) is not None:
                continue
            existing = {pod.index for pod in self.record.pods if pod.task == task.name}
            for index in range(task.replicas):
                if index not in existing:
                    self.create_pod(task, index)
        return deleted

    def kill(self, retain: frozenset[PodPhase], target: Callable[[PodState], bool] | None) -> int:
        """Volcano ``killJob`` (``target is None``) or a targeted kill."""
        record = self.record
        keep = machine.effective_retain(retain, record.retry_count, record.job)
        deleted = self.delete_pods(
            lambda pod: (target is None or target(pod)) and pod.phase not in keep
        )
        if target is None and (self.delete_podgroup() or deleted):
            version = self.record.version + 1
            self.update(version=version, timers=policies.keep_current(self.record.timers, version))
        return deleted

    # -- the state machine -------------------------------------------------------------

    def execute(self, action: Action, request: Request) -> None:
        """Run one cell of the phase table and apply its status rule."""
        record = self.record
        cell = machine.plan(record.phase, action)
        match cell.operation:
            case Operation.SYNC:
                self.terminating = self.sync()
            case Operation.FULL_KILL:
                self.terminating = self.kill(cell.retain, None)
            case Operation.TARGETED_KILL:
                self.terminating = self.kill(cell.retain, _targets(self.record, action, request))
            case _:
                assert_never(cell.operation)
        if cell.count_retry:
            self.update(retry_count=self.record.retry_count + 1)
        counts = count_pods(self.record, self.terminating)
        verdict = machine.evaluate(
            cell.rule, cell.target, self.record.job, counts, self.record.retry_count
        )
        if (
            verdict is None
            and cell.rule is machine.Rule.PENDING
            and summary(self.record.pods).refused > 0
            and not self.record.timers  # a policy action to come may replace the failed pods
        ):
            verdict = machine.evaluate_broken_gang(self.record.job, counts)
        if verdict is not None and verdict.phase is not self.record.phase:
            message = verdict.message or _describe(action, request, self.record)
            self.update(phase=verdict.phase, phase_reason=verdict.reason, phase_message=message)
            if verdict.phase in policies.FINISHED_PHASES and self.record.finished_at is None:
                self.update(finished_at=self.ctx.now)
        self.hold_status(counts)

    def run(self, action: Action, request: Request) -> None:
        """Execute an action, then the follow-up syncs a phase change brings."""
        before = self.record.phase
        self.execute(action, request)
        if action is not Action.SYNC_JOB:
            self.update(timers=policies.cancel_same_scope(self.record.timers, action, request))
        for _ in range(FOLLOW_UPS):
            if self.record.phase is before:
                break
            before = self.record.phase
            self.execute(
                Action.SYNC_JOB, Request(event=PolicyEvent.OUT_OF_SYNC, source="job status changed")
            )

    def dispatch(self, request: Request) -> None:
        """Resolve a request's action; run it now, or start its policy timer."""
        resolution = policies.resolve_action(self.record.job, request, self.record.version)
        if resolution.delay is not None:
            timers = policies.add_timer(
                self.record.timers, request, resolution, self.ctx.now, self.record.version
            )
            self.update(timers=timers)
            return
        self.run(resolution.action, request)


def _targets(record: JobRecord, action: Action, request: Request) -> Callable[[PodState], bool]:
    """Return which pods a targeted kill deletes (RestartTask / RestartPod / RestartPartition)."""
    if action is Action.RESTART_TASK:
        return lambda pod: bool(request.task) and pod.task == request.task
    requested = record.pod(request.pod)
    if requested is None:
        return lambda pod: False
    if action is Action.RESTART_PARTITION:
        task = next((t for t in record.job.spec.tasks if t.name == requested.task), None)
        size = task.partition_policy.partition_size if task and task.partition_policy else 0
        if size > 0:
            partition = requested.index // size
            return lambda pod: pod.task == requested.task and pod.index // size == partition
    return lambda pod: pod.name == requested.name


def _describe(action: Action, request: Request, record: JobRecord) -> str:
    """Say which action moved the job, and because of what."""
    because = request.source or (
        f"{request.event} of {request.pod}" if request.pod else str(request.event or "sync")
    )
    text = f"{action} on {because}"
    if action in (
        Action.RESTART_JOB,
        Action.RESTART_TASK,
        Action.RESTART_POD,
        Action.RESTART_PARTITION,
    ):
        text += f" (retry {record.retry_count} of maxRetry {machine.max_retry(record.job)})"
    return text
