"""``vcbus dashboard``: a small web app over the status topics, read-only by default.

Overview (with charts over time), Jobs (filters, search, sorting, pages, the jobs deleted
recently), Job (the describe view with its events and a Jaeger link; a deleted job's last
state), Nodes (a legend; locked nodes marked with their target) and Queues, server-rendered
from the same store ``vcbus get`` reads, updated live over server-sent events. It listens
on 127.0.0.1 unless told otherwise; ``--actions`` adds buttons that delete jobs and close
or open queues, sending what the CLI sends. ``store`` holds the store, ``samples`` the
charts' samples, ``views`` and ``job_detail`` the pure view models, ``pages`` the HTML,
``app`` the I/O. docs/dashboard.md says what each page shows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.dashboard.app import listen, serve, url_of
from vcbus.services.cli.describe import DEFAULT_JAEGER_URL

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def jaeger_url() -> str:
    """The Jaeger UI's base address: ``VCBUS_JAEGER_URL``, else Jaeger's default."""
    return os.environ.get("VCBUS_JAEGER_URL") or DEFAULT_JAEGER_URL


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus dashboard``."""
    parser = sub.add_parser("dashboard", help="serve a web dashboard of queues, jobs and nodes")
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on [{DEFAULT_HOST}]"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (0: any free one) [{DEFAULT_PORT}]"
    )
    parser.add_argument(
        "--jaeger-url",
        default=None,
        help=f"Jaeger UI base address for trace links [VCBUS_JAEGER_URL or {DEFAULT_JAEGER_URL}]",
    )
    parser.add_argument(
        "--actions",
        action="store_true",
        help="allow deleting jobs and closing or opening queues from the pages (off: read-only)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; 1 when the port cannot be had."""
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        sys.stderr.write(f"dashboard: cannot listen on {args.host}:{args.port}: {exc}\n")
        return 1
    settings = Settings.from_env()
    sys.stdout.write(f"dashboard: {url_of(sock)}\n")
    sys.stdout.flush()
    asyncio.run(_serve(settings, sock, args.jaeger_url or jaeger_url(), actions=args.actions))
    return 0


async def _serve(settings: Settings, sock: socket.socket, base: str, *, actions: bool) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    bus = AioKafkaBus(settings.kafka)
    await serve(bus, settings, sock, jaeger_url=base, stop=stop, actions=actions)
