"""The ``vcbus`` command: the composition root, the one package that imports every service.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``func`` to a callable taking the parsed arguments and returning the
exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from vcbus.services.cli import terminal

if TYPE_CHECKING:
    from types import ModuleType

    from vcbus.core.runtime.settings import Settings

# The settings, the bus's errors and asyncio are imported where they are used, not here:
# ``vcbus --version`` and each command pay only for what they use (docs/cli.md, start time).

COMMANDS: tuple[str, ...] = (
    "up",
    "submit",
    "get",
    "describe",
    "delete",
    "job",
    "queue",
    "dashboard",
    "admit",
    "simulate",
    "serve",
    "agent",
    "logs",
    "broker",
    "topics",
    "completion",
)
"""Sub-command modules of this package, in help order.

Only the module of the command on the line is imported (a command's imports are its own
cost, not every command's); ``vcbus --help`` and a line without a command import them all.
"""


DEBUG_FLAG = "--debug"


def build_parser(words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """Return the parser of the command ``words`` name, or of every command when none.

    Args:
        words: the command line (without the program name); the first word that names a
            command picks the one module to import.
    """
    parser = argparse.ArgumentParser(
        prog="vcbus",
        description="Volcano's batch job lifecycle as services over Kafka.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    parser.add_argument(
        DEBUG_FLAG,
        action="store_true",
        help="on failure, show the traceback and the Kafka client's logs (anywhere on the line)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules(words):
        module.register(sub)
    return parser


def _command_modules(words: Sequence[str]) -> list[ModuleType]:
    named = [word for word in words if not word.startswith("-")][:1]
    chosen = named if named and named[0] in COMMANDS else COMMANDS
    return [importlib.import_module(f"vcbus.services.cli.{name}") for name in chosen]


class _Version(argparse.Action):
    """``--version``, its version read only when asked (reading it costs an import)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.exit(message=f"vcbus {_version()}\n")


def _version() -> str:
    import importlib.metadata  # noqa: PLC0415 - only --version and --help read it

    try:
        return importlib.metadata.version("vcbus")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


EXIT_FAILED = 1
"""Exit status of a command that failed for a reason of its own (or an unexpected error)."""
EXIT_UNUSABLE = 2
"""Exit status when a setting or an input file cannot be used, or the broker refuses."""
EXIT_NO_BROKER = 3
"""Exit status when no broker answers at ``KAFKA_BOOTSTRAP_SERVERS``."""
EXIT_INTERRUPTED = 130

BROKER_COMMANDS = frozenset(
    {"get", "describe", "delete", "job", "queue", "dashboard", "topics", "logs", "agent"}
)
"""Commands that need the broker at ``KAFKA_BOOTSTRAP_SERVERS`` before they do anything
(``submit`` and ``up`` call :func:`require_broker` themselves, after their own checks)."""
SERVICE_COMMANDS = frozenset({"serve", "agent"})
"""Commands whose output is a service's log: an unexpected failure keeps its traceback there."""
BROKER_WAIT = 5.0
"""Seconds a command waits for the broker to answer before it gives up (status 3)."""
NO_BROKER_HINT = (
    "start one with `vcbus up` (it prints the KAFKA_BOOTSTRAP_SERVERS to export), "
    "or point KAFKA_BOOTSTRAP_SERVERS at yours"
)


def require_broker(settings: Settings) -> None:
    """Return once a bootstrap server answers; wait :data:`BROKER_WAIT` seconds at most.

    Raises:
        BrokerUnavailableError: none answered, naming each address and why (it does not
            resolve, nothing listens there, or no answer in time).
    """
    import asyncio  # noqa: PLC0415 - see the module's imports

    from vcbus.core.bus.address import probe  # noqa: PLC0415
    from vcbus.core.bus.errors import BrokerUnavailableError  # noqa: PLC0415

    servers = settings.kafka.bootstrap_servers
    why = asyncio.run(probe(servers, BROKER_WAIT))
    if why is not None:
        raise BrokerUnavailableError(
            f"no broker answers at {servers} (waited up to {BROKER_WAIT:g} s): {why}"
        )


@contextlib.contextmanager
def _quiet_clients(quiet: bool) -> Iterator[None]:
    """Keep the Kafka client's own log lines (one per failed connect) off the terminal.

    While a command runs, the client's records reach no handler, not even the root's a
    logging setup of the same process added; ``--debug`` and the service commands (whose
    output is a service's log) leave them be. The logger is restored afterwards.
    """
    import logging  # noqa: PLC0415 - see the module's imports

    client = logging.getLogger("aiokafka")
    if not quiet:
        yield
        return
    propagate, client.propagate = client.propagate, False
    handler = logging.NullHandler()
    client.addHandler(handler)
    try:
        yield
    finally:
        client.removeHandler(handler)
        client.propagate = propagate


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vcbus`` command line and return its exit status.

    Every failure ends the command with one or two lines that say what went wrong and what
    to do, not a traceback: a setting, an input file or a broker that refuses (status 2),
    no broker answering within :data:`BROKER_WAIT` seconds (status 3), anything else
    (status 1). ``--debug``, anywhere on the line, shows the traceback and the client's logs.
    """
    given = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in given
    words = [word for word in given if word != DEBUG_FLAG]
    if words == ["--version"]:
        terminal.write(f"vcbus {_version()}\n")
        return 0
    args = build_parser(words).parse_args(words)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with _quiet_clients(not debug and args.command not in SERVICE_COMMANDS):
            if args.command in BROKER_COMMANDS:
                from vcbus.core.runtime.settings import Settings  # noqa: PLC0415

                require_broker(Settings.from_env())
            return func(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place every failure is reported
        status, lines = explain(exc)
        if debug or (status == EXIT_FAILED and args.command in SERVICE_COMMANDS):
            import traceback  # noqa: PLC0415 - see the module's imports

            traceback.print_exc()
        terminal.error(f"vcbus {args.command}: " + "\n  ".join(lines) + "\n")
        return status


def explain(exc: Exception) -> tuple[int, list[str]]:
    """The exit status for ``exc`` and the lines (one or two) that tell the user."""
    from vcbus.core.bus.errors import BrokerUnavailableError, BusError  # noqa: PLC0415
    from vcbus.core.runtime.settings import SettingsError  # noqa: PLC0415
    from vcbus.core.runtime.topic_table import TopicTableError  # noqa: PLC0415

    match exc:
        case BrokerUnavailableError():
            return EXIT_NO_BROKER, [str(exc), exc.hint or NO_BROKER_HINT]
        case SettingsError() | TopicTableError() | BusError():
            return EXIT_UNUSABLE, [str(exc)]
        case OSError(filename=str() as filename) if exc.strerror:
            return EXIT_UNUSABLE, [f"cannot read {filename}: {exc.strerror}"]
        case _:
            return EXIT_FAILED, [
                f"{type(exc).__name__}: {exc}",
                "this is a fault in vcbus; run again with --debug to see where, and report it",
            ]


if __name__ == "__main__":
    sys.exit(main())
