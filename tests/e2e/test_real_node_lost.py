"""An agent stopped for good: its node goes NotReady, its pods end NodeLost, and the job's
policy runs them again on another agent (docs/design.md#real-nodes).

The node monitor's grace period and the pod eviction timeout are 2 s each here (40 s and
5 min by default), so the test takes seconds.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import msgspec
import pytest

from tests.e2e.real_nodes import DataDirs, simple_job, start_agent, wait_for_statuses
from tests.e2e.system import System, running_system, submit
from tests.support.processes import Processes
from vcbus.contracts import PodPhaseChanged
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.model import PodReport

pytestmark = pytest.mark.timeout(300)

LIVENESS = {"VCBUS_NODE_MONITOR_GRACE_SECONDS": "2", "VCBUS_POD_EVICTION_TIMEOUT_SECONDS": "2"}


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """The five services with no simulated node, and short node liveness limits."""
    with running_system(
        kafka_bootstrap,
        f"e2e-{os.getpid()}-lost.",
        cluster_args=("--nodes", "0"),
        env=LIVENESS,
    ) as running_:
        yield running_


async def test_the_pods_of_an_agent_gone_for_good_end_node_lost_and_run_elsewhere(
    system: System,
) -> None:
    text = simple_job(
        "survivor",
        "sleep 600",
        selector={"pool": "lost"},
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    ).replace("cpu: 100m", "cpu: 600m")
    with DataDirs() as dirs, Processes() as processes:
        agents = {
            name: start_agent(
                processes,
                system,
                dirs.new(name),
                name,
                "--label",
                "pool=lost",
                "--cpu",
                "1",
            )
            for name in ("lost-a", "lost-b")
        }
        await submit(system, text)
        first = await wait_for_statuses(
            system, "default/survivor", lambda ss: any(s.phase is PodPhase.RUNNING for s in ss)
        )
        started = next(s for s in first if s.phase is PodPhase.RUNNING)
        gone = agents[str(started.node)]
        # the host is gone: its agent, the pod's supervisor and the pod's processes
        gone.process.kill()
        report_file = gone.data_dir / "pods" / started.pod_uid / "status.json"
        report = msgspec.json.decode(report_file.read_bytes(), type=PodReport)
        os.kill(report.supervisor, signal.SIGKILL)
        for container in report.containers:
            os.killpg(container.pgid, signal.SIGKILL)
        other = next(name for name in agents if name != started.node)

        def moved(statuses: list[PodPhaseChanged]) -> bool:
            return any(s.phase is PodPhase.RUNNING and s.node == other for s in statuses)

        statuses = await wait_for_statuses(system, "default/survivor", moved)
        tail = agents[other].process.tail(30)
    lost = [s for s in statuses if s.pod_uid == started.pod_uid and s.phase is PodPhase.FAILED]
    assert [s.reason for s in lost] == ["NodeLost"], tail
    assert moved(statuses), tail
