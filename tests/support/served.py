"""A system served as ``vcbus serve`` processes, each with its health server, for CLI tests.

``served_system`` creates the topics under the caller's prefix, starts the five services as
``python -m vcbus.services.cli serve <name>`` with ``VCBUS_HEALTH_PORT`` set to a free loopback
port each, and waits until every ``/readyz`` answers 200 (bounded; a failure shows each
service's last lines). The CLI is then run in the test's own process (``run_cli``) with
the system's broker and prefix in the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pytest

from tests.support.processes import Processes, ServiceProcess, service_env
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.cli import main

SERVICES = ("cluster", "admission", "job-controller", "podgroup-enqueue", "allocator")
PARTITIONS = 4
LIMIT = 90.0
"""Bound of every wait here: generous, for a loaded 2-core machine (not a timing claim)."""


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServedSystem:
    """The running services, their health ports, and the broker and prefix they use."""

    bootstrap: str
    prefix: str
    ports: dict[str, int]
    services: dict[str, ServiceProcess]

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a CLI process for this system."""
        return service_env(self.bootstrap, self.prefix, **extra)

    def get(self, service: str, path: str) -> tuple[int, str]:
        """``GET`` a path of a service's health server: status and body."""
        url = f"http://127.0.0.1:{self.ports[service]}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                return int(error.code), error.read().decode()

    def logs(self) -> str:
        """The last lines of every service, for failure messages."""
        return "\n".join(f"--- {n} ---\n{p.tail(12)}" for n, p in self.services.items())


def eventually(
    check: Callable[[], bool], what: str, system: ServedSystem, limit: float = LIMIT
) -> None:
    """Poll ``check`` until it holds; fail with ``what`` and the services' logs otherwise."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {limit:.0f}s\n{system.logs()}")
        time.sleep(0.2)


@contextlib.contextmanager
def served_system(
    bootstrap: str, prefix: str, *, cluster_args: Sequence[str] = ()
) -> Iterator[ServedSystem]:
    """Run the five services, each with a health server, for the block."""
    asyncio.run(_create_topics(bootstrap, prefix))
    with Processes() as processes:
        ports = {name: free_port() for name in SERVICES}
        services: dict[str, ServiceProcess] = {}
        for name in SERVICES:
            env = service_env(
                bootstrap,
                prefix,
                VCBUS_PARTITIONS=str(PARTITIONS),
                VCBUS_POLL_TIMEOUT="0.1",
                VCBUS_HEALTH_PORT=str(ports[name]),
                VCBUS_HEALTH_HOST="127.0.0.1",
            )
            args = ["serve", name, *(cluster_args if name == "cluster" else ())]
            services[name] = processes.start(name, "vcbus.services.cli", *args, env=env)
        system = ServedSystem(bootstrap, prefix, ports, services)

        def all_ready() -> bool:
            return all(_answers(system, name) == 200 for name in SERVICES)

        eventually(all_ready, "every /readyz answering 200", system)
        yield system


def _answers(system: ServedSystem, service: str) -> int:
    try:
        return system.get(service, "/readyz")[0]
    except OSError:
        return 0


async def _create_topics(bootstrap: str, prefix: str) -> None:
    await ensure_topics(
        AioKafkaBus(KafkaSettings(bootstrap_servers=bootstrap)), [], prefix, PARTITIONS
    )


def run_cli(
    system: ServedSystem,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str, str]:
    """Run ``vcbus <args>`` in this process against ``system``: exit status, stdout, stderr."""
    for name in [k for k in os.environ if k.startswith(("KAFKA_", "VCBUS_", "OTEL_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", system.bootstrap)
    monkeypatch.setenv("VCBUS_TOPIC_PREFIX", system.prefix)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()
