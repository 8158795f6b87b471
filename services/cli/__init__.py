"""The ``vcbus`` command: the composition root, the one package that imports every service.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``func`` to a callable taking the parsed arguments and returning the
exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from services.cli import terminal
from shared.bus.errors import BusError
from shared.runtime.settings import SettingsError
from shared.runtime.topic_table import TopicTableError

COMMANDS: tuple[str, ...] = (
    "up",
    "submit",
    "get",
    "describe",
    "delete",
    "queue",
    "dashboard",
    "admit",
    "simulate",
    "serve",
    "broker",
    "topics",
)
"""Sub-command modules of this package, in help order."""


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of every sub-command."""
    parser = argparse.ArgumentParser(
        prog="vcbus",
        description="Volcano's batch job lifecycle as services over Kafka.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"services.cli.{name}")
        module.register(sub)
    return parser


EXIT_UNUSABLE = 2
"""Exit status when a setting cannot be used or the broker refuses or cannot be reached."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vcbus`` command line and return its exit status.

    A setting that cannot be used, or a broker that refuses or does not answer, ends the
    command with one line that says so (status 2), not a traceback.
    """
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (SettingsError, TopicTableError, BusError) as exc:
        terminal.error(f"vcbus {args.command}: {exc}\n")
        return EXIT_UNUSABLE


if __name__ == "__main__":
    sys.exit(main())
