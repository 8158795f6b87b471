"""A priority queue ordered by a comparison pops as one ordered by a less-function."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcbus.core.scheduling.framework.priority_queue import PriorityQueue


def _less(left: tuple[int, str], right: tuple[int, str]) -> bool:
    return left[0] < right[0]


def _compare(left: tuple[int, str], right: tuple[int, str]) -> int:
    return (left[0] > right[0]) - (left[0] < right[0])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=30), st.integers(0, 30))
def test_a_comparison_pops_the_order_of_the_less_function_ties_in_push_order(
    ranks: list[int], popped_early: int
) -> None:
    by_less: PriorityQueue[tuple[int, str]] = PriorityQueue(_less)
    by_compare: PriorityQueue[tuple[int, str]] = PriorityQueue(compare=_compare)
    items = [(rank, f"item-{i}") for i, rank in enumerate(ranks)]
    half = len(items) // 2
    for item in items[:half]:
        by_less.push(item)
        by_compare.push(item)
    early = min(popped_early, half)
    first = [by_less.pop() for _ in range(early)]
    assert [by_compare.pop() for _ in range(early)] == first
    for item in items[half:]:
        by_less.push(item)
        by_compare.push(item)
    rest = [by_less.pop() for _ in range(len(by_less))]

    assert [by_compare.pop() for _ in range(len(by_compare))] == rest
    assert by_compare.empty()
    if early == 0:  # all pushed before any pop: by rank, ties in push order (stable sort)
        assert rest == sorted(items, key=lambda item: item[0])


def test_a_comparison_is_called_once_per_heap_comparison() -> None:
    calls = {"less": 0, "compare": 0}

    def less(left: int, right: int) -> bool:
        calls["less"] += 1
        return left < right

    def compare(left: int, right: int) -> int:
        calls["compare"] += 1
        return (left > right) - (left < right)

    by_less: PriorityQueue[int] = PriorityQueue(less)
    by_compare: PriorityQueue[int] = PriorityQueue(compare=compare)
    for value in [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]:
        by_less.push(value)
        by_compare.push(value)
    assert [by_less.pop() for _ in range(11)] == [by_compare.pop() for _ in range(11)]

    assert 0 < calls["compare"] < calls["less"]


def test_a_queue_takes_one_order() -> None:
    with pytest.raises(ValueError, match="exactly one of less and compare"):
        PriorityQueue[int]()
    with pytest.raises(ValueError, match="exactly one of less and compare"):
        PriorityQueue[int](_less_int, compare=_compare_int)


def _less_int(left: int, right: int) -> bool:
    return left < right


def _compare_int(left: int, right: int) -> int:
    return (left > right) - (left < right)
