"""The supervisors' launcher refuses a request that names no absolute pod directory."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A real launcher process working in ``tmp_path/cwd``; its socket and that folder."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    path = tmp_path / "launcher.sock"
    process = subprocess.Popen(
        [sys.executable, "-m", "vcbus.services.agent.app.launcher", str(path)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        yield path, cwd
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _ask(path: Path, request: bytes) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(str(path))
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        with connection.makefile("rb") as answer:
            return answer.readline().decode()


@pytest.mark.parametrize("request_bytes", [b"", b"pods/u1\n", b"/data/pods/u1"])
def test_a_request_without_one_absolute_directory_and_a_newline_starts_nothing(
    launcher: tuple[Path, Path], request_bytes: bytes
) -> None:
    path, cwd = launcher
    reply = _ask(path, request_bytes)
    assert reply.startswith("error a launch request is one absolute pod directory")
    assert list(cwd.iterdir()) == []
    # the launcher goes on answering
    assert _ask(path, b"").startswith("error ")
