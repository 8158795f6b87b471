"""A pod's emptyDir volumes on the host: made for its user, a tmpfs of its size, all gone after.

Real directories and real mounts in a directory of the test's own (as root): no podman.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.services.agent.app import podvolumes
from vcbus.services.agent.model import MountRun, VolumeRun

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")

NOBODY = 65534
VOLUMES = (
    VolumeRun(name="scratch", kind="emptyDir"),
    VolumeRun(name="shm", kind="emptyDir", memory=True, size_bytes=4 * 1024 * 1024),
    VolumeRun(name="data", kind="hostPath", host_path="/srv/data"),
)


@pytest.fixture
def pod_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="vcbus-podvolumes-") as name:
        yield Path(name)
        podvolumes.release(Path(name))  # a failed test's tmpfs goes too


def test_empty_dirs_are_the_pods_users_and_memory_ones_a_tmpfs_of_their_size(
    pod_dir: Path,
) -> None:
    assert podvolumes.prepare(pod_dir, VOLUMES, NOBODY, NOBODY, 64 * 1024 * 1024) == ""
    scratch, shm = pod_dir / "volumes" / "scratch", pod_dir / "volumes" / "shm"
    assert [(p.stat().st_uid, p.stat().st_mode & 0o777) for p in (scratch, shm)] == [
        (NOBODY, 0o700)
    ] * 2
    assert podvolumes.mounted_under(pod_dir) == [str(shm.resolve())]
    size = subprocess.run(
        ["df", "--output=size", "-k", str(shm)], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    assert size == "4096"
    assert podvolumes.binds(
        pod_dir,
        VOLUMES,
        (
            MountRun(volume="shm", path="/dev/shm"),
            MountRun(volume="data", path="/in", read_only=True),
        ),
    ) == [(str(shm), "/dev/shm", False), ("/srv/data", "/in", True)]


def test_release_unmounts_and_removes_them_even_with_files_inside(pod_dir: Path) -> None:
    assert podvolumes.prepare(pod_dir, VOLUMES, None, None, 0) == ""
    (pod_dir / "volumes" / "shm" / "left").write_text("x")
    (pod_dir / "volumes" / "scratch" / "left").write_text("x")
    assert podvolumes.release(pod_dir) == ""
    assert podvolumes.mounted_under(pod_dir) == []
    assert not (pod_dir / "volumes").exists()
    assert podvolumes.release(pod_dir) == ""  # again: nothing to do
