"""``pytorch``: the master's address and port, the world size and each rank.

Volcano's ``pkg/controllers/job/plugins/distributed-framework/pytorch/pytorch.go``. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.services.agent.plugins.flags import Flags, go_flags, int_flag
from vcbus.services.agent.plugins.hosts import find_task
from vcbus.services.agent.plugins.model import PodPort
from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "pytorch"
DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"
WAIT_MASTER_TIMEOUT = 300
WAIT_MASTER_IMAGE = "busybox:1.36.1"
WAIT_MASTER = "wait-for-master"
ENV_MASTER_ADDR = "MASTER_ADDR"
ENV_MASTER_PORT = "MASTER_PORT"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_RANK = "RANK"
MASTER = "master"
WORKER = "worker"


def flags_of(arguments: Sequence[str]) -> Flags:
    """The plugin's flags (``addFlags``)."""
    return go_flags(
        arguments,
        {
            "master": MASTER,
            "worker": WORKER,
            "port": DEFAULT_PORT,
            "wait-master-enabled": False,
            "wait-master-timeout": WAIT_MASTER_TIMEOUT,
            "wait-master-image": WAIT_MASTER_IMAGE,
        },
    )


def port(arguments: Sequence[str]) -> PodPort:
    """The port it opens on every pod (``openContainerPort``)."""
    return PodPort(name=PORT_NAME, container_port=int_flag(flags_of(arguments), "port"))


def on_pod_create(pod: PodCreate) -> Grant:
    """``pytorch.go`` ``OnPodCreate``: its env, and the init container it adds."""
    flags = flags_of(pod.arguments)
    master_name, worker_name = str(flags["master"]), str(flags["worker"])
    master = find_task(pod.job, master_name)
    if master is None:  # Volcano logs "job doesn't have task" and sets nothing
        return Grant()
    master_addr = pod.hosts.address(master, 0)
    master_port = pod.hosts.port(master, 0, int_flag(flags, "port"))
    env = [(ENV_MASTER_ADDR, master_addr), (ENV_MASTER_PORT, str(master_port))]
    tasks = pod.job.spec.tasks
    world_size = sum(t.replicas for t in tasks if t.name in (master_name, worker_name))
    env.append((ENV_WORLD_SIZE, str(world_size)))
    init_containers: list[dict[str, object]] = []
    if pod.task == worker_name:
        env.append((ENV_RANK, str(pod.index + 1)))
        if flags["wait-master-enabled"]:
            timeout = int_flag(flags, "wait-master-timeout")
            init_containers.append(
                {
                    "name": WAIT_MASTER,
                    "image": str(flags["wait-master-image"]),
                    "command": ["sh", "-c", _wait_for_master(master_addr, master_port, timeout)],
                }
            )
    elif pod.task == master_name:
        env.append((ENV_RANK, "0"))
    return Grant(env=tuple(env), init_containers=tuple(init_containers))


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


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create, port=port)
