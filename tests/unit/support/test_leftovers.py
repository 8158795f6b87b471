"""The suite finds and ends what its fixtures started and left running (``leftovers``)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import leftovers
from tests.support.processes import ServiceProcess

SLEEP = f"{4000 + os.getpid() % 500}"
"""A ``sleep`` argument no other process of the host runs, to find it by."""


def _sleepers() -> list[int]:
    """Live (not zombie) processes running ``sleep SLEEP``."""
    found = []
    for path in Path("/proc").glob("[0-9]*"):
        try:
            if (path / "cmdline").read_bytes().split(b"\0")[:2] != [b"sleep", SLEEP.encode()]:
                continue
            if (path / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(path.name))
        except OSError:
            continue
    return found


@pytest.fixture
def no_sleepers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(leftovers, "GRACE", 0.2)  # they never exit on their own
    yield
    for pid in _sleepers():
        os.kill(pid, 9)


def _detached(env: dict[str, str]) -> None:
    """Start, in a session of its own, a shell that leaves a ``sleep`` behind and exits."""
    subprocess.run(
        ["sh", "-c", f"setsid sleep {SLEEP} >/dev/null 2>&1 < /dev/null &"],
        env=env,
        check=True,
        start_new_session=True,
    )


def _until(check: object, limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.usefixtures("no_sleepers")
def test_a_process_left_behind_carries_the_run_mark_and_is_found_and_ended() -> None:
    _detached(dict(os.environ))
    assert _until(_sleepers)
    (pid,) = _sleepers()
    assert pid in [leftover.pid for leftover in leftovers.leftovers()]
    assert f"sleep {SLEEP}" in {leftover.command for leftover in leftovers.leftovers()}

    leftovers.end([leftover for leftover in leftovers.leftovers() if leftover.pid == pid])

    assert _until(lambda: not _sleepers())


@pytest.mark.usefixtures("no_sleepers")
def test_the_block_that_owns_a_mark_ends_what_was_started_under_it_also_on_failure() -> None:
    def fails_midway() -> None:
        with leftovers.owned(dict(os.environ)) as env:
            _detached(env)
            assert _until(_sleepers)
            raise RuntimeError("the test failed midway")

    with pytest.raises(RuntimeError):
        fails_midway()

    assert _until(lambda: not _sleepers())


@pytest.mark.usefixtures("no_sleepers")
def test_a_closed_service_process_ends_what_it_started_in_a_session_of_its_own() -> None:
    script = f"import subprocess; subprocess.Popen(['sleep', '{SLEEP}'], start_new_session=True)"
    process = ServiceProcess("parent", "tests.unit.support.spawn", [script], dict(os.environ))
    process.start()
    try:
        assert _until(_sleepers)
        assert process.exited() == 0  # the parent is gone, its child runs on
        assert _sleepers()
    finally:
        process.close()

    assert not _sleepers()


def test_another_runs_mark_is_not_this_runs() -> None:
    assert leftovers.leftovers("no-such-run") == []
    assert os.getpid() not in [leftover.pid for leftover in leftovers.leftovers()]
