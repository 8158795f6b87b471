"""``vcbus broker``: run the embedded Kafka-protocol broker (Tansu) until interrupted."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from vcbus.shared.bus.broker import start_broker


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus broker``."""
    parser = sub.add_parser("broker", help="run an embedded Kafka-protocol broker on loopback")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--host", default="127.0.0.1")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the broker, print its address, and stop it at SIGTERM or SIGINT.

    The signals are caught by handlers, not blocked: a blocked signal would stay blocked
    in the broker's process, which then ignores the SIGTERM that stops it.
    """
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    broker = start_broker(args.host, args.port)
    try:
        sys.stdout.write(f"KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap_servers}\n")
        sys.stdout.flush()
        while not stopping:
            time.sleep(0.2)  # signal.pause() could miss a signal caught just before it
    finally:
        broker.stop()
    return 0
