"""``vcbus broker``: run the embedded Kafka-protocol broker (Tansu) until interrupted."""

from __future__ import annotations

import argparse
import signal
import sys

from shared.bus.broker import start_broker


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus broker``."""
    parser = sub.add_parser("broker", help="run an embedded Kafka-protocol broker on loopback")
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--host", default="127.0.0.1")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the broker, print its address, and wait for SIGTERM or SIGINT."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    broker = start_broker(args.host, args.port)
    sys.stdout.write(f"KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap_servers}\n")
    sys.stdout.flush()
    try:
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    finally:
        broker.stop()
    return 0
