"""A pod's ``emptyDir`` volumes on the host: made when it starts, gone when it ends.

Standard library only, and the agent's model (the supervisor imports it, to start fast).
Each ``emptyDir`` of a plan (:class:`~vcbus.services.agent.model.VolumeRun`) is the
directory ``<pod dir>/volumes/<name>`` (its name a DNS-1123 label: one path component),
owned by the pod's user, mode 0700; one of ``medium: Memory`` is a tmpfs mounted there
(``size`` its ``sizeLimit``). The supervisor makes them before the pod's first container
(:func:`prepare`) and removes them when the pod ends (:func:`release`); the agent calls
:func:`release` too before it removes a pod's directory (a supervisor killed before its
end leaves its tmpfs mounted). :func:`release` unmounts whatever is mounted under the
pod's ``volumes/`` (read from ``/proc/self/mountinfo``), deepest first, then removes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from vcbus.services.agent.model import EMPTY_DIR, HOST_PATH, MountRun, VolumeRun

VOLUMES_DIR = "volumes"
MOUNTINFO = Path("/proc/self/mountinfo")
TIMEOUT = 30.0
"""Seconds a ``mount`` or ``umount`` may take."""


def empty_dir(pod_dir: Path, name: str) -> Path:
    """Where the pod's ``emptyDir`` ``name`` lives on the host."""
    return pod_dir / VOLUMES_DIR / name


def prepare(
    pod_dir: Path,
    volumes: Sequence[VolumeRun],
    user: int | None,
    group: int | None,
    memory_bytes: int,
) -> str:
    """Make the pod's ``emptyDir`` volumes; an error message when one cannot be made."""
    for volume in volumes:
        if volume.kind != EMPTY_DIR:
            continue
        path = empty_dir(pod_dir, volume.name)
        try:
            path.parent.mkdir(mode=0o711, exist_ok=True)
            path.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            return f"volume {volume.name}: cannot make its directory: {exc}"
        if volume.memory:
            size = volume.size_bytes or memory_bytes
            options = "mode=0700" + (f",size={size}" if size else "")
            done = _run(["mount", "-t", "tmpfs", "-o", options, f"vcbus-{volume.name}", str(path)])
            if done.returncode != 0:
                return f"volume {volume.name}: cannot mount its tmpfs: {done.stderr.strip()}"
        if user is not None:
            try:
                os.chown(path, user, user if group is None else group, follow_symlinks=False)
            except OSError as exc:
                return f"volume {volume.name}: cannot give it to uid {user}: {exc}"
    return ""


def binds(
    pod_dir: Path, volumes: Sequence[VolumeRun], mounts: Sequence[MountRun]
) -> list[tuple[str, str, bool]]:
    """Each mount of a container as (host path, container path, read-only)."""
    by_name = {volume.name: volume for volume in volumes}
    out = []
    for mount in mounts:
        volume = by_name[mount.volume]
        source = (
            volume.host_path if volume.kind == HOST_PATH else str(empty_dir(pod_dir, volume.name))
        )
        out.append((source, mount.path, mount.read_only))
    return out


def mounted_under(directory: Path) -> list[str]:
    """The mount points under ``directory`` (itself excluded), deepest first."""
    prefix = f"{os.path.realpath(directory)}/"
    found = []
    with contextlib.suppress(OSError):
        for line in MOUNTINFO.read_text().splitlines():
            fields = line.split()
            if len(fields) > 4:
                point = _unescape(fields[4])
                if point.startswith(prefix):
                    found.append(point)
    return sorted(found, key=len, reverse=True)


def release(pod_dir: Path) -> str:
    """Unmount and remove the pod's volumes; what could not be unmounted (empty: all)."""
    root = pod_dir / VOLUMES_DIR
    if not root.is_dir() or root.is_symlink():
        return ""
    left = []
    for point in mounted_under(root):
        done = _run(["umount", point])
        if done.returncode != 0:  # busy: detached now, gone once its last user is
            done = _run(["umount", "-l", point])
        if done.returncode != 0:
            left.append(point)
    if left:
        return f"still mounted: {', '.join(left)}"
    shutil.rmtree(root, ignore_errors=True)
    return ""


def _unescape(field: str) -> str:
    """A mountinfo path (space, tab, newline and backslash written as octal escapes)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))
