"""``vcbus queue create|close|open NAME``: declare a queue, or change its state.

Queues travel on the ``queues`` topic (a ``QueueDeclared`` carries the whole queue).
Closing or opening reads the queue's current definition from that topic and declares it
again with the new state, so weight, capability and parent are kept. ``default`` exists
from the start (DESIGN §2).
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime

import msgspec

from contracts import QueueDeclared, Topic
from contracts.objects import DEFAULT_QUEUE, Queue, QueueState
from contracts.quantity import QuantityError, Resources, to_base_units
from services.cli import terminal
from services.cli.status import add_verbose, read_store
from services.cli.submit import publish, queue_record
from shared.bus.kafka import AioKafkaBus
from shared.bus.protocol import Bus
from shared.runtime.clock import SystemClock
from shared.runtime.settings import Settings


def resources(text: str | None) -> Resources:
    """Parse ``cpu=4,memory=8Gi`` into resources.

    Raises:
        argparse.ArgumentTypeError: an item is not ``name=quantity``.
    """
    out: Resources = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise QuantityError(f"{item!r} is not name=quantity")
            out[name.strip()] = to_base_units(name.strip(), value.strip())
        except QuantityError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (write like cpu=4,memory=8Gi)") from None
    return out


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus queue``."""
    parser = sub.add_parser("queue", help="create, close or open a queue")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="declare a queue (or change it)")
    create.add_argument("name")
    create.add_argument("--weight", type=int, default=1)
    create.add_argument("--capability", type=resources, help="e.g. cpu=8,memory=16Gi")
    create.add_argument("--guarantee", type=resources, help="e.g. cpu=2")
    create.add_argument("--parent", default="", help="parent queue (hierarchical queues)")
    create.add_argument("--priority", type=int, default=0)
    create.set_defaults(func=run_create)
    for action, state in (("close", QueueState.CLOSED), ("open", QueueState.OPEN)):
        change = actions.add_parser(action, help=f"{action} a queue")
        change.add_argument("name")
        add_verbose(change)
        change.set_defaults(func=run_state, state=state)


def run_create(args: argparse.Namespace) -> int:
    """Declare the queue; 0 once published."""
    queue = Queue(
        name=args.name,
        weight=args.weight,
        capability=args.capability or {},
        guarantee=args.guarantee or {},
        parent=args.parent,
        priority=args.priority,
    )
    settings = Settings.from_env()
    asyncio.run(publish(settings, [queue_record(queue, settings.topic_prefix, _now()).record]))
    terminal.write(f"queue {queue.name} created\n")
    return 0


def run_state(args: argparse.Namespace) -> int:
    """Declare the queue again in ``args.state``; 1 when no such queue is known."""
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    queue = asyncio.run(current_queue(bus, settings, args.name, verbose=args.verbose))
    if queue is None:
        terminal.error(f'queue "{args.name}" not found\n')
        return 1
    changed = msgspec.structs.replace(queue, state=args.state)
    record = queue_record(changed, settings.topic_prefix, _now()).record
    asyncio.run(publish(settings, [record]))
    terminal.write(f"queue {args.name} {str(args.state).lower()}\n")
    return 0


async def current_queue(
    bus: Bus, settings: Settings, name: str, *, verbose: int = 0
) -> Queue | None:
    """The queue's newest declaration on the ``queues`` topic (``default`` always exists)."""
    store = await read_store(bus, settings, (Topic.QUEUES,), verbose=verbose)
    event = store.get(Topic.QUEUES, name)
    if isinstance(event, QueueDeclared):
        return event.queue
    return Queue(name=DEFAULT_QUEUE) if name == DEFAULT_QUEUE else None


def _now() -> datetime:
    return SystemClock().now()
