"""What the agent keeps, plans and reads back: its pods, each pod's launch plan, its report.

Three records, each a file of the agent's data directory (``vcbus.services.agent.app.runtime``):

- :class:`AgentState` (``agent.json``): the pods bound to this node and what was last
  reported of each, the host ports they hold. Written by the agent alone.
- :class:`PodPlan` (``pods/<uid>/plan.json``): what the pod's supervisor runs, built by
  :mod:`vcbus.services.agent.launch`. Written once, before the supervisor starts.
- :class:`PodReport` (``pods/<uid>/status.json``): what the supervisor saw, written by it
  alone at each change (a file replaced whole, never half-written).
"""

from __future__ import annotations

import enum
from datetime import datetime

import msgspec

from vcbus.contracts.keys import JobKey, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.quantity import Resources


class StopCause(enum.StrEnum):
    """Why the agent stops a pod's processes."""

    NONE = ""
    EVICTED = "Evicted"
    DELETED = "Deleted"


class AgentPod(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pod bound to this node: who it is, what it holds, what was last said of it."""

    key: PodKey
    uid: str
    name: str
    namespace: str
    job: JobKey
    task: str
    index: int
    seq: int
    """The node's binding number of this pod (event ids of two incarnations differ)."""
    requests: Resources = {}
    bound_at: datetime
    ports: dict[int, int] = {}
    """Host ports held for this pod: container port -> host port."""
    phase: PodPhase = PodPhase.PENDING
    """The phase last published."""
    restart_count: int = 0
    """The restarts last published."""
    launched: bool = False
    """Whether its supervisor was started (never twice)."""
    stop: StopCause = StopCause.NONE
    stop_message: str = ""
    grace_seconds: float = 30.0
    trace: tuple[tuple[str, str], ...] = ()
    """The trace headers of its binding: its start, exit and eviction continue that trace."""
    user: int | None = None
    """The uid (and gid) of its own it runs as, from the agent's range; freed when forgotten."""
    admitted_digest: str = ""
    """The digest of the admitted manifest its binding named: the pod starts from that one."""
    waiting: str = ""
    """Why it waits to start, as last published (an image pull backing off); empty: none."""

    @property
    def is_active(self) -> bool:
        """Whether the pod holds capacity (Pending or Running)."""
        return self.phase in (PodPhase.PENDING, PodPhase.RUNNING)


class AgentState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Every pod bound to this node that is not yet forgotten, by uid."""

    seq: int = 0
    pods: dict[str, AgentPod] = {}

    def by_key(self, key: PodKey) -> AgentPod | None:
        """The active pod of that key, else its newest incarnation here, or None."""
        found = [pod for pod in self.pods.values() if pod.key == key]
        if not found:
            return None
        return max(found, key=lambda pod: (pod.is_active, pod.seq))

    def ports_used(self) -> set[int]:
        """Every host port held by a pod here."""
        return {port for pod in self.pods.values() for port in pod.ports.values()}


EMPTY_DIR = "emptyDir"
HOST_PATH = "hostPath"


class VolumeRun(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A volume of a pod as its node provides it (:mod:`vcbus.services.agent.volumes`)."""

    name: str
    kind: str
    """:data:`EMPTY_DIR` (a directory of the pod's own) or :data:`HOST_PATH`."""
    host_path: str = ""
    """A ``hostPath``'s path as the host resolved it."""
    memory: bool = False
    """An ``emptyDir`` of ``medium: Memory``: a tmpfs."""
    size_bytes: int = 0
    """The tmpfs's size (its ``sizeLimit``); 0: the pod's memory limit, else tmpfs's own."""


class MountRun(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One ``volumeMounts`` entry of a container: which volume, where, whether read-only."""

    volume: str
    path: str
    read_only: bool = False


class HostPortRun(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A container port published on the node's own port (a ``hostPort``)."""

    host_port: int
    container_port: int
    protocol: str = "tcp"


class ContainerRun(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One container as a host process: its command line, environment and directory."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = {}
    working_dir: str = ""
    image: str = ""
    """Host processes record it (they run what the host has); podman runs it."""
    init: bool = False
    command_len: int = -1
    """How many words of ``argv`` are the ``command`` (the rest its ``args``); -1: all."""
    pull_policy: str = ""
    mounts: tuple[MountRun, ...] = ()
    """Where the pod's volumes appear in the container (a container runtime only)."""


class Limits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pod's cgroup: its directories (one per v1 controller, one on v2) and limits."""

    dirs: tuple[str, ...] = ()
    version: int = 0
    """1 or 2; 0: limits not enforced."""
    cpu_millis: int = 0
    memory_bytes: int = 0


class PodPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a pod's supervisor runs: init containers in order, then the containers."""

    pod: str
    uid: str
    containers: tuple[ContainerRun, ...]
    restart_policy: str = "Always"
    active_deadline_seconds: float | None = None
    grace_seconds: float = 30.0
    user: int | None = None
    group: int | None = None
    limits: Limits = Limits()
    log_max_bytes: int = 10 * 1024 * 1024
    """One log file's size before it rotates."""
    log_max_files: int = 5
    """Files per run of a container (its current one and the rotated ones)."""
    log_pod_max_bytes: int = 100 * 1024 * 1024
    """The pod's logs at most, every container and restart together (oldest removed first)."""
    log_pod_max_files: int = 20
    """The pod's log files at most, every container and restart together."""
    runtime: str = ""
    """``podman``: each container runs in an image; empty: host processes."""
    node: str = ""
    """The agent's node (its containers' label)."""
    files_dir: str = ""
    """The plugins' files of the pod (mounted in its containers)."""
    subdomain: str = ""
    """The job's name: the pod is ``<pod>.<job>`` to the job's other pods on its node."""
    volumes: tuple[VolumeRun, ...] = ()
    """The pod's volumes (a container runtime only: host processes see the host's files)."""
    host_ports: tuple[HostPortRun, ...] = ()
    """The ``hostPort`` of each port that names one: its sandbox publishes them (a container
    runtime only)."""


class ContainerReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One container as its supervisor last saw it."""

    name: str
    state: str = "waiting"
    """``waiting``, ``running`` or ``terminated``."""
    exit_code: int | None = None
    reason: str = ""
    restart_count: int = 0
    pgid: int = 0


class PodReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a pod's supervisor saw: the pod's phase, why, and each container."""

    phase: PodPhase = PodPhase.PENDING
    reason: str = ""
    """Why it ended; while ``Pending``, why it waits (``ImagePullBackOff``)."""
    message: str = ""
    exit_code: int | None = None
    restart_count: int = 0
    supervisor: int = 0
    """The supervisor's process id (its process group too)."""
    containers: tuple[ContainerReport, ...] = ()
    started_at: datetime | None = None
    finished_at: datetime | None = None
    ran: bool = False
    """Whether the containers (after the init containers) were started."""
    stopped: bool = False
    """Whether it ended because the agent asked it to stop."""

    @property
    def is_final(self) -> bool:
        """Whether the pod has ended (Succeeded or Failed)."""
        return self.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)
