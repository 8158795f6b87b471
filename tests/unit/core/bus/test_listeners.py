"""The embedded broker's listen and advertised addresses, read and checked."""

from __future__ import annotations

import pytest

from vcbus.core.bus.listeners import ListenerError, listener, parse_address


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0", ("0.0.0.0", None)),
        ("10.0.0.5:9093", ("10.0.0.5", 9093)),
        ("broker.example:19092", ("broker.example", 19092)),
        ("[fd00::5]:9092", ("fd00::5", 9092)),
        ("fd00::5", ("fd00::5", None)),
    ],
)
def test_an_address_is_a_host_and_an_optional_port(text, expected):
    assert parse_address(text, "--listen") == expected


@pytest.mark.parametrize("text", ["10.0.0.5:http", "10.0.0.5:70000"])
def test_a_bad_port_is_named_with_its_flag(text):
    with pytest.raises(ListenerError, match=f"--advertise {text}: the port must be a number"):
        parse_address(text, "--advertise")


def test_port_0_may_be_listened_on_but_not_advertised():
    assert parse_address("0.0.0.0:0", "--listen") == ("0.0.0.0", 0)
    with pytest.raises(ListenerError, match=r"--advertise 10\.0\.0\.5:0: clients cannot connect"):
        listener("0.0.0.0", 9092, "10.0.0.5:0")


def test_the_listen_address_is_advertised_when_nothing_else_is_given():
    chosen = listener("127.0.0.1", 9092, "")
    assert chosen.advertised == "127.0.0.1:9092"
    assert chosen.local


def test_every_interface_is_listened_on_and_a_routable_address_advertised_with_the_port():
    chosen = listener("0.0.0.0", 9092, "10.0.0.5")
    assert (chosen.listen_host, chosen.listen_port) == ("0.0.0.0", 9092)
    assert chosen.advertised == "10.0.0.5:9092"
    assert not chosen.local


def test_an_advertised_port_of_its_own_is_kept():
    assert listener("0.0.0.0", 9092, "gw.example:19092").advertised == "gw.example:19092"


@pytest.mark.parametrize(
    ("listen", "advertise"), [("0.0.0.0", ""), ("127.0.0.1", "0.0.0.0:9"), ("::", "")]
)
def test_a_wildcard_is_never_advertised_and_the_fix_names_this_hosts_address(listen, advertise):
    with pytest.raises(ListenerError) as refused:
        listener(listen, 9092, advertise, suggestion="192.168.1.7")
    assert "which no client can connect to" in str(refused.value)
    assert "pass --advertise HOST[:PORT]" in str(refused.value)
    assert "e.g. --advertise 192.168.1.7" in str(refused.value)
