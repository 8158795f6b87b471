"""The health server (``/healthz``, ``/readyz``, ``/metrics``) and what readiness waits for."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

import pytest

from vcbus.contracts import Topic
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.records import TopicPartition
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.health import STALL_SECONDS, HealthServer, Readiness, readiness
from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table


async def fetch(port: int, request: str) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request.encode())
        await writer.drain()
        answer = (await reader.read()).decode()
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = answer.partition("\r\n\r\n")
    return int(head.split()[1]), body


def build_runtime(bus: InMemoryBus) -> Runtime:
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="unused"))
    return Runtime("svc", bus, VirtualClock(), settings, bus.producer(client_id="p"))


async def handle(envelope):
    return []


@pytest.fixture
async def server():
    verdict = {"now": Readiness(ready=False, detail="tables catching up: queues")}

    async def metrics() -> str:
        return "# TYPE x gauge\nx 1\n"

    health = HealthServer(ready=lambda: verdict["now"], metrics=metrics, host="127.0.0.1", port=0)
    async with health:
        yield health, verdict


async def test_healthz_answers_ok_when_the_loop_runs(server):
    health, _ = server
    assert await fetch(health.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") == (200, "ok\n")


async def test_readyz_says_what_it_waits_for_when_not_ready(server):
    health, verdict = server
    status, body = await fetch(health.port, "GET /readyz HTTP/1.1\r\n\r\n")
    assert (status, body) == (503, "tables catching up: queues\n")
    verdict["now"] = Readiness(ready=True, detail="ready")
    assert await fetch(health.port, "GET /readyz?verbose HTTP/1.1\r\n\r\n") == (200, "ready\n")


async def test_metrics_404_and_405_are_answered_when_asked(server):
    health, _ = server
    assert await fetch(health.port, "GET /metrics HTTP/1.1\r\n\r\n") == (
        200,
        "# TYPE x gauge\nx 1\n",
    )
    assert (await fetch(health.port, "GET /nope HTTP/1.1\r\n\r\n"))[0] == 404
    assert (await fetch(health.port, "POST /readyz HTTP/1.1\r\n\r\n"))[0] == 405
    assert await fetch(health.port, "HEAD /healthz HTTP/1.1\r\n\r\n") == (200, "")


async def test_readiness_waits_for_tables_consumer_and_restore_when_starting():
    bus = InMemoryBus()
    table = Table("queues", [Topic.QUEUES], lambda event, record: None)
    service = Service(name="svc", routes=[Route(Topic.JOBS_ADMITTED, handle, "x")], tables=[table])
    runtime = build_runtime(bus)
    assert readiness(service, runtime).detail == "tables catching up: queues"
    table.caught_up.set()
    assert readiness(service, runtime).detail == "consumer starting"
    runtime.ready.set()
    assert readiness(service, runtime).detail == "consumer joining its group"
    runtime.polled.set()
    with runtime.partitions.restoring_partitions(frozenset({TopicPartition("t.jobs.admitted", 2)})):
        assert readiness(service, runtime) == Readiness(False, "restoring partitions [2]")
    assert readiness(service, runtime) == Readiness(True, "ready")
    runtime.stopping.set()
    assert readiness(service, runtime).detail == "stopping"


def _probe(port: int, answers: list[tuple[int, bytes]]) -> None:
    """A probe as Kubernetes makes it, with a 1 s timeout."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
        answers.append((answer.status, answer.read()))


async def test_healthz_answers_while_a_burst_holds_the_event_loop(server):
    """Under a 10,000-job burst ``/healthz`` took 9-15 s: probes would restart services."""
    health, _ = server
    answers: list[tuple[int, bytes]] = []
    probe = threading.Thread(target=_probe, args=(health.port, answers))
    probe.start()
    time.sleep(2.0)  # noqa: ASYNC251 - the burst: a handler holding the loop
    probe.join()
    assert answers == [(200, b"ok\n")]


async def test_healthz_says_when_the_loop_is_stuck(server):
    health, _ = server
    health.last_beat -= STALL_SECONDS
    status, body = await asyncio.to_thread(
        lambda: _status(health.port, "/healthz"),
    )
    assert status == 503
    assert body.startswith(b"event loop silent for")


def _status(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
