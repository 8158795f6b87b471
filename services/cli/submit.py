"""``vcbus submit FILE``: publish Jobs and Queues; each job's trace starts here.

Every document that is not a Volcano Queue is published to ``jobs.submitted`` as JSON text,
keyed ``namespace/name``; admission answers each on ``jobs.admitted`` or ``jobs.rejected``
(so a Deployment sent by mistake gets its "not a Job" answer there too). A file that is
not YAML or JSON at all is published as it is, and rejected with the parser's reason.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import msgspec
import yaml

from contracts import QueueDeclared, Topic, derive_event_id, job_key
from contracts.objects import Queue
from services.admission.core import queues_from_manifests
from shared.bus.envelope import HEADER_CONTENT_TYPE, HEADER_EVENT_TYPE
from shared.bus.kafka import AioKafkaBus
from shared.bus.outbox import event_record
from shared.bus.records import OutRecord
from shared.runtime.clock import SystemClock
from shared.runtime.settings import Settings
from shared.tracing.setup import configure_tracing, shutdown_tracing
from shared.tracing.spans import current_trace_id, send_span

MANIFEST_TYPE = "job.manifest"


@dataclass(frozen=True, slots=True)
class Submitted:
    """One record to publish, and what to tell the user about it."""

    record: OutRecord
    label: str
    trace_id: str


def _documents(text: str) -> list[object] | None:
    try:
        loaded = json.loads(text)
    except ValueError:
        try:
            return [doc for doc in yaml.safe_load_all(text) if doc is not None]
        except yaml.YAMLError:
            return None
    return loaded if isinstance(loaded, list) else [loaded]


def _is_queue(document: object) -> bool:
    return (
        isinstance(document, Mapping)
        and document.get("kind") == "Queue"
        and str(document.get("apiVersion", "")).startswith("scheduling.volcano.sh/")
    )


def _manifest_record(
    payload: bytes, key: str, topic: str, content_type: bytes = b"application/json"
) -> Submitted:
    headers: list[tuple[str, bytes]] = [
        (HEADER_EVENT_TYPE, MANIFEST_TYPE.encode()),
        (HEADER_CONTENT_TYPE, content_type),
    ]
    with send_span(topic, key=key, event_type=MANIFEST_TYPE, event_id="", headers=headers) as span:
        span.set_attribute("vcbus.job", key)
        trace_id = current_trace_id()
    return Submitted(OutRecord(topic, key.encode() or None, payload, tuple(headers)), key, trace_id)


def records_for(text: str, prefix: str, now: datetime) -> list[Submitted]:
    """The records ``vcbus submit`` publishes for a file's text."""
    topic = f"{prefix}{Topic.JOBS_SUBMITTED}"
    documents = _documents(text)
    if documents is None:
        return [_manifest_record(text.encode(), "", topic, b"text/plain; charset=utf-8")]
    out: list[Submitted] = []
    for document in documents:
        if _is_queue(document):
            for queue in queues_from_manifests([document]).values():
                out.append(_queue_record(queue, prefix, now))
            continue
        key = ""
        if isinstance(document, Mapping) and isinstance(document.get("metadata"), Mapping):
            metadata = document["metadata"]
            if isinstance(metadata.get("name"), str):
                namespace = metadata.get("namespace")
                key = job_key(namespace if isinstance(namespace, str) else None, metadata["name"])
        out.append(_manifest_record(json.dumps(document).encode(), key, topic))
    return out


def _queue_record(queue: Queue, prefix: str, now: datetime) -> Submitted:
    content = msgspec.json.encode(queue).decode()
    event = QueueDeclared(
        event_id=derive_event_id("queue.declared.v1", queue.name, content),
        occurred_at=now,
        queue=queue,
    )
    return Submitted(event_record(event, prefix), f"queue/{queue.name}", current_trace_id())


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus submit``."""
    parser = sub.add_parser("submit", help="publish Volcano Jobs (and Queues) from a file or stdin")
    parser.add_argument("file", help="YAML (multi-document), JSON, or - for stdin")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Publish the file's documents; print each job key with its trace id."""
    configure_tracing("vcbus-cli")
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    settings = Settings.from_env()
    try:
        submitted = records_for(text, settings.topic_prefix, SystemClock().now())
        asyncio.run(_publish(settings, [item.record for item in submitted]))
    finally:
        shutdown_tracing()
    for item in submitted:
        sys.stdout.write(f"submitted {item.label or '(unnamed)'} trace_id={item.trace_id}\n")
    return 0


async def _publish(settings: Settings, records: list[OutRecord]) -> None:
    producer = AioKafkaBus(settings.kafka).producer(client_id="vcbus-submit")
    try:
        await producer.send(records)
    finally:
        await producer.stop()
