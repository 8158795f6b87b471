"""A tiny HTTP server beside a service: ``/healthz``, ``/readyz`` and ``/metrics``.

It answers from a thread of its own (the standard library's ``ThreadingHTTPServer``), not
from the service's event loop: under a burst of thousands of jobs a handler can hold the
loop for seconds (``/healthz`` once took 9-15 s there), and a probe that times out gets the
service restarted mid-burst. One request per connection, ``GET`` or ``HEAD``.

- ``/healthz`` answers 200 while the event loop runs: the loop stamps a beat every
  :data:`BEAT_SECONDS`, and only a loop silent for :data:`STALL_SECONDS` (stuck, not busy)
  makes it answer 503 (a liveness probe).
- ``/readyz`` answers 200 once the service is ready (:func:`readiness`), else 503 with why.
- ``/metrics`` answers the Prometheus text of the service's metrics, when it has some
  (collected on the loop: it waits for the loop, at most :data:`METRICS_TIMEOUT`).

Ready means: every table has caught up with its topics, the consumer has started and
polled, and no assigned partition is still restoring its state
(docs/design.md#processing-guarantees). A standby replica of a singleton is ready too: it follows
the state and can take over at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http.server
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import structlog

from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.telemetry.exposition import CONTENT_TYPE

log = structlog.get_logger("vcbus.health")

REQUEST_TIMEOUT = 5.0
"""How long a client gets to send its request line and headers."""
BEAT_SECONDS = 1.0
"""How often the event loop says it runs."""
STALL_SECONDS = 60.0
"""How long the loop may be silent before ``/healthz`` says it is stuck (a burst holds it
for seconds, never this long)."""
METRICS_TIMEOUT = 10.0
"""How long ``/metrics`` waits for the loop to collect them."""

MAX_REQUEST_LINE = 8192

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}
_TEXT = "text/plain; charset=utf-8"


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
    """Serves the probes and the metrics of one service on ``host:port``, from a thread.

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
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._beat_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.last_beat = time.monotonic()

    @property
    def port(self) -> int:
        """The bound port (the requested one until started)."""
        if self._server is not None:
            return int(self._server.server_address[1])
        return self._port

    async def start(self) -> None:
        """Listen, and answer from a thread.

        Raises:
            OSError: the address cannot be bound (in use, not permitted).
        """
        self._loop = asyncio.get_running_loop()
        self.last_beat = time.monotonic()
        self._beat_task = asyncio.create_task(self._beat(), name="health-beat")
        try:
            self._server = _Server((self._host, self._port), self)
        except OSError:
            self._beat_task.cancel()
            raise
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.2,), name="health", daemon=True
        )
        self._thread.start()
        log.info("health_server_started", host=self._host, port=self.port)

    async def stop(self) -> None:
        """Stop listening and wait for the server's thread to end."""
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
        if self._beat_task is not None:
            self._beat_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat_task
            self._beat_task = None

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

    async def _beat(self) -> None:
        while True:
            self.last_beat = time.monotonic()
            await asyncio.sleep(BEAT_SECONDS)

    def answer(self, method: str, path: str) -> tuple[int, str, bytes]:
        """The status, content type and body for a request (called on the server's thread)."""
        if method not in ("GET", "HEAD"):
            return 405, _TEXT, b"only GET and HEAD\n"
        match path:
            case "/healthz":
                silent = time.monotonic() - self.last_beat
                if silent >= STALL_SECONDS:
                    return 503, _TEXT, f"event loop silent for {silent:.0f}s\n".encode()
                return 200, _TEXT, b"ok\n"
            case "/readyz":
                try:
                    verdict = self._ready()
                except RuntimeError:  # a set the loop changed as it was read
                    verdict = Readiness(ready=False, detail="busy: ask again")
                status = 200 if verdict.ready else 503
                return status, _TEXT, f"{verdict.detail}\n".encode()
            case "/metrics" if self._metrics is not None and self._loop is not None:
                future = asyncio.run_coroutine_threadsafe(_collect(self._metrics), self._loop)
                try:
                    return 200, CONTENT_TYPE, future.result(METRICS_TIMEOUT).encode()
                except concurrent.futures.TimeoutError:
                    future.cancel()
                    return 503, _TEXT, b"metrics not collected in time: the loop is busy\n"
        return 404, _TEXT, b"not found\n"


async def _collect(metrics: Callable[[], Awaitable[str]]) -> str:
    return await metrics()


class _Server(http.server.ThreadingHTTPServer):
    """The HTTP server of a :class:`HealthServer` (its handler asks the health server)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], health: HealthServer) -> None:
        self.health = health
        super().__init__(address, _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    """One request, answered by :meth:`HealthServer.answer`, then the connection closed."""

    server: _Server
    timeout = REQUEST_TIMEOUT

    def handle_one_request(self) -> None:
        """Read one request; a line too long or a client too slow gets no answer."""
        try:
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
        except TimeoutError:
            self.close_connection = True
            return
        if not self.raw_requestline or len(self.raw_requestline) > MAX_REQUEST_LINE:
            self.close_connection = True
            return
        if not self.parse_request():
            return
        self._reply()
        self.close_connection = True

    def _reply(self) -> None:
        status, content_type, body = self.server.health.answer(
            self.command, self.path.split("?", 1)[0]
        )
        self.send_response_only(status, _REASONS[status])
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: object) -> None:
        """No access log: probes come every few seconds."""
