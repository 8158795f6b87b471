"""A pod's report as the agent reads it: a supervisor that ends the pod just as the agent
looks is not taken for one gone without a report (a chaos run saw such a pod end ``Lost``)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.app.supervisor import STATUS_FILE
from vcbus.services.agent.model import PodReport

UID = "uid-0"


def _write(runtime: HostProcesses, report: PodReport) -> None:
    runtime.pod_dir(UID).mkdir(parents=True, exist_ok=True)
    (runtime.pod_dir(UID) / STATUS_FILE).write_bytes(msgspec.json.encode(report))


def test_a_pod_that_ends_as_its_report_is_read_is_reported_ended_not_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = HostProcesses(tmp_path, None)
    _write(runtime, PodReport(phase=PodPhase.RUNNING, ran=True, supervisor=7))
    ended = PodReport(phase=PodPhase.SUCCEEDED, ran=True, exit_code=0, supervisor=7)

    def exits_now(uid: str) -> bool:
        # the supervisor writes its final report and exits between the agent's two looks
        _write(runtime, ended)
        return False

    monkeypatch.setattr(runtime, "alive", exits_now)
    assert runtime.report(UID) == ended


def test_a_supervisor_gone_without_a_final_report_is_reported_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = HostProcesses(tmp_path, None)
    _write(runtime, PodReport(phase=PodPhase.RUNNING, ran=True, supervisor=7))
    monkeypatch.setattr(runtime, "alive", lambda uid: False)
    assert runtime.report(UID) is None
    monkeypatch.setattr(runtime, "alive", lambda uid: True)
    assert runtime.report(UID) == PodReport(phase=PodPhase.RUNNING, ran=True, supervisor=7)
