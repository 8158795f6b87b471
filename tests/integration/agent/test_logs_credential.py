"""The logs endpoint's credential: the agent always wants one, and the CLI gives it only to
the node it means, proven by the cluster CA's certificate for that node's name."""

from __future__ import annotations

import http.client
import socket
import ssl
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import Processes, event, service_env
from vcbus.services.agent.app.logserver import TOKEN_FILE
from vcbus.services.cli.cluster_ca import KeyPair, issue, make_ca
from vcbus.services.cli.logs import Target, fetch

pytestmark = pytest.mark.integration

TOKEN = "the-real-logs-token"


class Listener:
    """An attacker's listener: it records every byte a client sends it, then hangs up."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.received = b""
        self._tls = tls
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self.sock.accept()
        connection.settimeout(10)
        try:
            if self._tls is not None:
                connection = self._tls.wrap_socket(connection, server_side=True)
            while chunk := connection.recv(65536):
                self.received += chunk
                if b"\r\n\r\n" in self.received:
                    break
        except (OSError, ssl.SSLError):
            pass
        finally:
            connection.close()

    def close(self) -> None:
        self._thread.join(timeout=15)
        self.sock.close()


@pytest.fixture
def ca(tmp_path: Path) -> KeyPair:
    return make_ca(tmp_path / "ca")


def _fetch(listener: Listener) -> bool:
    # the forged nodes record: node-a's agent is "at" the attacker's listener
    target = Target("default/victim-0", "127.0.0.1", listener.port, node="node-a")
    try:
        return fetch(target, {"tail": "10"}, prefix=False, lock=threading.Lock())
    finally:
        listener.close()


def test_a_forged_node_record_does_not_capture_the_token_without_a_ca(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack: a bus writer publishes a ``nodes`` record saying node-a's agent listens at
    an address of theirs; ``vcbus logs`` used to send it ``VCBUS_AGENT_TOKEN`` in clear.
    With no CA to check the node by, the token is not sent at all."""
    monkeypatch.setenv("VCBUS_AGENT_TOKEN", TOKEN)
    monkeypatch.delenv("VCBUS_AGENT_TLS_CAFILE", raising=False)
    listener = Listener()
    assert not _fetch(listener)
    assert TOKEN.encode() not in listener.received


def test_a_forged_node_record_does_not_capture_the_token_from_another_node(
    monkeypatch: pytest.MonkeyPatch, ca: KeyPair, tmp_path: Path
) -> None:
    """Attack: the listener is a real agent of the cluster, node-b, with the cluster CA's
    certificate for node-b, and a forged record sends node-a's log requests to it. The CLI
    checks the certificate against node-a: the handshake fails before any header."""
    monkeypatch.setenv("VCBUS_AGENT_TOKEN", TOKEN)
    monkeypatch.setenv("VCBUS_AGENT_TLS_CAFILE", str(ca.cert))
    other = issue(ca, "node-b", tmp_path / "node-b")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(other.cert, other.key)
    listener = Listener(context)
    assert not _fetch(listener)
    assert TOKEN.encode() not in listener.received


@pytest.fixture
def agent_dir() -> Iterator[Path]:
    """A data directory every user can search (the pods run as ``nobody``)."""
    base = Path(tempfile.mkdtemp(prefix="vcbus-logs-credential-"))
    base.chmod(0o711)
    yield base
    import shutil  # noqa: PLC0415

    shutil.rmtree(base, ignore_errors=True)


def _get(port: int, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/pods/default/victim-0/log", headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_logs_endpoint_refuses_a_request_without_the_credential(
    kafka_bootstrap: str, topic_prefix: str, agent_dir: Path
) -> None:
    """Attack: a local process (a pod) asks the agent's logs endpoint for another pod's log
    without any token (an agent given none used to serve every log to anyone). The agent
    made its own token, kept 0600, and answers 401 without it."""
    from vcbus.core.bus.broker import free_port  # noqa: PLC0415

    port = free_port()
    with Processes() as processes:
        agent = processes.start(
            "agent",
            "vcbus.services.cli",
            "agent",
            "--node-name",
            "logs-credential",
            "--data-dir",
            str(agent_dir),
            "--run-as",
            "nobody",
            "--listen-port",
            str(port),
            "--no-limits",
            env=service_env(kafka_bootstrap, topic_prefix),
        )
        agent.wait_for(event("node_registered"))
        token_file = agent_dir / TOKEN_FILE
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert _get(port, {}) == 401
        assert _get(port, {"Authorization": "Bearer not-the-token"}) == 401
        # with the token: past the check (no such pod here)
        assert _get(port, {"Authorization": f"Bearer {token}"}) == 404
