"""The dashboard's store: the CLI's status store, plus each job's recent records.

``DashboardStore`` is the store ``vcbus get`` and ``describe`` read (``StatusStore``: the
newest record per key, pods folded per pod with their requests, the reservation) plus what
only the dashboard needs: each job's recent records (for its events timeline). No I/O here.
"""

from __future__ import annotations

from collections import OrderedDict, deque

from contracts import Topic
from services.cli.status import StatusStore, is_job_keyed
from shared.bus.records import Record

HISTORY = 64
"""Records kept per job for its events timeline (the newest)."""

HISTORY_JOBS = 500
"""Jobs whose records are kept, the most recently changed ones (bounds memory)."""


class DashboardStore(StatusStore):
    """The CLI's status store, plus a short history per job."""

    def __init__(self, prefix: str, history: int = HISTORY, jobs: int = HISTORY_JOBS) -> None:
        super().__init__(prefix)
        self.history: OrderedDict[str, deque[tuple[Topic, Record]]] = OrderedDict()
        """The newest records of the most recently changed jobs."""
        self._history = history
        self._history_jobs = jobs

    def fold(self, record: Record) -> None:
        """Fold one record as ``StatusStore`` does, then keep what the dashboard adds."""
        super().fold(record)
        name = record.topic.removeprefix(self.prefix)
        if record.value is None or name not in _TOPIC_BY_NAME:
            return
        topic = _TOPIC_BY_NAME[name]
        if is_job_keyed(topic) and record.key:
            self._remember(record.key.decode("utf-8", "replace"), topic, record)

    def _remember(self, key: str, topic: Topic, record: Record) -> None:
        history = self.history.get(key)
        if history is None:
            history = self.history[key] = deque(maxlen=self._history)
            if len(self.history) > self._history_jobs:
                self.history.popitem(last=False)
        else:
            self.history.move_to_end(key)
        history.append((topic, record))


_TOPIC_BY_NAME = {str(topic): topic for topic in Topic}
