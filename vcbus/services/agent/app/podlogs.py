"""A pod's log files: one per run of each container, rotated and bounded per pod.

Standard library only (the supervisor imports it, to start fast). Each run of a container
writes ``<pod dir>/logs/<container>/<restart>.log`` (mode 0600, never through a link),
which :class:`RotatingLog` rotates at its size bound (``.1``, ``.2``, …) and
:func:`prune_logs` holds the pod's files to their count and size bounds, the oldest closed
files first.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

LOGS_DIR = "logs"
MIN_LOG_BYTES = 1024


def log_path(pod_dir: Path, container: str, restart: int) -> Path:
    """The log of one run of a container (its ``restart``-th restart; 0 the first run)."""
    return pod_dir / LOGS_DIR / container / f"{restart}.log"


class RotatingLog:
    """A log file that, past ``max_bytes``, becomes ``.1`` (``.1`` becomes ``.2``, …)."""

    def __init__(
        self,
        path: Path,
        max_bytes: int,
        max_files: int,
        on_rotate: Callable[[], None] | None = None,
    ) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = path
        self.max_bytes = max(max_bytes, MIN_LOG_BYTES)
        self.max_files = max(max_files, 1)
        self.on_rotate = on_rotate
        self._file = _append(path)
        self._size = self._file.tell()

    def write(self, data: bytes) -> None:
        """Append ``data``, rotating each time the file reaches its size bound."""
        while data:
            room = self.max_bytes - self._size
            if room <= 0:
                self._rotate()
                room = self.max_bytes
            part, data = data[:room], data[room:]
            self._file.write(part)
            self._size += len(part)
        self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        oldest = self.path.with_name(f"{self.path.name}.{self.max_files - 1}")
        with contextlib.suppress(FileNotFoundError):
            oldest.unlink()
        for number in range(self.max_files - 2, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{number}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{number + 1}"))
        if self.max_files > 1:
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink()
        self._file = _append(self.path)
        self._size = 0
        if self.on_rotate is not None:
            self.on_rotate()

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def _append(path: Path) -> BinaryIO:
    """``path`` opened to append, mode 0600; a link there is an error, not followed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "ab")


def prune_logs(logs: Path, keep: set[Path], max_bytes: int, max_files: int) -> None:
    """Remove the pod's oldest log files until it holds ``max_files`` and ``max_bytes`` at most.

    ``keep``: the files being written (never removed).
    """
    found: list[tuple[int, Path, int]] = []
    for container in os.scandir(logs):
        if not container.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(container.path):
            if entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                found.append((info.st_mtime_ns, Path(entry.path), info.st_size))
    found.sort()
    total = sum(size for _, _, size in found)
    count = len(found)
    for _, path, size in found:
        if total <= max_bytes and count <= max_files:
            return
        if path in keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        total -= size
        count -= 1
