"""Per-job values kept between sessions are worked out again only for the jobs that changed."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts import PodGroupDeleted, PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, job_key, pod_key
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.framework.kept import KeptByJob
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.framework.working_copy import build_working_copy
from vcbus.core.scheduling.model import JobInfo
from vcbus.core.scheduling.snapshot import ClusterSnapshot

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _view() -> ClusterView:
    nodes = [build_node("n1", {"cpu": "8", "memory": "16Gi", "pods": 110})]
    podgroups = [build_podgroup(name, "ns", "default", 1, {"w": 1}) for name in "abc"]
    pods = [
        build_pod("ns", f"{name}-w-0", None, PodPhase.PENDING, {"cpu": "1"}, name, task="w")
        for name in "abc"
    ]
    return ClusterView.from_snapshot(
        ClusterSnapshot.build(
            nodes=nodes, queues=[build_queue("default")], podgroups=podgroups, pods=pods
        )
    )


class _Counting:
    """A job's value (its pod count), and which jobs it was worked out for."""

    def __init__(self) -> None:
        self.asked: list[JobKey] = []

    def __call__(self, job: JobInfo) -> int:
        self.asked.append(job.key)
        return job.task_count


def _session(view: ClusterView, cache: SessionCache | None) -> dict[JobKey, JobInfo]:
    return build_working_copy(view.snapshot(), cache).jobs


def _run(view: ClusterView) -> ClusterView:
    state = view.snapshot().pods[pod_key("ns", "a-w-0")]
    view.apply(
        PodPhaseChanged(
            event_id="run-a",
            occurred_at=T0,
            pod=pod_key("ns", "a-w-0"),
            job=job_key("ns", "a"),
            task="w",
            node=NodeName("n1"),
            phase=PodPhase.RUNNING,
            pod_uid=state.pod.uid,
        )
    )
    return view


def test_a_session_works_out_only_the_jobs_that_changed() -> None:
    view, cache, kept, value = _view(), SessionCache(), KeptByJob[int](), _Counting()
    first = kept.update(cache, _session(view, cache), "inputs", value)
    assert first.whole
    assert sorted(value.asked) == [job_key("ns", n) for n in "abc"]
    value.asked.clear()
    _run(view)
    view.apply(PodGroupDeleted(event_id="del-b", occurred_at=T0, job=job_key("ns", "b"), name="b"))
    patch = kept.update(cache, _session(view, cache), "inputs", value)
    assert not patch.whole
    assert value.asked == [job_key("ns", "a")]
    assert patch.added == (1,)
    assert sorted(patch.removed) == [1, 1]  # a's old value and b's
    assert sorted(kept.values) == [job_key("ns", "a"), job_key("ns", "c")]


def test_other_inputs_or_a_missed_session_work_out_every_job_again() -> None:
    view, cache, kept, value = _view(), SessionCache(), KeptByJob[int](), _Counting()
    kept.update(cache, _session(view, cache), "inputs", value)
    assert kept.update(cache, _session(view, cache), "other inputs", value).whole
    _session(view, cache)  # a session that did not bring the values up to date
    assert kept.update(cache, _session(view, cache), "other inputs", value).whole
    assert not kept.update(cache, _session(view, cache), "other inputs", value).whole
    assert kept.update(None, _session(view, None), "other inputs", value).whole
