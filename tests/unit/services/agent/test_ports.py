"""Host ports as a resource: allocation from the agent's range, never shared."""

from __future__ import annotations

import pytest

from vcbus.services.agent.ports import PortsExhaustedError, allocate, parse_range


def test_each_container_port_gets_a_free_host_port_of_the_range() -> None:
    given = allocate([23456, 22], used={30000}, port_range=(30000, 30003))
    assert given == {23456: 30001, 22: 30002}


def test_the_search_starts_where_the_agent_says_and_wraps() -> None:
    assert allocate([80], used=set(), port_range=(30000, 30003), start=3) == {80: 30003}
    assert allocate([80, 81], used=set(), port_range=(30000, 30003), start=3) == {
        80: 30003,
        81: 30000,
    }


def test_too_few_free_ports_is_an_error_naming_the_range() -> None:
    with pytest.raises(PortsExhaustedError, match="30000-30001"):
        allocate([1, 2], used={30000}, port_range=(30000, 30001))


@pytest.mark.parametrize("text", ["", "30000", "2-1", "0-10", "a-b", "1-70000"])
def test_a_range_must_be_low_dash_high_ports(text: str) -> None:
    with pytest.raises(ValueError, match="port range"):
        parse_range(text)


def test_a_range_reads_both_ends() -> None:
    assert parse_range("30000-32767") == (30000, 32767)
