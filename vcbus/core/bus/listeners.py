"""Where the embedded broker listens and what it advertises: ``HOST[:PORT]`` read and checked.

A Kafka broker tells each client, in its metadata, the address to reach it at (its
*advertised* listener); a client then connects there, whatever address it bootstrapped
from. The broker may listen on every interface (``0.0.0.0``), but it must advertise one
that other hosts reach: an advertised ``0.0.0.0`` sends each remote client to itself.
"""

from __future__ import annotations

from dataclasses import dataclass

WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", ""})
"""Hosts that mean "every interface": a broker may listen there, never advertise them."""
LOOPBACKS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class ListenerError(ValueError):
    """A listen or advertise address that cannot be used, saying why and what to pass."""


@dataclass(frozen=True)
class Listener:
    """The broker's listen address and the address it advertises to clients."""

    listen_host: str
    listen_port: int
    advertised_host: str
    advertised_port: int

    @property
    def advertised(self) -> str:
        """``host:port`` clients connect to (``KAFKA_BOOTSTRAP_SERVERS``)."""
        return f"{self.advertised_host}:{self.advertised_port}"

    @property
    def local(self) -> bool:
        """Whether only this host can reach the broker (it advertises loopback)."""
        return self.advertised_host in LOOPBACKS or self.advertised_host.startswith("127.")


def parse_address(text: str, flag: str) -> tuple[str, int | None]:
    """``HOST[:PORT]`` (``[v6]:PORT`` for IPv6) as a host and a port (None when not given).

    A port 0 is kept (to listen on: any free one).

    Raises:
        ListenerError: a port that is not a number from 0 to 65535.
    """
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        return host, None
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ListenerError(f"{flag} {text}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def listener(listen_host: str, port: int, advertise: str, *, suggestion: str = "") -> Listener:
    """The broker's listener: on ``listen_host:port``, advertising ``advertise`` or the same.

    ``advertise`` is ``HOST[:PORT]`` (empty: the listen address; no port: ``port``).
    ``suggestion`` is an address of this host others may reach, named in the refusal.

    Raises:
        ListenerError: the broker would advertise a wildcard address, or ``advertise`` is bad.
    """
    host, advertised_port = parse_address(advertise, "--advertise") if advertise else ("", None)
    if advertised_port == 0:
        raise ListenerError(f"--advertise {advertise}: clients cannot connect to port 0")
    host = host or listen_host
    if host in WILDCARDS:
        example = suggestion or "ADDRESS"
        raise ListenerError(
            f"the broker would advertise {host or listen_host or '0.0.0.0'}:{port}, which no "
            "client can connect to (each would dial itself): pass --advertise HOST[:PORT], "
            f"the address other hosts reach this one at (e.g. --advertise {example})"
        )
    return Listener(listen_host, port, host, advertised_port or port)
