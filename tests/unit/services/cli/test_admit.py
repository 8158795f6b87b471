"""``vcbus admit``: Volcano's own example files through the admission core, in-process."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import VOLCANO_EXAMPLES, VOLCANO_TYPOS
from vcbus.services.cli import main

EXAMPLES = VOLCANO_EXAMPLES
JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def is_kind(document: dict[str, Any], api_version: str, kind: str) -> bool:
    return document.get("apiVersion") == api_version and document.get("kind") == kind


EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.yaml"))
QUEUE_FILES = [
    path
    for path in EXAMPLE_FILES
    if any(is_kind(d, QUEUE_API_VERSION, "Queue") for d in documents(path))
]
VALID_FILES = [
    path
    for path in EXAMPLE_FILES
    if "invalid_jobs" not in path.parts and str(path.relative_to(EXAMPLES)) not in VOLCANO_TYPOS
]


def admit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    status = main(["admit", *args, "--json"])
    return status, json.loads(capsys.readouterr().out)


def as_list(output: Any) -> list[dict[str, Any]]:
    return output if isinstance(output, list) else [output]


def test_examples_folder_holds_jobs_and_other_kinds() -> None:
    """Guards the walk below: the folder is where the tests expect it, with both kinds."""
    kinds = {(d.get("apiVersion"), d.get("kind")) for p in EXAMPLE_FILES for d in documents(p)}

    assert (JOB_API_VERSION, "Job") in kinds
    assert {
        ("apps/v1", "Deployment"),
        (JOB_API_VERSION, "CronJob"),
        (QUEUE_API_VERSION, "Queue"),
    } < kinds
    assert len(QUEUE_FILES) == 2


@pytest.mark.parametrize("path", VALID_FILES, ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_volcano_example_is_admitted_unchanged_when_a_job_and_refused_as_not_a_job_otherwise(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queues = [arg for queue_file in QUEUE_FILES for arg in ("--queues", str(queue_file))]
    submitted = documents(path)

    status, output = admit(capsys, str(path), *queues)

    verdicts = as_list(output)
    assert len(verdicts) == len(submitted)
    for document, verdict in zip(submitted, verdicts, strict=True):
        if is_kind(document, JOB_API_VERSION, "Job"):
            assert verdict["allowed"], verdict["violations"]
            assert_unchanged(document, verdict["job"])
        elif is_kind(document, QUEUE_API_VERSION, "Queue"):  # what `submit` sends to queues
            assert (verdict["allowed"], verdict["job"], verdict["violations"]) == (True, None, [])
        else:
            assert not verdict["allowed"]
            assert [v["reason"] for v in verdict["violations"]] == ["NotAJob"]
            assert verdict["job"] is None
    admissible = all(
        is_kind(d, JOB_API_VERSION, "Job") or is_kind(d, QUEUE_API_VERSION, "Queue")
        for d in submitted
    )
    assert status == (0 if admissible else 1)


@pytest.mark.parametrize("name", sorted(VOLCANO_TYPOS))
def test_volcano_example_with_a_typo_is_refused_when_strict_and_admitted_with_warnings(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, strict = admit(capsys, str(EXAMPLES / name))
    warn_status, warned = admit(capsys, str(EXAMPLES / name), "--validate=warn")
    ignore_status, ignored = admit(capsys, str(EXAMPLES / name), "--validate=false")

    assert status == 1
    assert [v["message"] for v in strict["violations"]] == VOLCANO_TYPOS[name]
    assert {v["reason"] for v in strict["violations"]} == {"UnknownField"}
    assert (warn_status, warned["allowed"], warned["warnings"]) == (0, True, VOLCANO_TYPOS[name])
    assert (ignore_status, ignored["allowed"], ignored["warnings"]) == (0, True, [])
    assert "priorityClass" not in warned["job"]["spec"]["tasks"][0]["template"]["spec"]
    assert warned["job"] == ignored["job"]


def assert_unchanged(submitted: dict[str, Any], admitted: dict[str, Any]) -> None:
    """Mutation only adds defaults: every value the user wrote is still there."""
    assert admitted["metadata"]["name"] == submitted["metadata"]["name"]
    spec, given = admitted["spec"], submitted["spec"]
    for field in ("minAvailable", "queue", "maxRetry", "schedulerName", "policies"):
        if field in given:
            assert spec[field] == given[field], field
    assert set(given.get("plugins", {})) <= set(spec.get("plugins", {}))
    for task, given_task in zip(spec["tasks"], given["tasks"], strict=True):
        for field in ("name", "replicas", "policies", "dependsOn", "minAvailable"):
            if field in given_task:
                assert task[field] == given_task[field], field
        assert task["template"]["spec"] == given_task["template"]["spec"]


@pytest.mark.parametrize(
    ("name", "reasons", "path"),
    [
        (
            "duplicatedPolicyEvent-webhook-deny.yaml",
            ["DuplicatePolicyEvent"],
            "spec.policies[1].event",
        ),
        ("duplicatedTaskName-webhook-deny.yaml", ["DuplicateTaskName"], "spec.tasks[1].name"),
        ("minAvailable-webhook-deny.yaml", ["MinAvailableExceedsReplicas"], "spec.minAvailable"),
    ],
)
def test_volcano_invalid_example_is_refused_for_the_reason_its_comment_gives(
    name: str, reasons: list[str], path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``invalid_jobs/``: "one event should not have different action", "duplicated task
    name", "minAvailable is greater than total replicas in tasks"."""
    status, output = admit(capsys, str(EXAMPLES / "invalid_jobs" / name))

    assert status == 1
    assert output["allowed"] is False
    assert [v["reason"] for v in output["violations"]] == reasons
    assert output["violations"][0]["path"] == path
    assert output["job"]["metadata"]["name"] == "test-job-webhook-disallow"


def test_hierarchical_jobs_are_refused_when_their_queues_are_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, output = admit(capsys, str(EXAMPLES / "hierarchical-jobs" / "jobs.yaml"))

    assert status == 1
    assert [[v["reason"] for v in verdict["violations"]] for verdict in output] == [
        ["QueueNotFound"]
    ] * 4


def test_text_output_summarises_each_verdict_when_json_is_not_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["admit", str(EXAMPLES / "job.yaml")])

    assert status == 0
    assert capsys.readouterr().out == (
        "ALLOWED  default/test-job: queue default, minAvailable 3 of 6 pods "
        "(tasks default-nginx 3/6)\n"
    )


def test_text_output_lists_every_violation_when_refused(capsys: pytest.CaptureFixture[str]) -> None:
    main(["admit", str(EXAMPLES / "invalid_jobs" / "duplicatedTaskName-webhook-deny.yaml")])

    assert capsys.readouterr().out == (
        "REJECTED default/test-job-webhook-disallow: 1 violation(s)\n"
        "  spec.tasks[1].name: DuplicateTaskName: duplicated task name task-1\n"
    )


JOB: dict[str, Any] = {
    "apiVersion": JOB_API_VERSION,
    "kind": "Job",
    "metadata": {"name": "j1"},
    "spec": {
        "tasks": [
            {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
        ]
    },
}


def test_json_list_gives_a_verdict_per_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps([JOB, {**JOB, "kind": "Pod"}]))

    status, output = admit(capsys, str(path))

    assert status == 1
    assert [verdict["allowed"] for verdict in output] == [True, False]
    assert output[0]["job"]["spec"]["tasks"][0]["name"] == "default0"
    assert output[0]["job"]["kind"] == "Job"


def test_stdin_is_read_when_file_is_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(yaml.safe_dump(JOB).encode())))

    status, output = admit(capsys, "-")

    assert status == 0
    assert output["allowed"] is True
    assert output["job"]["spec"]["minAvailable"] == 2


def test_flat_queue_file_declares_queues_when_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queues = tmp_path / "queues.yaml"
    queues.write_text("- {name: gpu, weight: 2}\n- {name: closed, state: Closed}\n")
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        yaml.safe_dump_all(
            [
                {**JOB, "spec": {**JOB["spec"], "queue": "gpu"}},
                {**JOB, "spec": {**JOB["spec"], "queue": "closed"}},
            ]
        )
    )

    status, output = admit(capsys, str(jobs), "--queues", str(queues))

    assert status == 1
    assert [[v["reason"] for v in verdict["violations"]] for verdict in output] == [
        [],
        ["QueueNotOpen"],
    ]


def test_unreadable_files_exit_with_status_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_queues = tmp_path / "queues.yaml"
    bad_queues.write_text("apiVersion: apps/v1\nkind: Deployment\n")

    assert main(["admit", str(tmp_path / "missing.yaml")]) == 2
    assert main(["admit", str(EXAMPLES / "job.yaml"), "--queues", str(bad_queues)]) == 2
    assert (
        "queue document 1: expected a scheduling.volcano.sh/v1beta1 Queue"
        in capsys.readouterr().err
    )


def test_garbage_is_refused_with_the_decoders_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x00\xff\xfe garbage")

    status, output = admit(capsys, str(path))

    assert status == 1
    assert [v["reason"] for v in output["violations"]] == ["InvalidEncoding"]


def test_recursive_alias_is_refused_with_its_reason_and_exit_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "recursive.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: &m {name: x, labels: *m}\n"
    )

    status, output = admit(capsys, str(path))

    assert status == 1
    assert [(v["path"], v["reason"]) for v in output["violations"]] == [
        ("metadata.labels", "RecursiveAlias")
    ]


def test_examples_folder_of_this_repo_is_admitted_as_documented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``examples/jobs``: three valid Jobs and one invalid one, for the README."""
    folder = Path(__file__).parents[4] / "examples" / "jobs"
    outcomes = {}
    for path in sorted(folder.glob("*.yaml")):
        status, output = admit(capsys, str(path))
        outcomes[path.name] = (status, [v["reason"] for v in output["violations"]])

    assert outcomes == {
        "gang.yaml": (0, []),
        "invalid.yaml": (
            1,
            [
                "GreaterThanReplicas",
                "DuplicateTaskName",
                "MinAvailableMismatch",
                "UnknownDependency",
            ],
        ),
        "mpi-depends-on.yaml": (0, []),
        "tensorflow-task-minimums.yaml": (0, []),
    }


def test_queue_documents_are_read_as_submit_reads_them_and_a_bad_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
        "metadata: {name: team, annotations: {volcano.sh/hierarchy: root/eng}}\n"
        "spec: {weight: 2}\n---\n"
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: Bad_Name}\n"
    )

    status = main(["admit", str(path)])

    lines = capsys.readouterr().out.splitlines()
    assert status == 1
    assert lines[0] == "ALLOWED  queue team"
    assert lines[1] == (
        "  Warning: annotation volcano.sh/hierarchy is ignored: vcbus does not share "
        "resources by queue hierarchy (the queue is scheduled as a flat queue)"
    )
    assert lines[2] == "REJECTED document 2: 1 violation(s)"
    assert lines[3].startswith("  (payload): InvalidQueue: queue document 1: ")


def test_a_large_rejected_job_is_not_echoed_whole_when_printed_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    annotations = {f"note-{i}": "x" * 100 for i in range(1_000)}  # about 110 KB of metadata
    job = {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "metadata": {"name": "big", "annotations": annotations},
        "spec": {
            "queue": "nosuch",
            "tasks": [{"name": "w", "replicas": 1, "template": {"spec": {"containers": []}}}],
        },
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(job))

    status, output = admit(capsys, str(path))

    assert (status, output["allowed"], output["job"]) == (1, False, None)
    assert output["jobOmitted"].endswith(
        "bytes; answers echo at most 65536 (docs/design.md#bounded-records)"
    )
    assert "QueueNotFound" in [v["reason"] for v in output["violations"]]
    assert len(json.dumps(output)) < 64 * 1024
