r"""A pod's launch plan: its task template read as host processes, with the plugins' grants.

Pure. :func:`plan_pod` turns the job's task template (``jobs.admitted``: pods carry no
template) into a :class:`PodPlan` as a kubelet would read it, for processes on the host:

- ``command`` + ``args`` with Kubernetes' ``$(VAR)`` expansion (``$$`` escapes, an unknown
  name stays as written: ``expansion.go`` of ``k8s.io/kubernetes/third_party/forked/
  golang/expansion``), against the container's own environment;
- ``env``: ``value`` (expanded against the variables before it) and the ``fieldRef``\\ s a pod
  commonly uses (``metadata.name``, ``metadata.namespace``, ``metadata.uid``,
  ``spec.nodeName``, ``status.hostIP``, ``status.podIP``: a host process's address is its
  host's); any other ``valueFrom`` cannot be read without an API server, and fails the pod;
- ``workingDir``, else the pod's private directory;
- init containers first, in order (the plugins' own after the pod's), then containers;
- the image is recorded, not pulled; a container without ``command`` cannot run without an
  image runtime and fails the pod (:data:`REASON_NO_COMMAND`);
- the user: the pod's own uid and gid from the agent's range (else the agent's run-as user),
  or the pod's ``securityContext.runAsUser`` / ``runAsGroup`` (a container's overriding the
  pod's) where the policy allows each;
- container names (they name log directories), command lines and environments are checked
  (:mod:`vcbus.services.agent.validate`): a pod whose template breaks them fails
  ``InvalidSpec`` naming the field;
- limits: each container's ``limits``, else its ``requests``; cpu becomes a CFS quota,
  memory a memory limit (:mod:`vcbus.services.agent.app.cgroups`);
- volumes (:mod:`vcbus.services.agent.volumes`): a kind a node does not provide fails the
  pod on either runtime; a container runtime mounts ``emptyDir`` and ``hostPath`` where
  each container's ``volumeMounts`` say, and publishes each ``hostPort``.

What every process gets besides: ``PATH`` (the agent's), ``HOME`` (the pod's directory),
``HOSTNAME`` (the pod's name, as in a pod), and what
:func:`vcbus.services.agent.plugins.pod_plugins` grants, appended after the container's own ``env``
as Volcano appends it.

On a node whose runtime runs containers (``Placement.runtime``) the image gives ``PATH``,
``HOME`` and the directory, and the plugins name the pod's peers on its node by their Volcano
names and container ports (:func:`container_peers`) and ``/etc/volcano`` as it is mounted.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts.objects.job import Job, TaskSpec
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.quantity import CPU, MEMORY, QuantityError, to_base_units
from vcbus.services.agent.model import HOST_PATH, ContainerRun, HostPortRun, Limits, PodPlan
from vcbus.services.agent.plugins import Peer, PluginGrants, pod_plugins
from vcbus.services.agent.validate import REASON_INVALID_SPEC, container_errors, task_names_error
from vcbus.services.agent.volumes import VolumeError, container_mounts, pod_volumes

REASON_NO_COMMAND = codes.REASON_NO_COMMAND
REASON_CONFIG_ERROR = codes.REASON_CONFIG_ERROR
REASON_HOST_PATH = codes.REASON_HOST_PATH
REASON_USER_NOT_ALLOWED = codes.REASON_USER_NOT_ALLOWED

PROTOCOLS = ("TCP", "UDP", "SCTP")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class PlanError(ValueError):
    """A pod that cannot run here: ``reason`` is its status reason, the message says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Policy:
    """What the agent allows a pod.

    Attributes:
        user: the uid pods run as (None: the agent's own, when it is not root).
        group: the gid pods run as.
        allow_root: pods may run as root (``--allow-root``).
        allow_pod_users: a pod's ``runAsUser`` other than root is honoured.
        host_paths: the prefixes a ``hostPath`` volume may name.
        path: ``PATH`` of every process.
    """

    user: int | None = None
    group: int | None = None
    allow_root: bool = False
    allow_pod_users: bool = False
    host_paths: tuple[str, ...] = ()
    path: str = DEFAULT_PATH


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the pod runs: its node, the node's address, its directory, limits to apply."""

    node: str
    host_ip: str
    pod_dir: str
    work_dir: str
    cgroup_dirs: tuple[str, ...] = ()
    cgroup_version: int = 0
    user: int | None = None
    """The pod's own uid (and gid), from the agent's range; None: the policy's run-as user."""
    resolved_paths: Mapping[str, str] = field(default_factory=dict)
    """Each ``hostPath`` of the pod as the host resolves it (``realpath``)."""
    runtime: str = ""
    """``podman``: containers run in their images (a command is optional, the environment
    and directory are the image's); empty: host processes."""


def find_task(job: Job, task: str) -> TaskSpec | None:
    """The job's first task of that name."""
    return next((spec for spec in job.spec.tasks if spec.name == task), None)


def host_paths(job: Job, task: str) -> list[str]:
    """The ``hostPath`` paths the task's volumes name."""
    spec = find_task(job, task)
    if spec is None:
        return []
    found = []
    for volume in _list(spec.template.spec.get("volumes")):
        path = _mapping(_mapping(volume).get(HOST_PATH)).get("path")
        if isinstance(path, str):
            found.append(path)
    return found


def check_host_paths(
    job: Job, task: str, allowed: Sequence[str], resolved: Mapping[str, str] | None = None
) -> str:
    """A message naming the ``hostPath`` volumes outside ``allowed``; empty when none is.

    ``resolved``: each path as the host resolves it (its symlinks followed, ``realpath``),
    as the shell found it; a path is compared resolved, so ``/allowed/link`` to ``/etc`` or
    ``/allowed/../etc`` is outside ``/allowed``. ``allowed`` are resolved prefixes.
    """
    bad = []
    for path in host_paths(job, task):
        real = posixpath.normpath((resolved or {}).get(path, path))
        if not any(_under(real, prefix) for prefix in allowed):
            bad.append(path if real == path else f"{path} ({real})")
    if not bad:
        return ""
    allow = ", ".join(allowed) or "none (--host-path-allow)"
    return f"hostPath {', '.join(bad)} is outside the agent's allowed paths: {allow}"


def plan_pod(
    job: Job, pod: Pod, peers: Iterable[Peer], placement: Placement, policy: Policy
) -> tuple[PodPlan, PluginGrants]:
    """Return what the pod's supervisor runs, and what the plugins granted.

    Raises:
        PlanError: the pod cannot run here (no command, an env source that cannot be read,
            a host path or a user the policy forbids).
    """
    task = find_task(job, pod.task)
    if task is None:
        raise PlanError(REASON_CONFIG_ERROR, f"job {pod.job} has no task {pod.task!r}")
    spec = task.template.spec
    problem = task_names_error(task.name for task in job.spec.tasks) or container_errors(
        [*_containers(spec, "initContainers"), *_containers(spec, "containers")]
    )
    if problem:  # task names name the plugins' files, container names the logs' directories
        raise PlanError(REASON_INVALID_SPEC, f"task {pod.task} of job {pod.job}: {problem}")
    problem = check_host_paths(job, pod.task, policy.host_paths, placement.resolved_paths)
    if problem:
        raise PlanError(REASON_HOST_PATH, problem)
    try:
        volumes = pod_volumes(spec, job.spec.volumes, placement.resolved_paths)
        mounts = {  # by the template's containers themselves: the plugins' own mount none
            id(container): container_mounts(container, volumes)
            for container in [
                *_containers(spec, "initContainers"),
                *_containers(spec, "containers"),
            ]
        }
    except VolumeError as exc:
        raise PlanError(exc.reason, f"task {pod.task} of job {pod.job}: {exc}") from None
    if placement.runtime:
        grants = pod_plugins(
            job, pod.task, pod.index, container_peers(job, peers, placement.node), directory=""
        )
    else:
        grants = pod_plugins(job, pod.task, pod.index, peers, directory=placement.pod_dir)
    fields = {
        "metadata.name": pod.name,
        "metadata.namespace": pod.namespace,
        "metadata.uid": pod.uid,
        "spec.nodeName": placement.node,
        "status.hostIP": placement.host_ip,
        "status.podIP": placement.host_ip,
    }
    base = {"PATH": policy.path, "HOME": placement.work_dir, "HOSTNAME": pod.name}
    if placement.runtime:  # the image's PATH, HOME and directory
        base = {"HOSTNAME": pod.name}
    pod_security = _mapping(spec.get("securityContext"))
    runs: list[ContainerRun] = []
    users: set[tuple[int | None, int | None]] = set()
    inits = [*_containers(spec, "initContainers"), *grants.init_containers]
    for init, containers, extra in (
        (True, inits, grants.init_env),
        (False, _containers(spec, "containers"), grants.env),
    ):
        for container in containers:
            run = _container(container, base, fields, extra, placement, init=init)
            if placement.runtime:
                run = msgspec.structs.replace(run, mounts=mounts.get(id(container), ()))
            runs.append(run)
            users.add(
                _user(
                    pod_security, _mapping(container.get("securityContext")), policy, placement.user
                )
            )
    if len(users) > 1:
        raise PlanError(
            REASON_USER_NOT_ALLOWED, "containers of one pod run as one user here (one directory)"
        )
    own = (policy.user, policy.group) if placement.user is None else (placement.user,) * 2
    user, group = users.pop() if users else own
    cpu, memory = _limits(spec)
    limits = Limits(
        dirs=placement.cgroup_dirs,
        version=placement.cgroup_version,
        cpu_millis=cpu,
        memory_bytes=memory,
    )
    deadline = spec.get("activeDeadlineSeconds")
    plan = PodPlan(
        pod=pod.name,
        uid=pod.uid,
        containers=tuple(runs),
        restart_policy=str(spec.get("restartPolicy") or "Always"),
        active_deadline_seconds=float(deadline)
        if isinstance(deadline, int | float) and not isinstance(deadline, bool) and deadline > 0
        else None,
        grace_seconds=float(
            30
            if pod.termination_grace_period_seconds is None
            else max(pod.termination_grace_period_seconds, 0)
        ),
        user=user,
        group=group,
        limits=limits,
    )
    if placement.runtime:  # the runtime applies the limits to each container
        plan = msgspec.structs.replace(
            plan,
            runtime=placement.runtime,
            node=placement.node,
            files_dir=placement.pod_dir,
            subdomain=pod.job.rsplit("/", 1)[-1],
            limits=Limits(cpu_millis=cpu, memory_bytes=memory),
            volumes=volumes,
            host_ports=_host_ports(spec),
        )
    return plan, grants


def container_peers(job: Job, peers: Iterable[Peer], node: str) -> list[Peer]:
    """The peers as a container on ``node`` reaches them.

    A peer on the same node by its Volcano name ``<job>-<task>-<index>.<job>`` (its pod
    sandbox's alias on the node's network) and its container ports as they are; a peer on
    another node as a host process reaches it, its node's address and host ports (the node
    networks are not routed between hosts).
    """
    name = job.metadata.name
    return [
        msgspec.structs.replace(peer, address=f"{name}-{peer.task}-{peer.index}.{name}", ports={})
        if peer.node == node
        else peer
        for peer in peers
    ]


def _container(
    container: Mapping[str, object],
    base: Mapping[str, str],
    fields: Mapping[str, str],
    extra: Sequence[tuple[str, str]],
    placement: Placement,
    *,
    init: bool,
) -> ContainerRun:
    name = str(container.get("name") or "")
    command = _strings(container.get("command"))
    if not command and not placement.runtime:
        raise PlanError(
            REASON_NO_COMMAND,
            f"container {name} has no command: its image's entrypoint needs a container "
            "runtime, and this node runs host processes (give the command in the template)",
        )
    env = dict(base)
    for item in _list(container.get("env")):
        variable = _mapping(item)
        key = variable.get("name")
        if not isinstance(key, str):
            continue
        env[key] = _env_value(name, key, variable, env, fields)
    for key, value in extra:
        env[key] = value
    argv = [expand(word, env) for word in (*command, *_strings(container.get("args")))]
    working = container.get("workingDir")
    return ContainerRun(
        name=name,
        argv=tuple(argv),
        env=env,
        working_dir=working
        if isinstance(working, str) and working
        else ("" if placement.runtime else placement.work_dir),
        image=str(container.get("image") or ""),
        init=init,
        command_len=len(command) if placement.runtime else -1,
        pull_policy=str(container.get("imagePullPolicy") or ""),
    )


def _env_value(
    container: str,
    key: str,
    variable: Mapping[str, object],
    env: Mapping[str, str],
    fields: Mapping[str, str],
) -> str:
    value = variable.get("value")
    if isinstance(value, str):
        return expand(value, env)
    source = _mapping(variable.get("valueFrom"))
    if not source:
        return ""
    path = _mapping(source.get("fieldRef")).get("fieldPath")
    if isinstance(path, str) and path in fields:
        return fields[path]
    what = path if isinstance(path, str) else ", ".join(sorted(source))
    raise PlanError(
        REASON_CONFIG_ERROR,
        f"container {container}: env {key} comes from {what}, which a host process cannot "
        f"read (fieldRefs read here: {', '.join(sorted(fields))})",
    )


_REFERENCE = re.compile(r"\$\$|\$\(([^)$]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: a known name is replaced, ``$$`` is ``$``.

    An unknown name, or one not closed, stays as written (``expansion.go`` ``Expand``).
    """

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


def _user(
    pod: Mapping[str, object],
    container: Mapping[str, object],
    policy: Policy,
    own: int | None,
) -> tuple[int | None, int | None]:
    """The uid and gid a container runs as: the pod's (where allowed), else its own.

    Its own: ``own``, the pod's uid from the agent's range (its gid the same number), else
    the policy's run-as user. ``runAsUser`` and ``runAsGroup`` (a container's overriding the
    pod's) follow one rule: its own, or the run-as user's, are honoured; 0 (root) only with
    ``--allow-root``; any other only with ``--allow-pod-users``.
    """
    default_user, default_group = (policy.user, policy.group) if own is None else (own, own)
    user = _int(container.get("runAsUser"), _int(pod.get("runAsUser"), None))
    group = _int(container.get("runAsGroup"), _int(pod.get("runAsGroup"), None))
    _check_id("runAsUser", user, (default_user, policy.user), policy)
    _check_id("runAsGroup", group, (default_group, policy.group), policy)
    user = default_user if user is None else user
    group = default_group if group is None else group
    if (user == 0 or group == 0) and not policy.allow_root:
        raise PlanError(REASON_USER_NOT_ALLOWED, "pods run as root only with --allow-root")
    return user, group


def _check_id(field: str, asked: int | None, own: tuple[int | None, ...], policy: Policy) -> None:
    """Refuse a uid or gid the pod asks for that the policy does not allow it."""
    if asked is None or asked in own:
        return
    if asked == 0 and not policy.allow_root:
        raise PlanError(REASON_USER_NOT_ALLOWED, f"{field} 0 (root) needs --allow-root")
    if asked != 0 and not policy.allow_pod_users:
        raise PlanError(
            REASON_USER_NOT_ALLOWED,
            f"{field} {asked} is not the pod's own (--allow-pod-users allows it)",
        )


def _host_ports(spec: Mapping[str, object]) -> tuple[HostPortRun, ...]:
    """The ``hostPort`` of each container port that names one."""
    out = []
    for container in _containers(spec, "containers"):
        for item in _list(container.get("ports")):
            port = _mapping(item)
            host = _int(port.get("hostPort"), None) or 0
            inside = _int(port.get("containerPort"), None) or 0
            protocol = str(port.get("protocol") or "TCP")
            if not host:
                continue
            if not (0 < host < 65536 and 0 < inside < 65536) or protocol not in PROTOCOLS:
                raise PlanError(
                    REASON_INVALID_SPEC,
                    f"container {container.get('name')}: hostPort {host} of containerPort "
                    f"{inside} ({protocol}) is not a port and protocol ({', '.join(PROTOCOLS)})",
                )
            out.append(
                HostPortRun(host_port=host, container_port=inside, protocol=protocol.lower())
            )
    return tuple(out)


def _limits(spec: Mapping[str, object]) -> tuple[int, int]:
    """The pod's cpu (milli) and memory (bytes) limits: each container's limits, else requests."""
    cpu = memory = 0
    for container in _containers(spec, "containers"):
        resources = _mapping(container.get("resources"))
        given = _mapping(resources.get("limits")) or _mapping(resources.get("requests"))
        cpu += _quantity(CPU, given.get(CPU))
        memory += _quantity(MEMORY, given.get(MEMORY))
    for container in _containers(spec, "initContainers"):
        resources = _mapping(container.get("resources"))
        given = _mapping(resources.get("limits")) or _mapping(resources.get("requests"))
        cpu = max(cpu, _quantity(CPU, given.get(CPU)))
        memory = max(memory, _quantity(MEMORY, given.get(MEMORY)))
    return cpu, memory


def _quantity(name: str, value: object) -> int:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return 0
    try:
        return to_base_units(name, value)
    except QuantityError:
        return 0


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/") or "/"
    return prefix in ("/", path) or path.startswith(prefix + "/")


def _int(value: object, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _strings(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _containers(spec: Mapping[str, object], field: str) -> list[Mapping[str, object]]:
    return [item for item in _list(spec.get(field)) if isinstance(item, Mapping)]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}
