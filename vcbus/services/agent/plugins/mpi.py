"""``mpi``: the master gets the worker hosts as ``MPI_HOST``.

Volcano's ``pkg/controllers/job/plugins/distributed-framework/mpi/mpi.go``. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.services.agent.plugins.flags import Flags, go_flags, int_flag
from vcbus.services.agent.plugins.hosts import find_task, host_indexes
from vcbus.services.agent.plugins.model import PodPort
from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "mpi"
DEFAULT_PORT = 22
PORT_NAME = "mpijob-port"
ENV_MPI_HOST = "MPI_HOST"
MASTER = "master"
WORKER = "worker"


def flags_of(arguments: Sequence[str]) -> Flags:
    """The plugin's flags (``addFlags``)."""
    return go_flags(arguments, {"master": MASTER, "worker": WORKER, "port": DEFAULT_PORT})


def port(arguments: Sequence[str]) -> PodPort:
    """The port it opens on every pod (``openContainerPort``)."""
    return PodPort(name=PORT_NAME, container_port=int_flag(flags_of(arguments), "port"))


def on_pod_create(pod: PodCreate) -> Grant:
    """``mpi.go`` ``OnPodCreate`` and ``generateTaskHosts``: the master gets ``MPI_HOST``."""
    flags = flags_of(pod.arguments)
    if pod.task != flags["master"]:
        return Grant()
    worker = find_task(pod.job, str(flags["worker"]))
    if worker is None:
        return Grant()
    names = [pod.hosts.address(worker, index) for index in host_indexes(worker)]
    env = ((ENV_MPI_HOST, ",".join(names)),)
    return Grant(env=env, init_env=env)


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create, port=port)
