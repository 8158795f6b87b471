"""Pods in containers: an agent with ``--runtime podman`` runs each container in its image.

One system and one agent (node ``box-0``, ``--runtime auto``) for the module; the image is
built once, offline, ``FROM scratch`` with the host's static busybox. Where podman cannot run
containers and the project's setup did not install it (``VCBUS_EXPECT_PODMAN`` unset), the
agent must say so plainly and run its pods as host processes instead: that is what the
module checks there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    client_env,
    delete_job,
    running,
    simple_job,
    start_agent,
    vcbus_logs,
    wait_for_statuses,
)
from tests.e2e.system import WAIT, System, running_system, submit
from tests.support.processes import Processes, event, service_env
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app import podman

pytestmark = pytest.mark.timeout(300)

IMAGE = "localhost/vcbus-test-busybox:1"
BOX = {"pool": "box"}
PROBLEM = podman.unavailable()


@pytest.fixture(scope="module")
def image() -> str:
    """The busybox image, built once (nothing to build where podman cannot run)."""
    if PROBLEM:
        assert not os.environ.get("VCBUS_EXPECT_PODMAN"), f"podman was installed: {PROBLEM}"
        return ""
    with tempfile.TemporaryDirectory() as context:
        shutil.copy("/bin/busybox", Path(context) / "busybox")
        (Path(context) / "Containerfile").write_text(
            'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "/bin"]\n'
            'CMD ["/bin/sh"]\n'
        )
        subprocess.run([*podman.BASE, "build", "-q", "-t", IMAGE, context], check=True)
    return IMAGE


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """The five services with no simulated node."""
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-box.", cluster_args=("--nodes", "0")
    ) as running_:
        yield running_


@pytest.fixture(scope="module")
def processes() -> Iterator[Processes]:
    with Processes() as started:
        yield started


@pytest.fixture(scope="module")
def data_dirs() -> Iterator[DataDirs]:
    with DataDirs() as dirs:
        yield dirs


@pytest.fixture(scope="module")
def agent(system: System, data_dirs: DataDirs, processes: Processes, image: str) -> RealNode:
    """Node ``box-0``, runtime ``auto``."""
    return start_agent(
        processes,
        system,
        data_dirs.new("box"),
        "box-0",
        "--label",
        "pool=box",
        "--runtime",
        "auto",
    )


def boxed(name: str, script: str, **options: Any) -> str:
    """A job of one pod running ``sh -c script`` in the test image."""
    job = yaml.safe_load(simple_job(name, script, selector=BOX, **options))
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = IMAGE
    return yaml.safe_dump(job)


def containers_of(uid: str) -> list[str]:
    return podman.containers("box-0", uid)


async def no_containers(uid: str) -> list[str]:
    """Wait (bounded) until the pod has no container; those left when the bound passed."""
    left = containers_of(uid)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(WAIT):
            while left:
                await asyncio.sleep(0.2)
                left = containers_of(uid)
    return left


def needs_podman() -> None:
    if PROBLEM:
        pytest.fail(f"podman cannot run containers here: {PROBLEM}")


def test_the_agent_says_which_runtime_it_runs(system: System, agent: RealNode) -> None:
    said = agent.process.wait_for(event("runtime", node="box-0"))
    table = subprocess.run(
        [sys.executable, "-m", "vcbus.services.cli", "get", "nodes", "-o", "wide"],
        env=service_env(system.bootstrap, system.prefix, **client_env()),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    ).stdout.splitlines()
    assert table[0].split()[-1] == "RUNTIME"
    row = next(line.split() for line in table if line.startswith("box-0"))
    assert row[-1] == ("process" if PROBLEM else "podman")
    if PROBLEM:  # plainly said, and the pods run as host processes
        assert said["runtime"] == "process"
        warned = agent.process.wait_for(event("container_runtime_unavailable"))
        assert warned["why"] == PROBLEM
    else:
        assert said["runtime"] == "podman"


async def test_a_job_runs_in_its_image_and_its_log_is_read(system: System, agent: RealNode) -> None:
    needs_podman()
    script = "echo host=$(hostname); ls /bin/busybox; test ! -e /etc/debian_version && echo boxed"
    await submit(system, boxed("boxed", script))
    statuses = await wait_for_statuses(
        system, "default/boxed", lambda ss: any(s.phase is PodPhase.SUCCEEDED for s in ss)
    )
    assert statuses[-1].phase is PodPhase.SUCCEEDED, agent.process.tail(30)
    done = vcbus_logs(system, "boxed")
    assert done.stdout.split() == ["host=boxed-task-0", "/bin/busybox", "boxed"], done.stderr
    assert containers_of(statuses[-1].pod_uid) == []  # removed at the pod's end


async def test_a_container_over_its_memory_limit_ends_oom_killed(
    system: System, agent: RealNode
) -> None:
    needs_podman()
    script = 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo survived'
    await submit(system, boxed("boxhungry", script, limits={"memory": "32Mi"}))
    statuses = await wait_for_statuses(
        system, "default/boxhungry", lambda ss: any(s.phase is PodPhase.FAILED for s in ss)
    )
    failed = [s for s in statuses if s.phase is PodPhase.FAILED]
    assert [(s.reason, s.exit_code) for s in failed] == [("OOMKilled", 137)], agent.process.tail()


async def test_an_image_absent_under_never_fails_the_pod_with_its_reason(
    system: System, agent: RealNode
) -> None:
    needs_podman()
    job = yaml.safe_load(boxed("boxabsent", "true"))
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container.update(image="localhost/vcbus-absent:1", imagePullPolicy="Never")
    await submit(system, yaml.safe_dump(job))
    statuses = await wait_for_statuses(
        system, "default/boxabsent", lambda ss: any(s.phase is PodPhase.FAILED for s in ss)
    )
    assert statuses[-1].reason == "ErrImageNeverPull", agent.process.tail(30)


async def test_the_pods_of_a_job_reach_each_other_by_their_volcano_names(
    system: System, agent: RealNode
) -> None:
    needs_podman()
    # each pod waits (bounded) until both names answer: the other pod may start later
    script = (
        "for i in $(seq 100); do nslookup boxpair-task-0.boxpair >/dev/null && "
        "nslookup boxpair-task-1.boxpair >/dev/null && echo met $(hostname) && exit 0; "
        "sleep 0.2; done; exit 1"
    )
    await submit(system, boxed("boxpair", script, replicas=2))
    statuses = await wait_for_statuses(
        system,
        "default/boxpair",
        lambda ss: (
            [s.phase for s in ss].count(PodPhase.SUCCEEDED) == 2
            or any(s.phase is PodPhase.FAILED for s in ss)
        ),
    )
    assert [s.phase for s in statuses].count(PodPhase.SUCCEEDED) == 2, agent.process.tail(30)
    for index in (0, 1):
        done = vcbus_logs(system, "boxpair", "--index", str(index))
        assert done.stdout.split() == ["met", f"boxpair-task-{index}"], done.stderr
    assert all([await no_containers(s.pod_uid) == [] for s in statuses])


async def test_a_deleted_job_leaves_no_container(system: System, agent: RealNode) -> None:
    needs_podman()
    await submit(system, boxed("boxdeleted", "trap '' TERM; sleep 300", grace=1))
    statuses = await wait_for_statuses(system, "default/boxdeleted", running(1))
    assert running(1)(statuses), agent.process.tail(30)
    uid = statuses[-1].pod_uid
    assert podman.name_of(uid, "main") in containers_of(uid)  # and its sandbox's infra
    await delete_job(system, "default/boxdeleted")
    assert await no_containers(uid) == []


async def test_an_agent_killed_mid_job_finds_its_container_again(
    system: System, data_dirs: DataDirs, processes: Processes, agent: RealNode
) -> None:
    needs_podman()
    await submit(system, boxed("boxadopt", "echo one; sleep 3; echo two"))
    statuses = await wait_for_statuses(system, "default/boxadopt", running(1))
    uid = statuses[-1].pod_uid
    os.kill(agent.process.pid, signal.SIGKILL)
    # a container of this node's whose pod the agent does not have (a crash's leftover)
    orphan = [*podman.BASE, "create", "--name", "vcbus-orphan-1-main", *podman.ULIMITS]
    labels = ["--label", f"{podman.LABEL_NODE}=box-0", "--label", f"{podman.LABEL_POD}=orphan-1"]
    await asyncio.to_thread(
        subprocess.run, [*orphan, *labels, IMAGE, "true"], check=True, capture_output=True
    )
    again = start_agent(
        processes, system, agent.data_dir, "box-0", "--label", "pool=box", "--runtime", "auto"
    )
    done = await wait_for_statuses(
        system, "default/boxadopt", lambda ss: any(s.phase is PodPhase.SUCCEEDED for s in ss)
    )
    assert [s.phase for s in done].count(PodPhase.SUCCEEDED) == 1, again.process.tail(30)
    assert vcbus_logs(system, "boxadopt").stdout.split() == ["one", "two"]
    assert containers_of("orphan-1") == []
    assert again.process.matching(event("containers_removed", pods=["orphan-1"]))
    assert await no_containers(uid) == []
