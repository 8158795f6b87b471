"""``vcbus up``'s doors, tried from another local process: its broker wants the password
``up`` made, its health and metrics servers listen on loopback only, its dashboard answers
only its own names (DNS rebinding)."""

from __future__ import annotations

import http.client
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import leftovers
from tests.support.processes import ROOT, service_env
from vcbus.core.bus.broker import free_port
from vcbus.core.bus.errors import BrokerAuthenticationError
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

WAIT_SECONDS = 90.0


def _listening(port: int) -> list[str]:
    """The local addresses (hex, as ``/proc/net/tcp`` writes them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                address, _, hex_port = fields[1].rpartition(":")
                if int(hex_port, 16) == port and fields[3] == "0A":
                    found.append(address)
    return found


def _get(port: int, path: str, host: str, method: str = "GET") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _until(what: str, check: object) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"{what}: not within {WAIT_SECONDS:g} s")


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, int, Path]]:
    owner = leftovers.owner_mark()
    env = dict(service_env("", ""), **{leftovers.OWNER: owner})
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "VCBUS_TOPIC_PREFIX", "VCBUS_HEALTH_HOST"):
        env.pop(name, None)
    health, dashboard = free_port(), free_port()
    log_dir = tmp_path / "logs"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "vcbus.services.cli", "up", "--port", str(free_port())),
            *("--health-port", str(health), "--dashboard-port", str(dashboard)),
            *("--log-dir", str(log_dir)),
        ],
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process, health, dashboard, log_dir
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        leftovers.end_owned(owner)  # its broker and services: sessions of their own


async def test_up_keeps_its_broker_health_and_dashboard_to_this_host_and_its_user(
    up: tuple[subprocess.Popen[str], int, int, Path],
) -> None:
    """Attacks: a pod connects to the broker ``up`` started and publishes without
    credentials; a peer on the network scrapes a service's metrics on the host's address
    (``up`` printed 127.0.0.1 but bound every interface); a web page rebinds its own name
    to 127.0.0.1 and drives the dashboard (its ``Host`` is its own name)."""
    process, health, dashboard, log_dir = up
    assert process.stdout is not None
    lines: list[str] = []
    while not any(line.startswith("services: ") for line in lines):
        line = process.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    output = "".join(lines)
    broker_line = next(line for line in lines if line.startswith("  export "))
    exports = dict(item.split("=", 1) for item in broker_line.split()[1:])
    servers, credentials = exports["KAFKA_BOOTSTRAP_SERVERS"], exports["VCBUS_KAFKA_CREDENTIALS"]
    assert stat.S_IMODE(os.stat(credentials).st_mode) == 0o600, output

    with pytest.raises(BrokerAuthenticationError, match="requires SASL authentication"):
        await AioKafkaBus(KafkaSettings(bootstrap_servers=servers)).partitions("vcbus.jobs.status")

    # the services got in with the file's password: the first one comes ready
    _until("the first service ready", lambda: _get(health, "/readyz", "127.0.0.1")[0] == 200)
    assert _listening(health) == ["0100007F"], output  # 127.0.0.1, no other interface

    _until("the dashboard", lambda: _get(dashboard, "/healthz", "127.0.0.1")[0] in (200, 503))
    assert _get(dashboard, "/", f"127.0.0.1:{dashboard}")[0] == 200
    assert _get(dashboard, "/", "rebound.example")[0] == 400
    status, _ = _get(dashboard, "/queues/default/close", "rebound.example", method="POST")
    assert status == 400
    assert sorted(path.name for path in log_dir.iterdir() if path.suffix == ".credentials") == [
        "bus.credentials"
    ]
