"""The logs endpoint's bounds, over real HTTP: bytes per response and readers at once.

The agent behind it is reduced to what the endpoint reads (its node, one pod, the pod's
directory with its plan and log); the server, its worker reads and its sockets are real.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest

from vcbus.services.agent.app.logserver import (
    MAX_READERS,
    MAX_RESPONSE_BYTES,
    LogServer,
    ServerOptions,
)
from vcbus.services.agent.app.supervisor import PLAN_FILE
from vcbus.services.agent.model import ContainerRun, PodPlan, PodReport

pytestmark = pytest.mark.integration

TOKEN = "bounds-token"
UID = "uid-1"


@dataclass
class _Runtime:
    base: Path
    reports: dict[str, PodReport] = field(default_factory=dict)

    def pod_dir(self, uid: str) -> Path:
        return self.base / uid

    def report(self, uid: str) -> PodReport | None:
        return self.reports.get(uid, PodReport())

    def log_file(self, uid: str, container: str, run: int) -> Path:
        return self.base / uid / f"{container}.{run}.log"


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[tuple[int, Path]]:
    runtime = _Runtime(tmp_path)
    pod_dir = tmp_path / UID
    pod_dir.mkdir()
    plan = PodPlan(pod="default/big-0", uid=UID, containers=(ContainerRun(name="main", argv=()),))
    (pod_dir / PLAN_FILE).write_bytes(msgspec.json.encode(plan))
    pod = SimpleNamespace(uid=UID)
    agent = SimpleNamespace(
        conf=SimpleNamespace(node="bounds"),
        state=SimpleNamespace(by_key=lambda key: pod if key == "default/big-0" else None),
        runtime=runtime,
    )
    sock = socket.create_server(("127.0.0.1", 0))
    server = LogServer(ServerOptions(sock=sock, token=TOKEN), agent)
    stop = asyncio.Event()
    serving = asyncio.create_task(server.serve(stop))
    try:
        yield sock.getsockname()[1], runtime.log_file(UID, "main", 0)
    finally:
        stop.set()
        await serving


def _get(port: int, query: str = "") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "GET", f"/pods/default/big-0/log{query}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


async def test_a_log_larger_than_a_response_is_answered_with_its_end(
    endpoint: tuple[int, Path],
) -> None:
    """Attack: a pod writes a huge log and asks for it whole (the agent used to read the
    whole file into memory, on its event loop, for each request)."""
    port, log = endpoint
    log.write_bytes(b"a" * (MAX_RESPONSE_BYTES + 4096) + b"the end\n")
    status, body = await asyncio.to_thread(_get, port)
    assert status == 200
    assert len(body) == MAX_RESPONSE_BYTES
    assert body.endswith(b"the end\n")


async def test_readers_beyond_the_bound_are_turned_away_until_one_ends(
    endpoint: tuple[int, Path],
) -> None:
    """Attack: a local process opens follow after follow to tie up the agent. Past the
    bound each is answered 503 at once; a place frees when a follower goes."""
    port, log = endpoint
    log.write_bytes(b"line\n")
    followers = []
    for _ in range(MAX_READERS):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(
            "GET", "/pods/default/big-0/log?follow=1", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        response = await asyncio.to_thread(connection.getresponse)
        assert response.status == 200
        assert await asyncio.to_thread(response.read1, 5) == b"line\n"
        followers.append(connection)
    status, body = await asyncio.to_thread(_get, port)
    assert status == 503, body
    followers.pop().close()
    for _ in range(100):  # the server notices the closed follower at its next poll
        status, _ = await asyncio.to_thread(_get, port)
        if status == 200:
            break
        await asyncio.sleep(0.1)
    assert status == 200
    for connection in followers:
        connection.close()
