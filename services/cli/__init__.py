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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vcbus`` command line and return its exit status."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
