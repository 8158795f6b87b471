"""An evicted pod (preempt, reclaim): the victim's condition and its ``PodEvicted`` policies.

Volcano's job_controller_util.go: a pod that ends ``Evicted`` raises ``PodEvicted``; the job's
policies decide (RestartJob, AbortJob, or nothing: a plain sync). The job also says who took the
capacity.
"""

from __future__ import annotations

from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase

from .builders import Driver, build_job, build_task, deleted_pods, last_status, policy, statuses

PREEMPTED = "Preempted by job default/high (priority 1000 > 10) on node n1"


def _running(*policies_: object, replicas: int = 2, min_available: int | None = None) -> Driver:
    job = build_job(
        build_task("worker", replicas, spec_extra={"terminationGracePeriodSeconds": 5}),
        policies=policies_,  # type: ignore[arg-type]
        min_available=min_available,
    )
    driver = Driver(job)
    driver.start()
    driver.pods(driver.pod_names(), PodPhase.RUNNING)
    driver.podgroup(PodGroupPhase.RUNNING)
    return driver


def _evict(driver: Driver, name: str = "job-worker-0", message: str = PREEMPTED) -> None:
    driver.pod(name, PodPhase.FAILED, reason="Evicted", message=message)


def test_pods_carry_their_templates_termination_grace_period() -> None:
    driver = _running()
    created = [e for e in driver.emitted if type(e).__name__ == "PodCreated"]
    assert {e.pod.termination_grace_period_seconds for e in created} == {5}  # type: ignore[attr-defined]


def test_victim_job_gets_a_preempted_condition_naming_the_taker_when_its_pod_is_evicted() -> None:
    driver = _running()
    _evict(driver)
    conditions = last_status(driver.last).conditions
    preempted = [c for c in conditions if c.type == "Preempted"]
    assert [(c.reason, c.message) for c in preempted] == [("Preempted", PREEMPTED)]


def test_reclaimed_condition_names_the_queue_when_the_message_says_reclaimed() -> None:
    driver = _running()
    _evict(driver, message="Reclaimed by queue light (share 0.10 < deserved)")
    assert "Reclaimed" in {c.type for c in last_status(driver.last).conditions}


def test_condition_stays_on_later_statuses_of_the_job() -> None:
    driver = _running()
    _evict(driver)
    driver.pod("job-worker-1", PodPhase.SUCCEEDED)
    assert "Preempted" in {c.type for c in last_status(driver.emitted).conditions}


def test_eviction_without_a_named_cause_adds_no_condition() -> None:
    driver = _running()
    _evict(driver, message="node pressure")
    assert all(
        c.type not in ("Preempted", "Reclaimed")
        for s in statuses(driver.emitted)
        for c in s.conditions
    )


def test_restart_job_policy_restarts_the_victim_job_when_a_pod_is_evicted() -> None:
    driver = _running(policy("RestartJob", "PodEvicted"))
    _evict(driver)
    assert sorted(deleted_pods(driver.last)) == ["job-worker-0", "job-worker-1"]
    assert driver.current.retry_count == 1
    assert driver.phase() in (JobPhase.RESTARTING.value, JobPhase.PENDING.value)


def test_abort_job_policy_aborts_the_victim_job_when_a_pod_is_evicted() -> None:
    driver = _running(policy("AbortJob", "PodEvicted"))
    _evict(driver)
    assert driver.phase() in (JobPhase.ABORTING.value, JobPhase.ABORTED.value)


def test_without_policy_the_evicted_pod_counts_failed_and_the_job_syncs() -> None:
    driver = _running(replicas=2, min_available=1)
    _evict(driver)
    status = last_status(driver.last)
    assert (status.phase, status.failed, status.running) == (JobPhase.RUNNING, 1, 1)
