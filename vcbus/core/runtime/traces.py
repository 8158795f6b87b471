"""JobTraces: the latest trace context of each job, so a cycle continues each job's trace.

A scheduling cycle is a root span linked to the jobs it serves; what it decides for a job
is published inside an ``<action> <job>`` span whose parent is that job's last context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.trace import SpanContext

from vcbus.contracts import BindingCreated, Event, KeyKind, PodEvictionRequested
from vcbus.contracts.topics import KEY_BY_TYPE, TOPIC_BY_TYPE
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.records import Headers, Record
from vcbus.core.runtime.service import Runtime
from vcbus.core.tracing.spans import context_of, cycle_span, job_span, span_context_of


def _pod_job(event: BindingCreated) -> str:
    return event.pod.job


def _preemptor(event: PodEvictionRequested) -> str:
    return event.preemptor


def _keyed_job(event: Event) -> str | None:
    return KEY_BY_TYPE[type(event)](event) or None


def _no_job(_: Event) -> None:
    return None


def _job_reader(kind: type[Event], key: KeyKind) -> Callable[[Any], str | None]:
    if kind is BindingCreated:
        return _pod_job
    if kind is PodEvictionRequested:
        return _preemptor  # the eviction belongs to the preemptor's trace
    return _keyed_job if key is KeyKind.JOB else _no_job


_JOB_BY_TYPE: dict[type[Event], Callable[[Any], str | None]] = {
    kind: _job_reader(kind, spec.key) for kind, spec in TOPIC_BY_TYPE.items()
}
"""How each event type names its job (folded per event by a scheduling service's view)."""


def job_of(event: Event) -> str | None:
    """The job an event is about: its record key on job-keyed topics; a binding's pod's job.

    An eviction is about its preemptor: it is published in the preemptor's trace.
    """
    return _JOB_BY_TYPE[type(event)](event)


class JobTraces:
    """Remembers the headers of the last traced record of each job."""

    def __init__(self) -> None:
        self._headers: dict[str, Headers] = {}

    def observe(self, event: Event, record: Record) -> None:
        """Note the trace context a job's record carried."""
        job = job_of(event)
        if job is not None and record.header("traceparent") is not None:
            self._headers[job] = record.headers

    def forget(self, job: str) -> None:
        """Drop a job that is gone."""
        self._headers.pop(job, None)

    def links(self, jobs: Iterable[str]) -> list[SpanContext]:
        """Span contexts of the given jobs, for the cycle span's links."""
        out = []
        for job in sorted(set(jobs)):
            headers = self._headers.get(job)
            context = span_context_of(headers) if headers is not None else None
            if context is not None:
                out.append(context)
        return out

    async def publish_cycle(
        self, runtime: Runtime, cycle: str, action: str, events: Sequence[Event]
    ) -> None:
        """Publish a cycle's events: one root span linked to the jobs, a child span per job.

        Each job's records are made (with their ``send`` spans) inside its job span; then all
        of them are sent at once, in that order, and the acks are awaited together, so a
        cycle that places a thousand jobs waits for one round trip, not a thousand.
        """
        by_job: dict[str, list[Event]] = {}
        others: list[Event] = []
        for event in events:
            job = job_of(event)
            if job is None:
                others.append(event)
            else:
                by_job.setdefault(job, []).append(event)
        outbox = Outbox(runtime.settings.topic_prefix)
        with cycle_span(cycle, self.links(by_job)):
            for job in sorted(by_job):
                headers = self._headers.get(job, ())
                with job_span(f"{action} {job}", context_of(headers), job=job):
                    outbox.add_events(by_job[job])
            if others:
                outbox.add_events(others)
            await runtime.send(outbox)
