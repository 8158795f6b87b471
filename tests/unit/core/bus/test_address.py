"""Bootstrap addresses read as Kafka clients read them; what is not one is named."""

from __future__ import annotations

import pytest

from vcbus.core.bus.address import Address, AddressError, normalized, parse_servers


@pytest.mark.parametrize(
    ("text", "addresses"),
    [
        ("broker", (Address("broker", 9092),)),
        ("a:1, b", (Address("a", 1), Address("b", 9092))),
        ("[::1]:9093,[::1]", (Address("::1", 9093), Address("::1", 9092))),
    ],
)
def test_a_host_without_a_port_means_kafkas_port_when_read(
    text: str, addresses: tuple[Address, ...]
) -> None:
    assert parse_servers(text) == addresses


def test_normalized_gives_every_address_its_port_and_brackets_ipv6() -> None:
    assert normalized(" broker ,[::1]") == "broker:9092,[::1]:9092"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("http://broker:9092", "http:// is not Kafka's protocol; give host:port; did you mean"),
        ("kafka://broker:9092", "kafka:// is not Kafka's protocol; give host:port"),
        ("broker:0", "port '0' is not a number 1-65535"),
        ("broker:port", "port 'port' is not a number 1-65535"),
        ("::1:9092", "an IPv6 host as [host]:port"),
        ("[::1", "give [ipv6]:port"),
        (":9092", "give host:port"),
        (" , ", "no address given"),
    ],
)
def test_what_is_not_an_address_is_refused_with_the_reason(text: str, fragment: str) -> None:
    with pytest.raises(AddressError) as refused:
        parse_servers(text)
    assert fragment in str(refused.value)
