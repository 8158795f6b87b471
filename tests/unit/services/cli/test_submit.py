"""``vcbus submit``: the records it publishes for a file (``records_for``), without a broker."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
import yaml

from tests.unit.services.cli.builders import store_of
from vcbus.contracts import JobAdmitted, JobKey, QueueDeclared, QueuesEvent
from vcbus.contracts.objects.queue import QueueState
from vcbus.contracts.quantity import parse_resources
from vcbus.services.cli import main
from vcbus.services.cli.admit import Verdict, admit
from vcbus.services.cli.submit import answer
from vcbus.services.submission import MANIFEST_TYPE, Submitted, records_for

PREFIX = "t."
NOW = datetime(2026, 1, 1, tzinfo=UTC)
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")

JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: j1
  namespace: team-a
spec:
  tasks:
    - replicas: 2
      template:
        spec:
          containers: [{name: c, image: busybox}]
"""
QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 3
  reclaimable: false
  capability:
    cpu: 2
    memory: 4Gi
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
"""
FILE = f"{JOB}---\n{QUEUE}---\n{DEPLOYMENT}"


def headers(item: Submitted) -> dict[str, bytes]:
    return dict(item.record.headers)


def trace_id_of(item: Submitted) -> str:
    found = TRACEPARENT.match(headers(item)["traceparent"].decode())
    assert found, headers(item)
    return found.group(1)


def test_each_document_becomes_a_record_on_its_topic_when_file_mixes_kinds() -> None:
    job, queue, deployment = records_for(FILE, PREFIX, NOW)

    assert [item.record.topic for item in (job, queue, deployment)] == [
        "t.jobs.submitted",
        "t.queues",
        "t.jobs.submitted",
    ]
    assert [item.record.key for item in (job, queue, deployment)] == [
        b"team-a/j1",
        b"research",
        b"default/web",
    ]
    assert [item.label for item in (job, queue, deployment)] == [
        "team-a/j1",
        "queue/research",
        "default/web",
    ]


def test_manifest_is_published_as_json_with_trace_headers_when_a_job_or_other_kind() -> None:
    """A Deployment goes to jobs.submitted too: admission answers it with ``NotAJob``."""
    job, _, deployment = records_for(FILE, PREFIX, NOW)

    assert json.loads(job.record.value or b"") == yaml.safe_load(JOB)
    assert json.loads(deployment.record.value or b"") == yaml.safe_load(DEPLOYMENT)
    for item in (job, deployment):
        assert headers(item)["event-type"] == MANIFEST_TYPE.encode()
        assert headers(item)["content-type"] == b"application/json"
        assert trace_id_of(item) == item.trace_id
    assert job.trace_id != deployment.trace_id  # each job's trace starts at its submission


def test_queue_is_declared_as_an_event_when_a_volcano_queue_is_in_the_file() -> None:
    _, queue, _ = records_for(FILE, PREFIX, NOW)

    event = msgspec.json.decode(queue.record.value or b"", type=QueuesEvent)
    assert isinstance(event, QueueDeclared)
    assert event.queue.name == "research"
    assert event.queue.weight == 3
    assert event.queue.reclaimable is False
    assert event.queue.capability == parse_resources({"cpu": "2", "memory": "4Gi"})
    assert event.queue.state is QueueState.OPEN
    assert event.occurred_at == NOW
    assert headers(queue)["event-type"] == b"queue.declared.v1"
    assert headers(queue)["event-id"] == event.event_id.encode()
    assert TRACEPARENT.match(headers(queue)["traceparent"].decode())


def test_queue_event_id_is_the_same_when_the_same_queue_is_submitted_again() -> None:
    """Ids derive from the queue's content: a resubmission is a duplicate, a change is not."""
    _, first, _ = records_for(FILE, PREFIX, NOW)
    _, again, _ = records_for(FILE, PREFIX, datetime(2026, 1, 2, tzinfo=UTC))
    (changed,) = records_for(QUEUE.replace("weight: 3", "weight: 4"), PREFIX, NOW)

    assert headers(first)["event-id"] == headers(again)["event-id"]
    assert headers(changed)["event-id"] != headers(first)["event-id"]


def test_text_is_published_as_it_is_without_a_key_when_it_is_not_yaml_or_json() -> None:
    """Admission rejects it with the parser's reason; the user sees that on jobs.rejected."""
    garbage = "kind: Job\nmetadata: {name: [unclosed\n\t: nonsense"

    (item,) = records_for(garbage, PREFIX, NOW)

    assert item.record.topic == "t.jobs.submitted"
    assert item.record.key is None
    assert item.record.value == garbage.encode()
    assert item.label == ""
    assert headers(item)["event-type"] == MANIFEST_TYPE.encode()
    assert headers(item)["content-type"] == b"text/plain; charset=utf-8"  # as written, not JSON
    assert trace_id_of(item) == item.trace_id


def test_each_item_becomes_a_record_when_file_is_a_json_list() -> None:
    documents = [yaml.safe_load(JOB), yaml.safe_load(QUEUE)]

    job, queue = records_for(json.dumps(documents), PREFIX, NOW)

    assert (job.record.topic, job.record.key) == ("t.jobs.submitted", b"team-a/j1")
    assert (queue.record.topic, queue.record.key) == ("t.queues", b"research")


def alias_bomb(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join(lines)


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: &m {name: x, labels: *m}\n",
        alias_bomb(9),
    ],
    ids=["recursive-alias", "alias-bomb"],
)
def test_text_is_published_as_it_is_when_its_yaml_aliases_are_refused(text: str) -> None:
    """Never built (a cycle, or a billion values): admission answers it with the reason."""
    (item,) = records_for(text, PREFIX, NOW)

    assert item.record.value == text.encode()
    assert headers(item)["content-type"] == b"text/plain; charset=utf-8"


def test_document_over_one_mib_is_reported_and_nothing_is_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked before connecting: no broker answers at this address, and none is needed."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9")
    big = tmp_path / "big.yaml"
    big.write_text(JOB.replace("kind: Job", "kind: Job\nnotes: " + "y" * (2 << 20)))

    status = main(["submit", str(big)])

    assert status == 1
    err = capsys.readouterr().err
    assert "records are limited to 1048576 bytes" in err


RESUBMITTED = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: again}
spec:
  tasks:
    - name: w
      replicas: REPLICAS
      template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: CPU}}}]}}
"""


def _verdict(replicas: int, cpu: str = "1") -> Verdict:
    text = RESUBMITTED.replace("REPLICAS", str(replicas)).replace("CPU", cpu)
    return admit({}, json.dumps(yaml.safe_load(text)).encode(), 0)


def _accepted(verdict: Verdict) -> JobAdmitted:
    assert verdict.job is not None
    return JobAdmitted(
        event_id="a",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        job=JobKey(verdict.label),
        manifest=verdict.job,
        spec_digest=verdict.spec_digest,
    )


def test_submit_answers_created_unchanged_updated_or_the_controllers_refusal() -> None:
    two = _verdict(2)
    assert answer(None, two) == ("created", "")
    assert answer(_accepted(two), _verdict(2)) == ("unchanged", "")
    assert answer(_accepted(two), _verdict(4)) == (
        "updated (minAvailable, tasks[w].replicas, tasks[w].minAvailable)",
        "",
    )
    assert answer(_accepted(two), _verdict(2, cpu="2")) == (
        "",
        "UpdateRejected: job updates may not change fields other than `minAvailable`, "
        "`tasks[*].replicas under spec` and `PriorityClassName`",
    )


def test_a_job_may_be_scaled_to_zero_but_not_created_with_no_pods() -> None:
    """Volcano's ``validateJobUpdate`` refuses only replicas < 0; creation keeps vcbus' guard."""
    zero = _verdict(0)
    assert zero.allowed, zero.violations
    assert answer(_accepted(_verdict(2)), zero) == (
        "updated (minAvailable, tasks[w].replicas, tasks[w].minAvailable)",
        "",
    )
    assert answer(None, zero) == (
        "",
        "NoPods: the job has no pods: every task has 0 replicas",
    )


def test_the_store_keeps_the_accepted_spec_when_an_update_would_be_refused() -> None:
    two = _accepted(_verdict(2))
    refused = msgspec.structs.replace(
        _accepted(_verdict(2, cpu="2")), event_id="b", spec_digest="other"
    )
    store = store_of(two, refused)
    assert store.accepted("default/again") == two
    allowed = msgspec.structs.replace(_accepted(_verdict(3)), event_id="c")
    assert store_of(two, refused, allowed).accepted("default/again") == allowed


ANCHORED = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: anchored, namespace: team-a}
spec:
  minAvailable: 4
  tasks:
    - name: t0
      replicas: 1
      template: &pod
        spec:
          containers:
            - name: c
              image: busybox
              command: [sh, -c, "COMMAND"]
    - {name: t1, replicas: 1, template: *pod}
    - {name: t2, replicas: 1, template: *pod}
    - {name: t3, replicas: 1, template: *pod}
""".replace("COMMAND", "echo " + "x" * 400)


def test_a_job_whose_anchors_expand_past_the_file_is_published_named_and_keyed() -> None:
    """Anchors shared by a job's tasks are what YAML is for; the job keeps its name."""
    assert len(json.dumps(yaml.safe_load(ANCHORED))) > len(ANCHORED)

    (item,) = records_for(ANCHORED, PREFIX, NOW)

    assert item.label == "team-a/anchored"
    assert item.record.key == b"team-a/anchored"
    assert headers(item)["content-type"] == b"application/json"
    assert json.loads(item.record.value or b"") == yaml.safe_load(ANCHORED)


def test_anchors_expanding_past_the_bound_are_refused_naming_the_bound() -> None:
    """A short file's aliases may expand to a MiB (admission's payload limit), no further."""
    text = "a: &a " + "y" * 100_000 + "\nb: [" + ", ".join(["*a"] * 20) + "]\n"

    (item,) = records_for(text, PREFIX, NOW)
    verdict = admit({}, item.record.value or b"", 0)

    assert item.record.key is None
    assert [v.message for v in verdict.violations] == [
        "payload expands to more than 1048576 characters (YAML aliases?)"
    ]
