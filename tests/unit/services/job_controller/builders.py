"""Builders for job-controller tests: jobs, inputs, and a driver that feeds ``decide``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import msgspec

from tests.conftest import VOLCANO_EXAMPLES
from vcbus.contracts._base import Event
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
)
from vcbus.contracts.events.jobs_status import JobStatusChanged
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey, job_key
from vcbus.contracts.objects.job import (
    DependsOn,
    Job,
    JobSpec,
    LifecyclePolicy,
    PodTemplate,
    TaskSpec,
)
from vcbus.contracts.objects.meta import Condition, ObjectMeta
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.step import Ctx, Tick
from vcbus.services.job_controller.core import ControllerConf, ControllerInput, decide
from vcbus.services.job_controller.podgroup import assemble_podgroup, podgroup_spec
from vcbus.services.job_controller.state import JobRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EXAMPLES = VOLCANO_EXAMPLES

_ids = itertools.count()


def next_id(prefix: str = "in") -> str:
    """Return a fresh input event id."""
    return f"{prefix}-{next(_ids)}"


def build_task(
    name: str,
    replicas: int = 1,
    *,
    min_available: int | None = None,
    cpu: str = "100m",
    priority_class: str = "",
    policies: Iterable[LifecyclePolicy] = (),
    depends_on: Iterable[str] = (),
    iteration: str = "",
    annotations: Mapping[str, str] | None = None,
    max_retry: int = 3,
    spec_extra: Mapping[str, object] | None = None,
) -> TaskSpec:
    """Build a task whose pods request ``cpu``."""
    spec: dict[str, object] = {
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    spec.update(spec_extra or {})
    names = tuple(depends_on)
    return TaskSpec(
        name=name,
        replicas=replicas,
        min_available=min_available,
        template=PodTemplate(metadata=ObjectMeta(annotations=dict(annotations or {})), spec=spec),
        policies=tuple(policies),
        max_retry=max_retry,
        depends_on=DependsOn(name=names, iteration=iteration) if names else None,
    )


def build_job(
    *tasks: TaskSpec,
    name: str = "job",
    namespace: str = "default",
    min_available: int | None = None,
    max_retry: int = 3,
    policies: Iterable[LifecyclePolicy] = (),
    min_success: int | None = None,
    priority_class: str = "",
    annotations: Mapping[str, str] | None = None,
) -> Job:
    """Build a job as admission would leave it (docs/design.md#minavailable for
    ``minAvailable``)."""
    if min_available is None:
        min_available = sum(
            t.replicas if t.min_available is None else t.min_available for t in tasks
        )
    notes = dict(annotations or {})
    if any(t.depends_on is not None for t in tasks):
        notes["volcano.sh/dependent-job"] = "true"
    return Job(
        metadata=ObjectMeta(name=name, namespace=namespace, annotations=notes),
        spec=JobSpec(
            scheduler_name="volcano",
            min_available=min_available,
            tasks=tasks,
            policies=tuple(policies),
            queue="default",
            max_retry=max_retry,
            min_success=min_success,
            priority_class_name=priority_class,
        ),
    )


def admitted(job: Job, digest: str = "digest-1", *, event_id: str | None = None) -> JobAdmitted:
    """Return the ``JobAdmitted`` of a job."""
    return JobAdmitted(
        event_id=event_id or next_id("admitted"),
        occurred_at=T0,
        job=job_key(job.metadata.namespace, job.metadata.name),
        manifest=job,
        spec_digest=digest,
    )


def policy(
    action: str, *events: str, exit_code: int | None = None, timeout: str | None = None
) -> LifecyclePolicy:
    """Build a lifecycle policy on events (several become ``events``) or an exit code."""
    if len(events) == 1:
        return LifecyclePolicy(action=action, event=events[0], exit_code=exit_code, timeout=timeout)
    return LifecyclePolicy(action=action, events=events, exit_code=exit_code, timeout=timeout)


def pods_of(emits: Iterable[Event]) -> list[str]:
    """Names of the pods created by these events, in order."""
    return [e.pod.name for e in emits if isinstance(e, PodCreated)]


def deleted_pods(emits: Iterable[Event]) -> list[str]:
    """Names of the pods deleted by these events, in order."""
    return [e.pod.split("/", 1)[1] for e in emits if isinstance(e, PodDeleted)]


def statuses(emits: Iterable[Event]) -> list[JobStatusChanged]:
    """The job statuses among these events."""
    return [e for e in emits if isinstance(e, JobStatusChanged)]


def kinds(emits: Iterable[Event]) -> list[str]:
    """Class names of these events, in order."""
    return [type(e).__name__ for e in emits]


@dataclass
class Driver:
    """Feeds inputs to ``decide`` one by one, keeping the record and everything emitted."""

    job: Job
    conf: ControllerConf = field(default_factory=ControllerConf)
    now: datetime = T0
    record: JobRecord | None = None
    emitted: list[Event] = field(default_factory=list)
    last: tuple[Event, ...] = ()

    @property
    def key(self) -> JobKey:
        return job_key(self.job.metadata.namespace, self.job.metadata.name)

    @property
    def current(self) -> JobRecord:
        assert self.record is not None
        return self.record

    def feed(self, event: ControllerInput) -> tuple[Event, ...]:
        step = decide(self.record, event, Ctx(now=self.now, trace_id="trace-1"), self.conf)
        self.record = step.state
        self.last = step.emit
        self.emitted.extend(step.emit)
        return step.emit

    def admit(self, digest: str = "digest-1") -> tuple[Event, ...]:
        return self.feed(admitted(self.job, digest))

    def podgroup(self, phase: PodGroupPhase, *conditions: Condition) -> tuple[Event, ...]:
        pg = self.current.podgroup
        name = pg.name if pg else "missing"
        return self.feed(
            PodGroupPhaseChanged(
                event_id=next_id("pg"),
                occurred_at=self.now,
                job=self.key,
                podgroup=name,
                phase=phase,
                conditions=conditions,
            )
        )

    def pod(
        self,
        name: str,
        phase: PodPhase,
        *,
        node: str | None = "n1",
        exit_code: int | None = None,
        reason: str = "",
        uid: str | None = None,
        restarts: int = 0,
        message: str = "",
    ) -> tuple[Event, ...]:
        state = self.current.pod(name)
        return self.feed(
            self.pod_event(
                name,
                phase,
                node=node,
                exit_code=exit_code,
                reason=reason,
                uid=uid,
                restarts=restarts,
                task=state.task if state else "",
                message=message,
            )
        )

    def pod_event(
        self,
        name: str,
        phase: PodPhase,
        *,
        node: str | None = "n1",
        exit_code: int | None = None,
        reason: str = "",
        uid: str | None = None,
        restarts: int = 0,
        task: str = "",
        message: str = "",
    ) -> PodPhaseChanged:
        state = self.record.pod(name) if self.record else None
        return PodPhaseChanged(
            event_id=next_id("pod"),
            occurred_at=self.now,
            pod=PodKey(f"{self.job.metadata.namespace}/{name}"),
            job=self.key,
            task=task or (state.task if state else ""),
            node=NodeName(node) if node else None,
            phase=phase,
            exit_code=exit_code,
            reason=reason,
            message=message,
            pod_uid=uid if uid is not None else (state.uid if state else ""),
            restart_count=restarts,
        )

    def pods(self, names: Iterable[str], phase: PodPhase, **kwargs: object) -> tuple[Event, ...]:
        out: list[Event] = []
        for name in names:
            out.extend(self.pod(name, phase, **kwargs))  # type: ignore[arg-type]
        return tuple(out)

    def refuse(self, name: str) -> tuple[Event, ...]:
        state = self.current.pod(name)
        return self.feed(
            BindingRefused(
                event_id=next_id("refused"),
                occurred_at=self.now,
                pod=PodKey(f"{self.job.metadata.namespace}/{name}"),
                job=self.key,
                task=state.task if state else "",
                node=NodeName("n1"),
                reason="Insufficient cpu",
                pod_uid=state.uid if state else "",
            )
        )

    def abort(self) -> tuple[Event, ...]:
        return self.feed(
            JobAbortAccepted(event_id=next_id("abort"), occurred_at=self.now, job=self.key)
        )

    def resume(self) -> tuple[Event, ...]:
        return self.feed(
            JobResumeAccepted(event_id=next_id("resume"), occurred_at=self.now, job=self.key)
        )

    def delete(self) -> tuple[Event, ...]:
        return self.feed(
            JobDeleteAccepted(event_id=next_id("delete"), occurred_at=self.now, job=self.key)
        )

    def tick(self, seconds: float) -> tuple[Event, ...]:
        self.now = self.now + timedelta(seconds=seconds)
        return self.feed(Tick(now=self.now))

    def pod_names(self) -> list[str]:
        return [pod.name for pod in self.current.pods]

    def phase(self) -> str:
        return self.current.phase.value

    def start(self) -> None:
        """Admit the job and let enqueue move its PodGroup to Inqueue."""
        self.admit()
        self.podgroup(PodGroupPhase.INQUEUE)


def with_spec(job: Job, **changes: object) -> Job:
    """Return the job with its spec fields replaced."""
    return msgspec.structs.replace(job, spec=msgspec.structs.replace(job.spec, **changes))


def last_status(emits: Iterable[Event]) -> JobStatusChanged:
    """The last job status among these events."""
    found = statuses(emits)
    assert found, "no JobStatusChanged emitted"
    return found[-1]


def build_podgroup(
    job_key: JobKey,
    job: Job,
    uid: str,
    priority_classes: Mapping[str, int],
    *,
    created_at: datetime | None,
    podgroup_uid: str = "",
) -> PodGroup:
    """The PodGroup the controller makes for ``job``: its spec, assembled as the core does."""
    return assemble_podgroup(
        podgroup_spec(job, priority_classes),
        job_key,
        uid,
        created_at=created_at,
        podgroup_uid=podgroup_uid,
    )
