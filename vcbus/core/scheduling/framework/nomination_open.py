"""Nominations at a session's opening: waiting pods held again, finished nominations ended.

Step 2 of :mod:`vcbus.core.scheduling.framework.nomination`, below the session: it reads only
what :class:`OpeningSession` names, so ``open_session`` calls it without the session
module being imported back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from vcbus.contracts import reasons as codes
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.core.scheduling.framework.results import NominationChange, NominationChangeKind
from vcbus.core.scheduling.framework.votes import Status
from vcbus.core.scheduling.holds import Nomination
from vcbus.core.scheduling.model import JobInfo, NodeInfo, TaskInfo, TaskStatus, naive_utc
from vcbus.core.scheduling.snapshot import ClusterSnapshot

BOUND = codes.POD_BOUND
NOMINATION_EXPIRED = codes.NOMINATION_EXPIRED
JOB_DELETED = codes.JOB_DELETED


class OpeningSession(Protocol):
    """What opening and ending nominations read and change (``Session`` has it all)."""

    @property
    def snapshot(self) -> ClusterSnapshot:
        """The cluster state the session opened on (its nominations)."""
        ...

    @property
    def now(self) -> datetime:
        """The cycle's time."""
        ...

    @property
    def jobs(self) -> Mapping[JobKey, JobInfo]:
        """The session's jobs."""
        ...

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The session's nodes."""
        ...

    @property
    def nominated(self) -> dict[JobKey, Nomination]:
        """Nominations still waiting this session."""
        ...

    @property
    def nomination_changes(self) -> list[NominationChange]:
        """Nominations made and ended this session, in order."""
        ...

    def predicate_fn(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Why ``task`` may not run on ``node``, or ``None``."""
        ...

    def hold_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Pipeline ``task`` on ``node`` holding its whole request."""
        ...


def open_nominations(ssn: OpeningSession) -> None:
    """Pipeline every waiting nominated pod on its node again; end the nominations done.

    Called once the plugins are open, so queue shares count the pipelined pods.
    """
    for key in sorted(ssn.snapshot.nominations):
        nomination = ssn.snapshot.nominations[key]
        job = ssn.jobs.get(key)
        if job is None or (nomination.uid and job.uid != nomination.uid):
            end_nomination(ssn, nomination, JOB_DELETED, "the PodGroup is gone or was recreated")
            continue
        if naive_utc(ssn.now) >= naive_utc(nomination.until):
            end_nomination(
                ssn,
                nomination,
                NOMINATION_EXPIRED,
                f"pods not bound by {nomination.until.isoformat()}",
            )
            continue
        waiting = _waiting(job, nomination)
        if not waiting:
            end_nomination(ssn, nomination, BOUND, "no nominated pod waits any more")
            continue
        for task, node_name in waiting:
            node = ssn.nodes.get(node_name)
            if node is not None and ssn.predicate_fn(task, node) is None:
                ssn.hold_task(task, node)
        ssn.nominated[key] = nomination


def end_nomination(ssn: OpeningSession, nomination: Nomination, reason: str, message: str) -> None:
    """Record that ``nomination`` ended (``NominationEnded`` once the session closes)."""
    ssn.nomination_changes.append(
        NominationChange(
            kind=NominationChangeKind.ENDED,
            job=nomination.job,
            podgroup=nomination.podgroup,
            uid=nomination.uid,
            reason=reason,
            message=message,
        )
    )


def _waiting(job: JobInfo, nomination: Nomination) -> list[tuple[TaskInfo, NodeName]]:
    out = []
    for pod in nomination.pods:
        task = job.tasks.get(pod.uid)
        if task is not None and task.status is TaskStatus.PENDING:
            out.append((task, pod.node))
    return out
