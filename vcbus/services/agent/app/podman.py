"""Pods' containers through podman: the command lines a supervisor runs, and the clean-up.

Standard library only, and the reason codes (the supervisor imports it, to start fast). A
container of a plan whose ``runtime`` is ``podman`` runs as ``podman run`` (attached: its
output is the supervisor's to log, its exit status the container's), named
``vcbus-<pod uid>-<container>`` and labelled :data:`LABEL_POD` (the pod's uid) and
:data:`LABEL_NODE` (the agent's node), so an agent finds what it made by label alone:

- ``image``; ``command`` replaces the image's entrypoint (``--entrypoint``) and ``args`` its
  ``CMD``, as Kubernetes reads them; ``env``; ``workingDir``;
- the pod's hostname (its Volcano hostname, the pod's name) and the plugins' files mounted
  read-only at ``/etc/volcano``;
- the pod's volumes where its ``volumeMounts`` say (``-v``, ``ro`` for ``readOnly``);
- the pod's memory and cpu limits as the container's (``--memory``, ``--cpus``), no swap
  beside the memory (``--memory-swap`` equal to it): a kill for the memory limit reads
  ``OOMKilled`` from the container's state;
- each ``hostPort`` of the pod published by its sandbox (``--publish``);
- ``imagePullPolicy``: ``Never`` with the image absent is ``ErrImageNeverPull``, a failed
  pull (``IfNotPresent`` with it absent, ``Always``) ``ErrImagePull`` (the supervisor pulls
  again, backing off).

Runs as root, with ``runc`` and cgroupfs, and explicit ``nofile``/``nproc`` limits (``crun``
refuses hybrid cgroups; ``runc`` without them fails to set rlimits).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence

from vcbus.contracts import reasons as codes

BASE = ("podman", "--runtime", "runc", "--cgroup-manager=cgroupfs")
ULIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096")
LABEL_POD = "io.vcbus.pod-uid"
LABEL_NODE = "io.vcbus.node"
REASON_NEVER_PULL = codes.REASON_NEVER_PULL
REASON_PULL = codes.REASON_PULL
CONF_FILE = "containers.conf"
"""podman's configuration in a pod's directory (the sandbox's rlimits)."""
MIN_MEMORY = 6 * 1024 * 1024
"""The least memory limit podman takes."""
TIMEOUT = 60.0
"""Seconds a podman command (not a container's run) may take."""


def name_of(uid: str, container: str) -> str:
    """The name of one container of the pod ``uid``."""
    return f"vcbus-{uid}-{container}"


def unavailable() -> str:
    """Why podman cannot run containers here; empty when it can."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    if shutil.which("runc") is None:
        return "runc is not installed"
    done = _podman("info", "--format", "{{.Host.OCIRuntime.Name}}")
    if done.returncode != 0:
        return f"podman info failed: {done.stderr.strip()[:200]}"
    return ""


def network_of(node: str) -> str:
    """The network of a node's pods (their names resolve on it)."""
    return f"vcbus-{node}"


def sandbox_of(uid: str) -> str:
    """The name of the pod's sandbox (a podman pod: one network namespace)."""
    return f"vcbus-{uid}"


def write_conf(path: str) -> str:
    """Write podman's configuration for the pods' sandboxes (their rlimits); its path."""
    with open(path, "w", encoding="utf-8") as out:
        out.write(f"[containers]\ndefault_ulimits = {json.dumps(list(ULIMITS[1::2]))}\n")
    return path


def create_sandbox(
    *,
    uid: str,
    node: str,
    hostname: str,
    subdomain: str,
    conf: str,
    publish: Sequence[tuple[int, int, str]] = (),
) -> str:
    """Make the pod's sandbox on its node's network; an error message when it cannot.

    ``publish``: (host port, container port, protocol) of each ``hostPort``.
    """
    network = network_of(node)
    if _podman("network", "exists", network).returncode != 0:
        _podman("network", "create", "--label", f"{LABEL_NODE}={node}", network)
    aliases = f"alias={hostname}" + (f",alias={hostname}.{subdomain}" if subdomain else "")
    done = _podman(
        "pod",
        "create",
        "--replace",
        "--name",
        sandbox_of(uid),
        "--hostname",
        hostname,
        "--network",
        f"{network}:{aliases}",
        "--label",
        f"{LABEL_POD}={uid}",
        "--label",
        f"{LABEL_NODE}={node}",
        *(f"--publish={host}:{inside}/{protocol}" for host, inside, protocol in publish),
        env={"CONTAINERS_CONF": conf},
    )
    if done.returncode == 0:  # started here: what podman says of it is not a container's output
        done = _podman("pod", "start", sandbox_of(uid), env={"CONTAINERS_CONF": conf})
    return "" if done.returncode == 0 else f"pod sandbox: {done.stderr.strip()[-300:]}"


def run_argv(
    *,
    uid: str,
    node: str,
    hostname: str,
    container: str,
    image: str,
    command: Sequence[str],
    args: Sequence[str],
    env: dict[str, str],
    working_dir: str,
    files_dir: str,
    user: int | None,
    group: int | None,
    memory_bytes: int,
    cpu_millis: int,
    sandbox: bool = False,
    mounts: Sequence[tuple[str, str, bool]] = (),
) -> list[str]:
    """``podman run`` for one container of a pod."""
    argv = [
        *BASE,
        "run",
        "--replace",
        "--name",
        name_of(uid, container),
        "--label",
        f"{LABEL_POD}={uid}",
        "--label",
        f"{LABEL_NODE}={node}",
        *(("--pod", sandbox_of(uid)) if sandbox else ("--hostname", hostname)),
        "--pull",
        "never",
        "--log-driver",
        "none",
        "--stop-timeout",
        "0",
        *ULIMITS,
    ]
    if files_dir:
        argv += ["-v", f"{files_dir}/etc/volcano:/etc/volcano:ro"]
    for source, target, read_only in mounts:
        argv += ["-v", f"{source}:{target}:{'ro' if read_only else 'rw'}"]
    if user is not None:
        argv += ["--user", f"{user}:{user if group is None else group}"]
    if memory_bytes:
        memory = str(max(memory_bytes, MIN_MEMORY))  # and no swap beside it, as a kubelet's
        argv += ["--memory", memory, "--memory-swap", memory]
    if cpu_millis:
        argv += ["--cpus", f"{cpu_millis / 1000:g}"]
    if working_dir:
        argv += ["--workdir", working_dir]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    if command:
        argv += ["--entrypoint", json.dumps(list(command))]
    return [*argv, image, *args]


def pull_problem(image: str, policy: str) -> tuple[str, str]:
    """The reason and message when ``image`` cannot be had under ``policy``; empty when it can."""
    present = _podman("image", "exists", image).returncode == 0
    policy = policy or ("Always" if _latest(image) else "IfNotPresent")
    if policy == "Never":
        if present:
            return "", ""
        return REASON_NEVER_PULL, f"image {image} is not present and imagePullPolicy is Never"
    if present and policy == "IfNotPresent":
        return "", ""
    done = _podman("pull", "-q", image)
    if done.returncode == 0:
        return "", ""
    return REASON_PULL, f"image {image} could not be pulled: {done.stderr.strip()[-300:]}"


def oom_killed(uid: str, container: str) -> bool:
    """Whether the kernel killed the container for its memory limit."""
    done = _podman("inspect", "--format", "{{.State.OOMKilled}}", name_of(uid, container))
    return done.stdout.strip() == "true"


def signal(uid: str, container: str, name: str) -> None:
    """Send the signal ``name`` (``TERM``, ``KILL``) to the container."""
    _podman("kill", "--signal", name, name_of(uid, container))


def remove(uid: str, container: str) -> None:
    """Remove one container (killed first)."""
    _podman("rm", "-f", "-t", "0", name_of(uid, container))


def containers(node: str, uid: str = "") -> list[str]:
    """The names of the containers this node's agent made (of the pod ``uid`` only, if given)."""
    wanted = ["--filter", f"label={LABEL_NODE}={node}"]
    if uid:
        wanted += ["--filter", f"label={LABEL_POD}={uid}"]
    done = _podman("ps", "-a", *wanted, "--format", "{{.Names}}")
    return [line for line in done.stdout.split() if line]


def pod_uids(node: str) -> set[str]:
    """The uids of the pods whose containers this node's agent made."""
    done = _podman(
        "ps",
        "-a",
        "--filter",
        f"label={LABEL_NODE}={node}",
        "--format",
        f'{{{{index .Labels "{LABEL_POD}"}}}}',
    )
    return {line for line in done.stdout.split() if line}


def remove_pod(node: str, uid: str) -> None:
    """Remove every container of the pod ``uid``."""
    names = containers(node, uid)
    if names:
        _podman("rm", "-f", "-t", "0", *names)
    _podman("pod", "rm", "-f", "--ignore", sandbox_of(uid))


def _latest(image: str) -> bool:
    last = image.rsplit("/", 1)[-1]
    return "@" not in last and (":" not in last or last.endswith(":latest"))


def _podman(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [*BASE, *args],
            env=None if env is None else {**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess([*BASE, *args], 127, "", str(exc))
