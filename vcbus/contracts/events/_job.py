"""Events about one job, keyed by ``job``, that were first written with ``job_key``.

Every event names its job in a field ``job``. The jobs' own topics (``jobs.admitted``'s
commands, ``jobs.status``, ``jobs.rejected``) first wrote it as ``job_key``; a record of
that time still decodes: the old name is read into :attr:`JobKeyedEvent.old_job_key`, moved to
``job`` as the event is built, and never written again (schema evolution: a
field renamed is read under both names).

``JobAdmitted`` names its job ``job`` too, in Python; on the wire the key keeps its first
name, ``job_key``, because there ``job`` has carried the admitted manifest since v1 (its
Python name is ``manifest``), so its records are written as they always were.
"""

from __future__ import annotations

import msgspec

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey

OLD_JOB_FIELD = "job_key"
"""The field name records written before the rename carry."""


def adopt_old_job_key(event: JobKeyedEvent | OptionalJobKeyedEvent) -> None:
    """Move a record's old ``job_key`` into ``job`` (when ``job`` is unset), then drop it."""
    if event.old_job_key is None:
        return
    if not event.job:
        msgspec.structs.force_setattr(event, "job", event.old_job_key)
    msgspec.structs.force_setattr(event, "old_job_key", None)


class JobKeyedEvent(Event, frozen=True, kw_only=True, omit_defaults=True):
    """An event about the job ``job`` (``namespace/name``)."""

    job: JobKey = JobKey("")
    old_job_key: JobKey | None = msgspec.field(default=None, name=OLD_JOB_FIELD)
    """Read from records written before the field was named ``job``; never written."""

    def __post_init__(self) -> None:
        adopt_old_job_key(self)


class OptionalJobKeyedEvent(Event, frozen=True, kw_only=True, omit_defaults=True):
    """An event that may name no job (``job`` is ``None``: no name could be read)."""

    job: JobKey | None = None
    old_job_key: JobKey | None = msgspec.field(default=None, name=OLD_JOB_FIELD)
    """Read from records written before the field was named ``job``; never written."""

    def __post_init__(self) -> None:
        adopt_old_job_key(self)
