"""Overcommit: Volcano's TestOvercommitPlugin and TestParseFactor tables, ported; inqueue sums."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, SchedulingCase, go_plugin, snapshot_of, tier
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue
from vcbus.core.scheduling.framework.conf import Arguments, Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.overcommit import OvercommitPlugin, parse_factors
from vcbus.core.scheduling.snapshot import PodGroupState

OVERCOMMIT_TEST = "volcano@ed72c7c8 pkg/scheduler/plugins/overcommit/overcommit_test.go"
INQUEUE = PodGroupPhase.INQUEUE

N1 = build_node(
    "n1", {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "32Gi", "nvidia.com/gpu": "8"}
)
N2 = build_node("n2", {"cpu": "4", "memory": "16Gi"})
HUGE = {"cpu": "20000m", "memory": "20G"}
NORMAL = {"cpu": "2000m", "memory": "2G"}
SMALL = {"cpu": "200m", "memory": "0.5G"}
PG1 = build_podgroup("pg1", "test-namespace", "c1", 2, None, INQUEUE, min_resources=NORMAL)
PG2 = build_podgroup("pg2", "test-namespace", "c1", 2, None, INQUEUE, min_resources=HUGE)
PG3 = build_podgroup("pg2", "test-namespace", "c1", 2, None, INQUEUE)
QUEUE1 = build_queue("c1", 1)
QUEUE2 = build_queue("c1", 1, SMALL)


@dataclass(frozen=True)
class OvercommitCase:
    """A TestOvercommitPlugin row: the common case plus the plugin's arguments and verdict."""

    case: SchedulingCase
    arguments: Arguments
    expected_enqueueable: bool


def _case(
    name: str, pg: PodGroupState, queue: Queue, arguments: Arguments, expected: bool
) -> OvercommitCase:
    return OvercommitCase(
        case=SchedulingCase(
            name=name,
            origin=f"{OVERCOMMIT_TEST} TestOvercommitPlugin/{name}",
            podgroups=[pg],
            queues=[queue],
            nodes=[N1, N2],
        ),
        arguments=arguments,
        expected_enqueueable=expected,
    )


CASES = [
    _case("overCommitFactor is more than 1", PG1, QUEUE1, {"overcommit-factor": 1.2}, True),
    _case("overCommitFactor is less than 1", PG1, QUEUE1, {"overcommit-factor": 0.8}, True),
    _case(
        "when the required resources of pg are too large",
        PG2,
        QUEUE1,
        {"overcommit-factor": 1.2},
        False,
    ),
    _case("when pg does not fill MinResources", PG3, QUEUE2, {"overcommit-factor": 1.2}, True),
    _case(
        "overCommitFactor is more than 1 with different overcommit factors",
        PG1,
        QUEUE1,
        {
            "overcommit-factor.cpu": 1.3,
            "overcommit-factor.memory": 1.4,
            "overcommit-factor.ephemeral-storage": 1.4,
            "overcommit-factor.nvidia.com/gpu": 1.3,
        },
        True,
    ),
    _case("overCommitFactor is not set", PG3, QUEUE2, {}, True),
]


@pytest.mark.parametrize("row", CASES, ids=lambda r: r.case.name)
def test_volcano_overcommit_table_holds_when_ported(row: OvercommitCase) -> None:
    """As the Go test: ``JobEnqueued`` then ``JobEnqueueable`` for every job."""
    ssn = open_session(
        snapshot_of(row.case),
        (tier(go_plugin("overcommit", Kind.JOB_ENQUEUED, arguments=row.arguments)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    for key in sorted(ssn.jobs):
        job = ssn.jobs[key]
        ssn.job_enqueued(job)
        assert ssn.job_enqueueable(job) is row.expected_enqueueable, row.case.origin


PARSE_FACTOR_TEST = f"{OVERCOMMIT_TEST} TestParseFactor"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        (
            "overCommitFactor with float64 type",
            {
                "overcommit-factor.cpu": 1.3,
                "overcommit-factor.memory": 1.4,
                "overcommit-factor.ephemeral-storage": 1.4,
                "overcommit-factor.nvidia.com/gpu": 1.3,
            },
            {
                "overcommit-factor": 1.2,
                "cpu": 1.3,
                "memory": 1.4,
                "ephemeral-storage": 1.4,
                "nvidia.com/gpu": 1.3,
            },
        ),
        (
            "overCommitFactor with int type",
            {
                "overcommit-factor.cpu": 2,
                "overcommit-factor.memory": 2,
                "overcommit-factor.ephemeral-storage": 2,
                "overcommit-factor.nvidia.com/gpu": 2,
            },
            {
                "overcommit-factor": 1.2,
                "cpu": 2.0,
                "memory": 2.0,
                "ephemeral-storage": 2.0,
                "nvidia.com/gpu": 2.0,
            },
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_volcano_parse_factor_table_holds_when_ported(
    name: str, arguments: Arguments, expected: dict[str, float]
) -> None:
    """``volcano@ed72c7c8 …/overcommit_test.go TestParseFactor``."""
    assert parse_factors(arguments) == expected, f"{PARSE_FACTOR_TEST}/{name}"


def test_running_job_counts_only_its_unallocated_minimum_when_inqueue_is_summed() -> None:
    """Volcano's enqueue.go: Inqueue → whole minResources; Running with minMember allocated → the
    rest."""
    snapshot = snapshot_of(
        SchedulingCase(
            name="inqueue sums",
            origin="vcbus Volcano's enqueue.go",
            podgroups=[
                build_podgroup("queued", "ns", "q", 1, None, INQUEUE, min_resources={"cpu": "3"}),
                build_podgroup(
                    "running",
                    "ns",
                    "q",
                    1,
                    None,
                    PodGroupPhase.RUNNING,
                    min_resources={"cpu": "4"},
                ),
            ],
            pods=[build_pod("ns", "running-0", "n2", PodPhase.RUNNING, {"cpu": "1"}, "running")],
            queues=[build_queue("q")],
            nodes=[N1, N2],
        )
    )
    ssn = open_session(
        snapshot,
        (tier(go_plugin("overcommit", Kind.JOB_ENQUEUED)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    [(_, plugin)] = ssn.plugins
    assert isinstance(plugin, OvercommitPlugin)
    assert plugin.inqueue.amount("cpu") == pytest.approx(3000 + 3000)
    assert plugin.idle.amount("cpu") == pytest.approx(6000 * 1.2 - 1000)
