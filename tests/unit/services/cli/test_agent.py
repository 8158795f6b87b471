"""``vcbus agent``'s options: the node it registers, who pods run as, where they live."""

from __future__ import annotations

import os
import pwd
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.contracts.objects.node import Taint
from vcbus.services.agent.app.shell import AgentOptions
from vcbus.services.cli import build_parser
from vcbus.services.cli.agent import (
    LABEL_ADDRESS,
    LABEL_AGENT,
    LABEL_AGENT_PORT,
    _taint,
    check_reachable,
    default_run_as,
    options_from,
    run_as,
)
from vcbus.services.cli.up import agent_args
from vcbus.shared.runtime.settings import Settings, SettingsError

SETTINGS = Settings.from_env({"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"})
ROOT = os.geteuid() == 0
"""Whether this run may switch users (pods then run as ``nobody`` here)."""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="vcbus-cli-agent-"))
    base.chmod(0o711)
    yield base / "data"
    for path in sorted(base.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    base.rmdir()


def options(data_dir: Path, *words: str) -> AgentOptions:
    """The options of ``vcbus agent`` with ``words`` (pods as ``nobody`` where root)."""
    user = ["--run-as", "nobody"] if ROOT else []
    args = build_parser().parse_args(
        ["agent", "--data-dir", str(data_dir), "--listen-port", "0", "--no-limits", *user, *words]
    )
    made = options_from(args, SETTINGS)
    assert made.server.sock is not None
    made.server.sock.close()
    return made


def test_the_node_has_the_kubelets_labels_the_agents_address_and_the_given_ones(
    data_dir: Path,
) -> None:
    made = options(
        data_dir,
        "--node-name",
        "h1",
        "--cpu",
        "3",
        "--memory",
        "2Gi",
        "--label",
        "zone=a",
        "--taint",
        "gpu=yes:NoSchedule",
        "--address",
        "10.1.2.3",
    )
    node = made.node
    assert node.name == "h1"
    assert node.allocatable == {"cpu": 3000, "memory": 2 * 2**30, "pods": 110}
    assert node.labels["kubernetes.io/hostname"] == "h1"
    assert node.labels["kubernetes.io/os"] == "linux"
    assert (node.labels[LABEL_AGENT], node.labels[LABEL_ADDRESS], node.labels["zone"]) == (
        "true",
        "10.1.2.3",
        "a",
    )
    assert int(node.labels[LABEL_AGENT_PORT]) > 0
    assert node.taints == (Taint(key="gpu", value="yes", effect="NoSchedule"),)
    assert made.conf.host_ip == "10.1.2.3"
    assert (made.policy.user, made.policy.allow_root) == ((65534, False) if ROOT else (None, False))


def test_the_hosts_capacity_less_the_reserve_is_allocatable(data_dir: Path) -> None:
    made = options(data_dir, "--reserve-cpu", "1", "--reserve-memory", "1Gi")
    assert made.node.allocatable["cpu"] == max((os.cpu_count() or 1) * 1000 - 1000, 0)
    assert made.node.allocatable["memory"] > 0


def test_root_needs_allow_root_and_an_unknown_user_is_named() -> None:
    with pytest.raises(SettingsError, match="--allow-root"):
        run_as("root", allow_root=False, euid=0)
    assert run_as("root", allow_root=True, euid=0) == (0, 0)
    assert run_as("nobody:root", allow_root=False, euid=0) == (65534, 0)
    with pytest.raises(SettingsError, match="'no-such-user', which does not exist"):
        run_as("no-such-user", allow_root=False, euid=0)


def test_pods_run_as_vcbus_pod_else_nobody_by_default_for_agent_and_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One rule for ``vcbus agent`` and ``vcbus up --agent``: vcbus-pod, else nobody."""
    real = pwd.getpwnam

    def without_vcbus_pod(name: str) -> pwd.struct_passwd:
        if name == "vcbus-pod":
            raise KeyError(name)
        return real(name)

    monkeypatch.setattr(pwd, "getpwnam", without_vcbus_pod)
    assert default_run_as() == "nobody"
    assert run_as("", allow_root=False, euid=0) == (65534, real("nobody").pw_gid)
    up = build_parser().parse_args(["up", "--agent"])
    assert "--run-as" not in agent_args(up, "/tmp/x")  # the agent's own default applies

    made = pwd.struct_passwd(("vcbus-pod", "x", 4242, 4243, "", "/", "/usr/sbin/nologin"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: made if name == "vcbus-pod" else real(name))
    assert default_run_as() == "vcbus-pod"
    assert run_as("", allow_root=False, euid=0) == (4242, 4243)


def test_an_agent_that_is_not_root_runs_pods_as_itself() -> None:
    assert run_as("", allow_root=False, euid=1000) == (None, None)
    with pytest.raises(SettingsError, match="needs the agent to run as root"):
        run_as("nobody", allow_root=False, euid=1000)


def test_a_data_directory_the_pods_user_cannot_reach_is_refused(data_dir: Path) -> None:
    private = data_dir.parent / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(SettingsError, match=f"{private} is not searchable by others"):
        check_reachable(private / "data", 65534)
    check_reachable(data_dir, 65534)


@pytest.mark.parametrize(
    ("text", "taint"),
    [
        ("gpu=yes:NoSchedule", Taint(key="gpu", value="yes", effect="NoSchedule")),
        ("dedicated:NoExecute", Taint(key="dedicated", value="", effect="NoExecute")),
        ("spot", Taint(key="spot", value="", effect="NoSchedule")),
    ],
)
def test_a_taint_reads_as_kubectl_writes_it(text: str, taint: Taint) -> None:
    assert _taint(text) == taint


def test_a_taint_with_an_unknown_effect_is_refused() -> None:
    with pytest.raises(SettingsError, match="--taint"):
        _taint("a=b:Sometimes")
