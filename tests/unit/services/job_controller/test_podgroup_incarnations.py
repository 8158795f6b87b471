"""A restart recreates the PodGroup under the same name: phases are matched to its uid.

Found by the chaos run: a job-controller killed right after restarting a job left the
restart unsaved; its successor read the new PodGroup's ``Inqueue`` before the pod failures
that cause the restart, took it for the old PodGroup, and remembered its id, so the same
``Inqueue`` published again was dropped and the restarted job never got pods.
"""

from __future__ import annotations

import dataclasses

from tests.unit.services.job_controller.builders import T0, Driver, build_job, build_task, policy
from vcbus.contracts import PodCreated, PodGroupPhaseChanged
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Ctx
from vcbus.services.job_controller.core import decide


def restarted_job() -> tuple[Driver, Driver]:
    """A running one-pod job, and a copy of it restarted by a pod failure."""
    job = build_job(build_task("w", policies=(policy("RestartJob", "PodFailed"),)))
    before = Driver(job)
    before.start()
    (name,) = before.pod_names()
    before.pod(name, PodPhase.RUNNING)
    after = dataclasses.replace(before, emitted=[])
    after.pod(name, PodPhase.FAILED, exit_code=1)
    return before, after


def inqueue(driver: Driver) -> PodGroupPhaseChanged:
    podgroup = driver.current.podgroup
    assert podgroup is not None
    return PodGroupPhaseChanged(
        event_id="pg-new-inqueue",
        occurred_at=T0,
        job=driver.key,
        podgroup=podgroup.name,
        phase=PodGroupPhase.INQUEUE,
        uid=podgroup.uid,
    )


def test_the_new_podgroups_phase_changes_nothing_when_read_before_the_restart() -> None:
    before, after = restarted_job()
    assert after.current.podgroup is not None
    assert before.current.podgroup is not None
    assert after.current.podgroup.uid != before.current.podgroup.uid
    assert after.current.podgroup.name == before.current.podgroup.name

    step = decide(before.record, inqueue(after), Ctx(now=T0), before.conf)

    assert step.state is before.record
    assert step.emit == ()


def test_the_restarted_job_gets_its_pods_when_the_new_podgroup_is_inqueue() -> None:
    _, after = restarted_job()
    emitted = after.feed(inqueue(after))
    assert [type(e) for e in emitted if isinstance(e, PodCreated)] == [PodCreated]


def test_an_old_podgroups_late_phase_changes_nothing_after_the_restart() -> None:
    before, after = restarted_job()
    old = before.current.podgroup
    assert old is not None
    late = PodGroupPhaseChanged(
        event_id="pg-old-running",
        occurred_at=T0,
        job=before.key,
        podgroup=old.name,
        phase=PodGroupPhase.RUNNING,
        uid=old.uid,
    )
    step = decide(after.record, late, Ctx(now=T0), after.conf)
    assert step.state is after.record
