"""Properties of ``decide`` over random input sequences (idempotency, distinct ids)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from vcbus.contracts._base import Event
from vcbus.contracts.events.jobs_admitted import JobAbortAccepted, JobDeleteAccepted
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Tick
from vcbus.services.job_controller.core import ControllerConf, ControllerInput, decide
from vcbus.services.job_controller.state import JobRecord

from .builders import T0, admitted, build_job, build_task, policy, with_spec

JOB = build_job(
    build_task("master", 1, policies=[policy("RestartTask", "PodEvicted")]),
    build_task("worker", 2, min_available=1, policies=[policy("AbortJob", exit_code=7)]),
    build_task("late", 1, depends_on=["master"]),
    min_available=2,
    max_retry=2,
    policies=[
        policy("RestartJob", "PodFailed", timeout="20s"),
        policy("CompleteJob", "TaskCompleted"),
        policy("RestartJob", "PodPending", timeout="90s"),
    ],
)
GROWN = with_spec(
    JOB, tasks=(JOB.spec.tasks[0], build_task("worker", 3, min_available=1), JOB.spec.tasks[2])
)
MOVED = with_spec(JOB, queue="elsewhere")
PODS = [("master", 0), ("worker", 0), ("worker", 1), ("worker", 2), ("late", 0)]
CONF = ControllerConf(priority_classes={"high": 10})
KEY = admitted(JOB).job


@dataclass(frozen=True)
class Step:
    """One abstract input, made concrete against the record when applied."""

    kind: str
    pod: tuple[str, int] = ("master", 0)
    phase: str = ""
    exit_code: int | None = None
    seconds: int = 0
    variant: int = 0


_BY_KIND = {
    "pod": st.builds(
        Step,
        kind=st.just("pod"),
        pod=st.sampled_from(PODS),
        # Running and Succeeded dominate so that runs reach Running, Completed and restarts.
        phase=st.sampled_from(
            ["Running"] * 4 + ["Succeeded"] * 3 + ["Failed", "Pending", "Unknown"]
        ),
        exit_code=st.sampled_from([None, 1, 7]),
        variant=st.sampled_from([0] * 4 + [1, 2]),
    ),
    "pg": st.builds(
        Step, kind=st.just("pg"), phase=st.sampled_from([p.value for p in PodGroupPhase])
    ),
    "refuse": st.builds(Step, kind=st.just("refuse"), pod=st.sampled_from(PODS)),
    "tick": st.builds(Step, kind=st.just("tick"), seconds=st.integers(1, 120)),
    "admit": st.builds(Step, kind=st.just("admit"), variant=st.integers(0, 2)),
    "abort": st.just(Step(kind="abort")),
    "delete": st.just(Step(kind="delete")),
}
_KINDS = ["pod"] * 24 + ["pg", "pg", "refuse", "tick", "tick", "tick", "admit", "abort", "delete"]
steps = st.sampled_from(_KINDS).flatmap(_BY_KIND.__getitem__)
"""Abstract inputs, mostly pod progress (a run starts with the PodGroup Inqueue)."""
runs = st.lists(steps, min_size=15, max_size=60)


class Scenario:
    """Builds concrete inputs for the job from abstract steps, with fresh ids."""

    def __init__(self) -> None:
        self.count = 0
        self.now = T0

    def event_id(self) -> str:
        self.count += 1
        return f"prop-{self.count}"

    def concrete(self, step: Step, record: JobRecord | None) -> ControllerInput:
        key = admitted(JOB).job
        match step.kind:
            case "pg":
                name = record.podgroup.name if record and record.podgroup else "none"
                return PodGroupPhaseChanged(
                    event_id=self.event_id(),
                    occurred_at=self.now,
                    job=key,
                    podgroup=name,
                    phase=PodGroupPhase(step.phase),
                )
            case "pod":
                task, index = step.pod
                name = f"job-{task}-{index}"
                state = record.pod(name) if record else None
                return PodPhaseChanged(
                    event_id=self.event_id(),
                    occurred_at=self.now,
                    pod=PodKey(f"default/{name}"),
                    job=key,
                    task=task,
                    node=NodeName("n1"),
                    phase=PodPhase(step.phase),
                    exit_code=step.exit_code,
                    reason="Evicted" if step.variant == 2 else "",
                    pod_uid=state.uid if state else "",
                    restart_count=step.variant,
                )
            case "refuse":
                task, index = step.pod
                name = f"job-{task}-{index}"
                state = record.pod(name) if record else None
                return BindingRefused(
                    event_id=self.event_id(),
                    occurred_at=self.now,
                    pod=PodKey(f"default/{name}"),
                    job=key,
                    task=task,
                    node=NodeName("n1"),
                    reason="full",
                    pod_uid=state.uid if state else "",
                )
            case "tick":
                self.now += timedelta(seconds=step.seconds)
                return Tick(now=self.now)
            case "admit":
                job, digest = [(JOB, "d0"), (GROWN, "d1"), (MOVED, "d2")][step.variant]
                return msgspec.structs.replace(
                    admitted(job, digest), event_id=self.event_id(), occurred_at=T0
                )
            case "abort":
                return JobAbortAccepted(event_id=self.event_id(), occurred_at=self.now, job=key)
            case _:
                return JobDeleteAccepted(event_id=self.event_id(), occurred_at=self.now, job=key)

    def ctx(self) -> Ctx:
        return Ctx(now=self.now, trace_id="t")


def _fresh_id(event: ControllerInput, scenario: Scenario) -> ControllerInput:
    if isinstance(event, Tick):
        return event
    return msgspec.structs.replace(event, event_id=scenario.event_id())


def _run(inputs: list[Step]) -> Iterator[tuple[Scenario, JobRecord | None, ControllerInput]]:
    """Yield (scenario, record before, input) for each input, starting from an admitted job."""
    scenario = Scenario()
    first = msgspec.structs.replace(admitted(JOB, "d0"), event_id=scenario.event_id())
    record = decide(None, first, scenario.ctx(), CONF).state
    for step in [Step(kind="pg", phase="Inqueue"), *inputs]:
        event = scenario.concrete(step, record)
        yield scenario, record, event
        record = decide(record, event, scenario.ctx(), CONF).state
        if record is None:
            record = decide(
                None,
                msgspec.structs.replace(admitted(JOB, "d0"), event_id=scenario.event_id()),
                scenario.ctx(),
                CONF,
            ).state


def _entry_state(store: ChangelogStore[Entry[JobRecord]]) -> JobRecord | None:
    entry = store.get(0, KEY)
    return entry.state if entry is not None else None


@settings(max_examples=150, deadline=None)
@given(runs)
def test_second_application_is_a_no_op_when_the_shell_gets_the_same_event_twice(
    inputs: list[Step],
) -> None:
    """Idempotency by id is the shell's: the reactor skips an input it remembers."""
    for scenario, record, event in _run(inputs):
        store = ChangelogStore[Entry[JobRecord]]("jobs", Entry[JobRecord])
        store.bind("t.jobs.changelog")
        if record is not None:
            store.put(0, KEY, Entry[JobRecord](state=record))
        reactor = Reactor[JobRecord, ControllerInput](
            functools.partial(decide, conf=CONF), store, VirtualClock(scenario.now)
        )
        event_id = None if isinstance(event, Tick) else event.event_id
        reactor.apply(0, KEY, event, event_id)
        once = _entry_state(store)
        assert reactor.apply(0, KEY, event, event_id) == ()
        assert _entry_state(store) == once


@settings(max_examples=150, deadline=None)
@given(runs)
def test_repeated_content_emits_nothing_when_resent_with_a_new_id(inputs: list[Step]) -> None:
    """Idempotency by state: the same fact under another id changes nothing observable."""
    for scenario, record, event in _run(inputs):
        once = decide(record, event, scenario.ctx(), CONF)
        if once.state is None:
            continue
        again = decide(once.state, _fresh_id(event, scenario), scenario.ctx(), CONF)
        assert again.emit == ()
        assert again.state == once.state


@settings(max_examples=150, deadline=None)
@given(runs)
def test_ids_are_distinct_and_no_pod_is_created_twice_when_inputs_are_random(
    inputs: list[Step],
) -> None:
    emitted: list[Event] = []
    for scenario, record, event in _run(inputs):
        emitted.extend(decide(record, event, scenario.ctx(), CONF).emit)
    ids = [e.event_id for e in emitted]
    assert len(ids) == len(set(ids))
    alive: set[str] = set()
    for out in emitted:
        if isinstance(out, PodCreated):
            assert out.pod.name not in alive, f"{out.pod.name} created twice"
            alive.add(out.pod.name)
        elif isinstance(out, PodDeleted):
            alive.discard(out.pod.split("/", 1)[1])
