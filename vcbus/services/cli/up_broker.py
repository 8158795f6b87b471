"""``vcbus up``'s broker: the one ``KAFKA_BOOTSTRAP_SERVERS`` names, else Tansu, gated.

Where the embedded broker listens (``--listen``, ``--advertise``, ``--port``), its one
user's credentials, TLS beyond loopback, and the lines that tell the CLI of another shell
and another host how to reach it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from vcbus.contracts.topics import DEFAULT_PREFIX
from vcbus.core.bus.broker import EmbeddedBroker, start_broker, start_gated_broker
from vcbus.core.bus.credentials import CREDENTIALS_ENV, FILE_NAME, BusCredentials
from vcbus.core.bus.errors import BrokerStartError, BrokerUnavailableError
from vcbus.core.bus.listeners import Listener, ListenerError, parse_address
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.services.cli import require_broker, terminal
from vcbus.services.cli.broker import listener_from
from vcbus.services.cli.cluster_ca import KeyPair, ensure_ca, issue

DEFAULT_BROKER_PORT = 9092
"""The embedded broker's port when free."""
BROKER_HOST = "127.0.0.1"
"""Where the embedded broker listens unless ``--listen`` says otherwise."""


STALE_BOOTSTRAP = (
    "with KAFKA_BOOTSTRAP_SERVERS set, `vcbus up` uses that broker and starts none; "
    "if it is the address an earlier `vcbus up` printed, that broker stopped with it: "
    "`unset KAFKA_BOOTSTRAP_SERVERS` and run `vcbus up` again to start a broker of its own"
)
"""What ``vcbus up`` says when the broker ``KAFKA_BOOTSTRAP_SERVERS`` names does not answer."""


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def broker_listener(listen: str, advertise: str, port: int | None) -> Listener:
    """The embedded broker's listener: ``--listen``, ``--advertise``, ``--port``.

    The port: ``--listen``'s, else ``--port`` (which must be free), else 9092 when free,
    else any free one.

    Raises:
        SettingsError: a bad address, or a wildcard the broker would advertise.
        BrokerStartError: the port asked for is taken.
    """
    try:
        host, listen_port = parse_address(listen, "--listen") if listen else ("", None)
    except ListenerError as exc:
        raise SettingsError(str(exc)) from None
    host = host or BROKER_HOST
    port = listen_port or port
    if port is not None and not _port_free(host, port):
        raise BrokerStartError(f"port {port} is taken; choose another with --port")
    if port is None and _port_free(host, DEFAULT_BROKER_PORT):
        port = DEFAULT_BROKER_PORT
    return listener_from("", advertise, port, host=host)


def join_lines(chosen: Listener, env: dict[str, str]) -> str:
    """How another host joins this cluster as a node: the exact ``vcbus agent`` command.

    ``env`` is what the agent needs beside the broker's address (the topic prefix). With
    a broker only this host reaches, how to open it to others instead.
    """
    if chosen.local:
        return (
            f"other hosts: the broker listens on {chosen.listen_host} only; "
            "--listen 0.0.0.0 --advertise ADDRESS lets them join as nodes\n"
        )
    pairs = " ".join(f"{name}={value}" for name, value in env.items())
    return (
        "another host joins as a node with (vcbus installed there; "
        f"port {chosen.advertised_port} open to it):\n"
        f"  {pairs} vcbus agent --node-name NAME\n"
    )


def make_bus_credentials(data_dir: Path, ca: KeyPair | None = None) -> Path:
    """Make the embedded broker's one user, in a file of ``data_dir`` only this user reads.

    A new password each ``up`` (the broker keeps nothing either); services, the agent and
    the CLI name the file in ``VCBUS_KAFKA_CREDENTIALS``; pods never see it (a pod's
    environment is its template's, ``vcbus.services.agent.launch``). With ``ca`` (a broker
    beyond loopback) the file says ``SASL_SSL``, checked against that CA.
    """
    path = (data_dir / FILE_NAME).absolute()
    extra = {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SSL_CAFILE": str(ca.cert)} if ca else {}
    BusCredentials.make().write(path, extra)
    return path


def start_embedded_broker(chosen: Listener, log_dir: Path) -> tuple[EmbeddedBroker, dict[str, str]]:
    """Tansu behind the password gate (TLS beyond loopback), and what its clients need.

    Where no network namespace can be made (not root, no user namespaces), Tansu alone,
    open to every local process, with a warning: nothing else would keep others off it.
    """
    tls, ca = None, None
    if not chosen.local:
        ca = ensure_ca(log_dir / "ca")
        pair = issue(ca, chosen.advertised_host, log_dir / "ca")
        tls = (pair.cert, pair.key)
    credentials = make_bus_credentials(log_dir, ca)
    try:
        broker = start_gated_broker(
            credentials,
            chosen.listen_host,
            chosen.listen_port,
            advertised=chosen.advertised,
            tls=tls,
        )
    except BrokerStartError as exc:
        credentials.unlink(missing_ok=True)
        terminal.error(f"vcbus up: WARNING: the broker is open to every local process: {exc}\n")
        broker = start_broker(chosen.listen_host, chosen.listen_port, advertised=chosen.advertised)
        return broker, {}
    return broker, {CREDENTIALS_ENV: str(credentials)}


@contextlib.contextmanager
def bootstrap_broker(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, str]]]:
    """The broker's address and client settings: ``KAFKA_BOOTSTRAP_SERVERS``'s, else Tansu's."""
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        try:
            require_broker(Settings.from_env())
        except BrokerUnavailableError as exc:
            raise BrokerUnavailableError(
                f"{exc} (KAFKA_BOOTSTRAP_SERVERS is set in this shell)", hint=STALE_BOOTSTRAP
            ) from None
        terminal.write(f"broker: {given} (KAFKA_BOOTSTRAP_SERVERS)\n")
        yield given, {}
        return
    chosen = broker_listener(args.listen, args.advertise, args.port)
    broker, client_env = start_embedded_broker(chosen, Path(args.log_dir))
    exports = {"KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers, **client_env}
    prefix = os.environ.get("VCBUS_TOPIC_PREFIX", DEFAULT_PREFIX)
    if prefix != DEFAULT_PREFIX:
        exports["VCBUS_TOPIC_PREFIX"] = prefix
    listening = (
        ""
        if chosen.advertised == f"{chosen.listen_host}:{chosen.listen_port}"
        else f" (listening on {chosen.listen_host}:{chosen.listen_port})"
    )
    terminal.write(
        f"broker: Tansu on {broker.bootstrap_servers}{listening}"
        + (" (SCRAM-SHA-512 users only)" if broker.gated else "")
        + "; for the CLI in another shell:\n"
        f"  export {' '.join(f'{name}={value}' for name, value in exports.items())}\n"
        + join_lines(chosen, exports)
    )
    try:
        yield broker.bootstrap_servers, client_env
    finally:
        broker.stop()
