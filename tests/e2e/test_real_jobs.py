"""Real jobs on real nodes: agents run bound pods as processes (docs/design.md#real-nodes).

One system (the five services, no simulated node) for the module and one agent, ``real-0``;
tests that need nodes of their own start agents with a label their jobs select. Each test
submits its own jobs and checks what the processes did and what was published.
"""

from __future__ import annotations

import asyncio
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    client_env,
    delete_job,
    gang_job,
    next_port_range,
    pod_groups,
    pod_statuses,
    running,
    simple_job,
    start_agent,
    vcbus_logs,
    wait_for_statuses,
    wait_gone,
)
from tests.e2e.system import System, describe, running_system, submit, wait_for_jobs
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.processes import Processes, service_env
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.dashboard.app import listen, serve, url_of

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """The five services with no simulated node."""
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-real.", cluster_args=("--nodes", "0")
    ) as running_:
        yield running_


@pytest.fixture(scope="module")
def data_dirs() -> Iterator[DataDirs]:
    """Data directories the pods' user (``nobody``) can reach, removed at the end."""
    with DataDirs() as dirs:
        yield dirs


@pytest.fixture(scope="module")
def agent(system: System, data_dirs: DataDirs) -> Iterator[RealNode]:
    """One agent, node ``real-0``, for the jobs that select ``pool=main``."""
    with Processes() as processes:
        yield start_agent(
            processes, system, data_dirs.new("agent"), "real-0", "--label", "pool=main"
        )


MAIN = {"pool": "main"}


def _failure(system: System, view: object, *agents: RealNode) -> str:
    tails = "".join(f"\n--- {a.name} ---\n{a.process.tail(30)}" for a in agents)
    return describe(view, system) + tails  # type: ignore[arg-type]


async def test_a_gang_of_four_ranks_meets_through_the_plugins_variables(
    system: System, agent: RealNode
) -> None:
    await submit(system, gang_job("rendezvous", selector=MAIN))
    view = await wait_for_jobs(system, ["default/rendezvous"])
    assert view.jobs["default/rendezvous"].phase == "Completed", _failure(system, view, agent)
    statuses = await pod_statuses(system, "default/rendezvous")
    ended = {s.pod: s for s in statuses if s.phase is PodPhase.SUCCEEDED}
    assert sorted(ended) == [
        "default/rendezvous-master-0",
        "default/rendezvous-worker-0",
        "default/rendezvous-worker-1",
        "default/rendezvous-worker-2",
    ]
    bound = [s for s in statuses if s.reason == "Bound"]
    assert all(s.host_ip and s.ports for s in bound)


async def test_two_gangs_at_once_on_one_host_get_ports_of_their_own(
    system: System, agent: RealNode
) -> None:
    await submit(system, gang_job("pair-one", workers=2, selector=MAIN))
    await submit(system, gang_job("pair-two", workers=2, selector=MAIN))
    keys = ["default/pair-one", "default/pair-two"]
    view = await wait_for_jobs(system, keys)
    assert all(view.jobs[k].phase == "Completed" for k in keys), _failure(system, view, agent)
    ports = []
    for key in keys:
        statuses = await pod_statuses(system, key)
        ports += [p for s in statuses if s.reason == "Bound" for p in s.ports.values()]
    assert len(ports) == 6
    assert len(set(ports)) == len(ports)


async def test_a_worker_exiting_1_triggers_the_jobs_pod_failed_policy(
    system: System, agent: RealNode
) -> None:
    text = simple_job(
        "exits-one",
        'if [ "$VC_TASK_INDEX" = 1 ]; then exit 1; fi; sleep 60',
        replicas=2,
        policies=[{"event": "PodFailed", "action": "TerminateJob"}],
        plugins={"env": []},
        selector=MAIN,
    )
    await submit(system, text)
    view = await wait_for_jobs(system, ["default/exits-one"])
    assert view.jobs["default/exits-one"].phase == "Terminated", _failure(system, view, agent)
    statuses = await pod_statuses(system, "default/exits-one")
    failed = [s for s in statuses if s.phase is PodPhase.FAILED and s.reason == "Error"]
    assert [(s.pod, s.exit_code) for s in failed] == [("default/exits-one-task-1", 1)]


async def test_deleting_a_job_leaves_no_process_of_its_pods(
    system: System, agent: RealNode
) -> None:
    # the pods ignore SIGTERM and leave a child behind: only the SIGKILL of their groups ends them
    script = "trap '' TERM; sleep 300 & sleep 300"
    await submit(system, simple_job("deleted", script, replicas=2, selector=MAIN, grace=1))
    statuses = await wait_for_statuses(system, "default/deleted", running(2))
    assert running(2)(statuses), agent.process.tail(30)
    uids = {s.pod_uid for s in statuses}
    groups = pod_groups(agent.data_dir, uids)
    assert len(groups) == 2, agent.process.tail(30)
    await delete_job(system, "default/deleted")
    assert await wait_gone(groups) == []


async def test_a_pod_over_its_memory_limit_ends_oom_killed(system: System, agent: RealNode) -> None:
    script = 'python3 -c "x = bytearray(512 * 1024 * 1024); print(len(x))"'
    await submit(system, simple_job("hungry", script, limits={"memory": "64Mi"}, selector=MAIN))
    statuses = await wait_for_statuses(
        system, "default/hungry", lambda ss: any(s.phase is PodPhase.FAILED for s in ss)
    )
    failed = [s for s in statuses if s.phase is PodPhase.FAILED]
    assert [(s.reason, s.exit_code) for s in failed] == [("OOMKilled", 137)], agent.process.tail()


async def test_vcbus_logs_follows_a_running_pod(system: System, agent: RealNode) -> None:
    script = 'echo waiting; while [ ! -e "$HOME/release" ]; do sleep 0.1; done; echo released'
    await submit(system, simple_job("followed", script, selector=MAIN))
    statuses = await wait_for_statuses(system, "default/followed", running(1))
    assert running(1)(statuses), agent.process.tail(30)
    follower = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "vcbus.services.cli",
        "logs",
        "followed",
        "-f",
        env=service_env(system.bootstrap, system.prefix, **client_env()),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert follower.stdout is not None
        async with asyncio.timeout(60):
            first = await follower.stdout.readline()
        assert first == b"waiting\n"
        assert follower.returncode is None  # still following: the pod waits for its release
        (agent.data_dir / "pods" / statuses[-1].pod_uid / "work" / "release").touch()
        async with asyncio.timeout(60):
            rest = await follower.stdout.read()
            assert await follower.wait() == 0
        assert rest == b"released\n"
    finally:
        if follower.returncode is None:
            follower.kill()
            await follower.wait()


async def test_vcbus_logs_reads_the_run_before_a_restart_and_needs_the_agents_token(
    system: System, agent: RealNode
) -> None:
    script = (
        'if [ -e "$HOME/once" ]; then echo second; else touch "$HOME/once"; echo first; exit 3; fi'
    )
    text = simple_job("restarted", script, selector=MAIN).replace(
        "restartPolicy: Never", "restartPolicy: OnFailure"
    )
    await submit(system, text)
    view = await wait_for_jobs(system, ["default/restarted"])
    assert view.jobs["default/restarted"].phase == "Completed", _failure(system, view, agent)
    statuses = await pod_statuses(system, "default/restarted")
    assert max(s.restart_count for s in statuses) == 1
    current = await asyncio.to_thread(vcbus_logs, system, "restarted", "--tail", "1")
    previous = await asyncio.to_thread(vcbus_logs, system, "restarted", "--previous")
    assert (current.stdout, previous.stdout) == ("second\n", "first\n"), current.stderr
    refused = await asyncio.to_thread(vcbus_logs, system, "restarted", token="wrong")
    assert refused.returncode == 1
    assert "unauthorized" in refused.stderr
    assert refused.stdout == ""


async def test_the_agents_spans_continue_the_jobs_trace(
    system: System, data_dirs: DataDirs
) -> None:
    with OtlpReceiver() as receiver, Processes() as processes:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        node = start_agent(
            processes,
            system,
            data_dirs.new("traced"),
            "traced-0",
            "--label",
            "pool=traced",
            env=otel,
        )
        await submit(system, simple_job("traced", "echo hi", selector={"pool": "traced"}))
        view = await wait_for_jobs(system, ["default/traced"])
        assert view.jobs["default/traced"].phase == "Completed", _failure(system, view, node)
        trace_id = view.jobs["default/traced"].trace_id
        names = {f"process {system.prefix}bindings", "agent.start", "agent.exit"}

        def traced(spans: list[ReceivedSpan]) -> bool:
            return names <= {
                s.name.removeprefix(system.prefix) for s in spans if s.trace_id == trace_id
            }

        assert await asyncio.to_thread(receiver.wait_for, traced, 30), sorted(
            {(s.name, s.trace_id == trace_id) for s in receiver.spans}
        )


async def test_the_dashboards_job_page_links_each_pods_log(
    system: System, agent: RealNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    await submit(system, simple_job("shown", "echo shown here", selector=MAIN))
    view = await wait_for_jobs(system, ["default/shown"])
    assert view.jobs["default/shown"].phase == "Completed", _failure(system, view, agent)
    for name, value in client_env().items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env(
        {"KAFKA_BOOTSTRAP_SERVERS": system.bootstrap, "VCBUS_TOPIC_PREFIX": system.prefix}
    )
    sock = listen("127.0.0.1", 0)
    stop = asyncio.Event()
    served = asyncio.create_task(serve(system.bus, settings, sock, jaeger_url="", stop=stop))
    base = url_of(sock).rstrip("/")
    try:
        async with asyncio.timeout(60):
            while True:
                if (await asyncio.to_thread(_get, f"{base}/healthz"))[0] == 200:
                    break
                await asyncio.sleep(0.2)
        status, page = await asyncio.to_thread(_get, f"{base}/jobs/default/shown")
        assert status == 200
        assert 'href="/pods/default/shown-task-0/log"' in page
        assert await asyncio.to_thread(_get, f"{base}/pods/default/shown-task-0/log") == (
            200,
            "shown here\n",
        )
    finally:
        stop.set()
        await served


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def test_an_agent_killed_mid_job_and_restarted_reports_each_pod_once(
    system: System, data_dirs: DataDirs
) -> None:
    data_dir = data_dirs.new("killed")
    args = ("--label", "pool=killed")
    selector = {"pool": "killed"}
    with Processes() as processes:
        ports = next_port_range()
        node = start_agent(processes, system, data_dir, "killed-0", *args, port_range=ports)
        await submit(
            system, simple_job("outlives", "sleep 2; echo done", replicas=2, selector=selector)
        )
        statuses = await wait_for_statuses(system, "default/outlives", running(2))
        assert running(2)(statuses), node.process.tail(30)
        node.process.kill()
        node.process.exited()
        await asyncio.sleep(3)  # the pods end while their agent is down
        again = start_agent(processes, system, data_dir, "killed-0", *args, port_range=ports)
        view = await wait_for_jobs(system, ["default/outlives"])
        assert view.jobs["default/outlives"].phase == "Completed", _failure(system, view, again)
    statuses = await pod_statuses(system, "default/outlives")
    ids = {(s.pod, s.phase): s.event_id for s in statuses}
    assert sorted(ids) == sorted(
        (f"default/outlives-task-{i}", phase)
        for i in (0, 1)
        for phase in (PodPhase.PENDING, PodPhase.RUNNING, PodPhase.SUCCEEDED)
    )
    succeeded = {s.event_id for s in statuses if s.phase is PodPhase.SUCCEEDED}
    assert len(succeeded) == 2


async def test_two_agents_on_one_machine_make_a_cluster_a_gang_spans(
    system: System, data_dirs: DataDirs
) -> None:
    def on_the_pair(job: dict[str, object]) -> None:
        for task in job["spec"]["tasks"]:  # type: ignore[index]
            spec = task["template"]["spec"]
            spec["nodeSelector"] = {"pool": "pair"}
            spec["containers"][0]["resources"]["requests"]["cpu"] = "500m"

    with Processes() as processes:
        nodes = [
            start_agent(
                processes,
                system,
                data_dirs.new(name),
                name,
                "--label",
                "pool=pair",
                "--cpu",
                "1",
            )
            for name in ("pair-a", "pair-b")
        ]
        await submit(system, gang_job("spans", edit=on_the_pair))
        view = await wait_for_jobs(system, ["default/spans"])
        assert view.jobs["default/spans"].phase == "Completed", _failure(system, view, *nodes)
    statuses = await pod_statuses(system, "default/spans")
    placed = {s.pod: str(s.node) for s in statuses if s.phase is PodPhase.SUCCEEDED}
    assert len(placed) == 4
    assert sorted(set(placed.values())) == ["pair-a", "pair-b"]
