"""The dashboard app over an in-memory bus: pages, the change stream, actions behind a flag.

The app is served by uvicorn on a loopback socket and spoken to with plain HTTP/1.1 over
asyncio streams, so what is checked is what a browser receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import msgspec

from tests.support.bus_contract import wait_until
from tests.unit.services.cli.builders import (
    PREFIX,
    SETTINGS,
    build_admitted,
    build_node,
    build_phase,
    build_podgroup,
    build_queue,
    build_status,
    publish,
)
from vcbus.contracts import JobDeleteRequested, QueueDeclared, Topic
from vcbus.contracts.objects import PodGroupPhase, QueueState
from vcbus.core.bus.memory import InMemoryBus
from vcbus.services.cli.dashboard.app import listen, serve, url_of

LIMIT = 30.0


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Running:
    bus: InMemoryBus
    host: str
    port: int

    async def request(self, method: str, path: str, body: str = "") -> Reply:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            head = (
                f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Connection: close\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body.encode())}\r\n\r\n"
            )
            writer.write(head.encode() + body.encode())
            await writer.drain()
            raw = await asyncio.wait_for(reader.read(), LIMIT)
        finally:
            writer.close()
            await writer.wait_closed()
        header, _, content = raw.decode().partition("\r\n\r\n")
        status_line, *lines = header.split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        return Reply(int(status_line.split()[1]), headers, content)

    async def page(self, path: str) -> str:
        reply = await self.request("GET", path)
        assert reply.status == 200, reply
        return reply.body

    async def page_with(self, path: str, text: str) -> str:
        """The page once it shows ``text`` (bounded: the store follows the topics)."""
        page = ""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LIMIT):
                while text not in (page := await self.page(path)):  # noqa: ASYNC110 - polls HTTP
                    await asyncio.sleep(0.1)
        return page


@contextlib.asynccontextmanager
async def dashboard(*, actions: bool = False) -> AsyncIterator[Running]:
    bus = InMemoryBus()
    sock = listen("127.0.0.1", 0)
    host, port = sock.getsockname()[:2]
    stop = asyncio.Event()
    task = asyncio.create_task(
        serve(bus, SETTINGS, sock, jaeger_url="http://j:16686", stop=stop, actions=actions)
    )
    running = Running(bus, host, port)
    try:
        assert url_of(sock) == f"http://127.0.0.1:{port}/"
        assert await wait_until(lambda: _answers(host, port), LIMIT)
        yield running
    finally:
        stop.set()
        await asyncio.wait_for(task, LIMIT)


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


async def waiting_job(bus: InMemoryBus, key: str = "team/b") -> None:
    await publish(
        bus,
        build_node("n1"),
        build_admitted(key),
        build_podgroup(key),
        build_status(key, "Pending"),
        build_phase(key, PodGroupPhase.PENDING, reason="QueueClosed", message="queue is closed"),
    )


async def test_pages_show_what_the_topics_hold_and_update_as_they_change() -> None:
    async with dashboard() as app:
        await waiting_job(app.bus)

        jobs = await app.page_with("/jobs?phase=Pending", "team/b")
        job = await app.request("GET", "/jobs/team/b")
        missing = await app.request("GET", "/jobs/team/none")
        nodes = await app.page("/nodes")
        health = await app.request("GET", "/healthz")
        script = await app.request("GET", "/static/live.js")

    assert '<a class="job" href="/jobs/team/b">team/b</a>' in jobs
    assert "QueueClosed" in job.body
    assert "http://j:16686/trace/" in job.body
    assert "default-src 'self'" in job.headers["content-security-policy"]
    assert "Delete job" not in job.body
    assert missing.status == 404
    assert 'data-node="n1"' in nodes
    assert (health.status, health.body) == (200, "ok\n")
    assert 'new EventSource("/events")' in script.body
    assert script.headers["content-type"].startswith("text/javascript")


async def test_the_change_stream_says_change_when_a_record_arrives() -> None:
    async with dashboard() as app:
        reader, writer = await asyncio.open_connection(app.host, app.port)
        writer.write(f"GET /events HTTP/1.1\r\nHost: {app.host}\r\n\r\n".encode())
        await writer.drain()
        opened = await asyncio.wait_for(reader.readuntil(b"retry: 2000\n\n"), LIMIT)

        await waiting_job(app.bus)
        seen = await asyncio.wait_for(reader.readuntil(b"\n\n"), LIMIT)
        writer.close()

    assert b"content-type: text/event-stream" in opened
    assert re.search(rb"event: change\ndata: \d+\n\n", seen), seen


async def test_actions_are_refused_when_the_flag_is_off() -> None:
    async with dashboard() as app:
        await waiting_job(app.bus)
        reply = await app.request("POST", "/jobs/team/b/delete", "token=anything")
        submitted = app.bus.records(f"{PREFIX}{Topic.JOBS_SUBMITTED}")

    assert reply.status == 403
    assert submitted == []


async def test_delete_and_queue_close_send_the_cli_commands_with_the_page_token() -> None:
    async with dashboard(actions=True) as app:
        await waiting_job(app.bus)
        await publish(app.bus, build_queue("research", weight=2))
        page = await app.page_with("/jobs/team/b", "Delete job")
        await app.page_with("/queues", "research")
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert token is not None
        stale = await app.request("POST", "/jobs/team/b/delete", "token=stale")
        deleted = await app.request("POST", "/jobs/team/b/delete", f"token={token[1]}")
        closed = await app.request("POST", "/queues/research/close", f"token={token[1]}")
        unknown = await app.request("POST", "/queues/nope/close", f"token={token[1]}")
        commands = app.bus.records(f"{PREFIX}{Topic.JOBS_SUBMITTED}")
        queues = app.bus.records(f"{PREFIX}{Topic.QUEUES}")

    assert stale.status == 403
    assert (deleted.status, deleted.headers["location"]) == (303, "/jobs/team/b")
    assert (closed.status, closed.headers["location"]) == (303, "/queues")
    assert unknown.status == 404
    assert len(commands) == 1
    command = msgspec.json.decode(commands[0].value or b"", type=JobDeleteRequested)
    assert command.job == "team/b"
    declared = msgspec.json.decode(queues[-1].value or b"", type=QueueDeclared)
    assert (declared.queue.name, declared.queue.state, declared.queue.weight) == (
        "research",
        QueueState.CLOSED,
        2,
    )
