"""One job is one trace, from ``vcbus submit`` to Completed, across the five service processes.

The services export to an OTLP receiver the test starts (batched, flushed on SIGTERM);
``vcbus submit`` runs as a process too and exports the root span, ``send jobs.submitted``.
The job is Volcano's task-start-dependency example (nginx1 → nginx2 → nginx3), so the
trace also holds the pod creations that a stage becoming ready triggers.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import VOLCANO_EXAMPLES
from tests.e2e.conftest import CLUSTER_ARGS
from tests.e2e.system import (
    SERVICES,
    System,
    describe,
    read_topic,
    running_system,
    wait_for_jobs,
    with_run_seconds,
)
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.processes import ROOT, service_env
from vcbus.contracts import PodCreated, Topic
from vcbus.contracts.objects import JobPhase
from vcbus.core.views.live import StatusView

pytestmark = pytest.mark.timeout(240)

JOB = "default/traced-nginx"
MESSAGE_ID = "messaging.message.id"
BATCH_COUNT = "messaging.batch.message_count"
DESTINATION = "messaging.destination.name"


@dataclass(frozen=True)
class JobTrace:
    """What one traced run left: the job's trace id, every span received, the outcome."""

    trace_id: str
    spans: list[ReceivedSpan]
    view: StatusView
    exit_codes: dict[str, int]
    later_stage_pod_sends: set[str]
    """The ``send`` span ids the later stages' ``PodCreated`` records carry."""
    prefix: str
    logs: str

    @property
    def trace(self) -> list[ReceivedSpan]:
        """The spans of the job's trace."""
        return [span for span in self.spans if span.trace_id == self.trace_id]

    def by_id(self) -> dict[str, ReceivedSpan]:
        """The job's spans by span id."""
        return {span.span_id: span for span in self.trace}


@pytest.fixture(scope="module")
def job_trace(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JobTrace]:
    """Run the nginx stages job with tracing on, stop the services, keep every span."""
    prefix = f"e2e-{os.getpid()}-trace."
    job_file = tmp_path_factory.mktemp("trace") / "job.yaml"
    job_file.write_text(
        with_run_seconds(
            (VOLCANO_EXAMPLES / "task-start-dependency/job.yaml").read_text(),
            1,
            name=JOB.split("/")[1],
        )
    )
    with OtlpReceiver() as receiver:
        otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
        with running_system(kafka_bootstrap, prefix, cluster_args=CLUSTER_ARGS, env=otel) as system:
            trace_id = _submit_with_cli(system, job_file, otel)
            view, later = asyncio.run(_finish(system))
            logs = system.logs()
            exit_codes = system.stop()
        yield JobTrace(trace_id, receiver.spans, view, exit_codes, later, prefix, logs)


def _submit_with_cli(system: System, path: Path, otel: dict[str, str]) -> str:
    """``vcbus submit FILE`` as a process; the trace id it prints."""
    done = subprocess.run(
        [sys.executable, "-m", "vcbus.services.cli", "submit", str(path)],
        env=service_env(system.bootstrap, system.prefix, **otel),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found = re.search(rf"job {JOB} created trace_id=([0-9a-f]{{32}})", done.stdout)
    assert found, done.stdout + done.stderr
    return found.group(1)


async def _finish(system: System) -> tuple[StatusView, set[str]]:
    """Wait for the job to finish; the send spans of the pods of its later stages."""
    view = await wait_for_jobs(system, [JOB])
    assert str(view.jobs[JOB].phase) == str(JobPhase.COMPLETED), describe(view, system)
    pods = await read_topic(system, Topic.PODS)
    later = {
        (record.header("traceparent") or b"").decode().split("-")[2]
        for record, event in pods
        if isinstance(event, PodCreated) and event.pod.task in ("job-nginx2", "job-nginx3")
    }
    return view, later


def test_services_exit_cleanly_when_stopped_with_sigterm(job_trace: JobTrace) -> None:
    assert job_trace.exit_codes == dict.fromkeys(SERVICES, 0), job_trace.logs


def test_one_trace_holds_spans_of_all_five_services_when_a_dependent_job_completes(
    job_trace: JobTrace,
) -> None:
    services = {span.service_name for span in job_trace.trace}

    assert services >= set(SERVICES), Counter(span.service_name for span in job_trace.trace)
    assert job_trace.view.jobs[JOB].trace_id == job_trace.trace_id


def test_trace_has_one_root_and_no_orphans_when_services_flush_on_stop(
    job_trace: JobTrace,
) -> None:
    by_id = job_trace.by_id()
    roots = [span for span in job_trace.trace if not span.parent_span_id]
    orphans = [
        (span.service_name, span.name)
        for span in job_trace.trace
        if span.parent_span_id and span.parent_span_id not in by_id
    ]

    assert orphans == []
    assert [(root.name, root.kind) for root in roots] == [
        (f"send {job_trace.prefix}{Topic.JOBS_SUBMITTED}", "PRODUCER")
    ]


def test_messaging_spans_follow_conventions_when_records_cross_services(
    job_trace: JobTrace,
) -> None:
    """``send <topic>`` is a PRODUCER; ``process <topic>`` a CONSUMER whose parent sent it.

    A span of one record names it (``messaging.message.id``); a span of several records of
    one batch counts them (``messaging.batch.message_count``) instead.
    """
    by_id = job_trace.by_id()
    sends = [span for span in job_trace.trace if span.name.startswith("send ")]
    processes = [span for span in job_trace.trace if span.name.startswith("process ")]

    assert {span.kind for span in sends} == {"PRODUCER"}
    assert {span.kind for span in processes} == {"CONSUMER"}
    for span in (*sends, *processes):
        assert span.name.split(" ", 1)[1] == span.attributes[DESTINATION]
        count = span.attributes.get(BATCH_COUNT)
        assert (MESSAGE_ID in span.attributes) == (count is None), span.attributes
        assert count is None or int(str(count)) >= 2
    for span in processes:
        parent = by_id[span.parent_span_id]
        assert (parent.kind, parent.name) == ("PRODUCER", f"send {span.attributes[DESTINATION]}")
        if MESSAGE_ID in parent.attributes and MESSAGE_ID in span.attributes:
            assert parent.attributes[MESSAGE_ID] == span.attributes[MESSAGE_ID]
    assert any(BATCH_COUNT in span.attributes for span in sends), "the pods of a stage"
    consumed = {span.attributes[DESTINATION] for span in processes}
    expected = {
        Topic.JOBS_SUBMITTED,
        Topic.JOBS_ADMITTED,
        Topic.PODGROUPS_STATUS,
        Topic.BINDINGS,
        Topic.PODS_STATUS,
    }
    assert consumed >= {f"{job_trace.prefix}{topic}" for topic in expected}


def test_later_stage_pods_are_created_in_the_job_trace_when_their_dependency_is_ready(
    job_trace: JobTrace,
) -> None:
    """nginx2's and nginx3's PodCreated are sent while processing a pod status."""
    by_id = job_trace.by_id()
    sent = {
        span.span_id: span
        for span in job_trace.trace
        if span.name == f"send {job_trace.prefix}{Topic.PODS}"
    }

    assert job_trace.later_stage_pod_sends
    assert job_trace.later_stage_pod_sends <= set(sent)
    for span_id in job_trace.later_stage_pod_sends:
        triggers = _ancestors(sent[span_id], by_id)
        assert f"process {job_trace.prefix}{Topic.PODS_STATUS}" in triggers


def test_cycle_spans_link_to_the_job_when_the_schedulers_serve_it(job_trace: JobTrace) -> None:
    """A cycle is a root span of its own, linked to the job; ``<action> <job>`` continues it."""
    in_trace = {span.span_id for span in job_trace.trace}
    cycles = {
        span.span_id: span
        for span in job_trace.spans
        if span.name in ("allocator.cycle", "enqueue.cycle")
    }
    linked = {
        span.name
        for span in cycles.values()
        if any(
            trace_id == job_trace.trace_id and span_id in in_trace
            for trace_id, span_id in span.links
        )
    }
    per_job = [
        span for span in job_trace.trace if span.name in (f"allocate {JOB}", f"enqueue {JOB}")
    ]

    assert linked == {"allocator.cycle", "enqueue.cycle"}
    assert {span.name for span in per_job} == {f"allocate {JOB}", f"enqueue {JOB}"}
    for span in per_job:
        assert any(span_id in cycles for _, span_id in span.links), span
    assert all(not span.parent_span_id for span in cycles.values())


def _ancestors(span: ReceivedSpan, by_id: dict[str, ReceivedSpan]) -> list[str]:
    names = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        names.append(span.name)
    return names
