"""The chaos run's stuck gang: one worker bound and failed, the other two bindings refused.

Seed 3 under two CPU hogs (``chaos/failing-0328``): the allocator bound the three workers
of a gang (``minAvailable`` 3), the cluster ran one, which failed after a second, and
refused the other two as ``NodeOvercommitted`` (its view was behind). A refused pod goes
back to Pending to be placed again, but Volcano counts a failed pod neither ready nor
valid, so the two could never be placed as a gang, and ``1 started < 3`` kept the job
Pending for good. The job is Failed now.
"""

from __future__ import annotations

from tests.unit.services.job_controller.builders import (
    Driver,
    build_job,
    build_task,
    policy,
    statuses,
)
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.services.job_controller.policies import Action

WORKERS = ["gang-worker-0", "gang-worker-1", "gang-worker-2"]


def bound_gang(**job: object) -> Driver:
    driver = Driver(build_job(build_task("worker", 3), name="gang", **job))  # type: ignore[arg-type]
    driver.admit()
    driver.podgroup(PodGroupPhase.INQUEUE)
    return driver


def test_a_gang_whose_refused_pods_can_never_join_their_failed_worker_fails() -> None:
    driver = bound_gang()
    driver.pod("gang-worker-1", PodPhase.RUNNING, node="node-2")
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    driver.refuse("gang-worker-0")
    driver.refuse("gang-worker-2")

    assert driver.current.phase is JobPhase.FAILED
    final = statuses(driver.emitted)[-1]
    assert final.phase is JobPhase.FAILED
    assert any("1 pods failed before the gang started" in c.message for c in final.conditions)


def test_the_refusals_first_then_the_failure_fail_the_job_as_well() -> None:
    driver = bound_gang()
    driver.pod("gang-worker-1", PodPhase.RUNNING, node="node-2")
    driver.refuse("gang-worker-0")
    driver.refuse("gang-worker-2")
    phases = [driver.current.phase]
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    phases.append(driver.current.phase)

    assert phases == [JobPhase.PENDING, JobPhase.FAILED]


def test_a_failure_read_before_the_other_workers_started_fails_nothing_early() -> None:
    """Without a refused binding the others are only not reported yet: they run."""
    driver = bound_gang()
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    phases = [driver.current.phase]
    driver.pods(["gang-worker-0", "gang-worker-2"], PodPhase.RUNNING, node="node-4")
    phases.append(driver.current.phase)

    assert phases == [JobPhase.PENDING, JobPhase.RUNNING]


def test_a_gang_that_may_lack_a_pod_waits_for_the_rest() -> None:
    driver = bound_gang(min_available=2)
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    driver.refuse("gang-worker-0")

    assert driver.current.phase is JobPhase.PENDING


def test_a_job_whose_min_success_the_pods_left_can_reach_waits() -> None:
    driver = bound_gang(min_success=2)
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    driver.refuse("gang-worker-0")

    assert driver.current.phase is JobPhase.PENDING


def test_a_restart_still_to_come_is_waited_for() -> None:
    driver = bound_gang(policies=[policy(Action.RESTART_JOB.value, "PodFailed", timeout="30s")])
    driver.pod("gang-worker-1", PodPhase.FAILED, node="node-2", exit_code=1)
    driver.refuse("gang-worker-0")

    assert driver.current.phase is JobPhase.PENDING
    assert driver.current.timers
