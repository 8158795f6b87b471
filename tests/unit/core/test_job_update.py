"""Job updates (Volcano's admit_job.go): allowed changes pass, every refused one has Volcano's
message."""

from __future__ import annotations

import msgspec
import pytest

from tests.unit.services.job_controller.builders import build_job, build_task, with_spec
from vcbus.contracts.objects.job import Job, PartitionPolicy
from vcbus.core.job_update import changed_fields, update_error

OLD = build_job(build_task("a", 2, min_available=1), build_task("b", 3, min_available=2))


def _tasks(*tasks: object) -> Job:
    return with_spec(OLD, tasks=tasks)


def test_update_is_allowed_when_only_mutable_fields_change() -> None:
    new = with_spec(
        OLD,
        min_available=2,
        priority_class_name="high",
        tasks=(build_task("a", 4, min_available=2), build_task("b", 1, min_available=0)),
    )
    assert update_error(OLD, new) is None


def test_update_is_allowed_when_nothing_changes() -> None:
    assert update_error(OLD, OLD) is None


@pytest.mark.parametrize(
    ("new", "message"),
    [
        pytest.param(
            _tasks(build_task("a", -1), build_task("b", 3)),
            "'replicas' must be >= 0 in task: a",
            id="replicas-negative",
        ),
        pytest.param(
            _tasks(build_task("a", 2, min_available=-1), build_task("b", 3)),
            "'minAvailable' must be >= 0 in task: a",
            id="task-min-negative",
        ),
        pytest.param(
            _tasks(build_task("a", 2, min_available=3), build_task("b", 3)),
            "'minAvailable' must be <= 'replicas' in task: a",
            id="task-min-above-replicas",
        ),
        pytest.param(
            with_spec(OLD, min_available=6),
            "job 'minAvailable' must not be greater than total replicas",
            id="job-min-above-replicas",
        ),
        pytest.param(
            with_spec(OLD, min_available=-1),
            "job 'minAvailable' must be >= 0",
            id="job-min-negative",
        ),
        pytest.param(
            with_spec(OLD, network_topology={"highestTierAllowed": 1, "highestTierName": "x"}),
            "must not specify 'highestTierAllowed' and 'highestTierName' "
            "in networkTopology simultaneously",
            id="topology-both-tiers",
        ),
        pytest.param(
            with_spec(OLD, min_available=1, tasks=(build_task("a", 2, min_available=1),)),
            "job updates may not add or remove tasks",
            id="task-removed",
        ),
        pytest.param(
            with_spec(OLD, queue="other"),
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec` and `PriorityClassName`",
            id="queue-changed",
        ),
        pytest.param(
            _tasks(
                build_task("a", 2, min_available=1, cpu="1"), build_task("b", 3, min_available=2)
            ),
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec` and `PriorityClassName`",
            id="template-changed",
        ),
        pytest.param(
            _tasks(build_task("renamed", 2, min_available=1), build_task("b", 3, min_available=2)),
            "job updates may not change fields other than `minAvailable`, "
            "`tasks[*].replicas under spec` and `PriorityClassName`",
            id="task-renamed",
        ),
    ],
)
def test_update_is_refused_with_volcano_message_when_rule_fails(new: Job, message: str) -> None:
    assert update_error(OLD, new) == message


def test_partition_rules_apply_when_task_has_partition_policy() -> None:
    task = msgspec.structs.replace(
        build_task("a", 6), partition_policy=PartitionPolicy(total_partitions=2, partition_size=2)
    )
    old = build_job(task)
    assert (
        update_error(old, old)
        == "'Replicas' are not equal to TotalPartitions*PartitionSize in task: a, job: job"
    )


def test_first_failing_rule_wins_when_several_fail() -> None:
    new = with_spec(OLD, min_available=-1, queue="other")
    assert update_error(OLD, new) == "job 'minAvailable' must be >= 0"


def test_changed_fields_name_what_an_allowed_update_changes_in_spec_order() -> None:
    new = with_spec(
        OLD,
        min_available=2,
        tasks=(build_task("a", 4, min_available=1), build_task("b", 3, min_available=3)),
    )
    assert changed_fields(OLD, new) == (
        "minAvailable",
        "tasks[a].replicas",
        "tasks[b].minAvailable",
    )


def test_changed_fields_say_metadata_when_only_labels_change_and_nothing_when_equal() -> None:
    labelled = msgspec.structs.replace(
        OLD, metadata=msgspec.structs.replace(OLD.metadata, labels={"team": "x"})
    )
    assert changed_fields(OLD, labelled) == ("metadata",)
    assert changed_fields(OLD, OLD) == ()
