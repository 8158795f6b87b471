"""``vcbus queue create|update|close|open|delete NAME``: declare, change, remove a queue.

Queues travel on the ``queues`` topic (a ``QueueDeclared`` carries the whole queue, a
``QueueDeleted`` removes it). ``create`` refuses a queue that exists, as ``kubectl create``
does (``AlreadyExists``): declaring it again would drop what the flags do not repeat.
``update``, closing and opening read the queue's current definition from that topic and
declare it again with only what they change, so weight, capability and parent are kept.
``default`` exists from the start (docs/design.md#topics).

Deleting follows volcano@v1.10 ``pkg/webhooks/admission/queues/validate/validate_queue.go``
``validateQueueDeleting``: ``default`` is never deleted, and a queue is deleted only once
it is ``Closed``, which the queue controller (``pkg/controllers/queue/state/closing.go``)
makes it only when it holds no PodGroup; a parent of other queues is refused as well
(hierarchical queues). Here the check is the CLI's: it refuses while a job not deleted
names the queue, or a queue names it as its parent.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime

import msgspec

from vcbus.contracts import JobAdmitted, QueueDeclared, QueueDeleted, Topic, derive_event_id, tag_of
from vcbus.contracts.objects import DEFAULT_QUEUE, Queue, QueueState
from vcbus.contracts.quantity import QuantityError, Resources, to_base_units
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.protocol import Bus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli import terminal
from vcbus.services.cli.commands import exists
from vcbus.services.cli.status_store import add_verbose, read_store
from vcbus.services.cli.submit import publish
from vcbus.services.submission import queue_record


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
    parser = sub.add_parser("queue", help="create, update, close, open or delete a queue")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="declare a new queue")
    _queue_options(create, weight=1, priority=0, parent="")
    create.set_defaults(func=run_create)
    update = actions.add_parser("update", help="change a queue; what is not given is kept")
    _queue_options(update, weight=None, priority=None, parent=None)
    update.set_defaults(func=run_update)
    for action, state in (("close", QueueState.CLOSED), ("open", QueueState.OPEN)):
        change = actions.add_parser(action, help=f"{action} a queue")
        change.add_argument("name")
        add_verbose(change)
        change.set_defaults(func=run_state, state=state)
    delete = actions.add_parser("delete", help="delete a queue that holds no jobs")
    delete.add_argument("name")
    add_verbose(delete)
    delete.set_defaults(func=run_delete)


def _queue_options(
    parser: argparse.ArgumentParser, *, weight: int | None, priority: int | None, parent: str | None
) -> None:
    parser.add_argument("name")
    parser.add_argument("--weight", type=int, default=weight)
    parser.add_argument("--capability", type=resources, help="e.g. cpu=8,memory=16Gi")
    parser.add_argument("--guarantee", type=resources, help="e.g. cpu=2")
    parser.add_argument("--parent", default=parent, help="parent queue (hierarchical queues)")
    parser.add_argument("--priority", type=int, default=priority)
    add_verbose(parser)


def run_create(args: argparse.Namespace) -> int:
    """Declare a new queue; 1 when one of that name exists."""
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    if asyncio.run(current_queue(bus, settings, args.name, verbose=args.verbose)) is not None:
        terminal.error(
            f'queue "{args.name}" already exists; change it with `vcbus queue update '
            f"{args.name} ...` (what is not given is kept)\n"
        )
        return 1
    queue = Queue(
        name=args.name,
        weight=args.weight,
        capability=args.capability or {},
        guarantee=args.guarantee or {},
        parent=args.parent,
        priority=args.priority,
    )
    asyncio.run(publish(settings, [queue_record(queue, settings.topic_prefix, _now()).record]))
    terminal.write(f"queue {queue.name} created\n")
    return 0


def updated(queue: Queue, args: argparse.Namespace) -> Queue:
    """``queue`` with what ``args`` gives (``None``: not given, kept)."""
    changes = {
        field: value
        for field, value in (
            ("weight", args.weight),
            ("capability", args.capability),
            ("guarantee", args.guarantee),
            ("parent", args.parent),
            ("priority", args.priority),
        )
        if value is not None
    }
    return msgspec.structs.replace(queue, **changes)


def run_update(args: argparse.Namespace) -> int:
    """Declare the queue again with what the flags change; 1 when no such queue is known."""
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    queue = asyncio.run(current_queue(bus, settings, args.name, verbose=args.verbose))
    if queue is None:
        terminal.error(f'queue "{args.name}" not found; create it with `vcbus queue create`\n')
        return 1
    changed = updated(queue, args)
    if changed == queue:
        terminal.write(f"queue {args.name} unchanged\n")
        return 0
    asyncio.run(publish(settings, [queue_record(changed, settings.topic_prefix, _now()).record]))
    terminal.write(f"queue {args.name} updated\n")
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


SHOWN_JOBS = 5
"""Jobs named when a delete is refused; the others are counted."""


def delete_refusal(name: str, queues: dict[str, Queue], jobs: dict[str, str]) -> str | None:
    """Why queue ``name`` cannot be deleted, or ``None`` when it can.

    Args:
        name: the queue.
        queues: the queues known, by name.
        jobs: the queue of each job not deleted, by job key.

    Returns:
        One line saying why, or ``None``.
    """
    if name == DEFAULT_QUEUE:
        return f'queue "{DEFAULT_QUEUE}" cannot be deleted'
    if name not in queues:
        return f'queue "{name}" not found'
    children = sorted(q.name for q in queues.values() if q.parent == name)
    if children:
        return f'queue "{name}" is the parent of {", ".join(children)}: delete them first'
    held = sorted(key for key, queue in jobs.items() if queue == name)
    if not held:
        return None
    shown = ", ".join(held[:SHOWN_JOBS]) + (
        f" and {len(held) - SHOWN_JOBS} more" if len(held) > SHOWN_JOBS else ""
    )
    return f'queue "{name}" holds {len(held)} job(s) ({shown}): delete them first'


def run_delete(args: argparse.Namespace) -> int:
    """Delete the queue; 1 when it is refused (see :func:`delete_refusal`)."""
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    queues, jobs = asyncio.run(queues_and_jobs(bus, settings, verbose=args.verbose))
    refusal = delete_refusal(args.name, queues, jobs)
    if refusal is not None:
        terminal.error(f"vcbus queue delete: {refusal}\n")
        return 1
    now = _now()
    event = QueueDeleted(
        event_id=derive_event_id(tag_of(QueueDeleted), args.name, now.isoformat()),
        occurred_at=now,
        name=args.name,
    )
    asyncio.run(publish(settings, [event_record(event, settings.topic_prefix)]))
    terminal.write(f"queue {args.name} deleted\n")
    return 0


async def queues_and_jobs(
    bus: Bus, settings: Settings, *, verbose: int = 0
) -> tuple[dict[str, Queue], dict[str, str]]:
    """The queues declared, by name, and the queue of each job not deleted, by job key."""
    topics = (Topic.QUEUES, Topic.JOBS_ADMITTED, Topic.JOBS_STATUS)
    store = await read_store(bus, settings, topics, verbose=verbose)
    queues = {DEFAULT_QUEUE: Queue(name=DEFAULT_QUEUE)}
    for name in store.keys(Topic.QUEUES):
        event = store.get(Topic.QUEUES, name)
        if isinstance(event, QueueDeclared):
            queues[name] = event.queue
    jobs: dict[str, str] = {}
    for key in store.keys(Topic.JOBS_ADMITTED):
        admitted = store.get(Topic.JOBS_ADMITTED, key)
        if isinstance(admitted, JobAdmitted) and exists(store, key):
            jobs[key] = admitted.manifest.spec.queue or DEFAULT_QUEUE
    return queues, jobs


def _now() -> datetime:
    return SystemClock().now()
