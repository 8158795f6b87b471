"""Volcano's one-node registrars: a plugin's ``add_predicate_fn`` and ``add_node_order_fn``.

Volcano's plugins register a predicate and a node score for one node at a time
(``AddPredicateFn``, ``AddNodeOrderFn``); vcbus keeps both registrars for such a plugin, and
the session wraps them for its vectorised node choice (``session_plugins``).
"""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.conf import Arguments, PluginOption, Tier
from vcbus.core.scheduling.framework.session import Session, open_session
from vcbus.core.scheduling.framework.votes import Code, Status
from vcbus.core.scheduling.model import NodeInfo, TaskInfo
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot

NAME = "one-node"
KEPT = "kept for the others"


class OneNodePlugin:
    """Refuses n1 to the first worker, and prefers n1 for every other task."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        del arguments

    def on_session_open(self, ssn: Session) -> None:
        def predicate(task: TaskInfo, node: NodeInfo) -> Status | None:
            if task.index == 0 and node.name == "n1":
                return Status(code=Code.UNSCHEDULABLE, reason=KEPT, plugin=NAME)
            if task.index == 3:
                return Status(code=Code.UNSCHEDULABLE, reason=KEPT, plugin=NAME)
            return None

        def order(task: TaskInfo, node: NodeInfo) -> float:
            del task
            return 1_000.0 if node.name == "n1" else 0.0

        ssn.add_predicate_fn(NAME, predicate)
        ssn.add_node_order_fn(NAME, order)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def _session(pods: int) -> Session:
    snapshot = ClusterSnapshot.build(
        nodes=[build_node(f"n{i}", {"cpu": "4", "memory": "4Gi", "pods": 110}) for i in range(3)],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 1)],
        pods=[
            build_pod("ns", f"job-w-{i}", None, PodPhase.PENDING, {"cpu": "1"}, "job", index=i)
            for i in range(pods)
        ],
    )
    tiers = (*DEFAULT_TIERS, Tier(plugins=(PluginOption(NAME),)))
    return open_session(snapshot, tiers, builders={**PLUGIN_BUILDERS, NAME: OneNodePlugin}, now=NOW)


def test_allocate_follows_a_one_node_predicate_and_node_order() -> None:
    """The node order sends the workers to n1; the predicate keeps the first off it."""
    ssn = _session(3)
    ACTIONS["allocate"]().execute(ssn)
    tasks = ssn.jobs[JobKey("ns/job")].tasks
    placed = {uid: task.node_name for uid, task in tasks.items()}
    assert placed == {"ns-job-w-0": "n0", "ns-job-w-1": "n1", "ns-job-w-2": "n1"}


def test_a_one_node_predicate_gives_its_reason_for_each_node_it_refuses() -> None:
    """A task the predicate refuses everywhere: the fit errors name its reason per node."""
    ssn = _session(4)
    task = ssn.jobs[JobKey("ns/job")].tasks["ns-job-w-3"]
    placement = ssn.place(task)
    assert placement.node is None
    assert placement.fit_errors is not None
    assert placement.fit_errors.reasons == {KEPT: 3}
    assert ssn.predicate_fn(task, ssn.nodes["n2"]) == Status(
        code=Code.UNSCHEDULABLE, reason=KEPT, plugin=NAME
    )
    assert ssn.node_order_fn(task, ssn.nodes["n1"]) > ssn.node_order_fn(task, ssn.nodes["n0"])
