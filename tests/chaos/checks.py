"""What must hold at the end of a chaos run, checked from the topics (never a service's memory).

Each check takes the decoded topics (:class:`History`) and returns violations; none means
the promise held:

- every submitted job was admitted and reached the final phase its shape says
  (``jobs.status``), none was rejected;
- a pod runs at most once per (job uid, task, index, retry count), whatever its job version
  says: ``PodCreated`` once per key (duplicates of the same event id, a redelivery, are
  allowed, two different events are not), and never under a retry count the job's
  ``maxRetry`` does not allow;
- at most one accepted binding (``PodPhaseChanged`` reason ``Bound``) per pod uid;
- each pod counted once: a pod uid ends (``Succeeded`` or ``Failed``) by one event only (a
  redelivery of the same event aside: an agent restarted after a kill reports an exit it
  had reported under the same id), and no pod ends lost (``Lost``: its agent found its
  supervisor gone; ``NodeLost``: its node stopped beating past the limits), which no
  planned kill may cause: a killed agent is back well within the node monitor's grace, and
  its pods' supervisors outlive it;
- no node over its allocatable at any moment, replaying accepted bindings, pod ends and
  pod deletions on each node in time order;
- no ``BindingCreated`` on a node while it is locked for another job, judged from the lock
  events themselves: from the ``NodesLocked`` of podgroup-enqueue (on ``reservations``)
  plus a bound on the allocator's reading delay (the time the broker was frozen meanwhile
  added), or from the allocator's ``LocksHonoured`` (on ``capacity.reservations``) when
  that came sooner, until the lock is released (the allocator's ``LocksLifted`` once the
  target is placed, or the ``NodesUnlocked``); bindings decided in between (the lock
  published, not yet read by the allocator, another process) are counted as figures
  (``lock_races``), not violations; a pod bound into the room its own job's will-bind
  held on that node (``CapacityReserved``, before the binding) is no intrusion
  (docs/design.md#reservation: a lock never refuses a job its own will-bind room);
- evictions keep gangs whole: when the allocator asks to evict pods of a job
  (``PodEvictionRequested`` on ``bindings``), the job's pods still live after the
  evictions asked at that moment number none or at least its ``minAvailable`` (and each
  task's ``minAvailable``); and a pod incarnation is evicted by one request only (a
  redelivery of the same event aside), never twice for the same or another preemptor;
- each job's last status counts (in all and per task) equal the pods' last phases on
  ``pods.status``;
- nothing on any dead-letter topic (every record of a chaos run is well formed);
- no step due waits longer than the documented bound (``tests.chaos.liveness``);
- every process exit was planned (:func:`check_exits`): a SIGKILL the run sent to a live
  process, or a SIGTERM at the end answered with status 0.
"""

from __future__ import annotations

import signal
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.chaos.history import History, Violation, past_freezes
from tests.chaos.liveness import STEP_TIMING, StepTiming, check_liveness
from tests.chaos.workload import PlannedJob
from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    CapacityReleased,
    CapacityReserved,
    JobAdmitted,
    JobRejected,
    JobStatusChanged,
    LocksHonoured,
    LocksLifted,
    NodeChanged,
    NodeRegistered,
    NodesLocked,
    NodesUnlocked,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodPhaseChanged,
    TargetJobElected,
)
from vcbus.contracts.events.jobs_status import TaskCounts
from vcbus.contracts.objects.pod import (
    LABEL_JOB_RETRY_COUNT,
    LABEL_JOB_VERSION,
    POD_NODE_LOST,
    Pod,
    PodPhase,
)
from vcbus.contracts.quantity import PODS, Resources
from vcbus.services.agent.core import REASON_LOST
from vcbus.services.cluster.model import demand
from vcbus.services.job_controller.machine import max_retry

BOUND = "Bound"
TERMINAL = frozenset({PodPhase.SUCCEEDED, PodPhase.FAILED})
LOST = frozenset({REASON_LOST, POD_NODE_LOST})
"""The reasons of a pod that ended without its end being seen."""


@dataclass(frozen=True, slots=True)
class LockTiming:
    """How long the allocator may take to read a lock: ``read_bound`` after its
    ``NodesLocked``, plus the time the broker was ``frozen`` meanwhile (nothing can be
    read then); ``frozen`` holds (start, end) moments."""

    read_bound: timedelta = timedelta(seconds=5)
    frozen: Sequence[tuple[datetime, datetime]] = ()

    def read_by(self, start: datetime) -> datetime:
        """The moment by which a lock decided at ``start`` is in the allocator's view."""
        return past_freezes(start, self.read_bound, self.frozen)


def check_all(
    history: History,
    planned: Sequence[PlannedJob],
    timing: LockTiming = LockTiming(),
    steps: StepTiming = STEP_TIMING,
) -> list[Violation]:
    """Every check on the topics, in the order of the module's list."""
    return [
        *check_answers(history, planned),
        *check_final_phases(history, planned),
        *check_pods_run_once(history),
        *check_bound_once(history),
        *check_pods_end_once(history),
        *check_capacity(history),
        *check_locks(history, timing),
        *check_evictions(history),
        *check_counts(history, planned),
        *check_clean_topics(history),
        *check_liveness(history, steps),
    ]


def check_answers(history: History, planned: Sequence[PlannedJob]) -> list[Violation]:
    """Every job admitted, none rejected."""
    admitted = {e.job for e in history.admitted if isinstance(e, JobAdmitted)}
    out = [
        Violation("admitted", f"{job.key} has no JobAdmitted")
        for job in planned
        if job.key not in admitted
    ]
    out.extend(
        Violation("admitted", f"{e.job} was rejected: {[v.message for v in e.violations]}")
        for e in history.rejected
        if isinstance(e, JobRejected)
    )
    return out


def last_status(history: History) -> dict[str, JobStatusChanged]:
    """Each job's last ``JobStatusChanged``."""
    out: dict[str, JobStatusChanged] = {}
    for event in history.status:
        if isinstance(event, JobStatusChanged):
            out[event.job] = event
    return out


def check_final_phases(history: History, planned: Sequence[PlannedJob]) -> list[Violation]:
    """Every job's last phase is the one its shape says."""
    last = last_status(history)
    out = []
    for job in planned:
        status = last.get(job.key)
        if status is None:
            out.append(Violation("final-phase", f"{job.key} has no status"))
        elif status.phase != job.expected:
            out.append(
                Violation(
                    "final-phase",
                    f"{job.key} ({job.shape}) ended {status.phase}, expected {job.expected}",
                )
            )
    return out


def job_uid(pod: Pod) -> str:
    """The uid of the job incarnation a pod belongs to: its PodGroup is ``<job>-<uid>``."""
    prefix = f"{pod.job.partition('/')[2]}-"
    return pod.podgroup.removeprefix(prefix)


def _retry_count(pod: Pod) -> int | None:
    raw = pod.labels.get(LABEL_JOB_RETRY_COUNT, "")
    return int(raw) if raw.isascii() and raw.isdigit() else None


def check_pods_run_once(history: History) -> list[Violation]:
    """One ``PodCreated`` event per (job uid, task, index, retry count), whatever the job
    version says, and none under a retry count the job's ``maxRetry`` rules out (the job
    fails when its retry count reaches ``maxRetry``, so no pod runs at that count)."""
    limits = {e.job: max_retry(e.manifest) for e in history.admitted if isinstance(e, JobAdmitted)}
    ids: dict[tuple[str, str, str, int, int], set[str]] = defaultdict(set)
    out = []
    for event in history.pods:
        if not isinstance(event, PodCreated):
            continue
        pod = event.pod
        retry = _retry_count(pod)
        limit = limits.get(pod.job)
        if retry is None:
            out.append(
                Violation(
                    "pod-runs-once",
                    f"pod {pod.namespace}/{pod.name} uid {pod.uid} has no retry count "
                    f"({LABEL_JOB_RETRY_COUNT}={pod.labels.get(LABEL_JOB_RETRY_COUNT)!r})",
                )
            )
            continue
        if limit is not None and retry >= limit:
            out.append(
                Violation(
                    "pod-runs-once",
                    f"pod {pod.namespace}/{pod.name} uid {pod.uid} created at retry {retry}, "
                    f"but {pod.job} has maxRetry {limit}",
                )
            )
        ids[(pod.job, job_uid(pod), pod.task, pod.index, retry)].add(event.event_id)
    out.extend(
        Violation(
            "pod-runs-once",
            f"{job} (uid {uid}) task {task} index {index} at retry {retry} created by "
            f"{len(found)} different events",
        )
        for (job, uid, task, index, retry), found in sorted(ids.items())
        if len(found) > 1
    )
    return out


def accepted_bindings(history: History) -> dict[str, dict[str, PodPhaseChanged]]:
    """Accepted bindings per pod uid, by event id."""
    out: dict[str, dict[str, PodPhaseChanged]] = defaultdict(dict)
    for event in history.pods_status:
        if isinstance(event, PodPhaseChanged) and event.reason == BOUND:
            out[event.pod_uid or event.pod][event.event_id] = event
    return out


def check_bound_once(history: History) -> list[Violation]:
    """At most one accepted binding per pod uid."""
    out = []
    for uid, found in sorted(accepted_bindings(history).items()):
        if len(found) > 1:
            nodes = sorted(str(e.node) for e in found.values())
            pod = next(iter(found.values())).pod
            out.append(Violation("bound-once", f"pod {pod} uid {uid} bound {len(found)}x: {nodes}"))
    return out


def check_pods_end_once(history: History) -> list[Violation]:
    """Each pod uid ends by one event (the same event redelivered aside), and none ends lost."""
    ends: dict[str, dict[str, PodPhaseChanged]] = defaultdict(dict)
    for event in history.pods_status:
        if isinstance(event, PodPhaseChanged) and event.phase in TERMINAL:
            ends[event.pod_uid or event.pod][event.event_id] = event
    out = []
    for uid, found in sorted(ends.items()):
        events = sorted(found.values(), key=lambda e: e.occurred_at)
        pod = events[0].pod
        if len(events) > 1:
            said = [f"{e.phase}/{e.reason} on {e.node}" for e in events]
            out.append(Violation("ends-once", f"pod {pod} uid {uid} ended {len(events)}x: {said}"))
        out.extend(
            Violation("ends-once", f"pod {pod} uid {uid} on {e.node} ended {e.reason}: {e.message}")
            for e in events
            if e.reason in LOST
        )
    return out


def _allocatable(history: History) -> dict[str, Resources]:
    out: dict[str, Resources] = {}
    for event in history.nodes:
        if isinstance(event, NodeRegistered | NodeChanged):
            out[event.node.name] = dict(event.node.allocatable)
    return out


def check_capacity(history: History) -> list[Violation]:
    """Replay each node: accepted bindings add a pod's demand, its end or deletion frees it.

    Moments are the events' ``occurred_at``; at one moment, frees come before adds.
    """
    requests: dict[str, Resources] = {}
    for event in history.pods:
        if isinstance(event, PodCreated) and event.pod.uid:
            requests[event.pod.uid] = dict(event.pod.requests)
    steps: list[tuple[datetime, int, str, str]] = []  # (at, 0 free / 1 add, node, uid)
    node_of: dict[str, str] = {}
    for event in history.pods_status:
        if not isinstance(event, PodPhaseChanged) or event.node is None:
            continue
        uid = event.pod_uid or event.pod
        if event.reason == BOUND:
            steps.append((event.occurred_at, 1, event.node, uid))
            node_of.setdefault(uid, event.node)
        elif event.phase in TERMINAL:
            steps.append((event.occurred_at, 0, event.node, uid))
    for event in history.pods:
        if isinstance(event, PodDeleted) and event.pod_uid in node_of:
            steps.append((event.occurred_at, 0, node_of[event.pod_uid], event.pod_uid))
    allocatable = _allocatable(history)
    active: dict[str, dict[str, Resources]] = defaultdict(dict)
    out = []
    for at, kind, node, uid in sorted(steps):
        held = active[node]
        if kind == 0:
            held.pop(uid, None)
            continue
        if uid in held:
            continue
        if uid not in requests:
            out.append(Violation("capacity", f"bound uid {uid} on {node} has no PodCreated"))
            continue
        held[uid] = demand(requests[uid])
        total = allocatable.get(node)
        if total is None:
            out.append(Violation("capacity", f"uid {uid} bound to unknown node {node}"))
            continue
        used: Counter[str] = Counter()
        for amounts in held.values():
            used.update(amounts)
        over = {
            name: (amount, total.get(name, 0))
            for name, amount in used.items()
            if not (name == PODS and PODS not in total) and amount > total.get(name, 0)
        }
        if over:
            out.append(Violation("capacity", f"node {node} over allocatable at {at}: {over}"))
    return out


@dataclass(frozen=True, slots=True)
class Lock:
    """A node locked for ``job``: decided at ``start``, in the allocator's view from
    ``honoured`` (None: the lock ended before the allocator read it), until ``end``
    (None: never released)."""

    node: str
    job: str
    generation: int
    start: datetime
    end: datetime | None
    honoured: datetime | None = None


def lock_intervals(history: History) -> list[Lock]:
    """The locks of the run: each node's lock from ``NodesLocked`` to the matching unlock.

    A lock ends at its generation's ``NodesUnlocked``, at the allocator's ``LocksLifted`` of
    its generation (the target is placed), or at the first event of a newer generation
    (readers drop the older reservation then), whichever comes first. It is honoured from
    the first ``LocksHonoured`` of its generation that names the node.
    """
    events = [
        e
        for e in history.reservations
        if isinstance(e, TargetJobElected | NodesLocked | NodesUnlocked)
    ]
    events.sort(key=lambda e: (e.generation, e.occurred_at))
    open_locks: dict[str, tuple[str, int, datetime]] = {}
    found: list[tuple[str, str, int, datetime, datetime | None]] = []

    def close(node: str, at: datetime | None) -> None:
        job, generation, start = open_locks.pop(node)
        found.append((node, job, generation, start, at))

    for event in events:
        for node in [n for n, (_, g, _) in open_locks.items() if g < event.generation]:
            close(node, event.occurred_at)
        if isinstance(event, NodesLocked):
            for node in event.nodes:
                if node not in open_locks:
                    open_locks[node] = (event.job, event.generation, event.occurred_at)
        elif isinstance(event, NodesUnlocked):
            for node in [n for n, (_, g, _) in open_locks.items() if g == event.generation]:
                close(node, event.occurred_at)
    for node in list(open_locks):
        close(node, None)
    honoured: dict[tuple[int, str], datetime] = {}
    lifted: dict[int, datetime] = {}
    for note in history.capacity:
        if isinstance(note, LocksHonoured):
            for node in note.nodes:
                key = (note.generation, str(node))
                if key not in honoured or note.occurred_at < honoured[key]:
                    honoured[key] = note.occurred_at
        elif isinstance(note, LocksLifted) and (
            note.generation not in lifted or note.occurred_at < lifted[note.generation]
        ):
            lifted[note.generation] = note.occurred_at
    out = []
    for node, job, generation, start, closed in found:
        end = closed
        if generation in lifted and (end is None or lifted[generation] < end):
            end = max(lifted[generation], start)
        seen = honoured.get((generation, node))
        if seen is not None and end is not None and seen >= end:
            seen = None
        out.append(Lock(node, job, generation, start, end, seen))
    return out


def _inside(at: datetime, start: datetime, end: datetime | None) -> bool:
    return start <= at and (end is None or at < end)


def lock_hits(
    history: History, timing: LockTiming = LockTiming()
) -> tuple[list[Violation], list[str]]:
    """Bindings of another job's pod on a locked node: violations (once the allocator has
    the lock: at its ``LocksHonoured``, or at the latest ``timing.read_by`` the lock's
    start) and races (decided after the lock, before the allocator could have read it)."""
    locks: dict[str, list[Lock]] = defaultdict(list)
    for lock in lock_intervals(history):
        locks[lock.node].append(lock)
    rooms = will_bind_rooms(history)
    violations: list[Violation] = []
    races: list[str] = []
    for event in history.bindings:
        if not isinstance(event, BindingCreated):
            continue
        for lock in locks.get(event.node, ()):
            if event.pod.job == lock.job or not _inside(event.occurred_at, lock.start, lock.end):
                continue
            if _in_own_room(rooms, event):
                continue
            held = timing.read_by(lock.start)
            if lock.honoured is not None:
                held = min(held, lock.honoured)
            what = (
                f"pod {event.pod.namespace}/{event.pod.name} of {event.pod.job} bound to "
                f"{event.node} at {event.occurred_at} while locked for {lock.job} "
                f"(generation {lock.generation}, locked {lock.start}, honoured "
                f"{lock.honoured}, held from {held}, released {lock.end})"
            )
            if event.occurred_at >= held:
                violations.append(Violation("locks", what))
            else:
                races.append(what)
    return violations, races


Room = tuple[str, int, str]
"""A will-bind reservation's pod: task, index, node."""


def will_bind_rooms(history: History) -> dict[str, list[tuple[datetime, frozenset[Room]]]]:
    """Job → what its will-bind held after each of its reservation events, in order."""
    rooms: dict[str, list[tuple[datetime, frozenset[Room]]]] = defaultdict(list)
    for event in history.capacity:
        if isinstance(event, CapacityReserved | CapacityReleased):
            held = frozenset((p.task, p.index, str(p.node)) for p in event.held)
            rooms[event.job].append((event.occurred_at, held))
    return rooms


def _in_own_room(
    rooms: Mapping[str, list[tuple[datetime, frozenset[Room]]]], event: BindingCreated
) -> bool:
    """Whether the job's will-bind held this pod's room on this node before the binding.

    The release that a stage's binding causes is published in the same cycle, so only
    what was held strictly before the binding counts.
    """
    held: frozenset[Room] = frozenset()
    for when, now_held in rooms.get(event.pod.job, ()):
        if when >= event.occurred_at:
            break
        held = now_held
    return (event.pod.task, event.pod.index, str(event.node)) in held


def check_locks(history: History, timing: LockTiming = LockTiming()) -> list[Violation]:
    """No binding of another job's pod on a node the allocator holds as locked."""
    return lock_hits(history, timing)[0]


def _minimums(history: History) -> dict[str, tuple[int, dict[str, int]]]:
    """Job → (its ``minAvailable``, each task's ``minAvailable``) as admitted."""
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for event in history.admitted:
        if isinstance(event, JobAdmitted):
            spec = event.manifest.spec
            tasks = {t.name: t.min_available for t in spec.tasks if t.min_available}
            out[event.job] = (spec.min_available or 0, tasks)
    return out


def _live_pods(history: History, at: datetime) -> dict[str, dict[str, str]]:
    """Job → uid → task of its pods bound by ``at`` that had not ended nor been deleted."""
    task_of: dict[str, tuple[str, str]] = {}
    for event in history.pods:
        if isinstance(event, PodCreated) and event.pod.uid:
            task_of[event.pod.uid] = (event.pod.job, event.pod.task)
    live: dict[str, datetime] = {}
    gone: set[str] = set()
    for event in history.pods_status:
        if not isinstance(event, PodPhaseChanged) or event.occurred_at > at:
            continue
        uid = event.pod_uid or event.pod
        if event.reason == BOUND:
            live.setdefault(uid, event.occurred_at)
        elif event.phase in TERMINAL:
            gone.add(uid)
    for event in history.pods:
        if isinstance(event, PodDeleted) and event.occurred_at <= at and event.pod_uid:
            gone.add(event.pod_uid)
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for uid in live:
        if uid not in gone and uid in task_of:
            job, task = task_of[uid]
            out[job][uid] = task
    return out


def check_evictions(history: History) -> list[Violation]:
    """Evictions leave each gang whole or gone, and evict a pod incarnation once.

    Judged at each moment the allocator asked for evictions of a job: of its pods live
    then (bound, not ended, not deleted, not asked to go before), those left after this
    moment's evictions number none, or at least the job's minimum when it had that many
    before (pods that ended by themselves are no eviction's doing); the same per task.
    """
    requests = [e for e in history.bindings if isinstance(e, PodEvictionRequested)]
    out: list[Violation] = []
    by_pod: dict[str, set[str]] = defaultdict(set)
    for event in requests:
        by_pod[event.pod_uid or event.pod].add(event.event_id)
    out.extend(
        Violation("evictions", f"pod uid {uid} evicted by {len(ids)} different requests")
        for uid, ids in sorted(by_pod.items())
        if len(ids) > 1
    )
    minimums = _minimums(history)
    asked: dict[tuple[str, datetime], set[str]] = defaultdict(set)
    for event in requests:
        asked[(event.job, event.occurred_at)].add(event.pod_uid)
    evicting: dict[str, set[str]] = defaultdict(set)
    for (job, at), uids in sorted(asked.items(), key=lambda item: (item[0][1], item[0][0])):
        live = _live_pods(history, at).get(job, {})
        before = {uid: task for uid, task in live.items() if uid not in evicting[job]}
        evicting[job] |= uids
        left = {uid: task for uid, task in before.items() if uid not in uids}
        minimum, tasks = minimums.get(job, (0, {}))
        if not left:
            continue
        if len(left) < minimum <= len(before):
            out.append(
                Violation(
                    "evictions",
                    f"{job} left with {len(left)} of its {minimum} minimum pods by the "
                    f"evictions at {at} ({sorted(uids)})",
                )
            )
            continue
        per_task, had = Counter(left.values()), Counter(before.values())
        for task, task_minimum in sorted(tasks.items()):
            if per_task[task] < task_minimum <= had[task]:
                out.append(
                    Violation(
                        "evictions",
                        f"{job} task {task} left with {per_task[task]} of its {task_minimum} "
                        f"minimum pods by the evictions at {at}",
                    )
                )
    return out


def _counts(phases: Mapping[str, PodPhase | None]) -> TaskCounts:
    tally = Counter(phases.values())
    return TaskCounts(
        pending=tally[PodPhase.PENDING] + tally[None],
        running=tally[PodPhase.RUNNING],
        succeeded=tally[PodPhase.SUCCEEDED],
        failed=tally[PodPhase.FAILED],
        unknown=tally[PodPhase.UNKNOWN],
    )


def pod_phases(history: History) -> dict[str, dict[str, dict[str, PodPhase | None]]]:
    """Job → task → uid → last phase on ``pods.status`` (None: none yet), for live pods."""
    created: dict[str, PodCreated] = {}
    for event in history.pods:
        if isinstance(event, PodCreated):
            created[event.pod.uid] = event
        elif isinstance(event, PodDeleted) and event.pod_uid:
            created.pop(event.pod_uid, None)
    phase: dict[str, PodPhase] = {}
    for event in history.pods_status:
        if isinstance(event, PodPhaseChanged) and event.pod_uid:
            phase[event.pod_uid] = event.phase
    out: dict[str, dict[str, dict[str, PodPhase | None]]] = defaultdict(lambda: defaultdict(dict))
    for uid, event in created.items():
        out[event.pod.job][event.pod.task][uid] = phase.get(uid)
    return out


def check_counts(history: History, planned: Sequence[PlannedJob]) -> list[Violation]:
    """Each job's last status counts equal its pods' last phases, in all and per task."""
    last = last_status(history)
    phases = pod_phases(history)
    out = []
    for job in planned:
        status = last.get(job.key)
        if status is None:
            continue
        tasks = phases.get(job.key, {})
        per_task = {task: _counts(uids) for task, uids in tasks.items()}
        whole = _counts({uid: p for uids in tasks.values() for uid, p in uids.items()})
        said = TaskCounts(
            pending=status.pending,
            running=status.running,
            succeeded=status.succeeded,
            failed=status.failed,
            unknown=status.unknown,
        )
        if said != whole:
            out.append(Violation("counts", f"{job.key}: status says {said}, pods say {whole}"))
        for task, counts in per_task.items():
            if status.task_status_count.get(task, TaskCounts()) != counts:
                out.append(
                    Violation(
                        "counts",
                        f"{job.key} task {task}: status says "
                        f"{status.task_status_count.get(task)}, pods say {counts}",
                    )
                )
    return out


def check_clean_topics(history: History) -> list[Violation]:
    """Nothing dead-lettered and nothing undecodable: every record of the run was good."""
    return [
        Violation("dead-letters", f"{count} records on {topic}")
        for topic, count in sorted(history.dead_letters.items())
        if count
    ] + [
        Violation("undecodable", f"{count} records on {topic}")
        for topic, count in sorted(history.undecodable.items())
        if count
    ]


@dataclass(frozen=True, slots=True)
class ProcessEnd:
    """How one process of the run ended."""

    label: str
    status: int | None
    """Its exit status (negative: the signal that ended it); None: it still runs."""
    planned: str
    """What the run did to it: ``kill`` (SIGKILL while it ran), ``stop`` (SIGTERM at the
    end) or ``""`` (nothing)."""
    tail: str = ""
    """The end of its log, when it did not end as planned."""

    @property
    def as_planned(self) -> bool:
        """Whether it runs, or ended as the run made it: killed by SIGKILL, or stopped by
        SIGTERM with status 0."""
        return (
            self.status is None
            or (self.planned == "kill" and self.status == -signal.SIGKILL)
            or (self.planned == "stop" and self.status == 0)
        )


def check_exits(ends: Sequence[ProcessEnd]) -> list[Violation]:
    """Every exit was planned: a process the run did not kill exited on its own (or died
    before the kill reached it), or a stopped one did not exit cleanly on SIGTERM."""
    out = []
    for end in ends:
        if end.as_planned:
            continue
        if end.planned == "stop":
            what = Violation("clean-stop", f"{end.label} exited with {end.status} on SIGTERM")
        else:
            why = "before the planned kill" if end.planned == "kill" else "not killed"
            what = Violation("process-died", f"{end.label} exited with {end.status}, {why}")
        out.append(Violation(what.check, f"{what.detail}:\n{end.tail}") if end.tail else what)
    return out


def figures(history: History, timing: LockTiming = LockTiming()) -> dict[str, object]:
    """What the run did, counted from the topics."""
    refused = Counter(e.reason for e in history.pods_status if isinstance(e, BindingRefused))
    created = {e.pod.uid for e in history.pods if isinstance(e, PodCreated)}
    phases = Counter(s.phase for s in last_status(history).values())
    locks = lock_intervals(history)
    delays = [
        (lock.honoured - lock.start).total_seconds() * 1000
        for lock in locks
        if lock.honoured is not None
    ]
    return {
        "pods_created": len(created),
        "jobs_restarted": len(
            {
                e.pod.job
                for e in history.pods
                if isinstance(e, PodCreated) and e.pod.labels.get(LABEL_JOB_VERSION, "0") != "0"
            }
        ),
        "pod_created_records": sum(isinstance(e, PodCreated) for e in history.pods),
        "bindings_published": len(
            {e.event_id for e in history.bindings if isinstance(e, BindingCreated)}
        ),
        "bindings_accepted": len(accepted_bindings(history)),
        "bindings_refused": dict(sorted(refused.items())),
        "final_phases": dict(sorted((str(k), v) for k, v in phases.items())),
        "targets_elected": len(
            {e.generation for e in history.reservations if isinstance(e, TargetJobElected)}
        ),
        "node_locks": len(locks),
        "lock_honoured_after_ms": _spread(delays),
        "lock_races": len(lock_hits(history, timing)[1]),
        "pods_evicted": len(
            {e.pod_uid for e in history.bindings if isinstance(e, PodEvictionRequested)}
        ),
        "status_records": len(history.status),
    }


def _spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 1),
        "median": round(ordered[len(ordered) // 2], 1),
        "max": round(ordered[-1], 1),
    }
