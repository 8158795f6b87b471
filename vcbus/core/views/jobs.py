"""Jobs as users see them: the fold of their records, their PodGroup's phase, pod counts.

:class:`JobFold` is the one fold of a job's decoded records (``jobs.admitted``,
``jobs.rejected``, ``jobs.status``, ``podgroups``, ``podgroups.status``,
``podgroups.conditions``): ``vcbus up``'s view (:mod:`vcbus.core.views.live`) and
``simulate``'s outcome read it. The CLI's store keeps the newest record per key of the
same topics and reads them with the same rules (:func:`podgroup_phase`,
:func:`replaces_spec`, :func:`vcbus.core.views.reason.job_reason`).

A resubmission whose update the job-controller refuses (``UpdateRejected``) is admitted
all the same (admission does not know the previous spec): the fold applies the
controller's rule (:func:`vcbus.core.job_update.update_error`), so the spec shown stays the
accepted one, and the refusal's status does not bring its trace id in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never

from vcbus.contracts import (
    Event,
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobDeleted,
    JobRejected,
    JobResumeAccepted,
    JobsAdmittedEvent,
    JobsRejectedEvent,
    JobsStatusEvent,
    JobStatusChanged,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupsConditionsEvent,
    PodGroupsEvent,
    PodGroupsStatusEvent,
    PodGroupUpdated,
    RejectionsCleared,
)
from vcbus.contracts.objects import Condition, PodGroupPhase
from vcbus.core.job_update import UPDATE_REJECTED, update_error
from vcbus.core.views.phases import DELETED, REJECTED
from vcbus.core.views.reason import Reason, job_reason
from vcbus.core.views.rejections import ClearedRejections

PodGroupSpec = PodGroupCreated | PodGroupUpdated | PodGroupDeleted


def podgroup_phase(status: PodGroupPhaseChanged | None, spec: PodGroupSpec | None = None) -> str:
    """The phase of a job's PodGroup as shown (``""``: nothing known of it).

    ``status`` is the newest record of ``podgroups.status``, ``spec`` the newest of
    ``podgroups`` (``None`` when not read). The phase of a PodGroup that was deleted is
    ``Deleted`` (a finished job's PodGroup is deleted with its pods, so its last phase,
    often ``Running``, is no longer true), and a phase of a PodGroup that was replaced (a
    restarted job's) is not taken for its successor's, which is ``Pending`` until it has
    one of its own.
    """
    if isinstance(spec, PodGroupDeleted):
        if status is None or status.podgroup == spec.name:
            return DELETED
        return str(status.phase)
    if status is None:
        return str(PodGroupPhase.PENDING) if spec is not None else ""
    if isinstance(spec, PodGroupCreated | PodGroupUpdated):
        group = spec.podgroup
        replaced = status.podgroup != group.name or (
            status.uid and group.uid and status.uid != group.uid
        )
        if replaced:
            return str(PodGroupPhase.PENDING)
    return str(status.phase)


def replaces_spec(accepted: JobAdmitted | None, admitted: JobAdmitted) -> bool:
    """Whether ``admitted`` becomes the job's spec, as the job-controller decides.

    ``accepted`` is the admission whose spec the job has now (``None``: no job of that
    name, or it was deleted). The same spec changes nothing; an update that
    :func:`~vcbus.core.job_update.update_error` refuses leaves the accepted spec in place.
    """
    if accepted is None:
        return True
    if admitted.spec_digest == accepted.spec_digest:
        return False
    return update_error(accepted.manifest, admitted.manifest) is None


def update_refusal(status: JobStatusChanged) -> str | None:
    """The job-controller's message when ``status`` says an update was refused, else ``None``."""
    for condition in status.conditions:
        if condition.type == UPDATE_REJECTED:
            return condition.message
    return None


def pod_counts(status: JobStatusChanged) -> str:
    """The job's pods in words, e.g. ``6 running, 2 succeeded (min available 3)``.

    The counts and the minimum are said apart, so they never read as one fraction
    ("6/3 started" for six pods of a job whose minimum is three).
    """
    counts = (
        (status.running, "running"),
        (status.succeeded, "succeeded"),
        (status.failed, "failed"),
        (status.pending, "pending"),
    )
    shown = [f"{n} {name}" for n, name in counts if n] or ["0 running"]
    return f"{', '.join(shown)} (min available {status.min_available})"


ADMITTED = "Admitted"
"""The phase shown for an admitted job the job controller has not reported yet."""
SUBMITTED = "Submitted"
"""The phase shown for a job known only from its PodGroup or pods so far."""


@dataclass
class JobView:
    """One job as users see it: its phase, its newest status, its PodGroup and reasons."""

    key: str
    phase: str = SUBMITTED
    podgroup_phase: str = ""
    status: JobStatusChanged | None = None
    podgroup_conditions: tuple[Condition, ...] = ()
    """The PodGroup's conditions on ``podgroups.status``, while they are its shown phase's."""
    allocator_conditions: tuple[Condition, ...] = ()
    trace_id: str = ""
    rejected: tuple[str, ...] = ()
    podgroup_status: PodGroupPhaseChanged | None = None
    podgroup_spec: PodGroupSpec | None = None
    deleted: bool = False
    """``jobs.status`` said the job is gone (its phase is then ``Deleted``)."""
    admitted: JobAdmitted | None = None
    """The admission whose spec the job has (:func:`replaces_spec`)."""
    update_rejected: str = ""
    """The job-controller's message on the latest update it refused (``""``: none)."""

    def status_changed(self, status: JobStatusChanged) -> None:
        """Take the job's newest status; one refusing an update keeps the job's trace id."""
        self.phase, self.status = status.phase, status
        refusal = update_refusal(status)
        if refusal is None:
            self.trace_id = status.trace_id or self.trace_id
        else:
            self.update_rejected = refusal

    def podgroup_changed(self) -> None:
        """Recompute the PodGroup's phase and conditions after one of its events."""
        self.podgroup_phase = podgroup_phase(self.podgroup_status, self.podgroup_spec)
        shown = self.podgroup_status
        self.podgroup_conditions = (
            shown.conditions if shown is not None and self.podgroup_phase == shown.phase else ()
        )

    def reason(self) -> Reason | None:
        """Why the job is where it is (:func:`~vcbus.core.views.reason.job_reason`)."""
        return job_reason(
            self.phase,
            job=self.status.conditions if self.status is not None else (),
            podgroup_phase=self.podgroup_phase,
            podgroup=self.podgroup_conditions,
            allocator=self.allocator_conditions,
        )


JobFoldEvent = (
    JobsAdmittedEvent
    | JobsRejectedEvent
    | JobsStatusEvent
    | PodGroupsEvent
    | PodGroupsStatusEvent
    | PodGroupsConditionsEvent
)
"""What :class:`JobFold` folds: every event of the topics of a job and its PodGroup."""


@dataclass
class JobFold:
    """The jobs, by ``namespace/name``, folded from their decoded records."""

    jobs: dict[str, JobView] = field(default_factory=dict)
    cleared: ClearedRejections = field(default_factory=ClearedRejections)
    """The unnamed rejections a user cleared: not among :attr:`jobs`."""
    unnamed: dict[str, JobRejected] = field(default_factory=dict)
    """The rejections that named no job, by their key in :attr:`jobs`."""

    def _job(self, key: str) -> JobView:
        return self.jobs.setdefault(key, JobView(key))

    def _rejected(self, event: JobRejected) -> str | None:
        key = event.job or f"(unnamed@{event.origin.offset if event.origin else '?'})"
        if self.cleared.clears(event):
            return None
        if not event.job:
            self.unnamed[key] = event
        job = self._job(key)
        job.phase = REJECTED
        job.rejected = tuple(f"{v.path}: {v.message}" for v in event.violations)
        if event.violations_omitted:
            job.rejected += (f"… and {event.violations_omitted} more, not listed",)
        return key

    def apply(self, event: Event) -> str | None:
        """Fold one event; the key of the job it was about (``None``: not a job's event)."""
        if not isinstance(event, JobFoldEvent):
            return None
        key: str
        match event:
            case JobAdmitted():
                key = event.job
                if (known := self.jobs.get(key)) is not None and known.deleted:
                    del self.jobs[key]
                job = self._job(key)
                if replaces_spec(job.admitted, event):
                    job.admitted = event
                if job.status is None:
                    job.phase = ADMITTED
            case JobRejected():
                return self._rejected(event)
            case JobStatusChanged():
                key = event.job
                self._job(key).status_changed(event)
            case JobDeleted():
                key = event.job
                job = self._job(key)
                job.phase, job.deleted = DELETED, True
            case PodGroupCreated() | PodGroupUpdated():
                key = event.podgroup.job
                job = self._job(key)
                job.podgroup_spec = event
                job.podgroup_changed()
            case PodGroupDeleted():
                key = event.job
                job = self._job(key)
                job.podgroup_spec = event
                job.podgroup_changed()
            case PodGroupPhaseChanged():
                key = event.job
                job = self._job(key)
                job.podgroup_status = event
                job.podgroup_changed()
            case PodGroupConditionsChanged():
                key = event.job
                self._job(key).allocator_conditions = event.conditions
            case RejectionsCleared():
                self.cleared.apply(event)
                for gone in [k for k, r in self.unnamed.items() if self.cleared.clears(r)]:
                    del self.unnamed[gone]
                    self.jobs.pop(gone, None)
                return None
            case JobDeleteAccepted() | JobAbortAccepted() | JobResumeAccepted():
                return None  # a command's answer: the job's status says what it did
            case _:
                assert_never(event)
        return key
