"""``vcbus logs JOB``: the logs of a job's pods, read from the agents that run them.

As ``kubectl logs``: ``--task`` and ``--index`` pick pods (default every pod of the job,
each line prefixed ``[<pod>]`` when there are several), ``-c`` a container (default the
pod's first), ``--tail N`` the last lines, ``--previous`` the run before the last restart,
``-f`` follows until the container ends. The CLI finds each pod's node on ``pods.status``
and the node's agent on ``nodes`` (labels ``vcbus.io/address``, ``vcbus.io/agent-port``),
then asks that agent over HTTPS. The token (``VCBUS_AGENT_TOKEN``, or the file
``VCBUS_AGENT_TOKEN_FILE`` names, as ``vcbus up --agent`` prints) is sent only to an
agent that proves it is that node: its certificate is issued by the cluster's CA
(``VCBUS_AGENT_TLS_CAFILE``) for the node's name. A ``nodes`` record only says where to
knock; anyone who can write one could name their own listener. A pod on a simulated node
has no log. A pod deleted by its job's policy (or with its job's end) is found with
``--previous``: its agent keeps its last incarnation's logs.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import http.client
import os
import socket
import ssl
import sys
import threading
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from vcbus.contracts import NodeChanged, NodeHeartbeat, NodeRegistered, Topic
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.settings import Settings
from vcbus.services.agent.face import (
    ENV_CAFILE,
    ENV_CERTFILE,
    ENV_KEYFILE,
    ENV_TOKEN,
    ENV_TOKEN_FILE,
)
from vcbus.services.cli import terminal
from vcbus.services.cli.agent import LABEL_ADDRESS, LABEL_AGENT_HOST, LABEL_AGENT_PORT, is_loopback
from vcbus.services.cli.status_store import StatusStore, read_store


@dataclass(frozen=True, slots=True)
class Target:
    """One pod's log endpoint."""

    pod: str
    host: str
    port: int
    node: str = ""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus logs``."""
    parser = sub.add_parser("logs", help="print the logs of a job's pods (real nodes)")
    parser.add_argument("job", metavar="JOB", help="name or namespace/name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--task", help="only this task's pods")
    parser.add_argument("--index", type=int, help="only the pod of this index")
    parser.add_argument("-c", "--container", default="", help="[the pod's first container]")
    parser.add_argument("-f", "--follow", action="store_true", help="stream until it ends")
    parser.add_argument("--tail", type=int, help="only the last N lines")
    parser.add_argument("-p", "--previous", action="store_true", help="the run before a restart")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the logs; 1 when no pod of the job matches or an agent refuses."""
    key = args.job if "/" in args.job else f"{args.namespace}/{args.job}"
    settings = Settings.from_env()
    targets, problems = asyncio.run(
        find_targets(settings, key, args.task, args.index, previous=args.previous)
    )
    for problem in problems:
        terminal.error(problem + "\n")
    if not targets:
        if not problems:
            terminal.error(f"no pod of job {key} matches\n")
        return 1
    query = {"container": args.container, "follow": "1" if args.follow else ""}
    if args.tail is not None:
        query["tail"] = str(args.tail)
    if args.previous:
        query["previous"] = "1"
    prefix = len(targets) > 1
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(targets)) as pool:
        results = list(pool.map(lambda t: fetch(t, query, prefix=prefix, lock=lock), targets))
    return 0 if all(results) else 1


async def find_targets(
    settings: Settings, job: str, task: str | None, index: int | None, *, previous: bool = False
) -> tuple[list[Target], list[str]]:
    """The job's pods that match, with their agents' endpoints; and what could not be found.

    With ``previous``, pods deleted and not created again count too (a pod its job's policy
    killed, the pods of a job that ended Failed): their node's agent keeps their last logs.
    """
    store = await read_store(
        AioKafkaBus(settings.kafka),
        settings,
        (Topic.PODS, Topic.PODS_STATUS, Topic.BINDINGS, Topic.NODES),
        keys=[job],
        whole=frozenset({Topic.NODES}),
    )
    targets, problems = [], []
    rows = {**store.gone_pods, **store.pods} if previous else store.pods
    for pod, row in sorted(rows.items()):
        if row.job != job or (task is not None and row.task != task):
            continue
        if index is not None and pod.rpartition("-")[2] != str(index):
            continue
        found = target_of(store, pod)
        if isinstance(found, Target):
            targets.append(found)
        else:
            problems.append(found)
    return targets, problems


def target_of(store: StatusStore, pod: str) -> Target | str:
    """Where pod ``namespace/name``'s log is served, or why it is not.

    Its node is the one ``pods.status`` names; the node's agent is found by the labels it
    registered (``vcbus.io/address``, ``vcbus.io/agent-port``).
    """
    row = store.pods.get(pod) or store.gone_pods.get(pod)
    if row is None or not row.node:
        return f"pod {pod} is not bound to a node yet"
    node = store.get(Topic.NODES, row.node)
    labels = (
        node.node.labels if isinstance(node, NodeRegistered | NodeChanged | NodeHeartbeat) else {}
    )
    if LABEL_ADDRESS not in labels or LABEL_AGENT_PORT not in labels:
        return f"pod {pod} runs on node {row.node}, which has no agent (no logs)"
    address, port = labels[LABEL_ADDRESS], int(labels[LABEL_AGENT_PORT])
    listen = labels.get(LABEL_AGENT_HOST, "")
    if is_loopback(listen) and not is_loopback(address):
        if _is_local(address):
            return Target(pod, listen, port, row.node)  # that agent runs on this host
        return (
            f"pod {pod} runs on node {row.node}, whose agent serves logs on its own loopback "
            f"only ({listen}:{port}; it has no TLS certificate): start that agent with "
            f"{ENV_CERTFILE} and {ENV_KEYFILE} (a certificate the cluster's CA issued for "
            f"its node name, docs/security.md; it then listens on every address, "
            f"{address}:{port} too), or run vcbus logs on that host"
        )
    if listen and listen not in ("0.0.0.0", "::"):
        return Target(pod, listen, port, row.node)
    return Target(pod, address, port, row.node)


def _is_local(address: str) -> bool:
    """Whether ``address`` is one of this host's (it can be bound here)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


def request_log(target: Target, query: dict[str, str]) -> http.client.HTTPConnection:
    """Ask the pod's agent for its log (the token and TLS of ``vcbus logs``); the connection.

    The caller reads ``getresponse()`` and closes the connection.
    """
    namespace, _, name = target.pod.partition("/")
    path = f"/pods/{quote(namespace)}/{quote(name)}/log?{urlencode(query)}"
    cafile = os.environ.get(ENV_CAFILE, "")
    token = agent_token()
    if token and not cafile:
        raise UnverifiedNodeError(
            f"not sending {ENV_TOKEN} to node {target.node or '?'} at {target.host}:"
            f"{target.port}: nothing proves that address is the node (set {ENV_CAFILE} to "
            "the CA that issued the agents' certificates)"
        )
    connection: http.client.HTTPConnection = (
        NodeConnection(
            target.host, target.port, target.node, ssl.create_default_context(cafile=cafile)
        )
        if cafile
        else http.client.HTTPConnection(target.host, target.port)
    )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connection.request("GET", path, headers=headers)
    return connection


def agent_token() -> str:
    """``VCBUS_AGENT_TOKEN``, else what the file ``VCBUS_AGENT_TOKEN_FILE`` names holds."""
    token = os.environ.get(ENV_TOKEN, "")
    path = os.environ.get(ENV_TOKEN_FILE, "")
    if token or not path:
        return token
    with open(path, encoding="ascii") as source:
        return source.read(4096).strip()


class UnverifiedNodeError(OSError):
    """The agent's identity cannot be checked, so its credential is not sent."""


class NodeConnection(http.client.HTTPSConnection):
    """HTTPS to an agent's address, its certificate checked against its node's name.

    The name checked is the node's (as the bindings name it), not the address the
    ``nodes`` record gives: a listener at that address without the node's certificate
    from the cluster's CA fails the handshake before any header is sent.
    """

    def __init__(self, host: str, port: int, node: str, context: ssl.SSLContext) -> None:
        super().__init__(host, port, context=context, timeout=30)
        self._node = node
        self._tls = context

    def connect(self) -> None:
        """Connect, then the TLS handshake with ``server_hostname`` = the node's name."""
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self._node)


def fetch(target: Target, query: dict[str, str], *, prefix: bool, lock: threading.Lock) -> bool:
    """Copy one pod's log to standard output; False when the agent refused or failed."""
    name = target.pod.partition("/")[2]
    connection: http.client.HTTPConnection | None = None
    try:
        connection = request_log(target, query)
        response = connection.getresponse()
        if response.status != 200:
            body = response.read().decode(errors="replace").strip()
            terminal.error(f"pod {target.pod}: {body} (HTTP {response.status})\n")
            return False
        tag = f"[{name}] ".encode() if prefix else b""
        pending = b""
        while chunk := response.read1(65536):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if lines:
                with lock:
                    sys.stdout.buffer.write(b"".join(tag + line + b"\n" for line in lines))
                    sys.stdout.buffer.flush()
        if pending:
            with lock:
                sys.stdout.buffer.write(tag + pending)
                sys.stdout.buffer.flush()
        return True
    except OSError as exc:
        terminal.error(f"pod {target.pod}: agent at {target.host}:{target.port}: {exc}\n")
        return False
    finally:
        if connection is not None:
            connection.close()
