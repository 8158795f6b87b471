"""DRF: the job with the smaller dominant share goes first."""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, go_plugin, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot


def test_job_goes_first_when_its_dominant_share_is_smaller() -> None:
    """busy holds 4 of 8 cpus (share .5), light holds 4Gi of 16Gi (share .25)."""
    ssn = open_session(
        ClusterSnapshot.build(
            nodes=[build_node("n1", {"cpu": "8", "memory": "16Gi"})],
            queues=[build_queue("default")],
            podgroups=[
                build_podgroup("busy", "ns", "default", 0),
                build_podgroup("light", "ns", "default", 0),
            ],
            pods=[
                build_pod("ns", "busy-0", "n1", PodPhase.RUNNING, {"cpu": "4"}, "busy"),
                build_pod("ns", "light-0", "n1", PodPhase.RUNNING, {"memory": "4Gi"}, "light"),
            ],
        ),
        (tier(go_plugin("drf", Kind.JOB_ORDER)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    busy, light = ssn.jobs[JobKey("ns/busy")], ssn.jobs[JobKey("ns/light")]
    assert ssn.job_order_fn(light, busy)
    assert not ssn.job_order_fn(busy, light)
