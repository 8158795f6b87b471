"""A container's command line for an OCI runtime (podman): pure, no I/O.

What a container of a pod becomes under ``podman run``: Kubernetes' rules for ``command``
and ``args`` over the image's entrypoint (``command`` replaces the entrypoint and the
image's command; ``args`` alone replaces the image's command only), ``env``,
``workingDir``, the pod's memory and CPU limits as the runtime's, the labels a restarted
agent finds its containers by, and the runtime options a cgroup v1/hybrid host needs
(``runc``, ``cgroupfs``, explicit rlimits: see docs/real-jobs.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

RUNTIME_OPTIONS = ("--runtime", "runc", "--cgroup-manager=cgroupfs")
"""Global podman options: ``crun`` refuses hybrid cgroups, systemd is not asked."""
ULIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096")
"""Explicit rlimits: ``runc`` fails setting the inherited ones on such a host."""
LABEL_POD_UID = "io.vcbus.pod-uid"
LABEL_CONTAINER = "io.vcbus.container"
PULL_POLICIES = {"Always": "always", "IfNotPresent": "missing", "Never": "never"}


def container_name(uid: str, container: str, restart: int) -> str:
    """The runtime's name of one run of one container: unique per pod, container, run."""
    return f"vcbus-{uid}-{container}-{restart}"


def entry_args(command: Sequence[str], args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ``--entrypoint`` override (empty: the image's) and the arguments after the image.

    As Kubernetes does: ``command`` replaces the entrypoint (and the image's command),
    ``args`` replace the image's command; neither: the image's own.
    """
    if command:
        return ["--entrypoint", _json_list(command)], list(args)
    return [], list(args)


def run_argv(
    *,
    podman: str,
    uid: str,
    container: str,
    restart: int,
    image: str,
    command: Sequence[str] = (),
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    working_dir: str = "",
    memory_bytes: int = 0,
    cpu_millis: int = 0,
    pull_policy: str = "IfNotPresent",
    user: int | None = None,
    group: int | None = None,
) -> list[str]:
    """``podman run`` for one run of one container, attached (its output is its log).

    ValueError for an ``imagePullPolicy`` Kubernetes does not know.
    """
    pull = PULL_POLICIES.get(pull_policy)
    if pull is None:
        raise ValueError(
            f"imagePullPolicy {pull_policy!r} is not one of {', '.join(PULL_POLICIES)}"
        )
    entrypoint, after = entry_args(command, args)
    argv = [podman, *RUNTIME_OPTIONS, "run", "--rm", "--pull", pull, *ULIMITS]
    argv += ["--name", container_name(uid, container, restart)]
    argv += ["--label", f"{LABEL_POD_UID}={uid}", "--label", f"{LABEL_CONTAINER}={container}"]
    for key, value in sorted((env or {}).items()):
        argv += ["--env", f"{key}={value}"]
    if working_dir:
        argv += ["--workdir", working_dir]
    if memory_bytes > 0:
        argv += ["--memory", str(memory_bytes), "--memory-swap", str(memory_bytes)]
    if cpu_millis > 0:
        argv += ["--cpus", f"{cpu_millis / 1000:g}"]
    if user is not None:
        argv += ["--user", f"{user}:{group}" if group is not None else str(user)]
    return [*argv, *entrypoint, image, *after]


def _json_list(words: Sequence[str]) -> str:
    """``--entrypoint`` as a JSON list: each word kept whole, none split by a shell."""
    return json.dumps(list(words))
