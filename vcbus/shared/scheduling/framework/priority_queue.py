"""A heap ordered by a less-function, with insertion order breaking ties.

Port of volcano@v1.12.0 ``pkg/scheduler/util/priority_queue.go``.

Deliberate deviations:
- Equal elements come out in the order they were pushed (Volcano's heap leaves it open), so
  a run is deterministic even when a less-function has ties (docs/design.md#determinism).
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


class PriorityQueue(Generic[T]):
    """A min-heap under ``less``: ``pop`` returns the element no other is less than."""

    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self._less = less
        self._heap: list[_Entry[T]] = []
        self._seq = 0

    def push(self, item: T) -> None:
        """Add an element."""
        self._seq += 1
        heapq.heappush(self._heap, _Entry(item, self._seq, self._less))

    def pop(self) -> T:
        """Remove and return the first element."""
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        """Whether the queue is empty."""
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
