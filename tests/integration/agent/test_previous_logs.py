"""A forgotten pod's logs are kept for ``logs --previous``: one incarnation per pod, bounded."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from vcbus.services.agent.app import runtime as runtime_module
from vcbus.services.agent.app.logserver import _kept_log
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.model import ContainerRun, PodPlan

pytestmark = pytest.mark.timeout(60)

PATH = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
WAIT = 30.0


@pytest.fixture
def runtime() -> Iterator[HostProcesses]:
    base = Path(tempfile.mkdtemp(prefix="vcbus-previous-"))
    base.chmod(0o711)
    host = HostProcesses(base / "agent", None)
    yield host
    host.close()
    shutil.rmtree(base)


def run_to_end(runtime: HostProcesses, uid: str, script: str) -> None:
    container = ContainerRun(name="main", argv=("sh", "-c", script), env=PATH)
    runtime.start(PodPlan(pod="p", uid=uid, restart_policy="Never", containers=(container,)), {})
    deadline = time.monotonic() + WAIT
    while not ((report := runtime.report(uid)) and report.is_final):
        assert time.monotonic() < deadline, f"pod {uid} did not end"
        time.sleep(0.05)


def request(query: bytes = b"") -> Request:
    return Request({"type": "http", "query_string": query, "headers": []})


def test_a_forgotten_pods_last_incarnation_log_is_kept_and_served(runtime: HostProcesses) -> None:
    run_to_end(runtime, "u1", "echo first incarnation")
    runtime.forget("u1", keep_logs_as="default/job-task-0")
    run_to_end(runtime, "u2", "echo second incarnation; echo its last line")
    runtime.forget("u2", keep_logs_as="default/job-task-0")

    assert not runtime.pod_dir("u2").exists()
    kept = runtime.previous_dir("default/job-task-0")
    assert kept is not None
    response = _kept_log(kept, "default/job-task-0", request(b"tail=1"))
    assert (response.status_code, response.body) == (200, b"its last line\n")
    missing = _kept_log(kept, "default/job-task-0", request(b"container=sidecar"))
    assert missing.status_code == 404
    assert b"no log of container 'sidecar' (it had: main)" in missing.body


def test_a_pod_forgotten_without_a_key_keeps_nothing(runtime: HostProcesses) -> None:
    run_to_end(runtime, "u3", "echo gone")
    runtime.forget("u3")
    assert runtime.previous_dir("default/job-task-0") is None


def test_only_the_most_recently_forgotten_pods_are_kept(
    runtime: HostProcesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime_module, "PREVIOUS_KEPT", 2)
    for index in range(3):
        run_to_end(runtime, f"v{index}", f"echo {index}")
        runtime.forget(f"v{index}", keep_logs_as=f"default/job-task-{index}")
    kept = [runtime.previous_dir(f"default/job-task-{index}") for index in range(3)]
    assert kept[0] is None
    assert None not in kept[1:]
