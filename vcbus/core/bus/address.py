"""Kafka bootstrap addresses: read as Kafka clients read them, and probed with a reason.

``KAFKA_BOOTSTRAP_SERVERS`` is a comma-separated list of ``host:port``. A host without a
port means Kafka's port, 9092, as Kafka's own clients take it. Anything else that is not an
address (``http://host:9092``, ``host:port:extra``, a port that is not a number) is named as
such before any connection is tried, instead of reading as "no broker answers".

:func:`probe` tries each address once per round and tells the failures apart: a host that
does not resolve, a connection refused (nothing listens there), or no answer in time.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

KAFKA_PORT = 9092
"""The port of an address that names none (Kafka's default listener)."""


class AddressError(ValueError):
    """A bootstrap address that cannot be a Kafka address; the message says why."""


@dataclass(frozen=True, slots=True)
class Address:
    """One bootstrap server."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_servers(text: str) -> tuple[Address, ...]:
    """The addresses of a ``KAFKA_BOOTSTRAP_SERVERS`` value.

    Raises:
        AddressError: one entry is not ``host[:port]``, naming the entry and the fix.
    """
    entries = [entry.strip() for entry in text.split(",")]
    if not any(entries):
        raise AddressError("no address given; set host:port of a Kafka broker")
    return tuple(_address(entry) for entry in entries if entry)


def _address(entry: str) -> Address:
    scheme, sep, rest = entry.partition("://")
    if sep:
        hint = f"; did you mean {rest.rstrip('/')!r}?" if scheme in {"http", "https"} else ""
        raise AddressError(
            f"{entry!r} is not a Kafka address: {scheme}:// is not Kafka's protocol; "
            f"give host:port{hint}"
        )
    if entry.startswith("["):
        host, bracket, tail = entry[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise AddressError(f"{entry!r} is not a Kafka address: give [ipv6]:port")
        port_text = tail[1:]
    elif entry.count(":") > 1:
        raise AddressError(
            f"{entry!r} is not a Kafka address: give host:port (an IPv6 host as [host]:port)"
        )
    else:
        host, _, port_text = entry.partition(":")
    if not host or "/" in host:
        raise AddressError(f"{entry!r} is not a Kafka address: give host:port")
    if not port_text:
        return Address(host, KAFKA_PORT)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise AddressError(
            f"{entry!r} is not a Kafka address: port {port_text!r} is not a number 1-65535"
        )
    return Address(host, int(port_text))


def normalized(text: str) -> str:
    """``text`` with every address as ``host:port`` (Kafka's port where none was given).

    Raises:
        AddressError: as :func:`parse_servers`.
    """
    return ",".join(str(address) for address in parse_servers(text))


async def probe(servers: str, timeout: float) -> str | None:
    """Why no bootstrap server accepts a TCP connection within ``timeout`` s; None when one does.

    Tried every quarter second until the time is up (a broker that is still starting
    counts). Something listening is enough: TLS and SASL are the clients' to check. The
    reason is the last seen per address: the host does not resolve (told at once when no
    host resolves: waiting does not mend a name), the connection is refused, or it did not
    answer in time.
    """
    addresses = parse_servers(servers)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    why: dict[Address, str] = {}
    while True:
        unresolved = 0
        for address in addresses:
            remaining = max(deadline - loop.time(), 0.05)
            try:
                async with asyncio.timeout(remaining):
                    _, writer = await asyncio.open_connection(address.host, address.port)
            except socket.gaierror as exc:
                why[address] = f"host {address.host!r} does not resolve ({exc.strerror})"
                unresolved += 1
                continue
            except ConnectionRefusedError:
                why[address] = f"connection refused at {address} (nothing listens there)"
                continue
            except TimeoutError:
                why[address] = f"no answer from {address} within {timeout:g} s"
                continue
            except OSError as exc:
                why[address] = f"cannot connect to {address}: {exc.strerror or exc}"
                continue
            writer.close()
            return None
        if unresolved == len(addresses) or loop.time() + 0.25 > deadline:
            return "; ".join(why[address] for address in addresses)
        await asyncio.sleep(0.25)
