"""The job plugins by name, and what they give a pod together. Pure.

Explicit, no import-time registration (as the scheduler's plugin table). A name of
``spec.plugins`` not listed here (``ray``, ``hcclrank``) gives nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from vcbus.contracts.objects.job import Job
from vcbus.services.agent.plugins import env, mpi, pytorch, ssh, svc, tensorflow
from vcbus.services.agent.plugins.hosts import Hosts, find_task
from vcbus.services.agent.plugins.model import Peer, PluginGrants, PodPort
from vcbus.services.agent.plugins.plugin import JobPlugin, PodCreate

PLUGINS: Mapping[str, JobPlugin] = {
    plugin.name: plugin
    for plugin in (
        env.PLUGIN,
        svc.PLUGIN,
        pytorch.PLUGIN,
        mpi.PLUGIN,
        tensorflow.PLUGIN,
        ssh.PLUGIN,
    )
}
"""In the order their ports are allocated (pytorch's, then mpi's, then tensorflow's)."""
ENV_PORT_PREFIX = "VCBUS_PORT_"
"""``VCBUS_PORT_<containerPort>`` is the pod's host port for that container port."""


def pod_ports(job: Job, task: str) -> tuple[PodPort, ...]:
    """Return the container ports a pod of ``task`` needs host ports for.

    The container ports its containers and init containers declare, then the ports
    the plugins open on it (pytorch's and mpi's ``openContainerPort``, and tensorflow's
    port); one entry per port number, the first name kept.
    """
    ports: dict[int, PodPort] = {}
    spec = find_task(job, task)
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
    for plugin in PLUGINS.values():
        if plugin.port is not None and plugin.name in plugins:
            opened = plugin.port(plugins[plugin.name])
            ports.setdefault(opened.container_port, opened)
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
    hosts = Hosts(job, {(peer.task, peer.index): peer for peer in peers})
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
    for name in sorted(job.spec.plugins):  # Volcano ranges over a map: no order to keep
        plugin = PLUGINS.get(name)
        if plugin is None:
            continue
        grant = plugin.on_pod_create(
            PodCreate(
                job=job,
                task=task,
                index=index,
                arguments=job.spec.plugins[name],
                hosts=hosts,
                directory=directory,
            )
        )
        env.extend(grant.env)
        init_env.extend(grant.init_env)
        init_containers.extend(grant.init_containers)
        files.update(grant.files)
    return PluginGrants(
        env=tuple(env),
        init_env=tuple(init_env),
        init_containers=tuple(init_containers),
        files=files,
        missing=hosts.missing(),
    )


def _containers(spec: Mapping[str, object], field: str) -> list[Mapping[str, object]]:
    return [item for item in _list(spec.get(field)) if isinstance(item, Mapping)]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
