"""Admission on a real broker: 200 submissions, a second replica for part of the run."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml

from tests.conftest import ROOT, VOLCANO_EXAMPLES, VOLCANO_TYPOS
from tests.support.bus_contract import running, wait_until
from vcbus.contracts import (
    Event,
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobRejected,
    Topic,
    derive_event_id,
    job_key,
)
from vcbus.core.bus.batch import events_in
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.records import OutRecord, Record, TopicPartition
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.service import Runtime
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.admission.app import build_service
from vcbus.services.admission.core import ABORT_ACCEPTED_TAG, ADMITTED_TAG, DELETE_ACCEPTED_TAG

from .conftest import PARTITIONS
from .topic_tail import TopicTail, same_event, tailing

MAX_PAYLOAD = 8192
"""Admission's payload limit in this test (small, so an over-limit payload stays cheap)."""
REJECTED_PAYLOAD_LIMIT = 64 * 1024
"""How much of a refused payload ``JobRejected`` carries (``AdmissionLimits`` default)."""
TOTAL = 200

ADMITTED = "admitted"
REJECTED = "rejected"
DELETE = "delete"
ABORT = "abort"

INVALID_VOLCANO_REASONS = {
    "duplicatedPolicyEvent-webhook-deny.yaml": ("DuplicatePolicyEvent",),
    "duplicatedTaskName-webhook-deny.yaml": ("DuplicateTaskName",),
    "minAvailable-webhook-deny.yaml": ("MinAvailableExceedsReplicas",),
}
BROKEN_REASONS = (
    "GreaterThanReplicas",
    "DuplicateTaskName",
    "MinAvailableMismatch",
    "UnknownDependency",
)
"""Every problem of ``examples/jobs/invalid.yaml``, as its comment lists them."""


@dataclass(frozen=True, slots=True)
class Case:
    """One submission and the answer it must get.

    ``job`` is the job key the answer names (``None`` when no name can be read);
    ``reasons`` the violation codes of a rejection, in order.
    """

    label: str
    payload: bytes | None
    answer: str
    job: str | None = None
    reasons: tuple[str, ...] = ()
    key: bytes | None = None


def _yaml(document: object) -> bytes:
    return yaml.safe_dump(document, sort_keys=False).encode()


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


def _renamed(document: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out.setdefault("metadata", {})["name"] = name
    return out


def _key_of(document: dict[str, Any]) -> str | None:
    metadata = document.get("metadata") or {}
    name = metadata.get("name")
    return job_key(metadata.get("namespace"), name) if isinstance(name, str) else None


def _job_case(
    label: str, document: dict[str, Any], answer: str, *reasons: str, as_json: bool
) -> Case:
    key = _key_of(document)
    return Case(
        label,
        _json(document) if as_json else _yaml(document),
        answer,
        key,
        reasons,
        key=key.encode() if key else None,
    )


def _volcano_cases() -> Iterator[Case]:
    """Every document of Volcano's examples; Jobs renamed so each has a key of its own."""
    number = 0
    for path in sorted(VOLCANO_EXAMPLES.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is None:
                continue
            number += 1
            label = f"volcano:{path.relative_to(VOLCANO_EXAMPLES)}#{number}"
            is_job = (
                document.get("kind") == "Job"
                and document.get("apiVersion") == "batch.volcano.sh/v1alpha1"
            )
            if not is_job:
                yield _job_case(label, document, REJECTED, "NotAJob", as_json=number % 2 == 0)
                continue
            name = f"v{number:02d}-{document['metadata']['name']}"[:40].rstrip("-.")
            job = _renamed(document, name)
            as_json = number % 2 == 0
            if "invalid_jobs" in path.parts:
                reasons = INVALID_VOLCANO_REASONS[path.name]
                yield _job_case(label, job, REJECTED, *reasons, as_json=as_json)
            elif str(path.relative_to(VOLCANO_EXAMPLES)) in VOLCANO_TYPOS:
                typos = VOLCANO_TYPOS[str(path.relative_to(VOLCANO_EXAMPLES))]
                unknown = ("UnknownField",) * len(typos)
                yield _job_case(label, job, REJECTED, *unknown, as_json=as_json)
            elif "hierarchical-jobs" in path.parts:
                yield _job_case(label, job, REJECTED, "QueueNotFound", as_json=as_json)
            else:
                yield _job_case(label, job, ADMITTED, as_json=as_json)


def _example(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "jobs" / name).read_text())
    return document


def _wrong_types(gang: dict[str, Any], number: int) -> Case:
    job = _renamed(gang, f"wrong-{number}")
    variant = number % 5
    if variant == 0:
        job["spec"]["tasks"][0]["replicas"] = "two"
    elif variant == 1:
        job["spec"]["tasks"] = "worker"
    elif variant == 2:
        job["spec"]["minAvailable"] = [1]
    elif variant == 3:
        job["spec"]["maxRetry"] = "3"
    else:
        job["metadata"]["labels"] = {"team": 5}
    return _job_case(f"wrong-types-{number}", job, REJECTED, "InvalidType", as_json=number < 8)


def _garbage(number: int) -> Case:
    """Text and bytes that are not a Job at all, each decoder failure once in a while."""
    tag = str(number).encode()
    variants: list[tuple[bytes | None, str]] = [
        (b"\xff\xfe\x00\x81 not utf-8 " + tag, "InvalidEncoding"),
        (b"{{{ not json " + tag, "MalformedJson"),
        (b"key: [unclosed " + tag, "MalformedYaml"),
        (tag, "NotAMapping"),
        (b"- a list\n- " + tag + b"\n", "NotAMapping"),
        (b"a: 1\n---\nb: " + tag + b"\n", "MultipleDocuments"),
        (_json({"type": "job.teleport_requested.v1", "event_id": tag.decode()}), "UnknownCommand"),
    ]
    payload, reason = variants[number % len(variants)]
    return Case(f"garbage-{number}", payload, REJECTED, None, (reason,))


def _command(number: int) -> Case:
    kind, tag = (DELETE, "job.delete_requested.v1")
    if number % 2:
        kind, tag = (ABORT, "job.abort_requested.v1")
    key = f"default/cmd-{number}"
    command_id = f"command-{number}"
    payload = _json(
        {"type": tag, "event_id": command_id, "occurred_at": "2026-01-01T00:00:00Z", "job": key}
    )
    return Case(f"{kind}-{number}", payload, kind, key, key=key.encode())


def build_cases() -> list[Case]:
    """200 submissions: Volcano's examples, vcbus' examples, and every kind of bad input."""
    examples = [_example(name) for name in ("gang.yaml", "tensorflow-task-minimums.yaml")]
    examples.append(_example("mpi-depends-on.yaml"))
    gang, broken = examples[0], _example("invalid.yaml")
    deployment = yaml.safe_load((VOLCANO_EXAMPLES / "deployment" / "deployment.yaml").read_text())
    cases = list(_volcano_cases())
    cases += [_wrong_types(gang, n) for n in range(15)]
    cases += [_garbage(n) for n in range(21)]
    cases += [
        _job_case(
            f"broken-{n}", _renamed(broken, f"broken-{n}"), REJECTED, *BROKEN_REASONS, as_json=n < 5
        )
        for n in range(10)
    ]
    cases += [
        _job_case(
            f"deployment-{n}",
            _renamed(deployment, f"deploy-{n}"),
            REJECTED,
            "NotAJob",
            as_json=n < 3,
        )
        for n in range(6)
    ]
    cases += [_command(n) for n in range(8)]
    cases.append(Case("tombstone", None, REJECTED, None, ("EmptyPayload",), key=b"tombstone"))
    padded = (ROOT / "examples" / "jobs" / "gang.yaml").read_bytes() + b"#" + b"x" * MAX_PAYLOAD
    cases.append(Case("over-limit", padded, REJECTED, None, ("PayloadTooLarge",), key=b"k"))
    huge = padded + b"#" + b"y" * REJECTED_PAYLOAD_LIMIT
    cases.append(Case("over-limit-cut", huge, REJECTED, None, ("PayloadTooLarge",)))
    number = 0
    while len(cases) < TOTAL:
        template = examples[number % len(examples)]
        name = f"{template['metadata']['name']}-{number}"
        job = _renamed(template, name)
        cases.append(_job_case(f"valid-{name}", job, ADMITTED, as_json=number % 2 == 0))
        number += 1
    assert len(cases) == TOTAL
    # interleave the kinds, so that every part of the run sees each of them
    return [cases[(i * 37) % TOTAL] for i in range(TOTAL)]


Answers = dict[int, list[tuple[Record, Event]]]


def _answers(
    tail: TopicTail, origins: dict[tuple[int, int], int], cases: list[Case], *, complete: bool
) -> Answers:
    """The answers read so far, by the index of the case they answer.

    A rejection names its submission by origin; the other answers by their job key. With
    ``complete``, every answer must belong to a submission (else ``KeyError``).
    """
    by_key = {(case.answer, case.job): index for index, case in enumerate(cases)}
    kinds = {JobAdmitted: ADMITTED, JobDeleteAccepted: DELETE, JobAbortAccepted: ABORT}
    answers: Answers = {}

    def add(index: int | None, record: Record, event: Event) -> None:
        if index is None and complete:
            raise KeyError(f"an answer to no submission: {event}")
        if index is not None:
            answers.setdefault(index, []).append((record, event))

    for record, event in tail.pairs(Topic.JOBS_ADMITTED):
        add(by_key.get((kinds[type(event)], getattr(event, "job", None))), record, event)
    for record, event in tail.pairs(Topic.JOBS_REJECTED):
        assert isinstance(event, JobRejected)
        assert event.origin is not None
        add(origins.get((event.origin.partition, event.origin.offset)), record, event)
    return answers


async def _publish(bus: AioKafkaBus, topic: str, cases: list[Case]) -> None:
    producer = bus.producer(client_id="test-submit")
    try:
        await producer.send([OutRecord(topic, case.key, case.payload) for case in cases])
    finally:
        await producer.stop()


def _is_split(a: Runtime, b: Runtime) -> bool:
    return (
        bool(a.partitions.assigned and b.partitions.assigned)
        and not a.partitions.assigned & b.partitions.assigned
        and (len(a.partitions.assigned | b.partitions.assigned) == PARTITIONS)
    )


async def test_each_submission_gets_exactly_one_answer_when_two_replicas_share_the_work(
    bus: AioKafkaBus, settings: Settings
) -> None:
    """200 submissions of every kind; a second replica joins and leaves mid-run.

    Each gets one answer: the Jobs that pass on ``jobs.admitted`` (the mutated job, its
    id derived from where the submission was read), everything else on ``jobs.rejected``
    with every violation, the original payload and its origin. Redelivery after the
    rebalances may repeat an answer, only ever with the same event id.
    """
    settings = dataclasses.replace(settings, max_payload_bytes=MAX_PAYLOAD)
    prefix = settings.topic_prefix
    submitted = f"{prefix}{Topic.JOBS_SUBMITTED}"
    cases = build_cases()
    first, second, third = cases[:70], cases[70:150], cases[150:]
    await ensure_topics(bus, [build_service(settings, SystemClock())], prefix, PARTITIONS)
    origins: dict[tuple[int, int], int] = {}
    topics = [Topic.JOBS_SUBMITTED, Topic.JOBS_ADMITTED, Topic.JOBS_REJECTED]

    def located() -> dict[tuple[int, int], int]:
        index_of = {case.payload or b"": i for i, case in enumerate(cases)}
        return {(r.partition, r.offset): index_of[r.value or b""] for r in tail.of(topics[0])}

    def answered(count: int) -> bool:
        origins.update(located())
        return len(_answers(tail, origins, cases, complete=False)) >= count

    async with tailing(bus, prefix, topics) as tail:
        await _publish(bus, submitted, first)
        async with running(build_service(settings, SystemClock()), bus, settings) as a:
            assert await tail.wait_for(lambda: answered(len(first)))
            async with running(
                build_service(settings, SystemClock()), bus, settings, instance="1"
            ) as b:
                assert await wait_until(lambda: _is_split(a, b))
                # a replica counts a batch after its commit, which follows the answers
                assert await wait_until(lambda: a.stats.get("records", 0) >= len(first))
                handled_by_a = a.stats.get("records", 0)
                await _publish(bus, submitted, second)
                assert await tail.wait_for(lambda: answered(len(first) + len(second)))
                assert await wait_until(
                    lambda: (
                        b.stats.get("records", 0) > 0 and a.stats.get("records", 0) > handled_by_a
                    )
                )
            everything = {TopicPartition(submitted, p) for p in range(PARTITIONS)}
            assert await wait_until(lambda: a.partitions.assigned == everything)
            await _publish(bus, submitted, third)
            assert await tail.wait_for(lambda: answered(TOTAL))

    assert len(tail.of(Topic.JOBS_SUBMITTED)) == TOTAL
    _check_answers(tail, located(), cases, submitted)


def _check_answers(
    tail: TopicTail, origins: dict[tuple[int, int], int], cases: list[Case], submitted: str
) -> None:
    where = {index: origin for origin, index in origins.items()}
    answers = _answers(tail, origins, cases, complete=True)
    assert sorted(answers) == list(range(TOTAL)), "a submission has no answer"
    for index, case in enumerate(cases):
        records = answers[index]
        (event_id,) = {event.event_id for _, event in records}
        first = records[0][1]
        assert all(same_event(first, event) for _, event in records), case.label
        for record, _ in records:
            if events_in(record) == 1:  # a record of several is named by its first event
                assert record.header("event-id") == event_id.encode()
            assert record.header("traceparent")
        partition, offset = where[index]
        _check_answer(case, first, submitted, partition, offset)


def _check_answer(case: Case, answer: object, submitted: str, partition: int, offset: int) -> None:
    origin_id = f"{submitted}/{partition}"
    if case.answer == REJECTED:
        assert isinstance(answer, JobRejected), case.label
        assert tuple(v.reason for v in answer.violations) == case.reasons, case.label
        assert all(v.message for v in answer.violations)
        assert answer.job == case.job, case.label
        assert answer.event_id == derive_event_id("job.rejected.v1", origin_id, offset)
        payload = case.payload or b""
        echoed = payload[:REJECTED_PAYLOAD_LIMIT].decode("utf-8", "replace")
        assert echoed.startswith(answer.payload)
        assert len(msgspec.json.encode(answer.payload)) - 2 <= REJECTED_PAYLOAD_LIMIT
        assert answer.payload_truncated == (answer.payload != payload.decode("utf-8", "replace"))
    elif case.answer == ADMITTED:
        assert isinstance(answer, JobAdmitted), case.label
        assert answer.event_id == derive_event_id(ADMITTED_TAG, origin_id, offset)
        assert answer.manifest.spec.min_available is not None
        assert answer.manifest.spec.queue == "default"
        assert all(task.name for task in answer.manifest.spec.tasks)
    elif case.answer == DELETE:
        assert isinstance(answer, JobDeleteAccepted)
        assert answer.event_id == derive_event_id(
            DELETE_ACCEPTED_TAG, answer.job, f"{origin_id}/{offset}"
        )
    else:
        assert isinstance(answer, JobAbortAccepted)
        assert answer.event_id == derive_event_id(
            ABORT_ACCEPTED_TAG, answer.job, f"{origin_id}/{offset}"
        )


def test_mix_holds_every_kind_of_submission_when_built() -> None:
    """Guards the big test's input: 200 distinct payloads, each kind of answer well represented."""
    cases = build_cases()
    payloads = [case.payload for case in cases]
    assert len(set(payloads)) == TOTAL
    counts = {kind: sum(c.answer == kind for c in cases) for kind in (ADMITTED, REJECTED)}
    assert counts[ADMITTED] >= 80
    assert counts[REJECTED] >= 80
    reasons = {reason for case in cases for reason in case.reasons}
    assert {
        "InvalidEncoding",
        "MalformedJson",
        "MalformedYaml",
        "NotAJob",
        "InvalidType",
        "PayloadTooLarge",
        "QueueNotFound",
        *BROKEN_REASONS,
    } <= reasons
    assert any(p is not None and p.lstrip().startswith(b"{") for p in payloads)
    assert any(p is not None and p.startswith(b"apiVersion") for p in payloads)
    admitted_keys = [case.job for case in cases if case.answer == ADMITTED]
    assert len(set(admitted_keys)) == len(admitted_keys)
    assert max(len(p or b"") for p in payloads if p is not None) > REJECTED_PAYLOAD_LIMIT
