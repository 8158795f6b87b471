"""A pod's volumes in its launch plan: emptyDir and hostPath mounted, other kinds refused."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from tests.unit.services.agent.test_launch import PLACE, POD, POLICY, container, job
from vcbus.contracts.objects.job import Job
from vcbus.services.agent.launch import PlanError, plan_pod
from vcbus.services.agent.model import MountRun, VolumeRun

BOXED = dataclasses.replace(PLACE, runtime="podman", resolved_paths={"/scratch/in": "/scratch/in"})


def test_empty_dirs_and_host_paths_become_the_containers_mounts() -> None:
    spec = {
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "data", "hostPath": {"path": "/scratch/in"}},
        ],
        "initContainers": [
            container(name="fetch", volumeMounts=[{"name": "scratch", "mountPath": "/work"}])
        ],
        "containers": [
            container(
                volumeMounts=[
                    {"name": "scratch", "mountPath": "/work"},
                    {"name": "shm", "mountPath": "/dev/shm"},
                    {"name": "data", "mountPath": "/in", "readOnly": True},
                ]
            )
        ],
    }
    plan, _ = plan_pod(job(spec), POD, [], BOXED, POLICY)
    assert plan.volumes == (
        VolumeRun(name="scratch", kind="emptyDir"),
        VolumeRun(name="shm", kind="emptyDir", memory=True, size_bytes=64 * 1024 * 1024),
        VolumeRun(name="data", kind="hostPath", host_path="/scratch/in"),
    )
    fetch, main = plan.containers
    assert fetch.mounts == (MountRun(volume="scratch", path="/work"),)
    assert main.mounts == (
        MountRun(volume="scratch", path="/work"),
        MountRun(volume="shm", path="/dev/shm"),
        MountRun(volume="data", path="/in", read_only=True),
    )


@pytest.mark.parametrize(
    ("volume", "named"),
    [
        ({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}, "claim"),
        ({"name": "conf", "configMap": {"name": "m"}}, "conf"),
        ({"name": "huge", "emptyDir": {"medium": "HugePages"}}, "huge"),
    ],
)
def test_a_kind_a_node_does_not_provide_fails_the_pod_naming_the_volume(
    volume: dict[str, Any], named: str
) -> None:
    spec = {"volumes": [volume], "containers": [container()]}
    for place in (PLACE, BOXED):  # on host processes as in containers
        with pytest.raises(PlanError, match=f"volume {named} .*not supported") as error:
            plan_pod(job(spec), POD, [], place, POLICY)
        assert error.value.reason == "VolumeNotSupported"


def test_the_jobs_own_volumes_are_claims_and_refused() -> None:
    raw = msgspec.to_builtins(job({"containers": [container()]}))
    raw["spec"]["volumes"] = [{"mountPath": "/ckpt", "volumeClaimName": "ckpt-claim"}]
    with pytest.raises(PlanError, match=r"volume ckpt-claim .*persistentVolumeClaim at /ckpt"):
        plan_pod(msgspec.convert(raw, Job), POD, [], BOXED, POLICY)


@pytest.mark.parametrize(
    ("mount", "says", "reason"),
    [
        ({"name": "nope", "mountPath": "/x"}, "names 'nope', no volume", "InvalidSpec"),
        ({"name": "v", "mountPath": "rel"}, "is not an absolute path", "InvalidSpec"),
        ({"name": "v", "mountPath": "/a:/b"}, "without ':'", "InvalidSpec"),
        ({"name": "v", "mountPath": "/x", "subPath": "s"}, "subPath", "VolumeNotSupported"),
    ],
)
def test_a_mount_out_of_its_format_fails_the_pod_naming_it(
    mount: dict[str, Any], says: str, reason: str
) -> None:
    spec = {
        "volumes": [{"name": "v", "emptyDir": {}}],
        "containers": [container(volumeMounts=[mount])],
    }
    with pytest.raises(PlanError, match=f"container main: .*{says}") as error:
        plan_pod(job(spec), POD, [], BOXED, POLICY)
    assert error.value.reason == reason


def test_host_processes_mount_nothing() -> None:
    spec = {
        "volumes": [{"name": "v", "emptyDir": {}}],
        "containers": [container(volumeMounts=[{"name": "v", "mountPath": "/x"}])],
    }
    plan, _ = plan_pod(job(spec), POD, [], PLACE, POLICY)
    assert (plan.volumes, plan.containers[0].mounts) == ((), ())
