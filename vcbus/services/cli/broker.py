"""``vcbus broker``: run the embedded Kafka-protocol broker (Tansu) until interrupted.

It listens on ``--listen HOST[:PORT]`` (loopback by default) and advertises ``--advertise
HOST[:PORT]`` (by default the listen address; never ``0.0.0.0``, which clients cannot
connect to). ``vcbus up`` starts its embedded broker with the same options.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import time

from vcbus.core.bus.broker import free_port, start_broker
from vcbus.core.bus.listeners import Listener, ListenerError, listener, parse_address
from vcbus.core.runtime.settings import SettingsError

DEFAULT_HOST = "127.0.0.1"
ROUTE_PROBE = ("192.0.2.1", 9)
"""A documentation-only address (TEST-NET-1): a UDP socket "connected" there names the
interface of the default route, and sends nothing."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus broker``."""
    parser = sub.add_parser(
        "broker", help="run an embedded Kafka-protocol broker (loopback unless --listen)"
    )
    parser.add_argument("--port", type=int, default=9092, help="[9092]")
    parser.add_argument("--host", default="", help="the listen host (as --listen HOST)")
    add_listener_options(parser)
    parser.set_defaults(func=run)


def add_listener_options(parser: argparse.ArgumentParser) -> None:
    """``--listen`` and ``--advertise`` (shared with ``vcbus up``)."""
    parser.add_argument(
        "--listen",
        default="",
        metavar="HOST[:PORT]",
        help="the broker's listen address (0.0.0.0: every interface) [127.0.0.1]",
    )
    parser.add_argument(
        "--advertise",
        default="",
        metavar="HOST[:PORT]",
        help="the address clients and other hosts connect to [the listen address]",
    )


def this_host_address() -> str:
    """The address of this host's default-route interface; empty when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(ROUTE_PROBE)
            return str(probe.getsockname()[0])
        except OSError:
            return ""


def listener_from(listen: str, advertise: str, port: int | None, *, host: str = "") -> Listener:
    """The broker's listener from ``--listen``, ``--advertise`` and ``--port``.

    A port in ``--listen`` wins over ``port``; with neither, a free one.

    Raises:
        SettingsError: a bad address, or a wildcard the broker would advertise.
    """
    try:
        listen_host, listen_port = parse_address(listen, "--listen") if listen else ("", None)
        listen_host = listen_host or host or DEFAULT_HOST
        chosen = listen_port or port or free_port(listen_host)
        return listener(listen_host, chosen, advertise, suggestion=this_host_address())
    except ListenerError as exc:
        raise SettingsError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Start the broker, print its address, and stop it at SIGTERM or SIGINT.

    The signals are caught by handlers, not blocked: a blocked signal would stay blocked
    in the broker's process, which then ignores the SIGTERM that stops it.
    """
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    chosen = listener_from(args.listen, args.advertise, args.port, host=args.host)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    broker = start_broker(chosen.listen_host, chosen.listen_port, advertised=chosen.advertised)
    try:
        sys.stdout.write(f"KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap_servers}\n")
        sys.stdout.flush()
        while not stopping:
            time.sleep(0.2)  # signal.pause() could miss a signal caught just before it
    finally:
        broker.stop()
    return 0
