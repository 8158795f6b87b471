"""Decoding submissions: JSON or YAML Jobs, commands, and a reason for everything else."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
)
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job
from vcbus.services.admission.bounded_parse import MAX_DEPTH
from vcbus.services.admission.decode import decode, decode_submission
from vcbus.services.admission.fields import FieldValidation

JOB_YAML = b"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-job
  namespace: team-a
spec:
  minAvailable: 1
  tasks:
    - replicas: 2
      name: task-1
      template:
        spec:
          containers:
            - {name: nginx, image: nginx, resources: {requests: {cpu: "1"}}}
"""


def only(result: object) -> Violation:
    assert isinstance(result, tuple), result
    assert len(result) == 1, result
    violation = result[0]
    assert isinstance(violation, Violation)
    return violation


def test_yaml_job_is_decoded_when_well_formed() -> None:
    job = decode_submission(JOB_YAML)

    assert isinstance(job, Job)
    assert (job.metadata.namespace, job.metadata.name, job.spec.tasks[0].replicas) == (
        "team-a",
        "test-job",
        2,
    )
    assert job.spec.tasks[0].template.spec["containers"] == [
        {"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
    ]


def test_json_job_equals_yaml_job_when_they_say_the_same() -> None:
    job = decode_submission(JOB_YAML)
    assert isinstance(job, Job)

    assert decode_submission(msgspec.json.encode(job)) == job


def test_unknown_fields_are_refused_with_path_and_closest_name_when_strict() -> None:
    payload = JOB_YAML.replace(
        b"spec:\n  minAvailable", b"status: {}\nspec:\n  queu: q\n  minAvailable"
    )

    assert decode_submission(payload) == (
        Violation(
            path="spec.queu",
            reason="UnknownField",
            message='unknown field "spec.queu"; did you mean "queue"?',
        ),
    )


@pytest.mark.parametrize("fields", [FieldValidation.WARN, FieldValidation.IGNORE])
def test_unknown_fields_are_dropped_when_validation_warns_or_ignores(
    fields: FieldValidation,
) -> None:
    payload = JOB_YAML.replace(b"spec:\n  minAvailable", b"spec:\n  foo: 1\n  minAvailable")

    assert decode_submission(payload, fields=fields) == decode_submission(JOB_YAML)


def test_a_jobs_status_is_known_when_a_manifest_was_read_back_from_a_cluster() -> None:
    payload = JOB_YAML.replace(b"spec:\n  minAvailable", b"status: {x: 1}\nspec:\n  minAvailable")

    assert isinstance(decode_submission(payload), Job)


def test_empty_documents_are_ignored_when_a_file_ends_with_a_separator() -> None:
    assert isinstance(decode_submission(b"---\n" + JOB_YAML + b"---\n"), Job)


@pytest.mark.parametrize(
    ("command", "tag"),
    [
        (JobDeleteRequested, "job.delete_requested.v1"),
        (JobAbortRequested, "job.abort_requested.v1"),
        (JobResumeRequested, "job.resume_requested.v1"),
    ],
    ids=["delete", "abort", "resume"],
)
def test_command_is_decoded_when_type_is_a_command_tag(
    command: type[JobDeleteRequested | JobAbortRequested | JobResumeRequested], tag: str
) -> None:
    sent = command(
        event_id="e1", occurred_at=datetime(2026, 1, 1, tzinfo=UTC), job=JobKey("team-a/j1")
    )
    payload = msgspec.json.encode(sent)
    assert msgspec.json.decode(payload)["type"] == tag

    assert decode_submission(payload) == sent


@pytest.mark.parametrize(
    ("payload", "reason", "message"),
    [
        (b"", "EmptyPayload", "payload is empty: expected a Job"),
        (b"\xff\xfe{}", "InvalidEncoding",
         "payload is not UTF-8 text: invalid start byte at byte 0"),
        (b'{"a": ', "MalformedJson", "payload is not valid JSON: Input data was truncated"),
        (b"[1, 2]", "NotAMapping", "expected a Job object (a mapping), got a list; "
         "jobs.submitted takes batch.volcano.sh/v1alpha1 Job objects"),
        (b"just text", "NotAMapping", "expected a Job object (a mapping), got a string; "
         "jobs.submitted takes batch.volcano.sh/v1alpha1 Job objects"),
        (b"a: 1\n---\nb: 2\n", "MultipleDocuments", "payload holds 2 YAML documents; publish one "
         "Job per record (`vcbus admit` and `vcbus submit` split multi-document files)"),
        (b'{"type": "job.restart_requested.v1"}', "UnknownCommand",
         "type 'job.restart_requested.v1' is not a command jobs.submitted knows "
         "(job.delete_requested.v1, job.abort_requested.v1, job.resume_requested.v1, "
         "rejections.clear_requested.v1), and the object has no kind/apiVersion of a Job"),
        (b'{"type": "job.delete_requested.v1", "job": "a/b"}', "InvalidCommand",
         "Object missing required field `event_id`"),
    ],
    ids=["empty", "not-utf8", "bad-json", "list", "scalar", "two-docs", "unknown-command",
         "incomplete-command"],
)  # fmt: skip
def test_payload_is_refused_with_a_reason_when_it_is_not_a_submission(
    payload: bytes, reason: str, message: str
) -> None:
    violation = only(decode_submission(payload))

    assert (violation.reason, violation.message) == (reason, message)


def test_malformed_yaml_is_refused_with_the_parser_position() -> None:
    violation = only(decode_submission(b"apiVersion: v1\nkind: [Job\n"))

    assert violation.reason == "MalformedYaml"
    assert violation.message.startswith("payload is not valid YAML: while parsing a flow sequence")
    assert "line 2" in violation.message


@pytest.mark.parametrize(
    ("payload", "path", "found"),
    [
        (b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", "kind",
         "kind 'Deployment' (apiVersion 'apps/v1')"),
        (b"apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\n", "kind",
         "kind 'CronJob' (apiVersion 'batch.volcano.sh/v1alpha1')"),
        (b"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n", "kind",
         "kind 'Queue' (apiVersion 'scheduling.volcano.sh/v1beta1')"),
        (b"apiVersion: batch/v1\nkind: Job\n", "apiVersion", "kind 'Job' (apiVersion 'batch/v1')"),
        (b"metadata: {name: x}\n", "kind", "an object without kind and apiVersion"),
    ],
    ids=["deployment", "cronjob", "queue", "kubernetes-job", "no-kind"],
)  # fmt: skip
def test_other_kinds_are_refused_as_not_a_job(payload: bytes, path: str, found: str) -> None:
    violation = only(decode_submission(payload))

    assert violation == Violation(
        path=path,
        reason="NotAJob",
        message=(
            f"not a Job: got {found}; jobs.submitted takes batch.volcano.sh/v1alpha1 Job objects"
        ),
    )


def test_wrong_type_is_refused_with_its_json_path() -> None:
    violation = only(decode_submission(JOB_YAML.replace(b"replicas: 2", b"replicas: two")))

    assert violation == Violation(
        path="spec.tasks[0].replicas",
        reason="InvalidType",
        message="spec.tasks[0].replicas: Expected `int`, got `str`",
    )


def test_missing_name_is_refused_and_generate_name_explained() -> None:
    payload = JOB_YAML.replace(b"  name: test-job", b"  generateName: step-")

    violation = only(decode_submission(payload))

    assert (violation.path, violation.reason) == ("metadata.name", "MissingName")
    assert "generateName 'step-' is not supported" in violation.message


def test_non_string_keys_are_refused_when_yaml_writes_them() -> None:
    payload = JOB_YAML.replace(b"          containers:", b"          1: x\n          containers:")

    violation = only(decode_submission(payload))

    assert (violation.path, violation.reason) == ("spec.tasks[0].template.spec", "InvalidKey")


def test_oversized_payload_is_refused_without_parsing() -> None:
    violation = only(decode_submission(b"{" * 100, max_bytes=99))

    assert (violation.reason, violation.message) == (
        "PayloadTooLarge",
        "payload is 100 bytes; the limit is 99 bytes",
    )


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (b"[" * 100_000 + b"]" * 100_000, ""),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ""),
        (b"a:\n- " + b"[" * 100_000 + b"]" * 100_000, "a[0]"),
        (b"[" * 150 + b"]" * 150, "[0]" * MAX_DEPTH),
        (b'{"a": {"b": ' + b"[" * 150 + b"]" * 150 + b"}}", "a.b" + "[0]" * (MAX_DEPTH - 2)),
        (b"a:\n  b: " + b"[" * 150 + b"]" * 150, "a.b" + "[0]" * (MAX_DEPTH - 2)),
    ],
    ids=["json", "json-in-object", "yaml", "json-150", "json-150-in-object", "yaml-150"],
)
def test_deep_nesting_is_refused_when_beyond_the_limit(payload: bytes, path: str) -> None:
    violation = only(decode_submission(payload))

    assert violation.reason == "NestingTooDeep"
    assert f"the limit is {MAX_DEPTH} levels" in violation.message
    assert violation.path == path


@pytest.mark.parametrize(
    ("payload", "reached"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
        (b"[" * 150 + b"]" * 150, "nested 150 levels deep"),
        (b"a:\n  b: " + b"[" * 150 + b"]" * 150, "nested at least 101 levels deep"),
    ],
    ids=["json-decoder-refuses", "json-decoded", "yaml"],
)
def test_deep_nesting_refusal_says_the_depth_reached(payload: bytes, reached: str) -> None:
    violation = only(decode_submission(payload))

    assert reached in violation.message


def test_nesting_at_the_limit_is_accepted_when_no_deeper() -> None:
    payload = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH

    violation = only(decode_submission(payload))

    assert violation.reason == "NotAMapping"


def test_alias_bomb_is_refused_before_it_expands() -> None:
    lines = [b"l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        refs = b", ".join([b"*l%d" % (level - 1)] * 10)
        lines.append(b"l%d: &l%d [%s]" % (level, level, refs))

    violation = only(decode_submission(b"\n".join(lines)))

    assert violation.reason == "PayloadTooComplex"


RECURSIVE_JOB = b"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: &m {name: x, labels: *m}
"""


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (RECURSIVE_JOB, "metadata.labels"),
        (b"a: &a [&b [1, *b]]", "a[0][1]"),
        (b"spec: &s\n  tasks:\n  - template: *s", "spec.tasks[0].template"),
    ],
)
def test_recursive_alias_is_refused_where_it_points_into_its_own_anchor(
    payload: bytes, path: str
) -> None:
    violation = only(decode_submission(payload))

    assert (violation.reason, violation.path) == ("RecursiveAlias", path)
    assert "it is inside" in violation.message


def test_alias_to_a_closed_anchor_is_expanded_when_within_the_limits() -> None:
    job = decode_submission(
        JOB_YAML.replace(
            b"  namespace: team-a\n", b"  namespace: team-a\n  labels: &l {a: b}\n"
        ).replace(b"      template:\n", b"      template:\n        metadata: {labels: *l}\n")
    )

    assert isinstance(job, Job)
    assert job.spec.tasks[0].template.metadata.labels == {"a": "b"}


def test_alias_expanding_past_the_size_limit_is_refused_before_it_is_built() -> None:
    """Ten 200 KiB strings by alias: 2 MB of text from a 200 KiB payload."""
    big = b"x" * (200 * 1024)
    payload = b"a: &a " + big + b"\nb: [" + b", ".join([b"*a"] * 10) + b"]"

    violation = only(decode_submission(payload))

    assert violation.reason == "PayloadTooComplex"
    assert f"more than {1024 * 1024} characters" in violation.message


def test_payload_without_aliases_is_never_refused_for_expansion_when_within_the_size() -> None:
    """Text and collections at the payload limit: only aliases can pass the text bound."""
    annotation = b"  annotations: {a: " + b"x" * 800_000 + b"}\n"
    volumes = b"  volumes: [" + b"{}, " * 50_000 + b"{}]\n"
    payload = JOB_YAML.replace(b"spec:\n", annotation + b"spec:\n" + volumes, 1)

    decoded = decode_submission(payload)

    assert len(payload) < 1024 * 1024
    assert isinstance(decoded, Job), decoded


def test_alias_nesting_past_the_depth_limit_is_refused() -> None:
    """Each level nests the previous anchor 60 levels deeper: 120 levels in two steps."""
    deep = b"[" * 60 + b"1" + b"]" * 60
    payload = b"a: &a " + deep + b"\nb: &b " + b"[" * 60 + b"*a" + b"]" * 60

    violation = only(decode_submission(payload))

    assert violation.reason == "NestingTooDeep"
    assert "via an alias" in violation.message


@pytest.mark.parametrize("written", ["1:30", "1_0", "017", "0b11"])
def test_yaml_11_integers_are_refused_not_converted(written: str) -> None:
    """docs/design.md#names-and-numbers: ``replicas: 1:30`` was the sexagesimal 90; YAML 1.2 and
    JSON have no such int."""
    violation = only(
        decode_submission(JOB_YAML.replace(b"replicas: 2", f"replicas: {written}".encode()))
    )

    assert (violation.reason, violation.path) == ("InvalidType", "spec.tasks[0].replicas")
    assert "Expected `int`, got `str`" in violation.message


@pytest.mark.parametrize(("written", "value"), [("12", 12), ("+3", 3), ("0x10", 16), ("0o10", 8)])
def test_yaml_12_integers_are_read(written: str, value: int) -> None:
    job = decode_submission(JOB_YAML.replace(b"replicas: 2", f"replicas: {written}".encode()))

    assert isinstance(job, Job)
    assert job.spec.tasks[0].replicas == value


def test_python_tags_are_refused_when_yaml_asks_for_objects() -> None:
    violation = only(decode_submission(b"!!python/object/apply:os.system ['true']"))

    assert violation.reason == "MalformedYaml"


def test_job_key_is_read_when_a_refused_payload_names_a_job() -> None:
    decoded = decode(JOB_YAML.replace(b"replicas: 2", b"replicas: two"))

    assert (decoded.submission, decoded.job_key) == (None, "team-a/test-job")


def test_job_key_is_absent_when_no_name_can_be_read() -> None:
    assert decode(b"[1]").job_key is None
