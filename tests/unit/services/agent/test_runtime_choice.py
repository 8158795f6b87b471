"""Which runtime an agent picks: podman where it runs containers, else host processes, said."""

from __future__ import annotations

import pytest

from vcbus.core.runtime.settings import SettingsError
from vcbus.services.agent.app import podman
from vcbus.services.cli import build_parser
from vcbus.services.cli.agent import pick_runtime


def test_an_agent_runs_containers_where_podman_works_unless_told_otherwise() -> None:
    assert build_parser().parse_args(["agent"]).runtime == "auto"


def test_without_podman_auto_falls_back_to_processes_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert podman.unavailable() == "podman is not installed"
    assert pick_runtime("auto") == ("process", "podman is not installed")
    with pytest.raises(SettingsError, match="--runtime podman: podman is not installed"):
        pick_runtime("podman")


def test_process_is_chosen_without_asking_podman(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podman, "unavailable", lambda: pytest.fail("podman was asked"))
    assert pick_runtime("process") == ("process", "--runtime process")


def test_a_containers_command_replaces_the_entrypoint_and_args_follow_the_image() -> None:
    argv = podman.run_argv(
        uid="u-1",
        node="n",
        hostname="job-task-0",
        container="main",
        image="img:1",
        command=["sh", "-c"],
        args=["echo hi"],
        env={"A": "1"},
        working_dir="",
        files_dir="",
        user=1000,
        group=None,
        memory_bytes=64 * 1024 * 1024,
        cpu_millis=500,
    )
    assert argv[-3:] == ['["sh", "-c"]', "img:1", "echo hi"]
    assert argv[argv.index("--name") + 1] == "vcbus-u-1-main"
    assert "io.vcbus.pod-uid=u-1" in argv
    assert "io.vcbus.node=n" in argv
    assert argv[argv.index("--hostname") + 1] == "job-task-0"
    assert argv[argv.index("--user") + 1] == "1000:1000"
    assert argv[argv.index("--memory") + 1] == str(64 * 1024 * 1024)
    assert argv[argv.index("--cpus") + 1] == "0.5"
    assert "--workdir" not in argv  # the image's
    only_args = podman.run_argv(
        uid="u-1",
        node="n",
        hostname="h",
        container="c",
        image="img:1",
        command=[],
        args=["x"],
        env={},
        working_dir="/w",
        files_dir="",
        user=None,
        group=None,
        memory_bytes=0,
        cpu_millis=0,
    )
    assert "--entrypoint" not in only_args
    assert only_args[-2:] == ["img:1", "x"]
