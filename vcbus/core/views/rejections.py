"""Which rejected records that named no job a user has cleared (``vcbus delete --rejected``).

One rule for every reader of ``jobs.rejected`` (the CLI's store, ``vcbus up``'s view, the
dashboard, ``simulate``'s outcome): a ``RejectionsCleared`` removes the unnamed rejections
it names (:meth:`vcbus.contracts.RejectionsCleared.clears`), whichever of the two a reader
meets first, since they may sit on different partitions (docs/design.md#junk-records).
"""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts import JobRejected, RejectionsCleared, SubmissionOrigin


class ClearedRejections:
    """What the ``RejectionsCleared`` read so far clear, kept as small as their rule.

    Every clear of all before a time is folded into the latest such time; a clear by
    origin keeps each origin with its time (no more origins than records it cleared).
    """

    def __init__(self) -> None:
        self.before: datetime | None = None
        self.origins: dict[SubmissionOrigin, datetime] = {}

    def apply(self, cleared: RejectionsCleared) -> None:
        """Fold one clear."""
        if not cleared.origins:
            if self.before is None or cleared.before > self.before:
                self.before = cleared.before
            return
        for origin in cleared.origins:
            known = self.origins.get(origin)
            if known is None or cleared.before > known:
                self.origins[origin] = cleared.before

    def clears(self, rejected: JobRejected) -> bool:
        """Whether ``rejected`` was cleared (one that names a job never is)."""
        if rejected.job:
            return False
        if self.before is not None and rejected.occurred_at <= self.before:
            return True
        at = self.origins.get(rejected.origin) if rejected.origin is not None else None
        return at is not None and rejected.occurred_at <= at
