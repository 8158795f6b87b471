"""A tiny HTTP server beside a service: ``/healthz``, ``/readyz`` and ``/metrics``.

Plain asyncio streams, no dependency: one request per connection, ``GET`` or ``HEAD``.

- ``/healthz`` answers 200 while the event loop runs (a liveness probe).
- ``/readyz`` answers 200 once the service is ready (:func:`readiness`), else 503 with why.
- ``/metrics`` answers the Prometheus text of the service's metrics, when it has some.

Ready means: every table has caught up with its topics, the consumer has started and
polled, and no assigned partition is still restoring its state
(docs/design.md#processing-guarantees). A standby replica of a singleton is ready too: it follows
the state and can take over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import structlog

from vcbus.shared.runtime.service import Runtime, Service
from vcbus.shared.telemetry.exposition import CONTENT_TYPE

log = structlog.get_logger("vcbus.health")

REQUEST_TIMEOUT = 5.0
"""How long a client gets to send its request line and headers."""

MAX_REQUEST_LINE = 8192

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether a service is ready, and what it waits for when it is not."""

    ready: bool
    detail: str


def readiness(service: Service, runtime: Runtime) -> Readiness:
    """Return whether ``service`` is ready to do its work.

    Args:
        service: the service (its tables).
        runtime: its runtime (consumer started and polled, partitions restoring, stopping).

    Returns:
        The verdict, with what is still awaited.
    """
    if runtime.stopping.is_set():
        return Readiness(ready=False, detail="stopping")
    behind = sorted(table.name for table in service.tables if not table.caught_up.is_set())
    if behind:
        return Readiness(ready=False, detail=f"tables catching up: {', '.join(behind)}")
    if not runtime.ready.is_set():
        return Readiness(ready=False, detail="consumer starting")
    if service.routes and not runtime.polled.is_set():
        return Readiness(ready=False, detail="consumer joining its group")
    if runtime.partitions.restoring:
        partitions = sorted({tp.partition for tp in runtime.partitions.restoring})
        return Readiness(ready=False, detail=f"restoring partitions {partitions}")
    return Readiness(ready=True, detail="ready")


class HealthServer:
    """Serves the probes and the metrics of one service on ``host:port``.

    ``port=0`` binds a free port; :attr:`port` tells which once started.
    """

    def __init__(
        self,
        *,
        ready: Callable[[], Readiness],
        metrics: Callable[[], Awaitable[str]] | None = None,
        host: str = "0.0.0.0",
        port: int = 8080,
    ) -> None:
        self._ready = ready
        self._metrics = metrics
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The bound port (the requested one until started)."""
        if self._server is not None and self._server.sockets:
            return int(self._server.sockets[0].getsockname()[1])
        return self._port

    async def start(self) -> None:
        """Listen.

        Raises:
            OSError: the address cannot be bound (in use, not permitted).
        """
        self._server = await asyncio.start_server(self._handle, self._host, self._port)
        log.info("health_server_started", host=self._host, port=self.port)

    async def stop(self) -> None:
        """Stop listening and wait for the server to close."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _answer(self, method: str, path: str) -> tuple[int, str, bytes]:
        if method not in ("GET", "HEAD"):
            return 405, "text/plain; charset=utf-8", b"only GET and HEAD\n"
        match path:
            case "/healthz":
                return 200, "text/plain; charset=utf-8", b"ok\n"
            case "/readyz":
                verdict = self._ready()
                status = 200 if verdict.ready else 503
                return status, "text/plain; charset=utf-8", f"{verdict.detail}\n".encode()
            case "/metrics" if self._metrics is not None:
                return 200, CONTENT_TYPE, (await self._metrics()).encode()
        return 404, "text/plain; charset=utf-8", b"not found\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                request = await reader.readline()
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            parts = request.decode("latin-1").split()
            if len(parts) < 2 or len(request) > MAX_REQUEST_LINE:
                return
            method, target = parts[0], parts[1]
            status, content_type, body = await self._answer(method, target.split("?", 1)[0])
            head = (
                f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
                f"Content-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
