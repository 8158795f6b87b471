"""What a client publishes to submit a file: jobs on ``jobs.submitted``, queues on ``queues``.

One writer's side of the submission topics, for every client that submits: ``vcbus submit``,
``vcbus up``'s demo jobs and ``vcbus simulate``'s timed jobs publish the same records for the
same text. Every document that is not a Volcano Queue becomes a ``jobs.submitted`` record of
JSON text keyed ``namespace/name`` (admission answers it); a Queue becomes a ``QueueDeclared``
on ``queues``; a text that is neither YAML nor JSON is published as it is, for admission to
reject with the parser's reason. Each job record starts the job's trace (a ``send`` span).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import msgspec

from vcbus.contracts import QueueDeclared, Topic, derive_event_id, job_key, tag_of
from vcbus.contracts.objects import Queue
from vcbus.core.bus.envelope import HEADER_CONTENT_TYPE, HEADER_EVENT_TYPE
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import OutRecord
from vcbus.core.tracing.spans import current_trace_id, send_span
from vcbus.services.admission.bounded_parse import load_yaml
from vcbus.services.admission.core import queues_from_manifests
from vcbus.services.admission.fields import FIELD_VALIDATION_HEADER, FieldValidation

MANIFEST_TYPE = "job.manifest"


@dataclass(frozen=True, slots=True)
class Submitted:
    """One record to publish, and what to tell the user about it."""

    record: OutRecord
    label: str
    trace_id: str
    queue: Queue | None = None
    """The queue a ``queues`` record declares."""
    warnings: tuple[str, ...] = ()
    """What the document asks for that vcbus does not do."""


def _documents(text: str) -> list[object] | None:
    """The file's documents; ``None`` when it is neither JSON nor YAML within bounds.

    YAML is read as admission reads it (recursive aliases, alias bombs and absurd nesting
    refused before anything is built); such a file is published as it is, and admission
    answers it with the reason.
    """
    try:
        loaded = json.loads(text)
    except RecursionError:
        return None
    except ValueError:
        try:
            return load_yaml(text, max_chars=len(text.encode()))
        except ValueError:
            return None
    return loaded if isinstance(loaded, list) else [loaded]


def _manifest_record(
    payload: bytes,
    key: str,
    topic: str,
    fields: FieldValidation,
    content_type: bytes = b"application/json",
) -> Submitted:
    headers: list[tuple[str, bytes]] = [
        (HEADER_EVENT_TYPE, MANIFEST_TYPE.encode()),
        (HEADER_CONTENT_TYPE, content_type),
        (FIELD_VALIDATION_HEADER, fields.value.encode()),
    ]
    with send_span(topic, key=key, event_type=MANIFEST_TYPE, event_id="", headers=headers) as span:
        span.set_attribute("vcbus.job", key)
        trace_id = current_trace_id()
    return Submitted(OutRecord(topic, key.encode() or None, payload, tuple(headers)), key, trace_id)


def records_for(
    text: str, prefix: str, now: datetime, fields: FieldValidation = FieldValidation.STRICT
) -> list[Submitted]:
    """The records ``vcbus submit`` publishes for a file's text.

    Each job record carries ``fields`` in its ``field-validation`` header, for admission.
    """
    topic = f"{prefix}{Topic.JOBS_SUBMITTED}"
    documents = _documents(text)
    if documents is None:
        return [_manifest_record(text.encode(), "", topic, fields, b"text/plain; charset=utf-8")]
    out: list[Submitted] = []
    for document in documents:
        if is_queue(document):
            for queue in queues_from_manifests([document]).values():
                record = _queue_record(queue, prefix, now)
                out.append(dataclasses.replace(record, warnings=queue_warnings(document)))
            continue
        key = ""
        if isinstance(document, Mapping) and isinstance(document.get("metadata"), Mapping):
            metadata = document["metadata"]
            if isinstance(metadata.get("name"), str):
                namespace = metadata.get("namespace")
                key = job_key(namespace if isinstance(namespace, str) else None, metadata["name"])
        out.append(_manifest_record(json.dumps(document).encode(), key, topic, fields))
    return out


def queue_record(queue: Queue, prefix: str, now: datetime) -> Submitted:
    """The record declaring (or changing) ``queue`` on the ``queues`` topic."""
    return _queue_record(queue, prefix, now)


def _queue_record(queue: Queue, prefix: str, now: datetime) -> Submitted:
    content = msgspec.json.encode(queue).decode()
    event = QueueDeclared(
        event_id=derive_event_id(tag_of(QueueDeclared), queue.name, content),
        occurred_at=now,
        queue=queue,
    )
    return Submitted(event_record(event, prefix), f"queue/{queue.name}", current_trace_id(), queue)


def is_queue(document: object) -> bool:
    """Whether ``document`` is a Volcano Queue manifest (``submit`` sends it to ``queues``)."""
    return (
        isinstance(document, Mapping)
        and document.get("kind") == "Queue"
        and str(document.get("apiVersion", "")).startswith("scheduling.volcano.sh/")
    )


HIERARCHY_ANNOTATIONS = ("volcano.sh/hierarchy", "volcano.sh/hierarchy-weights")
"""Volcano's annotations of hierarchical queues (the drf plugin's ``enableHierarchy``)."""


def queue_warnings(document: object) -> tuple[str, ...]:
    """What a Queue manifest asks for that vcbus does not do, one warning each."""
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return ()
    return tuple(
        f"annotation {name} is ignored: vcbus does not share resources by queue hierarchy "
        "(the queue is scheduled as a flat queue)"
        for name in HIERARCHY_ANNOTATIONS
        if name in annotations
    )
