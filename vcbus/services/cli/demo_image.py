"""The demo's container image: this host's Python (and busybox, where it is) built offline.

``vcbus up --demo --agent`` on a node whose agent runs podman containers runs the demo's
real jobs in :data:`IMAGE`: no registry is asked, so the demo runs where none can be
reached. The image holds, at the paths they have on the host, the interpreter that runs
vcbus (its binary, its shared libraries as ``ldd`` lists them, its standard library without
``site-packages``, tests or Tk) and ``python3`` on ``PATH``; with ``/bin/busybox`` (static)
its shell and tools too. Built ``FROM scratch`` once; :func:`ensure` keeps the one there.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from vcbus.services.agent.face import podman

IMAGE = "localhost/vcbus-demo-python:1"
BUSYBOX = Path("/bin/busybox")
SKIPPED = frozenset(
    {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"}
)
"""Parts of the standard library the image leaves out (big, and no job of the demo's)."""
_LIBRARY = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def present(image: str = IMAGE) -> bool:
    """Whether podman has ``image``."""
    return _podman("image", "exists", image).returncode == 0


def ensure(image: str = IMAGE) -> str:
    """Build ``image`` unless podman has it; an error message when it cannot be built."""
    if present(image):
        return ""
    with tempfile.TemporaryDirectory(prefix="vcbus-image-") as context:
        write_context(Path(context))
        done = _podman("build", "-q", "-t", image, context, timeout=300)
    return "" if done.returncode == 0 else f"podman build: {done.stderr.strip()[-300:]}"


def write_context(context: Path) -> None:
    """The build context: ``rootfs/`` (the files at their host paths) and a Containerfile."""
    rootfs = context / "rootfs"
    executable = Path(os.path.realpath(sys.executable))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in [executable, *_stdlib_files(stdlib)]:
        _place(rootfs, path)
    for library in libraries([executable, *stdlib.glob("lib-dynload/*.so")]):
        _place(rootfs, library)
    tools = rootfs / "usr" / "bin"
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "python3").symlink_to(executable)
    (rootfs / "tmp").mkdir(mode=0o1777, exist_ok=True)
    commands = ["ENV PATH=/usr/local/bin:/usr/bin:/bin", 'CMD ["python3"]']
    if BUSYBOX.is_file() and not libraries([BUSYBOX]):  # static: it runs from scratch
        _place(rootfs, BUSYBOX)
        commands.insert(0, 'RUN ["/bin/busybox", "--install", "-s", "/bin"]')
    (context / "Containerfile").write_text(
        "FROM scratch\nCOPY rootfs/ /\n" + "".join(f"{line}\n" for line in commands)
    )


def libraries(binaries: Iterable[Path]) -> set[Path]:
    """The shared libraries (and the loader) the binaries load, as ``ldd`` finds them."""
    found: set[Path] = set()
    for binary in binaries:
        done = subprocess.run(
            ["ldd", str(binary)], capture_output=True, text=True, check=False, timeout=30
        )
        if done.returncode != 0 or "not found" in done.stdout:
            continue  # static, or a module whose libraries this host lacks (left out)
        found.update(Path(match) for match in _LIBRARY.findall(done.stdout))
    return found


def _stdlib_files(stdlib: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = [name for name in dirs if name not in SKIPPED and not name.startswith("config-")]
        for name in files:
            yield Path(root) / name


def _place(rootfs: Path, path: Path) -> None:
    """Put ``path`` (symlinks followed) at its own path under ``rootfs``."""
    target = rootfs / path.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        shutil.copy2(path, target)


def _podman(*args: str, timeout: float = podman.TIMEOUT) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [*podman.BASE, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess([*podman.BASE, *args], 127, "", str(exc))
