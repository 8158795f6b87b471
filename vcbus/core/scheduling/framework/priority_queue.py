"""A heap ordered by a less-function, with insertion order breaking ties.

Port of volcano@v1.12.0 ``pkg/scheduler/util/priority_queue.go``.

Deliberate deviations:
- Equal elements come out in the order they were pushed (Volcano's heap leaves it open), so
  a run is deterministic even when a less-function has ties (docs/design.md#determinism).
- An order can be given as a comparison (negative, zero, positive) instead of a
  less-function: one call per heap comparison where a less-function needs two (is it less,
  else is the other less). For an antisymmetric comparison the order is the same.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, seq: int, less: Callable[[T, T], bool]) -> None:
        self.item = item
        self.seq = seq
        self.less = less

    def __lt__(self, other: _Entry[T]) -> bool:
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.seq < other.seq


class _CompareEntry(Generic[T]):
    __slots__ = ("compare", "item", "seq")

    def __init__(self, item: T, seq: int, compare: Callable[[T, T], int]) -> None:
        self.item = item
        self.seq = seq
        self.compare = compare

    def __lt__(self, other: _CompareEntry[T]) -> bool:
        result = self.compare(self.item, other.item)
        if result:
            return result < 0
        return self.seq < other.seq


class PriorityQueue(Generic[T]):
    """A min-heap under ``less``: ``pop`` returns the element no other is less than.

    ``compare`` (a three-way comparison, antisymmetric) orders it instead of ``less``.
    """

    def __init__(
        self,
        less: Callable[[T, T], bool] | None = None,
        *,
        compare: Callable[[T, T], int] | None = None,
    ) -> None:
        if (less is None) == (compare is None):
            raise ValueError("a PriorityQueue needs exactly one of less and compare")
        self._less = less
        self._compare = compare
        self._heap: list[_Entry[T] | _CompareEntry[T]] = []
        self._seq = 0

    def push(self, item: T) -> None:
        """Add an element."""
        self._seq += 1
        if self._compare is not None:
            heapq.heappush(self._heap, _CompareEntry(item, self._seq, self._compare))
        else:
            assert self._less is not None
            heapq.heappush(self._heap, _Entry(item, self._seq, self._less))

    def pop(self) -> T:
        """Remove and return the first element."""
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        """Whether the queue is empty."""
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
