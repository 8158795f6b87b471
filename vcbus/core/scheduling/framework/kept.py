"""Per-job values kept from one session to the next, worked out again for changed jobs (vcbus).

Not in Volcano, whose plugins walk every job at session open. A plugin whose value for a job
is a function of the job as the session opens it (made from its recipe, ``session_cache``)
and of a few session-wide inputs keeps those values in the service's ``SessionCache``
(``SessionCache.kept``) in a :class:`KeptByJob`. Each session works out the values of the
jobs the cache derived afresh (new or changed since the last session), drops those of the
jobs gone or changed, and keeps the others; the plugin patches its sums with what was
dropped and added (:class:`Patch`). When the inputs differ from the last session's, when
the last session of the cache did not bring the values up to date, or when there is no
cache, every job's value is worked out again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from vcbus.contracts.keys import JobKey
from vcbus.core.scheduling.model import JobInfo

if TYPE_CHECKING:
    from vcbus.core.scheduling.framework.session_cache import SessionCache

V = TypeVar("V")

Amounts = tuple[tuple[str, float], ...]
"""A resource's raw amounts (``Resource._amounts`` as items), as a job's part of a sum."""


class Sum:
    """Amounts summed over jobs' parts; a dimension is present while some part names it.

    Every amount is a whole base unit held as a float, so a sum is exact whatever the order
    its parts were added and taken off in: a sum kept from the last session and patched by
    the jobs that changed equals the sum of every job's part, dimensions included.
    """

    __slots__ = ("amounts", "holders")

    def __init__(self) -> None:
        self.amounts: dict[str, float] = {}
        self.holders: dict[str, int] = {}

    def add(self, part: Amounts, sign: int = 1) -> None:
        """Add a part (take it off: ``sign`` -1)."""
        amounts, holders = self.amounts, self.holders
        for name, amount in part:
            amounts[name] = amounts.get(name, 0.0) + sign * amount
            count = holders[name] = holders.get(name, 0) + sign
            if not count:
                del amounts[name], holders[name]

    def copy(self) -> Sum:
        """An independent copy (for a session's own changes)."""
        out = Sum()
        out.amounts, out.holders = dict(self.amounts), dict(self.holders)
        return out


@dataclass(frozen=True, slots=True)
class Patch(Generic[V]):
    """What a session changed in the kept values.

    Attributes:
        whole: every value was worked out again (``added`` holds them all, by job key).
        removed: the values dropped (jobs gone or changed).
        added: the values worked out this session (jobs new or changed).
    """

    whole: bool
    removed: tuple[V, ...]
    added: tuple[V, ...]


class KeptByJob(Generic[V]):
    """One value per job, kept while the job's recipe and the session-wide inputs hold."""

    __slots__ = ("_at", "values")

    def __init__(self) -> None:
        self.values: dict[JobKey, V] = {}
        """Job key → its value, for every job of the last session brought up to date."""
        self._at: tuple[int, Hashable] | None = None
        """The cache generation and inputs the values are up to date for."""

    def update(
        self,
        cache: SessionCache | None,
        jobs: Mapping[JobKey, JobInfo],
        inputs: Hashable,
        value_of: Callable[[JobInfo], V],
    ) -> Patch[V]:
        """Bring the values up to this session's jobs.

        Args:
            cache: the session's cache (``None``: every value is worked out).
            jobs: the session's jobs, as opened (no action ran yet).
            inputs: what the values read besides the job (equal inputs, equal values).
            value_of: a job's value.
        """
        if cache is not None and self._at == (cache.generation - 1, inputs):
            self._at = None  # until the patch is whole
            values = self.values
            removed = tuple(values.pop(key) for key in cache.gone if key in values)
            added = []
            for key in cache.derived:
                value = values[key] = value_of(jobs[key])
                added.append(value)
            self._at = (cache.generation, inputs)
            return Patch(whole=False, removed=removed, added=tuple(added))
        self._at = None
        self.values = {key: value_of(jobs[key]) for key in sorted(jobs)}
        if cache is not None:
            self._at = (cache.generation, inputs)
        return Patch(whole=True, removed=(), added=tuple(self.values.values()))
