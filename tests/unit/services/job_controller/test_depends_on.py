"""dependsOn staging (docs/design.md#dependent-jobs) on Volcano's task-start-dependency example
(nginx1 → 2 → 3)."""

from __future__ import annotations

import msgspec
import pytest
import yaml

from vcbus.contracts.objects.job import DependsOn, Job, JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.services.job_controller.job_pods import is_task_ready
from vcbus.services.job_controller.state import PodState

from .builders import EXAMPLES, Driver, build_task, last_status, pods_of, with_spec

EXAMPLE = EXAMPLES / "task-start-dependency" / "job.yaml"
R = PodPhase.RUNNING
S = PodPhase.SUCCEEDED


def _example() -> Job:
    """Volcano's example, mutated the way admission would (Volcano's mutate_job.go with
    docs/design.md#minavailable, fourth case)."""
    job = msgspec.convert(yaml.safe_load(EXAMPLE.read_text()), Job)
    tasks = tuple(
        msgspec.structs.replace(task, max_retry=task.max_retry or 3) for task in job.spec.tasks
    )
    metadata = msgspec.structs.replace(
        job.metadata, namespace="default", annotations={"volcano.sh/dependent-job": "true"}
    )
    return msgspec.structs.replace(
        job, metadata=metadata, spec=msgspec.structs.replace(job.spec, tasks=tasks, max_retry=3)
    )


def _names(task: str, count: int) -> list[str]:
    return [f"job-{task}-{i}" for i in range(count)]


def _with_nginx3_depending_on(job: Job, iteration: str) -> Job:
    nginx1, nginx2, nginx3 = job.spec.tasks
    nginx3 = msgspec.structs.replace(
        nginx3, depends_on=DependsOn(name=("job-nginx1", "job-nginx2"), iteration=iteration)
    )
    return with_spec(job, tasks=(nginx1, nginx2, nginx3))


def test_tasks_form_a_chain_when_example_is_read_from_volcano_examples() -> None:
    job = _example()
    assert [t.name for t in job.spec.tasks] == ["job-nginx1", "job-nginx2", "job-nginx3"]
    assert job.spec.tasks[2].depends_on == DependsOn(name=("job-nginx2",))


def test_only_first_stage_is_created_when_podgroup_is_inqueue() -> None:
    driver = Driver(_example())
    driver.admit()
    assert driver.current.podgroup is not None
    assert driver.current.podgroup.dependent
    assert driver.current.podgroup.min_member == 1
    emits = driver.podgroup(PodGroupPhase.INQUEUE)
    assert pods_of(emits) == ["job-job-nginx1-0"]
    condition = last_status(emits).conditions[0]
    assert condition.reason == "WaitingForDependency"
    assert "job-nginx2 waits for all of [job-nginx1]" in condition.message
    assert "job-nginx3 waits for all of [job-nginx2]" in condition.message


def test_stages_are_created_as_deep_as_the_dag_goes_when_dependencies_become_ready() -> None:
    driver = Driver(_example())
    driver.start()
    assert driver.pod("job-job-nginx1-0", PodPhase.PENDING) == ()  # bound: not ready yet

    emits = driver.pod("job-job-nginx1-0", R)
    assert pods_of(emits) == _names("job-nginx2", 5)
    assert driver.phase() == "Running"

    for name in _names("job-nginx2", 4):
        assert pods_of(driver.pod(name, R)) == []
    emits = driver.pod("job-job-nginx2-4", R)
    assert pods_of(emits) == _names("job-nginx3", 5)
    assert last_status(emits).conditions[0].reason == "Running"

    driver.pods(_names("job-nginx3", 5), R)
    everything = ["job-job-nginx1-0", *_names("job-nginx2", 5), *_names("job-nginx3", 5)]
    emits = driver.pods(everything, S)
    assert last_status(emits).phase is JobPhase.COMPLETED
    assert sorted(pods_of(driver.emitted)) == sorted(everything)


def test_any_opens_when_one_dependency_is_ready() -> None:
    driver = Driver(_with_nginx3_depending_on(_example(), "any"))
    driver.start()
    emits = driver.pod("job-job-nginx1-0", R)
    assert pods_of(emits) == [*_names("job-nginx2", 5), *_names("job-nginx3", 5)]


def test_all_waits_for_every_dependency_when_two_are_listed() -> None:
    driver = Driver(_with_nginx3_depending_on(_example(), "all"))
    driver.start()
    emits = driver.pod("job-job-nginx1-0", R)
    assert pods_of(emits) == _names("job-nginx2", 5)
    assert "job-nginx3 waits for all of [job-nginx2]" in last_status(emits).conditions[0].message
    for name in _names("job-nginx2", 4):
        driver.pod(name, S)
    emits = driver.pod("job-job-nginx2-4", R)
    assert pods_of(emits) == _names("job-nginx3", 5)


def test_dependency_is_ready_when_min_available_pods_run_or_succeeded() -> None:
    task = build_task("d", 3, min_available=2)
    pods = [
        PodState(name="j-d-0", task="d", index=0, uid="u0", version=0, phase=PodPhase.SUCCEEDED),
        PodState(name="j-d-1", task="d", index=1, uid="u1", version=0, phase=PodPhase.PENDING),
    ]
    assert not is_task_ready(task, pods)
    pods.append(
        PodState(name="j-d-2", task="d", index=2, uid="u2", version=0, phase=PodPhase.RUNNING)
    )
    assert is_task_ready(task, pods)


@pytest.mark.parametrize(("running", "ready"), [(2, False), (3, True)])
def test_all_replicas_are_needed_when_dependency_has_no_minimum(running: int, ready: bool) -> None:
    task = build_task("d", 3)
    pods = [
        PodState(name=f"j-d-{i}", task="d", index=i, uid=f"u{i}", version=0, phase=PodPhase.RUNNING)
        for i in range(running)
    ]
    assert is_task_ready(task, pods) is ready


def test_next_stage_pods_get_the_same_uids_when_unrelated_events_came_first() -> None:
    """A pod's uid counts its own creations only, so a replay in another order after a crash
    (inputs of other topics handled before or after) re-creates it under the same uid."""
    direct = Driver(_example())
    direct.start()
    detour = Driver(_example())
    detour.record = direct.record  # both branch from the same state
    direct_pods = [e for e in direct.pod("job-job-nginx1-0", R) if type(e).__name__ == "PodCreated"]

    # an input that emits a status (advancing the job's event counter) but creates no pod:
    # a refused update (the queue may not change)
    detour.job = with_spec(detour.job, queue="elsewhere")
    assert detour.admit(digest="digest-2")
    detour.pod("job-job-nginx1-0", PodPhase.PENDING)
    detour_pods = [e for e in detour.pod("job-job-nginx1-0", R) if type(e).__name__ == "PodCreated"]

    assert len(direct_pods) == len(detour_pods) == 5
    assert [p.pod.uid for p in direct_pods] == [p.pod.uid for p in detour_pods]  # type: ignore[attr-defined]
    assert [p.event_id for p in direct_pods] == [p.event_id for p in detour_pods]
