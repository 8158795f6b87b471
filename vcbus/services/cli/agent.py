"""``vcbus agent``: run this host as a real node of the cluster, until SIGTERM or SIGINT.

The node (docs/design.md#real-nodes): its name (``--node-name``, default the host name), its
allocatable (the host's cpus and memory less ``--reserve-cpu``/``--reserve-memory``; ``--cpu``,
``--memory`` and ``--pods`` override), its labels (``kubernetes.io/hostname``, ``os``,
``arch``, ``vcbus.io/address`` and ``vcbus.io/agent-port`` for the logs endpoint, plus
``--label``) and taints (``--taint key=value:Effect``).

Pods run, when the agent is root, each as a uid (and gid) of its own from ``--pod-uids``
(default 200000-265535, no passwd entry needed), freed when the pod is forgotten; with
``--run-as USER[:GROUP]`` every pod runs as that user instead (pods then share a user);
the agent's own user when it is not root. Root only with ``--allow-root``; a pod's own
``runAsUser``/``runAsGroup`` only with ``--allow-pod-users``; ``hostPath`` volumes only
under ``--host-path-allow`` (both sides compared resolved). Host ports come from
``--port-range``. With root and cgroups (v2, or v1's memory and cpu, and pids where present)
each pod gets its cpu quota, memory limit and ``--pids-limit`` (default 1024); otherwise
the agent says at start, in its heartbeat and in each pod's status that limits are not
enforced.
"""

from __future__ import annotations

import argparse
import asyncio
import grp
import ipaddress
import os
import platform
import pwd
import socket
import stat
from pathlib import Path

import structlog

from vcbus.contracts.objects.node import Node, Taint
from vcbus.contracts.quantity import CPU, MEMORY, PODS, QuantityError, to_base_units
from vcbus.core.authority import TRUST_SETTING, load_trust
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.services.agent.face import (
    DEFAULT_PIDS_MAX,
    ENV_CERTFILE,
    ENV_KEYFILE,
    ENV_TOKEN,
    TOKEN_FILE,
    AgentConf,
    AgentOptions,
    Policy,
    ServerOptions,
    build_service,
    detect,
    load_or_make_token,
    parse_range,
    podman,
)
from vcbus.services.cli.serve import serve

DEFAULT_DATA_DIR = "/var/lib/vcbus-agent"
DEFAULT_RUN_AS = "vcbus-pod"
DEFAULT_LISTEN_PORT = 10260
DEFAULT_PORT_RANGE = "30000-32767"
DEFAULT_POD_UIDS = "200000-265535"
LABEL_ADDRESS = "vcbus.io/address"
LABEL_AGENT_PORT = "vcbus.io/agent-port"
LABEL_AGENT_HOST = "vcbus.io/agent-host"
"""Where the logs endpoint listens (``0.0.0.0``: every address, so ``vcbus.io/address``)."""
LABEL_AGENT = "vcbus.io/agent"
LABEL_RUNTIME = "vcbus.io/runtime"
RUNTIMES = ("process", "podman", "auto")
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

log = structlog.get_logger("vcbus.agent")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus agent``."""
    parser = sub.add_parser(
        "agent", help="run this host as a real node: bound pods in containers or as processes"
    )
    add_agent_options(parser)
    parser.set_defaults(func=run)


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The agent's options (shared with ``vcbus up --agent``)."""
    parser.add_argument("--node-name", default=socket.gethostname(), help="[the host name]")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"[{DEFAULT_DATA_DIR}]")
    parser.add_argument("--cpu", help="allocatable cpu [the host's, less --reserve-cpu]")
    parser.add_argument("--memory", help="allocatable memory [the host's, less --reserve-memory]")
    parser.add_argument("--pods", type=int, default=110, help="pod slots [110]")
    parser.add_argument("--reserve-cpu", default="500m", help="kept for the host [500m]")
    parser.add_argument("--reserve-memory", default="512Mi", help="kept for the host [512Mi]")
    parser.add_argument("--label", action="append", default=[], help="key=value node label")
    parser.add_argument("--taint", action="append", default=[], help="key=value:Effect")
    parser.add_argument(
        "--run-as", default="", help="USER[:GROUP] every pod runs as [a uid of its own when root]"
    )
    parser.add_argument(
        "--pod-uids",
        default=DEFAULT_POD_UIDS,
        help=f"uids (and gids) given one per pod when root and no --run-as [{DEFAULT_POD_UIDS}]",
    )
    parser.add_argument(
        "--pids-limit",
        type=int,
        default=DEFAULT_PIDS_MAX,
        help=f"processes and threads one pod may hold, 0 for none [{DEFAULT_PIDS_MAX}]",
    )
    parser.add_argument("--allow-root", action="store_true", help="pods may run as root")
    parser.add_argument(
        "--allow-pod-users", action="store_true", help="honour a pod's runAsUser (not root)"
    )
    parser.add_argument(
        "--host-path-allow", action="append", default=[], help="a hostPath prefix pods may use"
    )
    parser.add_argument(
        "--port-range",
        default=DEFAULT_PORT_RANGE,
        help=f"host ports for pods [{DEFAULT_PORT_RANGE}]",
    )
    parser.add_argument("--address", default="", help="the address peers reach pods at [found]")
    parser.add_argument(
        "--listen-host",
        default="",
        help="logs endpoint address [0.0.0.0 with a TLS certificate, else loopback]",
    )
    parser.add_argument(
        "--listen-port",
        type=int,
        default=DEFAULT_LISTEN_PORT,
        help=f"logs endpoint port, 0 for any free one [{DEFAULT_LISTEN_PORT}]",
    )
    parser.add_argument("--heartbeat", type=float, default=10.0, help="seconds between heartbeats")
    parser.add_argument(
        "--peer-wait",
        type=float,
        default=120.0,
        help="seconds a pod waits for its peers' addresses before it fails [120]",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="auto",
        help="how pods run: host processes, podman containers, or podman where it works "
        "and host processes elsewhere (auto) [auto]",
    )
    parser.add_argument(
        "--no-limits", action="store_true", help="do not put pods in cgroups (limits not enforced)"
    )
    parser.add_argument(
        "--trust",
        default="",
        help=(
            f"file of admission's and the allocator's public keys: only launches they signed "
            f"run here [${TRUST_SETTING}; none: launches are not verified]"
        ),
    )


def _resolved(host: str) -> str:
    """``host`` as an address (a name resolved; one that does not resolve counts as remote)."""
    try:
        return str(socket.getaddrinfo(host, None)[0][4][0])
    except (socket.gaierror, IndexError):
        return "0.0.0.0"


def options_from(args: argparse.Namespace, settings: Settings) -> AgentOptions:
    """The agent's options from the command line; the logs endpoint's socket is bound.

    Raises:
        SettingsError: a value that cannot be used, saying which and why.
    """
    node_name = args.node_name
    data_dir = Path(args.data_dir).resolve()
    pod_users = None
    if os.geteuid() == 0 and not args.run_as:
        pod_users = pod_uid_range(args.pod_uids)
        user, group = None, None
        check_reachable(data_dir, pod_users[0])
    else:
        user, group = run_as(args.run_as, allow_root=args.allow_root)
        if user is not None:
            check_reachable(data_dir, user)
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        port_range = parse_range(args.port_range)
    except ValueError as exc:
        raise SettingsError(f"--port-range: {exc}") from None
    trust_file = args.trust or os.environ.get(TRUST_SETTING, "")
    try:
        trust = load_trust(Path(trust_file)) if trust_file else None
    except (OSError, ValueError) as exc:
        raise SettingsError(f"--trust: {exc}") from None
    allocatable = _allocatable(args)
    extra_labels = _pairs(args.label, "--label")
    taints = tuple(_taint(text) for text in args.taint)
    address = args.address or host_address(settings.kafka.bootstrap_servers)
    token = os.environ.get(ENV_TOKEN, "") or load_or_make_token(data_dir / TOKEN_FILE)
    certfile, keyfile = os.environ.get(ENV_CERTFILE, ""), os.environ.get(ENV_KEYFILE, "")
    listen_host = args.listen_host or ("0.0.0.0" if certfile else "127.0.0.1")
    if not certfile and not ipaddress.ip_address(_resolved(listen_host)).is_loopback:
        raise SettingsError(
            f"--listen-host {listen_host}: the logs endpoint serves beyond loopback only over "
            f"TLS; give its certificate and key ({ENV_CERTFILE}, {ENV_KEYFILE}), issued for "
            f"the node's name {node_name!r} by the cluster's CA (docs/security.md)"
        )
    sock = _listen(listen_host, args.listen_port)
    cgroups, why = (
        (None, "--no-limits")
        if args.no_limits
        else detect(node_name, pids_max=max(args.pids_limit, 0))
    )
    runtime, runtime_why = pick_runtime(args.runtime)
    labels = {
        LABEL_RUNTIME: runtime,
        "kubernetes.io/hostname": node_name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": ARCHES.get(platform.machine(), platform.machine()),
        LABEL_AGENT: "true",
        LABEL_ADDRESS: address,
        LABEL_AGENT_PORT: str(sock.getsockname()[1]),
        LABEL_AGENT_HOST: listen_host,
        **extra_labels,
    }
    return AgentOptions(
        conf=AgentConf(
            node=node_name,
            host_ip=address,
            allocatable=allocatable,
            port_range=port_range,
            limits_enforced=cgroups is not None,
            pod_users=pod_users,
        ),
        node=Node(
            name=node_name,
            allocatable=allocatable,
            labels=labels,
            taints=taints,
        ),
        data_dir=data_dir,
        policy=Policy(
            user=user,
            group=group,
            allow_root=args.allow_root,
            allow_pod_users=args.allow_pod_users,
            host_paths=tuple(os.path.realpath(path) for path in args.host_path_allow),
            path=os.environ.get("PATH", "") or Policy().path,
        ),
        heartbeat_seconds=args.heartbeat,
        peer_wait_seconds=args.peer_wait,
        server=ServerOptions(
            sock=sock,
            token=token,
            certfile=certfile,
            keyfile=keyfile,
        ),
        cgroups=cgroups,
        limits_reason=why,
        trust=trust,
        runtime="" if runtime == "process" else runtime,
        runtime_reason=runtime_why,
    )


def pick_runtime(asked: str) -> tuple[str, str]:
    """The runtime to use for ``--runtime``, and why podman is not used (empty when it is).

    Raises:
        SettingsError: ``--runtime podman`` where podman cannot run containers.
    """
    if asked == "process":
        return "process", "--runtime process"
    problem = podman.unavailable()
    if problem and asked == "podman":
        raise SettingsError(f"--runtime podman: {problem}")
    return ("process", problem) if problem else ("podman", "")


def _listen(host: str, port: int) -> socket.socket:
    """The logs endpoint's socket, bound and listening.

    Raises:
        SettingsError: the address cannot be used.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SettingsError(
            f"the logs endpoint cannot listen on {host}:{port}: {exc.strerror}; "
            "pick another --listen-port (0: any free one)"
        ) from None
    sock.listen(64)
    return sock


def run(args: argparse.Namespace) -> int:
    """Run the agent until SIGTERM or SIGINT; 0 on a clean stop (its pods run on)."""
    configure_logging("agent", cache=True)
    configure_tracing("agent")
    settings = Settings.from_env()
    options = options_from(args, settings)
    runtime = options.runtime or "process"
    log.info("runtime", node=options.conf.node, runtime=runtime, why=options.runtime_reason)
    if not options.runtime and options.runtime_reason != "--runtime process":
        log.warning(
            "container_runtime_unavailable",
            node=options.conf.node,
            why=options.runtime_reason,
            runtime="process",
        )
    if not options.conf.limits_enforced:
        log.warning("limits_not_enforced", node=options.conf.node, why=options.limits_reason)
    listen_host = options.node.labels[LABEL_AGENT_HOST]
    if is_loopback(listen_host) and not is_loopback(options.conf.host_ip):
        log.warning(
            "logs_on_loopback_only",
            node=options.conf.node,
            listen=listen_host,
            address=options.conf.host_ip,
            fix=f"give it {ENV_CERTFILE} and {ENV_KEYFILE} (then it listens on every address), "
            "so that vcbus logs on another host reaches it",
        )
    service, _ = build_service(options, SystemClock())
    log.info(
        "agent_starting",
        node=options.conf.node,
        address=options.conf.host_ip,
        data_dir=str(options.data_dir),
        run_as=options.policy.user,
        limits_enforced=options.conf.limits_enforced,
        logs_port=options.node.labels[LABEL_AGENT_PORT],
    )
    try:
        asyncio.run(serve(service, settings, instance=options.conf.node, health=None))
    finally:
        shutdown_tracing()
    return 0


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_as(
    text: str, *, allow_root: bool, euid: int | None = None
) -> tuple[int | None, int | None]:
    """The uid and gid pods run as (None, None: the agent's own, when it is not root).

    Args:
        text: ``--run-as``: ``USER[:GROUP]``, names or numbers; empty for the default.
        allow_root: ``--allow-root``.
        euid: the agent's effective uid (the process's when None).

    Raises:
        SettingsError: an unknown user, or root without ``--allow-root``.
    """
    if (os.geteuid() if euid is None else euid) != 0:
        if text:
            raise SettingsError("--run-as needs the agent to run as root (it switches users)")
        return None, None
    name, _, group_name = (text or DEFAULT_RUN_AS).partition(":")
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except KeyError:
        hint = (
            f"create it (useradd --system --no-create-home {DEFAULT_RUN_AS}), " if not text else ""
        )
        raise SettingsError(
            f"pods would run as user {name!r}, which does not exist: {hint}"
            "pass --run-as USER, or --run-as root --allow-root"
        ) from None
    gid = entry.pw_gid
    if group_name:
        try:
            gid = int(group_name) if group_name.isdigit() else grp.getgrnam(group_name).gr_gid
        except KeyError:
            raise SettingsError(f"--run-as: no group {group_name!r}") from None
    if entry.pw_uid == 0 and not allow_root:
        raise SettingsError("pods would run as root: pass --allow-root to allow it")
    return entry.pw_uid, gid


def pod_uid_range(text: str) -> tuple[int, int]:
    """``--pod-uids LOW-HIGH``: uids above the host's own users, never root.

    Raises:
        SettingsError: not a range, or one holding 0.
    """
    first, sep, last = text.partition("-")
    if not (sep and first.isdigit() and last.isdigit()):
        raise SettingsError(f"--pod-uids {text!r} is not LOW-HIGH, like {DEFAULT_POD_UIDS}")
    low, high = int(first), int(last)
    if not 0 < low <= high < 2**31 - 1:
        raise SettingsError(f"--pod-uids {text!r}: must be 1 <= LOW <= HIGH (root is no pod's)")
    return low, high


def check_reachable(data_dir: Path, user: int) -> None:
    """Refuse a data directory the pods' user could not reach (a parent it cannot search).

    Raises:
        SettingsError: naming the parent that stops it.
    """
    for parent in data_dir.parents:
        status = parent.stat()
        if status.st_uid != user and not status.st_mode & stat.S_IXOTH:
            raise SettingsError(
                f"--data-dir {data_dir}: pods run as uid {user} cannot reach their directories, "
                f"{parent} is not searchable by others (chmod o+x {parent}, or choose another)"
            )


def host_address(bootstrap: str) -> str:
    """The address of the interface that reaches the broker (peers reach pods there)."""
    first = bootstrap.split(",", maxsplit=1)[0].strip()
    host, _, port = first.rpartition(":")
    host = host.strip("[]") or first
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((host, int(port) if port.isdigit() else 9092))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def _allocatable(args: argparse.Namespace) -> dict[str, int]:
    try:
        cpu = (
            to_base_units(CPU, args.cpu)
            if args.cpu
            else max((os.cpu_count() or 1) * 1000 - to_base_units(CPU, args.reserve_cpu), 0)
        )
        memory = (
            to_base_units(MEMORY, args.memory)
            if args.memory
            else max(_host_memory() - to_base_units(MEMORY, args.reserve_memory), 0)
        )
    except QuantityError as exc:
        raise SettingsError(f"--cpu/--memory/--reserve-*: {exc}") from None
    return {CPU: cpu, MEMORY: memory, PODS: args.pods}


def _host_memory() -> int:
    with Path("/proc/meminfo").open() as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SettingsError(f"{flag} takes key=value, got {item!r}")
        out[key] = value
    return out


def _taint(text: str) -> Taint:
    pair, _, effect = text.rpartition(":")
    if not pair:
        pair, effect = text, "NoSchedule"
    key, _, value = pair.partition("=")
    if not key or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise SettingsError(f"--taint takes key=value:Effect (NoSchedule...), got {text!r}")
    return Taint(key=key, value=value, effect=effect)
