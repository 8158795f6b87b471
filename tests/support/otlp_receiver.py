"""A minimal OTLP/HTTP trace receiver, run in a thread, that tests read spans back from."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

TRACES_PATH = "/v1/traces"

_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUSES = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, with ids in lowercase hex and kind as e.g. ``"PRODUCER"``."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_span_id: str
    service_name: str
    attributes: dict[str, object] = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)
    status_code: str = "UNSET"


class OtlpReceiver:
    """Accepts ``POST /v1/traces`` (protobuf, or JSON by Content-Type) on 127.0.0.1.

    Use it as a context manager; point an exporter at :attr:`endpoint`.
    """

    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._changed = threading.Condition()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # how soon shutdown() is noticed
            name="otlp-receiver",
            daemon=True,
        )

    @property
    def endpoint(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:43117`` (``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, in arrival order."""
        with self._changed:
            return list(self._spans)

    def clear(self) -> None:
        """Forget the spans received so far."""
        with self._changed:
            self._spans.clear()

    def wait_for(self, predicate: Callable[[list[ReceivedSpan]], bool], timeout: float) -> bool:
        """Wait until the received spans satisfy ``predicate``.

        Args:
            predicate: Called with the spans received so far, after each request.
            timeout: Seconds to wait at most.

        Returns:
            Whether the predicate held before the timeout.
        """
        with self._changed:
            return self._changed.wait_for(lambda: predicate(list(self._spans)), timeout)

    def add(self, spans: Iterable[ReceivedSpan]) -> None:
        """Record spans and wake the waiters (called by the HTTP handler)."""
        with self._changed:
            self._spans.extend(spans)
            self._changed.notify_all()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: OtlpReceiver


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        if self.path.rstrip("/") != TRACES_PATH:
            self._reply(404, "text/plain", b"only /v1/traces is served")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        is_json = self.headers.get_content_type() == "application/json"
        try:
            spans = _from_json(json.loads(body)) if is_json else _from_protobuf(body)
        except (ValueError, KeyError, TypeError) as exc:
            self._reply(400, "text/plain", f"cannot decode the request: {exc}".encode())
            return
        cast(_Server, self.server).receiver.add(spans)
        if is_json:
            self._reply(200, "application/json", b"{}")
        else:
            self._reply(200, "application/x-protobuf", _empty_response())

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet; the test reads spans, not access logs."""


def _empty_response() -> bytes:
    return cast(bytes, ExportTraceServiceResponse().SerializeToString())


def _from_protobuf(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    received: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _pb_attributes(resource_spans.resource.attributes)
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            received.extend(_pb_span(span, service) for span in scope_spans.spans)
    return received


def _pb_span(span: Span, service: str) -> ReceivedSpan:
    return ReceivedSpan(
        name=str(span.name),
        kind=_KINDS.get(int(span.kind), "UNSPECIFIED"),
        trace_id=bytes(span.trace_id).hex(),
        span_id=bytes(span.span_id).hex(),
        parent_span_id=bytes(span.parent_span_id).hex(),
        service_name=service,
        attributes=_pb_attributes(span.attributes),
        links=[(bytes(link.trace_id).hex(), bytes(link.span_id).hex()) for link in span.links],
        status_code=_STATUSES.get(int(span.status.code), "UNSET"),
    )


def _pb_attributes(attributes: Iterable[KeyValue]) -> dict[str, object]:
    return {str(attribute.key): _pb_value(attribute.value) for attribute in attributes}


def _pb_value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values)
    return cast(object, getattr(value, kind))


def _from_json(request: Mapping[str, Any]) -> list[ReceivedSpan]:
    received: list[ReceivedSpan] = []
    for resource_spans in request.get("resourceSpans", []):
        resource = _json_attributes(resource_spans.get("resource", {}).get("attributes", []))
        service = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.get("scopeSpans", []):
            received.extend(_json_span(span, service) for span in scope_spans.get("spans", []))
    return received


def _json_span(span: Mapping[str, Any], service: str) -> ReceivedSpan:
    kind = span.get("kind", 0)
    status = span.get("status", {}).get("code", 0)
    return ReceivedSpan(
        name=str(span["name"]),
        kind=_enum_name(kind, _KINDS, "SPAN_KIND_"),
        trace_id=str(span["traceId"]).lower(),
        span_id=str(span["spanId"]).lower(),
        parent_span_id=str(span.get("parentSpanId", "")).lower(),
        service_name=service,
        attributes=_json_attributes(span.get("attributes", [])),
        links=[
            (str(link["traceId"]).lower(), str(link["spanId"]).lower())
            for link in span.get("links", [])
        ],
        status_code=_enum_name(status, _STATUSES, "STATUS_CODE_"),
    )


def _enum_name(value: object, names: Mapping[int, str], prefix: str) -> str:
    if isinstance(value, str) and not value.isdigit():
        return value.removeprefix(prefix)
    return names.get(int(cast(str, value)), "UNSPECIFIED")


def _json_attributes(attributes: Iterable[Mapping[str, Any]]) -> dict[str, object]:
    return {str(item["key"]): _json_value(item.get("value", {})) for item in attributes}


def _json_value(value: Mapping[str, Any]) -> object:
    if "arrayValue" in value:
        return [_json_value(item) for item in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _json_attributes(value["kvlistValue"].get("values", []))
    if "intValue" in value:
        return int(value["intValue"])  # int64 is a JSON string in OTLP/JSON
    for name in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if name in value:
            return cast(object, value[name])
    return None
