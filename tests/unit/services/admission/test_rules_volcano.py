"""Volcano's own admission test tables, ported (Volcano's admit_job.go and validate/util.go).

Each case names its Go origin. Volcano asserts ``strings.Contains(msg, ret)`` on the
concatenated message; here the same text must appear in
:func:`vcbus.services.admission.rules.volcano_message`, and the reason codes are asserted
exactly. Where docs/design.md#minavailable, docs/design.md#every-violation change Volcano's outcome,
the case's ``note`` says how.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.unit.services.admission.builders import build_job, build_queue, build_task
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.queue import Queue
from vcbus.services.admission.dependencies import validate_dependencies
from vcbus.services.admission.mutate import mutate
from vcbus.services.admission.pod_template import validate_topology
from vcbus.services.admission.rules import validate, volcano_message

ADMIT_JOB_TEST = "volcano@v1.12.0 pkg/webhooks/admission/jobs/validate/admit_job_test.go"
UTIL_TEST = "volcano@v1.12.0 pkg/webhooks/admission/jobs/validate/util_test.go"


@dataclass(frozen=True)
class GoCase:
    """A ported Go test case: the job, Volcano's expected text, vcbus' reason codes."""

    name: str
    job: Job
    ret: str
    reasons: tuple[str, ...]
    origin: str = ADMIT_JOB_TEST
    note: str = ""
    queues: dict[str, Queue] = field(default_factory=dict)


def _job(name: str, *tasks: dict[str, Any], min_available: int = 1, **spec: Any) -> Job:
    """The Go case's job; its name in lower case (docs/design.md#names-and-numbers: job names are
    DNS-1123 subdomains, and Volcano's test names such as ``minAvailable-lessThanZero`` are not)."""
    tasks = tasks or (build_task(),)
    return build_job(*tasks, name=name.lower(), min_available=min_available, **spec)


EVICTED_RESTART_TASK = [{"event": "PodEvicted", "action": "RestartTask"}]
ANY_ABORT = [{"event": "*", "action": "AbortJob"}]

TEST_VALIDATE_JOB_CREATE = [
    GoCase(
        "validate valid-job",
        _job("valid-job", policies=EVICTED_RESTART_TASK),
        "",
        (),
    ),
    GoCase(
        "duplicate-task-job",
        _job(
            "duplicate-task-job",
            build_task("duplicated-task-1"),
            build_task("duplicated-task-1"),
        ),
        "duplicated task name duplicated-task-1",
        ("DuplicateTaskName",),
    ),
    GoCase(
        "job-policy-duplicated",
        _job(
            "job-policy-duplicated",
            policies=[
                {"event": "PodFailed", "action": "AbortJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
        ),
        "duplicate",
        ("DuplicatePolicyEvent",),
    ),
    GoCase(
        "Min Available illegal",
        _job("job-min-illegal", min_available=2),
        "job 'minAvailable' should not be greater than total replicas in tasks",
        ("MinAvailableExceedsReplicas",),
        note=(
            "docs/design.md#minavailable row 3 gives the task minAvailable 2, which is not blamed"
            " on the user (T3)."
        ),
    ),
    GoCase(
        "Job Plugin illegal",
        _job("job-plugin-illegal", plugins={"big_plugin": []}),
        "unable to find job plugin: big_plugin",
        ("UnknownPlugin",),
    ),
    GoCase(
        "job-ttl-illegal",
        _job("job-ttl-illegal", ttlSecondsAfterFinished=-1),
        "'ttlSecondsAfterFinished' cannot be less than zero",
        ("NegativeTtl",),
    ),
    GoCase(
        "minAvailable-lessThanZero",
        _job("minAvailable-lessThanZero", min_available=-1),
        "job 'minAvailable' must be >= 0",
        ("NegativeMinAvailable",),
    ),
    GoCase(
        "maxretry-lessThanZero",
        _job("maxretry-lessThanZero", maxRetry=-1),
        "'maxRetry' cannot be less than zero.",
        ("NegativeMaxRetry",),
    ),
    GoCase(
        "no-task",
        build_job(name="no-task", min_available=1),
        "No task specified in job spec",
        ("NoTasks",),
    ),
    GoCase(
        "replica-lessThanZero",
        _job("replica-lessThanZero", build_task(replicas=-1)),
        "'replicas' < 0 in task: task-1, job: replica-lessthanzero; "
        "job 'minAvailable' should not be greater than total replicas in tasks;",
        ("NegativeReplicas", "MinAvailableExceedsReplicas"),
        note="Volcano stops at nothing here either: both texts, exactly as admit_job.go has them.",
    ),
    GoCase(
        "taskMinAvailable-lessThanZero",
        _job("taskMinAvailable-lessThanZero", build_task(min_available=-1)),
        "'minAvailable' < 0 in task: task-1, job: taskminavailable-lessthanzero;",
        ("NegativeTaskMinAvailable",),
        origin="volcano@v1.12.0 pkg/webhooks/admission/cronjobs/validate/admit_cronjob_test.go",
    ),
    GoCase(
        "nonDNS-task",
        _job("replica-lessThanZero", build_task("Task-1")),
        "[a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')];",
        ("InvalidTaskName",),
    ),
    GoCase(
        "job-policy-withExitCode",
        _job(
            "job-policy-withExitCode",
            policies=[{"event": "PodFailed", "action": "AbortJob", "exitCode": -1}],
        ),
        "must not specify event and exitCode simultaneously",
        ("PolicyEventAndExitCode",),
    ),
    GoCase(
        "policy-noEvent-noExCode",
        _job("policy-noEvent-noExCode", policies=[{"action": "AbortJob"}]),
        "either event and exitCode should be specified",
        ("PolicyWithoutEventOrExitCode",),
    ),
    GoCase(
        "invalid-policy-event",
        _job("invalid-policy-event", policies=[{"event": "someFakeEvent", "action": "AbortJob"}]),
        "invalid policy event",
        ("InvalidPolicyEvent",),
    ),
    GoCase(
        "invalid-policy-action",
        _job(
            "invalid-policy-action", policies=[{"event": "PodEvicted", "action": "someFakeAction"}]
        ),
        "invalid policy action",
        ("InvalidPolicyAction",),
    ),
    GoCase(
        "policy-extcode-zero",
        _job("policy-extcode-zero", policies=[{"action": "AbortJob", "exitCode": 0}]),
        "0 is not a valid error code",
        ("InvalidExitCode",),
    ),
    GoCase(
        "duplicate-exitcode",
        _job("duplicate-exitcode", policies=[{"exitCode": 1}, {"exitCode": 1}]),
        "duplicate exitCode 1",
        ("DuplicateExitCode",),
    ),
    GoCase(
        "job-policy-withAnyAndOtherEvent",
        _job(
            "job-policy-withExitCode",
            policies=[*ANY_ABORT, {"event": "PodFailed", "action": "RestartJob"}],
        ),
        "if there's * here, no other policy should be here",
        ("AnyEventWithOthers",),
    ),
    GoCase(
        "invalid-mount-volume",
        _job("invalid-mount-volume", policies=ANY_ABORT, volumes=[{"mountPath": ""}]),
        "mountPath is required;",
        ("MissingMountPath", "MissingVolumeClaim"),
        note="The missing claim is reported too (Volcano returns the first volume error).",
    ),
    GoCase(
        "duplicate-mount-volume",
        _job(
            "duplicate-mount-volume",
            policies=ANY_ABORT,
            volumes=[
                {"mountPath": "/var", "volumeClaimName": "pvc1"},
                {"mountPath": "/var", "volumeClaimName": "pvc2"},
            ],
        ),
        "duplicated mountPath: /var;",
        ("DuplicateMountPath",),
    ),
    GoCase(
        "volume without VolumeClaimName and VolumeClaim",
        _job(
            "invalid-volume",
            policies=ANY_ABORT,
            volumes=[{"mountPath": "/var"}, {"mountPath": "/var"}],
        ),
        "either VolumeClaim or VolumeClaimName must be specified;",
        ("MissingVolumeClaim", "DuplicateMountPath", "MissingVolumeClaim"),
        note="Every volume problem (Volcano returns only the first).",
    ),
    GoCase(
        "taskpolicy-withAnyandOthrEvent",
        _job(
            "taskpolicy-withAnyandOthrEvent",
            build_task(policies=[*ANY_ABORT, {"event": "PodFailed", "action": "RestartJob"}]),
        ),
        "if there's * here, no other policy should be here",
        ("AnyEventWithOthers",),
    ),
    GoCase(
        "job-with-noQueue",
        _job("job-with-noQueue", queue="jobQueue"),
        "unable to find job queue",
        ("QueueNotFound",),
    ),
    GoCase(
        "job with privileged init container",
        _job(
            "valid-job",
            build_task(
                pod_spec={
                    "initContainers": [
                        {
                            "name": "init-fake-name",
                            "image": "busybox:1.24",
                            "securityContext": {"privileged": True},
                        }
                    ],
                    "containers": [{"name": "fake-name", "image": "busybox:1.24"}],
                }
            ),
        ),
        "",
        (),
    ),
    GoCase(
        "job with privileged container",
        _job(
            "valid-job",
            build_task(
                pod_spec={
                    "containers": [
                        {
                            "name": "fake-name",
                            "image": "busybox:1.24",
                            "securityContext": {"privileged": True},
                        }
                    ]
                }
            ),
        ),
        "",
        (),
    ),
    GoCase(
        "job with valid task depends on",
        _job(
            "job-with-valid-task-depends-on",
            build_task("t1", depends_on=["t2"]),
            build_task("t2"),
        ),
        "",
        (),
    ),
    GoCase(
        "job with invalid task depends on",
        _job(
            "job-with-invalid-task-depends-on",
            build_task("t1", depends_on=["t3"]),
            build_task("t2"),
        ),
        "dependsOn of task t1 names unknown task t3",
        ("UnknownDependency",),
        note=(
            'A2 changes the outcome: Volcano says only "job has dependencies between tasks, '
            "but doesn't form a directed acyclic graph(DAG)\"; vcbus names the unknown task "
            "and keeps the DAG message for real cycles."
        ),
    ),
]

HIERARCHY_QUEUES = {
    "root": build_queue("root"),
    "parentQueue": build_queue("parentQueue", parent="root"),
    "childQueue": build_queue("childQueue", parent="parentQueue"),
}

TEST_VALIDATE_HIERARCHY_CREATE = [
    GoCase(
        "job-with-rootQueue",
        _job("job-with-noQueue", queue="root"),
        "can not submit job to root queue",
        ("RootQueue",),
        queues=HIERARCHY_QUEUES,
    ),
    GoCase(
        "job-with-parentQueue",
        _job("job-with-parentQueue", queue="parentQueue"),
        "can only submit job to leaf queue, queue `parentQueue` has 1 child queues",
        ("QueueNotLeaf",),
        queues=HIERARCHY_QUEUES,
    ),
    GoCase(
        "job-with-leafQueue",
        _job("job-with-leafQueue", queue="childQueue"),
        "",
        (),
        queues=HIERARCHY_QUEUES,
    ),
]


@pytest.mark.parametrize(
    "case", TEST_VALIDATE_JOB_CREATE + TEST_VALIDATE_HIERARCHY_CREATE, ids=lambda case: case.name
)
def test_volcano_admit_job_case_gives_volcano_text_when_validated(case: GoCase) -> None:
    """Ports of ``TestValidateJobCreate`` and ``TestValidateHierarchyCreate`` (v1.12)."""
    violations = validate(case.job, case.queues)

    assert tuple(violation.reason for violation in violations) == case.reasons
    assert case.ret in volcano_message(violations)


@pytest.mark.parametrize(
    ("name", "resources", "expect"),
    [
        ("test-1", {"limits": {"cpu": "1", "memory": "2000"}}, ""),
        (
            "test-2",
            {"limits": {"cpu": "500m", "memory": "2000"}},
            "the cpu request isn't an integer",
        ),
        ("test-3", {"requests": {"cpu": "1", "memory": "2000"}}, "isn't Guaranteed pod"),
    ],
    ids=["test-1", "test-2", "test-3"],
)
def test_topology_policy_requires_guaranteed_whole_cpus_when_set(
    name: str, resources: dict[str, Any], expect: str
) -> None:
    """Port of ``TestValidateTaskTopoPolicy`` (v1.12 ``admit_job_test.go``)."""
    task = mutate(
        build_job(
            build_task(
                name,
                5,
                topologyPolicy="restricted",
                pod_spec={"containers": [{"resources": resources}]},
            )
        )
    ).spec.tasks[0]

    messages = " ".join(violation.message for violation in validate_topology(task, 0))

    assert expect in messages
    assert bool(messages) == bool(expect)


@pytest.mark.parametrize(
    ("name", "depends_on", "is_dag"),
    [
        ("test-1", {"t1": ["t2", "t3"], "t2": ["t3"], "t3": []}, True),
        ("test-2", {"t1": ["t2"], "t2": ["t1"], "t3": None}, False),
        ("test-3", {"t1": ["t2", "t3"], "t2": ["t2"], "t3": None}, False),
        ("test-4", {"t1": ["t2", "t3"], "t2": None, "t3": ["t2"]}, True),
    ],
    ids=["test-1", "test-2", "test-3", "test-4"],
)
def test_dependencies_form_a_dag_as_volcano_decides_when_topo_sorted(
    name: str, depends_on: dict[str, list[str] | None], is_dag: bool
) -> None:
    """Port of ``TestTopoSort`` (``util_test.go``): only the DAG verdict is the contract."""
    job = mutate(
        build_job(
            *(build_task(task, depends_on=deps) for task, deps in depends_on.items()), name=name
        )
    )

    reasons = [violation.reason for violation in validate_dependencies(job.spec.tasks)]

    assert ("NotADag" not in reasons) == is_dag
