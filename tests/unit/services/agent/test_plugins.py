"""Volcano's job plugins for host processes: names and formats of ``pkg/controllers/job/plugins``.

Expected values are Volcano's (its ``*_test.go`` where one exists), with each host the
peer's address and each port the peer's host port.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import msgspec
import pytest

from vcbus.contracts.objects.job import Job
from vcbus.services.agent.plugins import (
    PLUGINS,
    Peer,
    PodPort,
    go_flags,
    pod_plugins,
    pod_ports,
)

DIRECTORY = "/pods/p/volcano"


def build_job(
    name: str,
    tasks: Sequence[tuple[str, int]],
    plugins: Mapping[str, Sequence[str]],
    **templates: Mapping[str, object],
) -> Job:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "plugins": {key: list(value) for key, value in plugins.items()},
                "tasks": [
                    {
                        "name": task,
                        "replicas": replicas,
                        "template": {"spec": templates.get(task, {})},
                    }
                    for task, replicas in tasks
                ],
            },
        },
        Job,
    )


def peers_of(job: Job, ports: Mapping[int, int] | None = None) -> list[Peer]:
    """Every pod of the job, the n-th on host ``10.0.0.<n>`` with host ports ``ports`` + n."""
    pods = [(spec.name, index) for spec in job.spec.tasks for index in range(spec.replicas)]
    return [
        Peer(
            task=task,
            index=index,
            address=f"10.0.0.{n}",
            ports={port: host + n for port, host in (ports or {}).items()},
        )
        for n, (task, index) in enumerate(pods)
    ]


def env_of(env: Sequence[tuple[str, str]]) -> dict[str, str]:
    return dict(env)


def test_env_plugin_gives_the_task_index_to_containers_and_init_containers() -> None:
    job = build_job("j", [("worker", 3)], {"env": []})

    given = pod_plugins(job, "worker", 2, peers_of(job), directory=DIRECTORY)

    assert given.env == (("VK_TASK_INDEX", "2"), ("VC_TASK_INDEX", "2"))
    assert given.init_env == given.env
    assert given.files == {}


def test_svc_plugin_writes_volcanos_configmap_keys_with_peer_addresses() -> None:
    """``svc.go`` ``GenerateHosts``: ``<task>.host`` keeps case with ``-`` → ``_``."""
    job = build_job("mpi", [("my-Master", 1), ("worker", 2)], {"svc": []})

    given = pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY)

    assert given.files == {
        "etc/volcano/my_Master.host": "10.0.0.0",
        "etc/volcano/VC_MY_MASTER_HOSTS": "10.0.0.0",
        "etc/volcano/VC_MY_MASTER_NUM": "1",
        "etc/volcano/worker.host": "10.0.0.1\n10.0.0.2",
        "etc/volcano/VC_WORKER_HOSTS": "10.0.0.1,10.0.0.2",
        "etc/volcano/VC_WORKER_NUM": "2",
    }
    assert given.env == (
        ("VC_MY_MASTER_HOSTS", "10.0.0.0"),
        ("VC_MY_MASTER_NUM", "1"),
        ("VC_WORKER_HOSTS", "10.0.0.1,10.0.0.2"),
        ("VC_WORKER_NUM", "2"),
        ("VCBUS_ETC_VOLCANO", "/pods/p/volcano/etc/volcano"),
    )
    assert given.init_env == given.env
    assert given.missing == ()


def test_svc_plugin_injects_no_host_env_with_inject_hosts_env_false() -> None:
    job = build_job("j", [("worker", 2)], {"svc": ["--inject-hosts-env=false"]})

    given = pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY)

    assert env_of(given.env) == {"VCBUS_ETC_VOLCANO": "/pods/p/volcano/etc/volcano"}
    assert given.files["etc/volcano/VC_WORKER_NUM"] == "2"


def test_svc_plugin_lists_one_host_for_a_task_whose_template_sets_a_hostname() -> None:
    job = build_job("j", [("worker", 3)], {"svc": []}, worker={"hostname": "w"})

    given = pod_plugins(job, "worker", 1, peers_of(job), directory=DIRECTORY)

    assert given.files["etc/volcano/worker.host"] == "10.0.0.0"
    assert given.files["etc/volcano/VC_WORKER_NUM"] == "1"


def test_unknown_peers_are_named_as_volcano_names_them_and_reported_missing() -> None:
    job = build_job("j", [("ps", 1), ("worker", 2)], {"svc": []})
    known = [peer for peer in peers_of(job) if peer.task == "worker"]

    given = pod_plugins(job, "worker", 0, known, directory=DIRECTORY)

    assert given.files["etc/volcano/ps.host"] == "j-ps-0.j"
    assert given.missing == (("ps", 0),)


def test_pytorch_master_gets_its_address_its_host_port_world_size_and_rank_zero() -> None:
    """``pytorch_test.go`` "test master pod env", with the master's host port."""
    job = build_job("test-pytorch", [("master", 1), ("worker", 2)], {"pytorch": ["--port=5000"]})

    given = pod_plugins(job, "master", 0, peers_of(job, {5000: 5000}), directory=DIRECTORY)

    assert given.env == (
        ("VCBUS_PORT_5000", "5000"),
        ("MASTER_ADDR", "10.0.0.0"),
        ("MASTER_PORT", "5000"),
        ("WORLD_SIZE", "3"),
        ("RANK", "0"),
    )
    assert given.init_env == (("VCBUS_PORT_5000", "5000"),)


def test_pytorch_worker_gets_the_masters_host_port_and_rank_index_plus_one() -> None:
    job = build_job("test-pytorch", [("master", 1), ("worker", 2)], {"pytorch": []})
    peers = peers_of(job, {23456: 23456})

    given = pod_plugins(job, "worker", 1, peers, directory=DIRECTORY)

    assert env_of(given.env) == {
        "VCBUS_PORT_23456": "23458",
        "MASTER_ADDR": "10.0.0.0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }


def test_pytorch_names_a_master_not_yet_bound_as_volcano_does_and_reports_it_missing() -> None:
    job = build_job("t", [("master", 1), ("worker", 1)], {"pytorch": []})
    workers = [peer for peer in peers_of(job, {23456: 30000}) if peer.task == "worker"]

    given = pod_plugins(job, "worker", 0, workers, directory=DIRECTORY)

    assert env_of(given.env)["MASTER_ADDR"] == "t-master-0.t"
    assert env_of(given.env)["MASTER_PORT"] == "23456"
    assert given.missing == (("master", 0),)


def test_pytorch_gives_nothing_to_a_job_without_the_master_task() -> None:
    """``pytorch_test.go`` "test pod without master"."""
    job = build_job("test-pytorch", [("worker", 1)], {"pytorch": []})

    given = pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY)

    assert given.env == ()


def test_pytorch_other_tasks_get_no_rank_and_roles_follow_the_flags() -> None:
    job = build_job(
        "j",
        [("chief", 1), ("w", 1), ("extra", 1)],
        {"pytorch": ["--master", "chief", "--worker=w"]},
    )

    given = pod_plugins(job, "extra", 0, peers_of(job), directory=DIRECTORY)

    assert env_of(given.env) == {
        "MASTER_ADDR": "10.0.0.0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "2",
    }


def test_pytorch_wait_master_adds_volcanos_init_container_on_workers() -> None:
    job = build_job(
        "j", [("master", 1), ("worker", 1)], {"pytorch": ["--wait-master-enabled", "--port=7"]}
    )

    worker = pod_plugins(job, "worker", 0, peers_of(job, {7: 100}), directory=DIRECTORY)
    master = pod_plugins(job, "master", 0, peers_of(job, {7: 100}), directory=DIRECTORY)

    (init,) = worker.init_containers
    assert (init["name"], init["image"]) == ("wait-for-master", "busybox:1.36.1")
    command = init["command"]
    assert isinstance(command, list)
    assert command[:2] == ["sh", "-c"]
    assert "until { nc -z 10.0.0.0 100 || echo > /dev/tcp/10.0.0.0/100; }" in command[2]
    assert "TIMEOUT=300\n" in command[2]
    assert master.init_containers == ()


def test_mpi_master_gets_the_worker_hosts_in_containers_and_init_containers() -> None:
    """``mpi.go`` ``generateTaskHosts``; admission has added ``svc`` and ``ssh``."""
    job = build_job("mpi", [("master", 1), ("worker", 2)], {"mpi": []})

    master = pod_plugins(job, "master", 0, peers_of(job), directory=DIRECTORY)
    worker = pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY)

    assert env_of(master.env)["MPI_HOST"] == "10.0.0.1,10.0.0.2"
    assert env_of(master.init_env)["MPI_HOST"] == "10.0.0.1,10.0.0.2"
    assert "MPI_HOST" not in env_of(worker.env)


def test_tensorflow_config_is_gos_json_with_each_pods_host_port() -> None:
    """``tensorflow_test.go`` ``TestTensorflow``, worker case, with addresses and ports."""
    job = build_job(
        "train-123", [("ps", 2), ("worker", 2), ("chief", 1)], {"tensorflow": ["--port=5000"]}
    )

    given = pod_plugins(job, "worker", 0, peers_of(job, {5000: 5000}), directory=DIRECTORY)

    expected = (
        '{"cluster":{"ps":["10.0.0.0:5000","10.0.0.1:5001"],'
        '"worker":["10.0.0.2:5002","10.0.0.3:5003"],"chief":["10.0.0.4:5004"]},'
        '"task":{"type":"worker","index":0}}'
    )
    assert env_of(given.env)["TF_CONFIG"] == expected
    assert "TF_CONFIG" not in env_of(given.init_env)


def test_tensorflow_gives_nothing_to_a_job_of_one_pod() -> None:
    job = build_job("j", [("worker", 1)], {"tensorflow": []})

    assert pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY).env == ()


def test_tensorflow_task_type_of_an_unknown_role_is_the_task_name() -> None:
    job = build_job("j", [("worker", 1), ("other", 1)], {"tensorflow": []})

    config = json.loads(
        env_of(pod_plugins(job, "other", 0, peers_of(job), directory=DIRECTORY).env)["TF_CONFIG"]
    )

    assert config == {
        "cluster": {"worker": ["10.0.0.0:2222"]},
        "task": {"type": "other", "index": 0},
    }


def test_ssh_config_aliases_each_pod_to_its_address_and_ssh_host_port() -> None:
    """``ssh.go`` ``generateSSHConfig``: mpi's port 22 is allocated, so each pod's is used."""
    job = build_job("mpi", [("master", 1), ("worker", 1)], {"mpi": [], "ssh": []})

    given = pod_plugins(job, "master", 0, peers_of(job, {22: 2200}), directory=DIRECTORY)

    assert given.files["ssh/config"] == (
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        "Host mpi-master-0\n  HostName 10.0.0.0\n  Port 2200\n"
        "Host mpi-worker-0\n  HostName 10.0.0.1\n  Port 2201\n"
    )
    assert env_of(given.env)["VCBUS_SSH_CONFIG"] == "/pods/p/volcano/ssh/config"


def test_ssh_config_uses_the_port_itself_where_a_pod_has_no_host_port_for_it() -> None:
    job = build_job("j", [("worker", 1)], {"ssh": ["--ssh-port=99999"]})

    given = pod_plugins(job, "worker", 0, peers_of(job), directory=DIRECTORY)

    assert given.files["ssh/config"].endswith("Host j-worker-0\n  HostName 10.0.0.0\n  Port 22\n")


def test_plugins_are_applied_in_name_order() -> None:
    job = build_job("j", [("worker", 1)], {"svc": [], "env": []})

    names = [name for name, _ in pod_plugins(job, "worker", 0, peers_of(job), directory="/d").env]

    assert names == [
        "VK_TASK_INDEX",
        "VC_TASK_INDEX",
        "VC_WORKER_HOSTS",
        "VC_WORKER_NUM",
        "VCBUS_ETC_VOLCANO",
    ]


def test_pod_ports_are_the_declared_container_ports_then_the_plugins_ports() -> None:
    container = {"name": "main", "ports": [{"name": "http", "containerPort": 8080}]}
    init = {"name": "init", "ports": [{"containerPort": 23456, "name": "mine"}]}
    job = build_job(
        "j",
        [("master", 1), ("worker", 1)],
        {"pytorch": [], "mpi": [], "tensorflow": ["-port", "2223"]},
        master={"containers": [container], "initContainers": [init]},
    )

    assert pod_ports(job, "master") == (
        PodPort(name="mine", container_port=23456),
        PodPort(name="http", container_port=8080),
        PodPort(name="mpijob-port", container_port=22),
        PodPort(name="tfjob-port", container_port=2223),
    )
    assert pod_ports(job, "worker") == (
        PodPort(name="pytorchjob-port", container_port=23456),
        PodPort(name="mpijob-port", container_port=22),
        PodPort(name="tfjob-port", container_port=2223),
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["-port", "5"], {"port": 5, "name": "x", "on": False}),
        (["--port=0x10", "-on"], {"port": 16, "name": "x", "on": True}),
        (["-port=010"], {"port": 8, "name": "x", "on": False}),
        (["-on=false", "--name", "-y"], {"port": 1, "name": "-y", "on": False}),
        (["-name=a", "stop", "-port=9"], {"port": 1, "name": "a", "on": False}),
        (["-name=a", "--", "-port=9"], {"port": 1, "name": "a", "on": False}),
        (["-name=a", "-unknown", "-port=9"], {"port": 1, "name": "a", "on": False}),
        (["-port=nine", "-name=a"], {"port": 1, "name": "x", "on": False}),
        (["-on", "true", "-name=a"], {"port": 1, "name": "x", "on": True}),
        (["-port"], {"port": 1, "name": "x", "on": False}),
    ],
)
def test_go_flags_reads_arguments_as_gos_flag_package(
    arguments: list[str], expected: dict[str, object]
) -> None:
    assert go_flags(arguments, {"port": 1, "name": "x", "on": False}) == expected


def test_the_registry_has_one_module_per_volcano_plugin_and_ports_in_volcanos_order() -> None:
    assert list(PLUGINS) == ["env", "svc", "pytorch", "mpi", "tensorflow", "ssh"]
    job = build_job("j", [("master", 1)], {"tensorflow": [], "mpi": ["--port=7"], "pytorch": []})
    assert [port.name for port in pod_ports(job, "master")] == [
        "pytorchjob-port",
        "mpijob-port",
        "tfjob-port",
    ]
