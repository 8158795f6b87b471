"""The agent's HTTP(S) endpoint: its pods' logs, as ``vcbus logs`` reads them from any host.

``GET /pods/<namespace>/<name>/log`` answers the log of one container of the pod bound
here (kubectl's parameters: ``container`` [the first non-init container], ``previous``
[the run before the current one: with none here, the last run of the pod's incarnation
before, kept when it was forgotten, as a pod a job's policy killed], ``tail`` [lines],
``follow`` [stream until the container ends]); ``GET /healthz`` answers ``ok``. A rotated
log is read whole, oldest file first.

Authentication is a shared token (``VCBUS_AGENT_TOKEN``; when none is given the agent
makes one, kept 0600 in its data dir, ``agent.token``): every request but ``/healthz``
carries ``Authorization: Bearer <token>``, compared in constant time; a server without a
token refuses every log. Logs are read in a worker thread, never on the agent's event
loop; a response carries at most :data:`MAX_RESPONSE_BYTES` of a log (its end), and at
most :data:`MAX_READERS` requests read at once (more are answered 503). TLS, when given
a certificate and key (``VCBUS_AGENT_TLS_CERTFILE``/``VCBUS_AGENT_TLS_KEYFILE``, needed to
listen beyond loopback), is served by uvicorn; clients check it with
``VCBUS_AGENT_TLS_CAFILE`` against the node's name (``vcbus.services.cli.logs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from vcbus.contracts.keys import pod_key
from vcbus.services.agent.app.podlogs import LOGS_DIR
from vcbus.services.agent.app.supervisor import PLAN_FILE
from vcbus.services.agent.model import PodPlan

if TYPE_CHECKING:
    from vcbus.services.agent.app.runtime import PodRuntime
    from vcbus.services.agent.core import AgentConf
    from vcbus.services.agent.model import AgentState


class Agent(Protocol):
    """What the log server reads of the agent: its node's pods and where their logs are."""

    conf: AgentConf
    state: AgentState
    runtime: PodRuntime


MAX_RESPONSE_BYTES = 8 << 20
"""Most bytes of a log one response (or a follow's first part) carries: the log's end."""
MAX_READERS = 4
"""Most log requests served at once (a follow counts until it ends)."""
FOLLOW_POLL = 0.1
"""Seconds between two looks at a followed log."""
ENV_TOKEN = "VCBUS_AGENT_TOKEN"
ENV_CERTFILE = "VCBUS_AGENT_TLS_CERTFILE"
ENV_KEYFILE = "VCBUS_AGENT_TLS_KEYFILE"
ENV_CAFILE = "VCBUS_AGENT_TLS_CAFILE"
ENV_TOKEN_FILE = "VCBUS_AGENT_TOKEN_FILE"
TOKEN_FILE = "agent.token"


@dataclass(frozen=True)
class ServerOptions:
    """Where and how the endpoint listens: a bound socket (None: no endpoint), TLS, token."""

    sock: socket.socket | None = None
    token: str = ""
    certfile: str = ""
    keyfile: str = ""


class _Server(uvicorn.Server):
    """uvicorn, leaving SIGINT and SIGTERM to the agent."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class LogServer:
    """Serves the logs of the agent's pods."""

    def __init__(self, options: ServerOptions, agent: Agent) -> None:
        self.options = options
        self.agent = agent
        self._readers = asyncio.Semaphore(MAX_READERS)

    async def serve(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set."""
        if self.options.sock is None:
            await stop.wait()
            return
        config = uvicorn.Config(
            self.app(),
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
            ssl_certfile=self.options.certfile or None,
            ssl_keyfile=self.options.keyfile or None,
        )
        server = _Server(config)
        serving = asyncio.create_task(server.serve(sockets=[self.options.sock]))
        try:
            await stop.wait()
        finally:
            server.should_exit = True
            await serving

    def app(self) -> Starlette:
        """The Starlette application."""
        return Starlette(
            routes=[
                Route("/healthz", self._health),
                Route("/pods/{namespace}/{name}/log", self._log),
            ]
        )

    async def _health(self, _request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def _log(self, request: Request) -> Response:
        if not self._allowed(request):
            return PlainTextResponse("unauthorized: give the agent's token\n", status_code=401)
        if self._readers.locked():
            return PlainTextResponse(
                f"busy: {MAX_READERS} log requests are being served; try again\n",
                status_code=503,
                headers={"Retry-After": "1"},
            )
        await self._readers.acquire()
        try:
            response = await self._answer(request)
        except BaseException:
            self._readers.release()
            raise
        if isinstance(response, StreamingResponse):
            response.background = BackgroundTask(self._release)
        else:
            self._readers.release()
        return response

    async def _answer(self, request: Request) -> Response:
        key = pod_key(request.path_params["namespace"], request.path_params["name"])
        pod = self.agent.state.by_key(key)
        runtime = self.agent.runtime
        previous = _flag(request, "previous")
        kept = runtime.previous_dir(key) if previous else None
        if pod is None:
            if kept is not None:
                return _kept_log(kept, key, request)
            return PlainTextResponse(
                f"pod {key} is not on node {self.agent.conf.node}\n", status_code=404
            )
        containers = _containers(runtime.pod_dir(pod.uid))
        container = request.query_params.get("container") or (containers[0] if containers else "")
        report = runtime.report(pod.uid)
        restarts = next(
            (c.restart_count for c in (report.containers if report else ()) if c.name == container),
            0,
        )
        run = restarts - 1 if previous else restarts
        if run < 0 and kept is not None:  # no run before this one here: the incarnation before
            return _kept_log(kept, key, request)
        if container not in containers:
            names = ", ".join(containers) or "none yet"
            return PlainTextResponse(
                f"pod {key} has no container {container!r} (it has: {names})\n", status_code=404
            )
        if run < 0:
            return PlainTextResponse(
                f"container {container} of pod {key} has no previous run\n", status_code=400
            )
        path = runtime.log_file(pod.uid, container, run)
        tail = _int(request.query_params.get("tail"))
        text = await asyncio.to_thread(lambda: _tail(read_log(path), tail)[-MAX_RESPONSE_BYTES:])
        if not _flag(request, "follow"):
            return Response(text, media_type="text/plain")
        return StreamingResponse(self._follow(pod.uid, path, text), media_type="text/plain")

    async def _follow(self, uid: str, path: Path, first: bytes) -> AsyncIterator[bytes]:
        """What is in the log, then what is appended, until the pod has ended."""
        yield first
        cursor = _Cursor.at_end(path)
        runtime = self.agent.runtime
        while True:
            report = runtime.report(uid) if runtime.pod_dir(uid).exists() else None
            data = await asyncio.to_thread(cursor.read)
            if data:
                yield data
                continue
            if report is None or report.is_final:
                return
            await asyncio.sleep(FOLLOW_POLL)

    async def _release(self) -> None:
        """A streamed log is sent (or its client gone): its reader's place is free."""
        self._readers.release()

    def _allowed(self, request: Request) -> bool:
        token = self.options.token
        if not token:
            return False
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.encode(), token.encode())


@dataclass
class _Cursor:
    """Where a follower is in a log file; a rotation starts it on the new file."""

    path: Path
    position: int = 0
    inode: int = 0

    @classmethod
    def at_end(cls, path: Path) -> _Cursor:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return cls(path)
        return cls(path, stat.st_size, stat.st_ino)

    def read(self) -> bytes:
        """What was appended since the last read (the new file's start after a rotation)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return b""
        if stat.st_ino != self.inode or stat.st_size < self.position:
            self.position, self.inode = 0, stat.st_ino
        if stat.st_size <= self.position:
            return b""
        with self.path.open("rb") as file:
            file.seek(self.position)
            data = file.read(MAX_RESPONSE_BYTES)
        self.position += len(data)
        return data


def _kept_log(kept: Path, key: str, request: Request) -> Response:
    """The last run of a container of pod ``key``'s incarnation before (its kept logs)."""
    containers = _containers(kept)
    container = request.query_params.get("container") or (containers[0] if containers else "")
    runs = sorted(
        int(path.stem)
        for path in (kept / LOGS_DIR / container).glob("*.log")
        if path.stem.isdigit()
    )
    if container not in containers or not runs:
        names = ", ".join(containers) or "none"
        return PlainTextResponse(
            f"the previous pod {key} has no log of container {container!r} (it had: {names})\n",
            status_code=404,
        )
    path = kept / LOGS_DIR / container / f"{runs[-1]}.log"
    return Response(
        _tail(read_log(path), _int(request.query_params.get("tail"))), media_type="text/plain"
    )


def load_or_make_token(path: Path) -> str:
    """The token kept at ``path``; a new one (256 random bits), written 0600, when none."""
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="ascii").strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token


def read_log(path: Path) -> bytes:
    """A container run's whole log: its rotated files, oldest first, then the current one."""
    rotated = sorted(
        path.parent.glob(f"{path.name}.*"), key=lambda p: int(p.suffix[1:] or 0), reverse=True
    )
    out = b""
    for part in (*rotated, path):
        with contextlib.suppress(FileNotFoundError):
            out += part.read_bytes()
    return out


def _tail(text: bytes, lines: int | None) -> bytes:
    if lines is None or lines < 0:
        return text
    if lines == 0:
        return b""
    kept = text.splitlines(keepends=True)[-lines:]
    return b"".join(kept)


def _containers(pod_dir: Path) -> list[str]:
    """The pod's containers, the non-init ones first (``kubectl logs``' default is the first)."""
    try:
        plan = msgspec.json.decode((pod_dir / PLAN_FILE).read_bytes(), type=PodPlan)
    except (FileNotFoundError, msgspec.DecodeError):
        return []
    runs = sorted(plan.containers, key=lambda c: c.init)
    return [c.name for c in runs]


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


def _int(text: str | None) -> int | None:
    try:
        return None if text is None or text == "" else int(text)
    except ValueError:
        return None
