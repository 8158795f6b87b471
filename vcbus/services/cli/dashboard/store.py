"""The dashboard's store: the CLI's status store, each job's recent records, deleted jobs.

``DashboardStore`` is the store ``vcbus get`` and ``describe`` read (``StatusStore``: the
newest record per key, pods folded per pod with their requests, the reservation) plus what
only the dashboard needs:

- each job's recent records (for its events, as ``describe`` shows them);
- the jobs deleted in the last ``history_seconds`` (``VCBUS_DASHBOARD_HISTORY_SECONDS``,
  an hour by default; at most :data:`DELETED_JOBS` of them): when, the last
  ``jobs.status`` record before the deletion and the job's records, so a deleted job's page
  says it was deleted and shows its last state instead of "not found".

No I/O here.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from vcbus.contracts import JobAdmitted, JobDeleted, Topic
from vcbus.core.bus.records import Record
from vcbus.services.cli.status_store import StatusStore, is_job_keyed

HISTORY = 128
"""Records kept per job for its events (the newest)."""

HISTORY_JOBS = 500
"""Jobs whose records are kept, the most recently changed ones (bounds memory)."""

HISTORY_SECONDS = 3600.0
"""How long a deleted job's page is kept by default (``VCBUS_DASHBOARD_HISTORY_SECONDS``)."""

DELETED_JOBS = 500
"""Deleted jobs kept at most (the most recently deleted)."""


def history_seconds(environ: Mapping[str, str]) -> float:
    """``VCBUS_DASHBOARD_HISTORY_SECONDS`` (0: keep none), else :data:`HISTORY_SECONDS`.

    Raises:
        ValueError: the value is not a number of seconds, 0 or more.
    """
    raw = environ.get("VCBUS_DASHBOARD_HISTORY_SECONDS", "").strip()
    if not raw:
        return HISTORY_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(
            f"VCBUS_DASHBOARD_HISTORY_SECONDS={raw!r}: give how long deleted jobs are kept, "
            "in seconds (0 or more)"
        )
    return seconds


@dataclass(frozen=True, slots=True)
class DeletedJob:
    """A job deleted recently: when, its last ``jobs.status`` record, its records."""

    key: str
    at: datetime
    last_status: Record | None
    records: tuple[tuple[Topic, Record], ...]


class DashboardStore(StatusStore):
    """The CLI's status store, plus a short history per job and the recently deleted jobs."""

    def __init__(
        self,
        prefix: str,
        history: int = HISTORY,
        jobs: int = HISTORY_JOBS,
        *,
        keep_deleted: float = HISTORY_SECONDS,
        deleted_jobs: int = DELETED_JOBS,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(prefix, now=now)
        self.history: OrderedDict[str, deque[tuple[Topic, Record]]] = OrderedDict()
        """The newest records of the most recently changed jobs."""
        self.deleted: OrderedDict[str, DeletedJob] = OrderedDict()
        """The jobs deleted within ``keep_deleted`` seconds, oldest deletion first."""
        self._history = history
        self._history_jobs = jobs
        self._keep_deleted = timedelta(seconds=keep_deleted)
        self._deleted_jobs = deleted_jobs

    def fold(self, record: Record) -> None:
        """Fold one record as ``StatusStore`` does, then keep what the dashboard adds."""
        name = record.topic.removeprefix(self.prefix)
        topic = _TOPIC_BY_NAME.get(name)
        key = record.key.decode("utf-8", "replace") if record.key else ""
        previous = self.latest[Topic.JOBS_STATUS].get(key) if topic is Topic.JOBS_STATUS else None
        super().fold(record)
        if record.value is None or topic is None or not key or not is_job_keyed(topic):
            return
        self._remember(key, topic, record)
        if topic is Topic.JOBS_STATUS:
            event = self.get(Topic.JOBS_STATUS, key)
            if isinstance(event, JobDeleted):
                self._deleted(key, event.occurred_at, previous)
        elif topic is Topic.JOBS_ADMITTED and isinstance(self.get(topic, key), JobAdmitted):
            self.deleted.pop(key, None)

    def _remember(self, key: str, topic: Topic, record: Record) -> None:
        history = self.history.get(key)
        if history is None:
            history = self.history[key] = deque(maxlen=self._history)
            if len(self.history) > self._history_jobs:
                self.history.popitem(last=False)
        else:
            self.history.move_to_end(key)
        history.append((topic, record))

    def _deleted(self, key: str, at: datetime, previous: Record | None) -> None:
        if self._keep_deleted <= timedelta(0):
            return
        if previous is not None and isinstance(
            self.decode(Topic.JOBS_STATUS, previous.value), JobDeleted
        ):
            previous = None
        known = self.deleted.pop(key, None)
        last = previous if previous is not None else known.last_status if known else None
        self.deleted[key] = DeletedJob(key, at, last, tuple(self.history.get(key, ())))
        self.prune()

    def prune(self) -> None:
        """Forget the deleted jobs past the time kept, and the oldest past the count."""
        horizon = self.now() - self._keep_deleted
        while self.deleted and (
            len(self.deleted) > self._deleted_jobs or next(iter(self.deleted.values())).at < horizon
        ):
            self.deleted.popitem(last=False)

    def deleted_job(self, key: str) -> DeletedJob | None:
        """The deleted job ``key`` while it is kept (``None``: not deleted, or forgotten)."""
        self.prune()
        return self.deleted.get(key)


_TOPIC_BY_NAME = {str(topic): topic for topic in Topic}
