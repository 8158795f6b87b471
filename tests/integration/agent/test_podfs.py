"""The agent's root file operations in a pod's directory, against links a pod planted.

Real files in a directory of the test's own (as root, owners are real): each test plants
what a pod's user can plant in its own ``work/`` or ``volcano/`` and checks that the
operation neither follows it nor touches what it names.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.services.agent.app import podfs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="owners are changed as root")


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="vcbus-podfs-"))
    victim = path / "victim"
    victim.mkdir(mode=0o700)
    (victim / "file").write_text("root's\n")
    yield path
    shutil.rmtree(path)


def test_a_file_is_not_written_through_a_planted_link(base: Path) -> None:
    """Attack: the pod plants ``etc -> /victim`` where the agent writes the plugins' files."""
    pod = base / "pod"
    pod.mkdir()
    (pod / "etc").symlink_to(base / "victim")
    (pod / "ssh").mkdir()
    (pod / "ssh" / "config").symlink_to(base / "victim" / "file")
    with podfs.opened_dir(pod) as fd:
        with pytest.raises(NotADirectoryError):
            podfs.write_new(fd, "etc/volcano.host", b"x")
        with pytest.raises(FileExistsError):
            podfs.write_new(fd, "ssh/config", b"x")
    assert sorted(p.name for p in (base / "victim").iterdir()) == ["file"]
    assert (base / "victim" / "file").read_text() == "root's\n"


def test_a_whole_write_replaces_a_planted_link_and_never_writes_through_it(base: Path) -> None:
    """Attack: the temporary file of a whole write (``.plan.json.tmp``) is a link to root's."""
    (base / ".plan.json.tmp").symlink_to(base / "victim" / "file")
    podfs.write_whole(base / "plan.json", b"{}")
    assert (base / "victim" / "file").read_text() == "root's\n"
    assert (base / "plan.json").read_bytes() == b"{}"
    assert (base / "plan.json").stat().st_mode & 0o777 == 0o600


def test_owners_change_inside_the_tree_only(base: Path) -> None:
    """Attack: a link in the pod's directory to root's file, before its owner is changed."""
    pod = base / "pod"
    pod.mkdir()
    (pod / "link").symlink_to(base / "victim" / "file")
    with podfs.opened_dir(pod) as fd:
        podfs.chown_tree(fd, 65534, 65534)
    assert (base / "victim" / "file").stat().st_uid == 0
    assert (pod / "link").lstat().st_uid == 65534


def test_a_pods_directory_that_is_a_link_is_removed_as_a_link(base: Path) -> None:
    """Attack: the pod's directory entry is a link to another directory when it is removed."""
    pods = base / "pods"
    pods.mkdir()
    (pods / "uid-1").symlink_to(base / "victim")
    (base / "victim" / "inner").mkdir()
    (base / "victim" / "inner" / "link").symlink_to(base / "victim" / "file")
    real = pods / "uid-2"
    (real / "work").mkdir(parents=True)
    (real / "work" / "out").symlink_to(base / "victim")
    podfs.remove_child(pods, "uid-1")
    podfs.remove_child(pods, "uid-2")
    assert sorted(p.name for p in pods.iterdir()) == []
    assert (base / "victim" / "file").read_text() == "root's\n"
    assert (base / "victim" / "inner" / "link").is_symlink()
    with pytest.raises(ValueError, match="not one directory entry"):
        podfs.remove_child(pods, "../victim")
