"""The demo's image context: this host's Python runs from it alone, without its packages.

The context is written for real and its ``rootfs`` entered with ``chroot`` (as root), so
what the image would hold is run without podman: the interpreter starts, the demo's
modules import, ``site-packages`` is not there, and busybox's shell is where the host has
a static busybox.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vcbus.services.cli import demo_image

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")


def test_the_hosts_python_runs_from_the_context_alone(tmp_path: Path) -> None:
    demo_image.write_context(tmp_path)
    rootfs = tmp_path / "rootfs"
    script = "import json, socket, time, sys; print(sys.version_info[:2]); import vcbus"
    done = subprocess.run(
        [
            shutil.which("chroot") or "/usr/sbin/chroot",
            str(rootfs),
            "/usr/bin/python3",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == str(tuple(sys.version_info[:2])), done.stderr
    assert "No module named 'vcbus'" in done.stderr  # the host's packages stay out
    containerfile = (tmp_path / "Containerfile").read_text()
    assert containerfile.startswith("FROM scratch\nCOPY rootfs/ /\n")
    if demo_image.BUSYBOX.is_file() and not demo_image.libraries([demo_image.BUSYBOX]):
        assert (rootfs / "bin" / "busybox").is_file()
        assert '"--install"' in containerfile
