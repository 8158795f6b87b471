"""A job as users see it: its PodGroup's phase and its pod counts."""

from __future__ import annotations

from contracts import (
    JobStatusChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupUpdated,
)
from contracts.objects import PodGroupPhase
from shared.views.phases import DELETED

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
