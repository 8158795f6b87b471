"""The agent's file operations as root in its pods' directories: no symlink followed.

I/O. A pod's user owns its ``work/`` and ``volcano/`` directories and may plant links there
(or have a forged record aim the agent at a directory it owns). So every operation here
works from an open directory (``dir_fd``, as ``openat``), opens each component with
``O_NOFOLLOW`` (a link is an error, never followed), creates files ``O_EXCL``, changes
owners with ``lchown``-style calls (``follow_symlinks=False``) and removes trees with
:func:`shutil.rmtree`'s descriptor-based walk, which never leaves the tree it was given.
The files the agent writes for itself are mode 0600.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_MODE = 0o600


def component(name: str) -> str:
    """``name`` as one entry of a directory; ValueError when it would be more or less."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise ValueError(f"{name!r} is not one directory entry")
    return name


@contextlib.contextmanager
def opened_dir(path: Path | str, *, dir_fd: int | None = None) -> Iterator[int]:
    """An open directory, refused when ``path`` (its last component) is a link."""
    fd = os.open(path, DIR_FLAGS, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def make_dir(parent: int, name: str, mode: int) -> None:
    """Make ``name`` in ``parent`` (an existing one must be a real directory)."""
    try:
        os.mkdir(component(name), mode, dir_fd=parent)
    except FileExistsError:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(f"{name} is not a directory") from None


def write_new(parent: int, relative: str, data: bytes, mode: int = FILE_MODE) -> None:
    """Write a new file at ``relative`` under ``parent``, making its directories (0700).

    No component may be a link, and the file must not exist yet.
    """
    *dirs, name = relative.split("/")
    fd = os.dup(parent)
    try:
        for part in dirs:
            make_dir(fd, part, 0o700)
            inner = os.open(component(part), DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open(
            component(name),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
            dir_fd=fd,
        )
        with os.fdopen(out, "wb") as stream:
            stream.write(data)
    finally:
        os.close(fd)


def write_whole(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` at once (a reader never sees half a file), mode 0600.

    Written to ``.<name>.tmp`` beside it, never through a link of that name.
    """
    temporary = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
    )
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def chown_tree(top: int, uid: int, gid: int) -> None:
    """Give the tree open at ``top`` (itself included) to ``uid``:``gid``; links not followed."""
    os.chown(top, uid, gid)
    for _, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
        for name in (*dirs, *files):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)


def remove_child(parent: Path, name: str) -> None:
    """Remove the entry ``name`` of ``parent`` and all under it, never leaving it.

    A link is removed, not followed; a directory by :func:`shutil.rmtree` from the parent's
    descriptor (its walk opens each directory with no link followed).
    """
    with opened_dir(parent) as fd:
        try:
            info = os.stat(component(name), dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
