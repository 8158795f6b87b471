"""A pod's launch plan: its template read as host processes, with the plugins' grants."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import msgspec
import pytest

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import Pod
from vcbus.services.agent.launch import Placement, PlanError, Policy, expand, plan_pod
from vcbus.services.agent.model import HostPortRun
from vcbus.services.agent.plugins import Peer

PLACE = Placement(
    node="host-a",
    host_ip="10.0.0.7",
    pod_dir="/data/pods/u1/volcano",
    work_dir="/data/pods/u1/work",
)
POLICY = Policy(user=1000, group=1000, host_paths=("/scratch",))


def job(
    spec: dict[str, Any], *, plugins: dict[str, list[str]] | None = None, replicas: int = 1
) -> Job:
    return msgspec.convert(
        {
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {
                "plugins": plugins or {},
                "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": spec}}],
            },
        },
        Job,
    )


POD = Pod(
    name="j-worker-0",
    namespace="default",
    job=JobKey("default/j"),
    task="worker",
    index=0,
    podgroup="j",
    uid="u1",
    termination_grace_period_seconds=7,
)


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox", "command": ["sh", "-c"], **fields}


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("$(A)-$(B)", "1-two"),
        ("$$(A)", "$(A)"),
        ("$(MISSING)", "$(MISSING)"),
        ("$(A", "$(A"),
        ("$A", "$A"),
    ],
)
def test_references_expand_as_kubernetes_expands_them(text: str, expanded: str) -> None:
    assert expand(text, {"A": "1", "B": "two"}) == expanded


def test_command_args_env_and_field_refs_become_the_process() -> None:
    spec = {
        "restartPolicy": "OnFailure",
        "activeDeadlineSeconds": 30,
        "containers": [
            container(
                args=["echo $(GREETING) from $(POD)"],
                env=[
                    {"name": "WHO", "value": "world"},
                    {"name": "GREETING", "value": "hello $(WHO)"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ],
                resources={"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"cpu": "1"}},
            )
        ],
    }
    plan, _ = plan_pod(job(spec), POD, [], PLACE, POLICY)
    (run,) = plan.containers
    assert run.argv == ("sh", "-c", "echo hello world from j-worker-0")
    assert {k: run.env[k] for k in ("IP", "NODE", "HOME", "HOSTNAME")} == {
        "IP": "10.0.0.7",
        "NODE": "host-a",
        "HOME": "/data/pods/u1/work",
        "HOSTNAME": "j-worker-0",
    }
    assert run.working_dir == "/data/pods/u1/work"
    assert run.image == "busybox"
    assert (plan.restart_policy, plan.active_deadline_seconds, plan.grace_seconds) == (
        "OnFailure",
        30.0,
        7.0,
    )
    assert (plan.user, plan.group) == (1000, 1000)
    assert (plan.limits.cpu_millis, plan.limits.memory_bytes) == (1500, 2**30)


def test_init_containers_come_first_in_order() -> None:
    spec = {
        "initContainers": [container(name="a"), container(name="b")],
        "containers": [container(name="main", workingDir="/srv")],
    }
    plan, _ = plan_pod(job(spec), POD, [], PLACE, POLICY)
    assert [(c.name, c.init) for c in plan.containers] == [
        ("a", True),
        ("b", True),
        ("main", False),
    ]
    assert plan.containers[2].working_dir == "/srv"


def test_the_plugins_variables_follow_the_containers_own() -> None:
    spec = {"containers": [container(env=[{"name": "MINE", "value": "1"}])]}
    peers = [Peer(task="worker", index=0, address="10.0.0.7", ports={})]
    plan, grants = plan_pod(job(spec, plugins={"env": [], "svc": []}), POD, peers, PLACE, POLICY)
    names = list(plan.containers[0].env)
    assert names.index("MINE") < names.index("VC_TASK_INDEX")
    assert plan.containers[0].env["VC_WORKER_HOSTS"] == "10.0.0.7"
    assert plan.containers[0].env["VCBUS_ETC_VOLCANO"] == "/data/pods/u1/volcano/etc/volcano"
    assert grants.files["etc/volcano/worker.host"] == "10.0.0.7"
    assert grants.missing == ()


def test_a_container_without_command_fails_with_a_clear_reason() -> None:
    spec = {"containers": [{"name": "main", "image": "busybox"}]}
    with pytest.raises(PlanError, match="container main has no command") as error:
        plan_pod(job(spec), POD, [], PLACE, POLICY)
    assert error.value.reason == "NoCommand"


def test_an_env_source_a_host_cannot_read_fails_the_pod() -> None:
    secret = {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    with pytest.raises(PlanError, match="env S comes from secretKeyRef") as error:
        plan_pod(job({"containers": [container(env=[secret])]}), POD, [], PLACE, POLICY)
    assert error.value.reason == "CreateContainerConfigError"


def test_a_host_path_outside_the_allow_list_is_refused() -> None:
    spec = {
        "containers": [container()],
        "volumes": [
            {"name": "ok", "hostPath": {"path": "/scratch/j"}},
            {"name": "no", "hostPath": {"path": "/etc"}},
        ],
    }
    with pytest.raises(PlanError, match="hostPath /etc is outside") as error:
        plan_pod(job(spec), POD, [], PLACE, POLICY)
    assert error.value.reason == "HostPathNotAllowed"


def test_root_needs_allow_root_and_another_user_allow_pod_users() -> None:
    as_root = {"securityContext": {"runAsUser": 0}, "containers": [container()]}
    with pytest.raises(PlanError, match="--allow-root"):
        plan_pod(job(as_root), POD, [], PLACE, POLICY)
    as_other = {"securityContext": {"runAsUser": 4242}, "containers": [container()]}
    with pytest.raises(PlanError, match="--allow-pod-users"):
        plan_pod(job(as_other), POD, [], PLACE, POLICY)
    allowed = Policy(user=1000, group=1000, allow_pod_users=True)
    plan, _ = plan_pod(job(as_other), POD, [], PLACE, allowed)
    assert (plan.user, plan.group) == (4242, 1000)


def test_run_as_group_follows_the_run_as_user_policy() -> None:
    """A pod's runAsGroup alone (0, or shadow's 42) is refused without permission."""
    for group, needs in ((0, "--allow-root"), (42, "--allow-pod-users")):
        spec = {"securityContext": {"runAsGroup": group}, "containers": [container()]}
        with pytest.raises(PlanError, match=needs) as error:
            plan_pod(job(spec), POD, [], PLACE, POLICY)
        assert "runAsGroup" in str(error.value)
    spec = {"securityContext": {"runAsGroup": 42}, "containers": [container()]}
    plan, _ = plan_pod(
        job(spec), POD, [], PLACE, Policy(user=1000, group=1000, allow_pod_users=True)
    )
    assert (plan.user, plan.group) == (1000, 42)


def test_a_pod_runs_as_its_own_uid_and_gid_and_may_ask_for_them() -> None:
    own = dataclasses.replace(PLACE, user=200007)
    plan, _ = plan_pod(job({"containers": [container()]}), POD, [], own, Policy())
    assert (plan.user, plan.group) == (200007, 200007)
    asks = {
        "securityContext": {"runAsUser": 200007, "runAsGroup": 200007},
        "containers": [container()],
    }
    plan, _ = plan_pod(job(asks), POD, [], own, Policy())
    assert (plan.user, plan.group) == (200007, 200007)


def test_a_container_name_that_is_a_path_fails_the_pod_naming_it() -> None:
    for name in ("../../../../x", "/abs/dir", "a/b", "..", "Main"):
        spec = {"containers": [container(name=name)]}
        with pytest.raises(PlanError, match="container name") as error:
            plan_pod(job(spec), POD, [], PLACE, POLICY)
        assert error.value.reason == "InvalidSpec"


def test_host_paths_are_compared_resolved() -> None:
    """A path under an allowed prefix that resolves outside it (a link, ``..``) is refused."""
    spec = {
        "containers": [container()],
        "volumes": [{"name": "v", "hostPath": {"path": "/scratch/link"}}],
    }
    policy = Policy(host_paths=("/scratch",))
    placed = dataclasses.replace(PLACE, resolved_paths={"/scratch/link": "/etc"})
    with pytest.raises(PlanError, match=r"/scratch/link \(/etc\) is outside"):
        plan_pod(job(spec), POD, [], placed, policy)
    dots = {**spec, "volumes": [{"name": "v", "hostPath": {"path": "/scratch/../etc"}}]}
    with pytest.raises(PlanError, match="outside"):
        plan_pod(job(dots), POD, [], PLACE, policy)


def test_a_task_name_that_is_a_path_fails_the_pod_naming_it() -> None:
    """The plugins write ``etc/volcano/<task>.host``: a task ``../../x`` would aim it out."""
    forged = job({"containers": [container()]})
    forged = msgspec.structs.replace(
        forged,
        spec=msgspec.structs.replace(
            forged.spec,
            tasks=[
                *forged.spec.tasks,
                msgspec.structs.replace(forged.spec.tasks[0], name="../../x"),
            ],
        ),
    )
    with pytest.raises(PlanError, match=re.escape("task name '../../x'")) as error:
        plan_pod(forged, POD, [], PLACE, POLICY)
    assert error.value.reason == "InvalidSpec"


def test_in_containers_the_plugins_name_peers_on_the_node_by_their_volcano_names() -> None:
    tasks = [
        {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container()]}}}
        for name, replicas in (("master", 1), ("worker", 2))
    ]
    gang = msgspec.convert(
        {
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"plugins": {"svc": [], "pytorch": ["--port=23456"]}, "tasks": tasks},
        },
        Job,
    )
    peers = [
        Peer(task="master", index=0, address="10.0.0.7", ports={23456: 30001}, node="host-a"),
        Peer(task="worker", index=0, address="10.0.0.7", ports={23456: 30002}, node="host-a"),
        Peer(task="worker", index=1, address="10.0.0.9", ports={23456: 30005}, node="host-b"),
    ]
    boxed = dataclasses.replace(PLACE, runtime="podman")
    plan, grants = plan_pod(gang, POD, peers, boxed, POLICY)
    env = plan.containers[0].env
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("j-master-0.j", "23456")
    assert env["VC_WORKER_HOSTS"] == "j-worker-0.j,10.0.0.9"
    assert env["VCBUS_ETC_VOLCANO"] == "/etc/volcano"  # where the runtime mounts it
    assert "VCBUS_PORT_23456" not in env  # the container listens on its own port
    assert grants.files["etc/volcano/master.host"] == "j-master-0.j"
    as_processes, _ = plan_pod(gang, POD, peers, PLACE, POLICY)
    assert as_processes.containers[0].env["MASTER_ADDR"] == "10.0.0.7"
    assert as_processes.containers[0].env["MASTER_PORT"] == "30001"


def test_host_ports_are_published_by_a_container_runtime_and_checked() -> None:
    ports = [{"containerPort": 8080, "hostPort": 18080}, {"containerPort": 53, "protocol": "UDP"}]
    boxed = dataclasses.replace(PLACE, runtime="podman")
    plan, _ = plan_pod(job({"containers": [container(ports=ports)]}), POD, [], boxed, POLICY)
    assert plan.host_ports == (HostPortRun(host_port=18080, container_port=8080),)
    bad = [{"containerPort": 8080, "hostPort": 70000}]
    with pytest.raises(PlanError, match="hostPort 70000 of containerPort 8080") as error:
        plan_pod(job({"containers": [container(ports=bad)]}), POD, [], boxed, POLICY)
    assert error.value.reason == "InvalidSpec"
