"""``vcbus agent``'s options: the node it registers, who pods run as, where they live."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.contracts.objects.node import Taint
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.services.agent.app.shell import AgentOptions
from vcbus.services.cli import build_parser
from vcbus.services.cli.agent import (
    LABEL_ADDRESS,
    LABEL_AGENT,
    LABEL_AGENT_PORT,
    _taint,
    check_reachable,
    options_from,
    pod_uid_range,
    run_as,
)

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
    """The options of ``vcbus agent`` with ``words`` (pods as ``nobody`` where root, as
    host processes: what podman the host has is not these tests' business)."""
    user = ["--run-as", "nobody"] if ROOT else []
    base = ["agent", "--data-dir", str(data_dir), "--listen-port", "0", "--no-limits"]
    args = build_parser().parse_args([*base, "--runtime", "process", *user, *words])
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


@pytest.mark.skipif(not ROOT, reason="a uid per pod is for a root agent")
def test_a_root_agent_without_run_as_gives_each_pod_a_uid_of_its_own(data_dir: Path) -> None:
    args = build_parser().parse_args(
        ["agent", "--data-dir", str(data_dir), "--listen-port", "0", "--no-limits"]
    )
    made = options_from(args, SETTINGS)
    assert made.server.sock is not None
    made.server.sock.close()
    assert made.conf.pod_users == (200000, 265535)
    assert (made.policy.user, made.policy.group) == (None, None)
    assert options(data_dir).conf.pod_users is None  # --run-as: every pod as that user


def test_a_pod_uid_range_holding_root_or_not_a_range_is_refused() -> None:
    assert pod_uid_range("300000-300009") == (300000, 300009)
    for text in ("0-10", "10-5", "abc", "5"):
        with pytest.raises(SettingsError, match="--pod-uids"):
            pod_uid_range(text)
