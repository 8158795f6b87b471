"""Resource arithmetic and Volcano's comparison rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vcbus.core.scheduling.resource import Missing, Resource, share

NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "example.com/foo"])
AMOUNTS = st.integers(min_value=0, max_value=10**12).map(float)
RESOURCES = st.dictionaries(NAMES, AMOUNTS, max_size=4).map(Resource)


@given(RESOURCES, RESOURCES)
def test_sum_is_the_same_when_operands_swap(a: Resource, b: Resource) -> None:
    assert a + b == b + a


@given(RESOURCES, RESOURCES, RESOURCES)
def test_sum_is_the_same_when_grouped_differently(a: Resource, b: Resource, c: Resource) -> None:
    assert (a + b) + c == a + (b + c)


@given(RESOURCES, RESOURCES)
def test_resource_is_unchanged_when_adding_then_subtracting(a: Resource, b: Resource) -> None:
    assert (a + b) - b == a


@given(RESOURCES, RESOURCES)
def test_resource_fits_when_compared_with_itself_plus_more(a: Resource, b: Resource) -> None:
    assert a.less_equal(a)
    assert a.less_equal(a + b)


def test_resource_fits_when_it_exceeds_by_less_than_a_tenth() -> None:
    """B3.11: ``l < r || |l - r| < 0.1`` per dimension."""
    assert Resource({"cpu": 1000.05}).less_equal(Resource({"cpu": 1000}))
    assert not Resource({"cpu": 1000.2}).less_equal(Resource({"cpu": 1000}))


def test_missing_scalar_counts_as_zero_or_unlimited_when_compared() -> None:
    gpu = Resource({"nvidia.com/gpu": 1000})
    assert not gpu.less_equal(Resource({"cpu": 4000}), Missing.ZERO)
    assert gpu.less_equal(Resource({"cpu": 4000}), Missing.INFINITY)


def test_share_is_one_when_something_is_used_of_nothing_deserved() -> None:
    assert share(0, 0) == 0
    assert share(5, 0) == 1
    assert share(1, 4) == 0.25


def test_pods_and_quota_keys_are_dropped_when_building_a_resource() -> None:
    assert set(Resource({"cpu": 1, "pods": 10, "count/pods": 3})) == {"cpu", "memory"}
