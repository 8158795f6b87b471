"""``vcbus up``, ``vcbus get nodes`` and ``vcbus simulate`` say the same of the same records.

One sequence of events, with a binding the cluster refused, a pod deleted while Running and
a late event of that deleted pod, is folded by each reader: ``up``'s view
(:class:`~vcbus.core.views.live.StatusView`), the CLI's store (``get nodes``, ``get pods``)
and ``simulate``'s outcome. Each must say which pods hold which node, and the same of
every pod.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.unit.services.cli.builders import (
    build_node,
    build_pod,
    pod_bound,
    pod_created,
    pod_deleted,
    pod_phase,
    pod_refused,
    store_of,
)
from vcbus.contracts import Event
from vcbus.core.node_lifecycle import NodeLifecycleConf
from vcbus.core.views.live import StatusView, nodes_table
from vcbus.services.cli.kinds import node_rows, pod_rows
from vcbus.services.cli.listing import Query
from vcbus.services.simulation.outcome import Outcome

JOB = "default/a"


def scenario() -> list[Event]:
    """n1: a refused binding; n2: a pod deleted while Running, then its late Failed; n3: one
    pod Running, and a pod that was restarted (a new incarnation) after a late event of the
    old one."""
    refused_pod, deleted_pod, running = build_pod(JOB, 0), build_pod(JOB, 1), build_pod(JOB, 2)
    old, new = build_pod(JOB, 3, uid="a-3-u1"), build_pod(JOB, 3, uid="a-3-u2")
    return [
        build_node("n1"),
        build_node("n2"),
        build_node("n3"),
        pod_created(refused_pod),
        pod_bound(refused_pod, "n1"),
        pod_refused(refused_pod, "n1"),
        pod_created(deleted_pod),
        pod_bound(deleted_pod, "n2"),
        pod_phase(deleted_pod, "Running", "n2"),
        pod_deleted(deleted_pod),
        pod_phase(deleted_pod, "Failed", "n2"),
        pod_created(running),
        pod_bound(running, "n3"),
        pod_phase(running, "Running", "n3"),
        pod_created(old),
        pod_bound(old, "n3"),
        pod_deleted(old),
        pod_created(new),
        pod_phase(old, "Running", "n3"),
    ]


def up_pods_per_node(events: list[Event]) -> dict[str, int]:
    view = StatusView()
    for event in events:
        view.apply(event)
    table = nodes_table(
        view, now=datetime(2026, 1, 1, tzinfo=UTC), lifecycle=NodeLifecycleConf()
    ).splitlines()
    pods = table[0].split().index("PODS")
    return {row[0]: int(row[pods]) for row in (line.split() for line in table[1:])}


def get_pods_per_node(events: list[Event]) -> dict[str, int]:
    rows = node_rows(store_of(*events), Query())
    return {name: int(row.obj["pods"]) for name, row in rows.items()}  # type: ignore[call-overload]


def simulate_report(events: list[Event]) -> dict[str, dict[str, object]]:
    outcome = Outcome([JOB])
    for t, event in enumerate(events):
        outcome.apply(float(t), event)
    pods = outcome.report(stopped_by="settled", at=float(len(events)))["pods"]
    assert isinstance(pods, dict)
    return pods


def simulate_pods_per_node(events: list[Event]) -> dict[str, int]:
    counts = dict.fromkeys(("n1", "n2", "n3"), 0)
    for pod in simulate_report(events).values():
        if pod["node"] and not pod["deleted"] and pod["phase"] in ("Pending", "Running"):
            counts[str(pod["node"])] += 1
    return counts


def test_up_get_nodes_and_simulate_count_the_same_pods_on_each_node() -> None:
    events = scenario()

    expected = {"n1": 0, "n2": 0, "n3": 1}
    assert up_pods_per_node(events) == expected
    assert get_pods_per_node(events) == expected
    assert simulate_pods_per_node(events) == expected


def test_get_pods_and_simulate_agree_on_every_pod_left() -> None:
    events = scenario()

    listed = {
        key: (row.obj["node"] or None, row.obj["phase"])
        for key, row in pod_rows(store_of(*events), Query()).items()
    }
    reported = {
        key: (pod["node"], pod["phase"])
        for key, pod in simulate_report(events).items()
        if not pod["deleted"]
    }
    assert (
        listed
        == reported
        == {
            "default/a-worker-0": (None, "Pending"),
            "default/a-worker-2": ("n3", "Running"),
            "default/a-worker-3": (None, "Pending"),
        }
    )


def test_simulate_keeps_a_deleted_pod_deleted_with_the_clusters_last_word() -> None:
    pods = simulate_report(scenario())

    deleted = pods["default/a-worker-1"]
    assert (deleted["deleted"], deleted["phase"], deleted["node"]) == (True, "Failed", "n2")
