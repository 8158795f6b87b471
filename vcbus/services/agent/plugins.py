"""What Volcano's job plugins give a pod, for a pod run as host processes.

Port of volcano-sh/volcano ``pkg/controllers/job/plugins/`` at HEAD ``ed72c7c8``:
``env/env.go``, ``svc/svc.go``, ``ssh/ssh.go`` and
``distributed-framework/{pytorch,mpi,tensorflow}/*.go`` (``OnPodCreate``, and ``OnJobAdd``
for the files a plugin's ConfigMap or Secret mounts). Pure: no I/O, no clock.

How to call it (the agent's runtime)::

    ports = pod_ports(job, task)            # before binding a pod's ports
    ...allocate one host port per PodPort, for every pod of the job...
    given = pod_plugins(job, task, index, peers, directory=str(pod_dir / "volcano"))
    ...write given.files under that directory, then start the containers with
    container env + given.env (init containers: + given.init_env), after running
    given.init_containers as the last init containers...

Inputs:

- ``job``: the admitted job (``jobs.admitted``: defaults applied, so ``svc`` is there
  whenever ``pytorch``/``mpi``/``tensorflow`` is, and ``ssh`` whenever ``mpi`` is);
  ``job.spec.plugins`` maps a plugin to its arguments, which are read as Go's ``flag``
  package reads them (:func:`go_flags`), defaults and all, as each plugin's ``addFlags``.
- ``task`` and ``index``: the pod ``<job>-<task>-<index>``.
- ``peers``: what is known of the job's pods, this one included (:class:`Peer`): the
  address the other pods can reach it at (its node's address: pods on one host share
  its network) and its host port for each container port of :func:`pod_ports`.

Output (:class:`PluginGrants`), under Volcano's names and formats:

============  ===========================================================================
plugin        what the pod gets
============  ===========================================================================
env           ``VK_TASK_INDEX`` then ``VC_TASK_INDEX`` = index; containers and init
              containers.
svc           ``VC_<TASK>_HOSTS`` and ``VC_<TASK>_NUM`` for every task (task order; TASK
              upper-cased, ``-`` → ``_``; skipped with ``--inject-hosts-env=false``), on
              containers and init containers; the ConfigMap ``<job>-svc`` as files
              ``etc/volcano/<task>.host`` (hosts one a line; ``-`` → ``_``, case kept),
              ``etc/volcano/VC_<TASK>_HOSTS`` (joined by ``,``) and
              ``etc/volcano/VC_<TASK>_NUM``. A task whose template sets ``hostname`` has
              one host, as in Volcano. ``VCBUS_ETC_VOLCANO`` says where ``/etc/volcano``
              is.
pytorch       only when the job has the master task: ``MASTER_ADDR``, ``MASTER_PORT``,
              ``WORLD_SIZE`` (replicas of master + worker), ``RANK`` (0 on the master,
              index + 1 on a worker, none on other tasks); containers only. With
              ``--wait-master-enabled`` a worker gets the ``wait-for-master`` init
              container (``sh -c`` polling the master's port), as Volcano adds it.
mpi           on the master task only: ``MPI_HOST`` = the worker hosts joined by ``,``;
              containers and init containers.
tensorflow    ``TF_CONFIG`` = ``{"cluster":{"ps":[…],"worker":[…],"chief":[…],
              "evaluator":[…]},"task":{"type":…,"index":i}}`` (Go's ``json.Marshal``:
              that key order, empty roles left out, no spaces), hosts ``host:port``;
              containers only; nothing for a job of one task with one replica.
ssh           the ``config`` file of the Secret ``<job>-ssh`` as ``ssh/config``
              (``StrictHostKeyChecking no``, ``UserKnownHostsFile /dev/null``, then per
              pod ``Host <pod>`` / ``HostName <address>`` / ``Port <port>``);
              ``VCBUS_SSH_CONFIG`` names it (use ``ssh -F "$VCBUS_SSH_CONFIG"``, or Open
              MPI's ``OMPI_MCA_plm_rsh_args="-F $VCBUS_SSH_CONFIG"``).
============  ===========================================================================

Where a host process differs from a Volcano pod, and why:

- A host is an address, not ``<pod>.<job>``: processes have no per-pod DNS, so every
  host above is the peer's :attr:`Peer.address`. Two pods of a job on one host have the
  same address; they differ by port.
- A port is the peer's host port: pods sharing a host share its ports, so each container
  port of :func:`pod_ports` is allocated a host port per pod, and a peer is named
  ``address:<its host port>`` (``MASTER_PORT`` is the master pod's host port for the
  pytorch port; ``TF_CONFIG`` uses each pod's host port for the tensorflow port; the ssh
  config each pod's host port for the ssh port). A pod learns its own as
  ``VCBUS_PORT_<containerPort>=<host port>``, to listen on it. A peer with no host port
  for a container port is reached on that port unchanged (the host's own service: with
  the default ``--ssh-port`` 22, the host's sshd).
- ssh: no key pair is generated and no ``authorized_keys`` written. Volcano's keys let
  the job's pods log into each other's sshd; host processes run as the agent's run-as
  user on real hosts, so they log in as that user with its own keys, to the host's sshd
  or to an sshd the job starts on its allocated ssh port. The config above gives each
  pod's name as an ssh host alias, so ``ssh <job>-<task>-<i>`` reaches it.
- The plugins are applied in name order (Volcano ranges over a Go map, in random order);
  a pod's own ``env`` comes first and these are appended after it, as Volcano appends
  them.
- A peer not yet known (not bound, so without an address) is written as Volcano writes
  it, ``<job>-<task>-<i>.<job>`` with the container port, which no host resolves, as a
  Kubernetes pod's name does not resolve before the pod runs; :attr:`PluginGrants.missing`
  lists those peers, so the runtime can wait for them (a gang's pods are bound in one
  cycle) and rewrite the files once they are known, as a mounted ConfigMap updates.
- ``svc`` makes no Service and no NetworkPolicy (``--publish-not-ready-addresses`` and
  ``--disable-network-policy`` change nothing): hosts have neither; who may reach a pod's
  ports is the hosts' firewall's business.
- ``ray`` and ``hcclrank`` give nothing here: ray rewrites the pod's command for an
  image that has ``ray``, hcclrank reads Ascend device annotations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from vcbus.contracts.objects.job import Job, TaskSpec

ETC_VOLCANO = "etc/volcano"
"""Where the ``svc`` ConfigMap's files are, relative to the directory given (Volcano mounts
them at ``/etc/volcano``: ``svc/const.go`` ``ConfigMapMountPath``)."""
SSH_CONFIG = "ssh/config"
"""Where the ``ssh`` plugin's ``config`` is, relative to the directory given."""
ENV_ETC_VOLCANO = "VCBUS_ETC_VOLCANO"
"""The absolute path that stands for ``/etc/volcano``."""
ENV_SSH_CONFIG = "VCBUS_SSH_CONFIG"
"""The absolute path of the ssh config file."""
ENV_PORT_PREFIX = "VCBUS_PORT_"
"""``VCBUS_PORT_<containerPort>`` is the pod's host port for that container port."""

# env/const.go
TASK_VK_INDEX = "VK_TASK_INDEX"
TASK_INDEX = "VC_TASK_INDEX"
# svc/const.go
TASK_HOST_FILE = "{}.host"
TASK_HOSTS_ENV = "VC_{}_HOSTS"
TASK_NUM_ENV = "VC_{}_NUM"
# distributed-framework/pytorch/pytorch.go
PYTORCH_DEFAULT_PORT = 23456
PYTORCH_PORT_NAME = "pytorchjob-port"
PYTORCH_WAIT_MASTER_TIMEOUT = 300
PYTORCH_WAIT_MASTER_IMAGE = "busybox:1.36.1"
PYTORCH_WAIT_MASTER = "wait-for-master"
ENV_MASTER_ADDR = "MASTER_ADDR"
ENV_MASTER_PORT = "MASTER_PORT"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_RANK = "RANK"
# distributed-framework/mpi/mpi.go
MPI_DEFAULT_PORT = 22
MPI_PORT_NAME = "mpijob-port"
ENV_MPI_HOST = "MPI_HOST"
# distributed-framework/tensorflow/tensorflow.go
TF_DEFAULT_PORT = 2222
TF_PORT_NAME = "tfjob-port"
"""Volcano opens no container port for tensorflow (every pod has its own network, so
2222 is free in each); on a shared host it must be allocated, named as pytorch's is."""
ENV_TF_CONFIG = "TF_CONFIG"
TF_ROLES = ("ps", "worker", "chief", "evaluator")
"""``clusterInfo``'s fields in their JSON order."""
# ssh/ssh.go
SSH_DEFAULT_PORT = 22
MASTER = "master"
WORKER = "worker"

Env = tuple[tuple[str, str], ...]


class PodPort(msgspec.Struct, frozen=True, kw_only=True):
    """A container port a pod needs a host port for."""

    name: str
    container_port: int


class Peer(msgspec.Struct, frozen=True, kw_only=True):
    """A pod of the job, as the other pods reach it."""

    task: str
    index: int
    address: str
    """An address of the pod's node that the job's other pods can reach."""
    ports: Mapping[int, int] = {}
    """Its host port for each container port of :func:`pod_ports`."""


class PluginGrants(msgspec.Struct, frozen=True, kw_only=True):
    """What the job's plugins give one pod (see the module docstring)."""

    env: Env = ()
    """Appended to every container's env, in this order."""
    init_env: Env = ()
    """Appended to every init container's env, in this order."""
    init_containers: tuple[dict[str, object], ...] = ()
    """Init containers to run after the pod's own (Kubernetes container shape), except
    one whose name the pod's own init containers already have, as Volcano skips it."""
    files: dict[str, str] = {}
    """File contents by path relative to the ``directory`` given."""
    missing: tuple[tuple[str, int], ...] = ()
    """``(task, index)`` of the peers named but not in ``peers``, in job order."""


def go_flags(
    arguments: Sequence[str], defaults: Mapping[str, str | int | bool]
) -> dict[str, str | int | bool]:
    """Read plugin arguments as Go's ``flag.FlagSet.Parse`` does with ``ContinueOnError``.

    ``-name value``, ``-name=value`` and ``--name=value``; a bool flag takes no separate
    value (``-b`` or ``-b=false``). Parsing stops at the first argument that is not a
    flag, after ``--``, and at the first error (unknown flag, bad value, missing value),
    keeping what was read before it, as Volcano's plugins only log the error.

    Args:
        arguments: the plugin's arguments (``spec.plugins[name]``).
        defaults: each flag's default; its type is the flag's type.

    Returns:
        Every flag's value.
    """
    values: dict[str, str | int | bool] = dict(defaults)
    rest = list(arguments)
    while rest:
        argument = rest.pop(0)
        if len(argument) < 2 or not argument.startswith("-"):
            return values
        name = argument[2:] if argument.startswith("--") else argument[1:]
        if not name:  # "--": the end of the flags
            return values
        if name.startswith(("-", "=")):
            return values
        name, has_value, value = name.partition("=")
        if name not in defaults:
            return values
        default = defaults[name]
        if isinstance(default, bool):
            parsed_bool = _go_bool(value) if has_value else True
            if parsed_bool is None:
                return values
            values[name] = parsed_bool
            continue
        if not has_value:
            if not rest:
                return values
            value = rest.pop(0)
        if isinstance(default, int):
            parsed_int = _go_int(value)
            if parsed_int is None:
                return values
            values[name] = parsed_int
        else:
            values[name] = value
    return values


def pod_ports(job: Job, task: str) -> tuple[PodPort, ...]:
    """Return the container ports a pod of ``task`` needs host ports for.

    The container ports its containers and init containers declare, then the ports
    the plugins open on it (pytorch's and mpi's ``openContainerPort``, and tensorflow's
    port); one entry per port number, the first name kept.
    """
    ports: dict[int, PodPort] = {}
    spec = _task(job, task)
    if spec is not None:
        for field in ("initContainers", "containers"):
            for container in _containers(spec.template.spec, field):
                for port in _list(container.get("ports")):
                    number = port.get("containerPort") if isinstance(port, Mapping) else None
                    if isinstance(number, int) and not isinstance(number, bool):
                        name = port.get("name") if isinstance(port, Mapping) else ""
                        ports.setdefault(
                            number,
                            PodPort(
                                name=name if isinstance(name, str) else "", container_port=number
                            ),
                        )
    plugins = job.spec.plugins
    if "pytorch" in plugins:
        number = _int(_pytorch_flags(plugins["pytorch"]), "port")
        ports.setdefault(number, PodPort(name=PYTORCH_PORT_NAME, container_port=number))
    if "mpi" in plugins:
        number = _int(_mpi_flags(plugins["mpi"]), "port")
        ports.setdefault(number, PodPort(name=MPI_PORT_NAME, container_port=number))
    if "tensorflow" in plugins:
        number = _int(_tf_flags(plugins["tensorflow"]), "port")
        ports.setdefault(number, PodPort(name=TF_PORT_NAME, container_port=number))
    return tuple(ports.values())


def pod_plugins(
    job: Job, task: str, index: int, peers: Iterable[Peer], *, directory: str
) -> PluginGrants:
    """Return what the job's plugins give the pod ``<job>-<task>-<index>``.

    Args:
        job: the admitted job.
        task: the pod's task.
        index: the pod's index in its task.
        peers: the job's pods known so far, this one included.
        directory: the absolute path the runtime writes :attr:`PluginGrants.files` under.

    Returns:
        The env, init containers and files, and the peers that were missing.
    """
    hosts = _Hosts(job, {(peer.task, peer.index): peer for peer in peers})
    env: list[tuple[str, str]] = []
    init_env: list[tuple[str, str]] = []
    init_containers: list[dict[str, object]] = []
    files: dict[str, str] = {}
    own = hosts.peers.get((task, index))
    for port in pod_ports(job, task):
        host_port = own.ports.get(port.container_port) if own is not None else None
        if host_port is not None:
            env.append((f"{ENV_PORT_PREFIX}{port.container_port}", str(host_port)))
    init_env.extend(env)
    for name in sorted(job.spec.plugins):
        arguments = job.spec.plugins[name]
        if name == "env":
            granted = ((TASK_VK_INDEX, str(index)), (TASK_INDEX, str(index)))
            env.extend(granted)
            init_env.extend(granted)
        elif name == "svc":
            svc_env, svc_files = _svc(job, arguments, hosts)
            env.extend(svc_env)
            init_env.extend(svc_env)
            files.update(svc_files)
            pointer = (ENV_ETC_VOLCANO, f"{directory}/{ETC_VOLCANO}")
            env.append(pointer)
            init_env.append(pointer)
        elif name == "pytorch":
            pytorch_env, wait_for_master = _pytorch(job, task, index, arguments, hosts)
            env.extend(pytorch_env)
            init_containers.extend(wait_for_master)
        elif name == "mpi":
            mpi_env = _mpi(job, task, arguments, hosts)
            env.extend(mpi_env)
            init_env.extend(mpi_env)
        elif name == "tensorflow":
            env.extend(_tensorflow(job, task, index, arguments, hosts))
        elif name == "ssh":
            files[SSH_CONFIG] = _ssh_config(job, arguments, hosts)
            pointer = (ENV_SSH_CONFIG, f"{directory}/{SSH_CONFIG}")
            env.append(pointer)
            init_env.append(pointer)
    return PluginGrants(
        env=tuple(env),
        init_env=tuple(init_env),
        init_containers=tuple(init_containers),
        files=files,
        missing=hosts.missing(),
    )


class _Hosts:
    """Names the job's pods by address and host port, noting the peers not known."""

    def __init__(self, job: Job, peers: Mapping[tuple[str, int], Peer]) -> None:
        self.job = job
        self.peers = peers
        self._missing: set[tuple[str, int]] = set()

    def address(self, task: TaskSpec, index: int) -> str:
        """The pod's address; Volcano's ``MakeDomainName`` when it is not known."""
        peer = self.peers.get((task.name, index))
        if peer is not None:
            return peer.address
        self._missing.add((task.name, index))
        return _domain_name(self.job, task, index)

    def port(self, task: TaskSpec, index: int, container_port: int) -> int:
        """The pod's host port for ``container_port`` (that port itself when it has none)."""
        peer = self.peers.get((task.name, index))
        if peer is None:
            self._missing.add((task.name, index))
            return container_port
        return peer.ports.get(container_port, container_port)

    def missing(self) -> tuple[tuple[str, int], ...]:
        order = {task.name: position for position, task in enumerate(self.job.spec.tasks)}
        return tuple(sorted(self._missing, key=lambda key: (order.get(key[0], 0), key[1])))


def _svc(
    job: Job, arguments: Sequence[str], hosts: _Hosts
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """``svc.go`` ``GenerateHosts`` (the ConfigMap) and ``OnPodCreate`` (its env)."""
    flags = go_flags(
        arguments,
        {
            "publish-not-ready-addresses": False,
            "disable-network-policy": False,
            "inject-hosts-env": True,
        },
    )
    config_map: dict[str, str] = {}
    env: list[tuple[str, str]] = []
    for task in job.spec.tasks:
        names = [hosts.address(task, index) for index in _host_indexes(task)]
        key = task.name.replace("-", "_")
        hosts_key = TASK_HOSTS_ENV.format(key.upper())
        num_key = TASK_NUM_ENV.format(key.upper())
        config_map[TASK_HOST_FILE.format(key)] = "\n".join(names)
        config_map[hosts_key] = ",".join(names)
        config_map[num_key] = str(len(names))
        if flags["inject-hosts-env"]:
            env.extend(((hosts_key, config_map[hosts_key]), (num_key, config_map[num_key])))
    return env, {f"{ETC_VOLCANO}/{key}": value for key, value in config_map.items()}


def _pytorch(
    job: Job,
    task: str,
    index: int,
    arguments: Sequence[str],
    hosts: _Hosts,
) -> tuple[list[tuple[str, str]], list[dict[str, object]]]:
    """``pytorch.go`` ``OnPodCreate``: its env, and the init container it adds."""
    flags = _pytorch_flags(arguments)
    master_name, worker_name = str(flags["master"]), str(flags["worker"])
    port = _int(flags, "port")
    master = _task(job, master_name)
    if master is None:  # Volcano logs "job doesn't have task" and sets nothing
        return [], []
    master_addr = hosts.address(master, 0)
    master_port = hosts.port(master, 0, port)
    env = [(ENV_MASTER_ADDR, master_addr), (ENV_MASTER_PORT, str(master_port))]
    world_size = sum(t.replicas for t in job.spec.tasks if t.name in (master_name, worker_name))
    env.append((ENV_WORLD_SIZE, str(world_size)))
    init_containers: list[dict[str, object]] = []
    if task == worker_name:
        env.append((ENV_RANK, str(index + 1)))
        if flags["wait-master-enabled"]:
            timeout = _int(flags, "wait-master-timeout")
            init_containers.append(
                {
                    "name": PYTORCH_WAIT_MASTER,
                    "image": str(flags["wait-master-image"]),
                    "command": ["sh", "-c", _wait_for_master(master_addr, master_port, timeout)],
                }
            )
    elif task == master_name:
        env.append((ENV_RANK, "0"))
    return env, init_containers


def _wait_for_master(address: str, port: int, timeout: int) -> str:
    """``pytorch.go`` ``generateWaitForMasterScript``, word for word."""
    return f"""echo "Waiting for master node {address}:{port} to be ready..."
TIMEOUT={timeout}
ELAPSED=0
until {{ nc -z {address} {port} || echo > /dev/tcp/{address}/{port}; }} 2>/dev/null; do
  if [ $ELAPSED -ge $TIMEOUT ]; then
    echo "Timeout waiting for master after ${{TIMEOUT}} seconds"
    exit 1
  fi
  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${{ELAPSED}}s)"
  sleep 2
  ELAPSED=$((ELAPSED + 2))
done
echo "Master node is ready!\""""


def _mpi(job: Job, task: str, arguments: Sequence[str], hosts: _Hosts) -> list[tuple[str, str]]:
    """``mpi.go`` ``OnPodCreate`` and ``generateTaskHosts``: the master gets ``MPI_HOST``."""
    flags = _mpi_flags(arguments)
    if task != flags["master"]:
        return []
    worker = _task(job, str(flags["worker"]))
    if worker is None:
        return []
    names = [hosts.address(worker, index) for index in _host_indexes(worker)]
    return [(ENV_MPI_HOST, ",".join(names))]


def _tensorflow(
    job: Job, task: str, index: int, arguments: Sequence[str], hosts: _Hosts
) -> list[tuple[str, str]]:
    """``tensorflow.go`` ``OnPodCreate`` and ``generateTFClusterSpec``."""
    tasks = job.spec.tasks
    if len(tasks) == 1 and tasks[0].replicas == 1:
        return []
    flags = _tf_flags(arguments)
    port = _int(flags, "port")
    roles = {str(flags[role]): role for role in reversed(TF_ROLES)}
    cluster: dict[str, list[str]] = {}
    for spec in tasks:
        role = roles.get(spec.name)
        if role is None:
            continue
        cluster[role] = [
            f"{hosts.address(spec, i)}:{hosts.port(spec, i, port)}" for i in range(spec.replicas)
        ]
    ordered = {role: cluster[role] for role in TF_ROLES if cluster.get(role)}
    config = {"cluster": ordered, "task": {"type": roles.get(task, task), "index": index}}
    return [(ENV_TF_CONFIG, json.dumps(config, separators=(",", ":"), ensure_ascii=False))]


def _ssh_config(job: Job, arguments: Sequence[str], hosts: _Hosts) -> str:
    """``ssh.go`` ``generateSSHConfig``, with each pod's address and host port."""
    flags = go_flags(
        arguments,
        {
            "ssh-key-file-path": "/root/.ssh",
            "ssh-private-key": "",
            "ssh-public-key": "",
            "ssh-port": SSH_DEFAULT_PORT,
        },
    )
    port = _int(flags, "ssh-port")
    if not 0 < port <= 65535:  # validateSSHPort
        port = SSH_DEFAULT_PORT
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        hostname = _template_string(task, "hostname")
        for index in _host_indexes(task):
            lines.append(f"Host {hostname or _pod_name(job, task, index)}")
            lines.append(f"  HostName {hosts.address(task, index)}")
            lines.append(f"  Port {hosts.port(task, index, port)}")
    return "\n".join(lines) + "\n"


def _int(flags: Mapping[str, str | int | bool], name: str) -> int:
    """An int flag's value (``go_flags`` keeps each flag's type)."""
    value = flags[name]
    return value if isinstance(value, int) else 0


def _pytorch_flags(arguments: Sequence[str]) -> dict[str, str | int | bool]:
    return go_flags(
        arguments,
        {
            "master": MASTER,
            "worker": WORKER,
            "port": PYTORCH_DEFAULT_PORT,
            "wait-master-enabled": False,
            "wait-master-timeout": PYTORCH_WAIT_MASTER_TIMEOUT,
            "wait-master-image": PYTORCH_WAIT_MASTER_IMAGE,
        },
    )


def _mpi_flags(arguments: Sequence[str]) -> dict[str, str | int | bool]:
    return go_flags(arguments, {"master": MASTER, "worker": WORKER, "port": MPI_DEFAULT_PORT})


def _tf_flags(arguments: Sequence[str]) -> dict[str, str | int | bool]:
    return go_flags(
        arguments,
        {
            "ps": "ps",
            "worker": "worker",
            "chief": "chief",
            "evaluator": "evaluator",
            "port": TF_DEFAULT_PORT,
        },
    )


def _host_indexes(task: TaskSpec) -> range:
    """The pods a task's hosts list: one when its template sets ``hostname`` (svc, mpi)."""
    return range(min(task.replicas, 1) if _template_string(task, "hostname") else task.replicas)


def _domain_name(job: Job, task: TaskSpec, index: int) -> str:
    """``helpers.MakeDomainName``: ``<hostname or pod name>.<subdomain or job name>``."""
    hostname = _template_string(task, "hostname") or _pod_name(job, task, index)
    return f"{hostname}.{_template_string(task, 'subdomain') or job.metadata.name}"


def _pod_name(job: Job, task: TaskSpec, index: int) -> str:
    """``helpers.MakePodName``: ``<job>-<task>-<index>``."""
    return f"{job.metadata.name}-{task.name}-{index}"


def _template_string(task: TaskSpec, field: str) -> str:
    value = task.template.spec.get(field)
    return value if isinstance(value, str) else ""


def _task(job: Job, name: str) -> TaskSpec | None:
    """``helpers.GetTaskIndexUnderJob``: the first task of that name."""
    return next((task for task in job.spec.tasks if task.name == name), None)


def _containers(spec: Mapping[str, object], field: str) -> list[Mapping[str, object]]:
    return [item for item in _list(spec.get(field)) if isinstance(item, Mapping)]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


_GO_OCTAL = re.compile(r"[+-]?0[0-7_]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _go_bool(text: str) -> bool | None:
    """``strconv.ParseBool``; ``None`` when invalid."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``; ``None`` when invalid.

    Decimal, ``0x``, ``0o``, ``0b``, and a leading ``0`` for octal.
    """
    if not text or text != text.strip():
        return None
    try:
        value = int(text, 8) if _GO_OCTAL.fullmatch(text) else int(text, 0)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None
