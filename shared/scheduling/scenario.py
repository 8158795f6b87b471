"""Snapshot scenarios (DESIGN §9): run scheduling cycles on a given state, report the outcome.

``run_snapshot_scenario`` backs ``vcbus simulate`` in snapshot mode: it builds a
``ClusterView`` from the document, runs ``cycles`` sessions with the document's configuration
(default ``allocate, backfill``), and returns the bindings made, each PodGroup's phase and
conditions, the target job and the locked nodes. Same input, same output.

Deliberate deviations:
- Between cycles, the bindings of a cycle are taken as confirmed by the cluster (the pods are
  Bound on their nodes), and PodGroup phases computed at session close are applied, since no
  other service runs in this mode.
- The cycles' clock starts at ``now`` (default ``2026-01-01T00:00:00Z``) and advances one
  second per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import msgspec

from contracts._base import derive_event_id
from contracts.events.bindings import BindingCreated
from contracts.events.podgroups_conditions import PodGroupConditionsChanged
from contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from contracts.keys import JobKey, NodeName
from shared.scheduling.framework.conf import ConfError, conf_from_mapping
from shared.scheduling.framework.results import SessionResult
from shared.scheduling.framework.session import run_session
from shared.scheduling.snapshot import ClusterView, ScenarioError

DEFAULT_NOW = datetime(2026, 1, 1, tzinfo=UTC)

__all__ = ["ConfError", "ScenarioError", "run_snapshot_scenario"]


def run_snapshot_scenario(doc: Mapping[str, object]) -> dict[str, object]:
    """Run a DESIGN §9 snapshot scenario.

    Args:
        doc: the decoded scenario: ``config``, ``nodes``, ``queues``, ``podgroups``, ``pods``,
            optional ``priorityClasses``, ``reservation`` (``{target, locked}``), ``cycles``
            (default 1) and ``now``.

    Returns:
        ``{"bindings": {"ns/pod": node}, "podgroups": {"ns/name": {"phase", "conditions"}},
        "targetJob": job or None, "lockedNodes": [...]}``, keys sorted.

    Raises:
        ScenarioError: a malformed entry.
        ConfError: an unknown action or plugin, or a malformed configuration.
    """
    raw_config = doc.get("config") or {}
    if not isinstance(raw_config, Mapping):
        raise ScenarioError("config must be a mapping in volcano-scheduler.conf shape")
    conf = conf_from_mapping(raw_config)
    cycles = doc.get("cycles", 1)
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 0:
        raise ScenarioError(f"cycles must be a non-negative integer, got {cycles!r}")
    now = _now(doc.get("now"))
    view = ClusterView.from_scenario(doc)
    bindings: dict[str, str] = {}
    for cycle in range(cycles):
        moment = now + timedelta(seconds=cycle)
        snapshot = view.snapshot()
        result = run_session(snapshot, conf, now=moment)
        for decision in result.decisions:
            bindings[str(decision.key)] = decision.node
            view.apply(
                BindingCreated(
                    event_id=derive_event_id("binding", str(decision.key), cycle),
                    occurred_at=moment,
                    pod=decision.pod,
                    node=NodeName(decision.node),
                    attempt=decision.attempt,
                )
            )
        for update in result.podgroup_updates:
            view.set_phase(update.job, update.phase)
            if update.conditions_changed:
                view.apply(
                    PodGroupConditionsChanged(
                        event_id=derive_event_id("conditions", update.job, cycle),
                        occurred_at=moment,
                        job=update.job,
                        podgroup=update.podgroup,
                        conditions=update.conditions,
                    )
                )
        if result.reservation_update is not None:
            _apply_reservation(view, snapshot.reservation.target_job, result, moment, cycle)
        view.confirm_bindings()
    final = view.snapshot()
    podgroups: dict[str, object] = {}
    for job in sorted(final.podgroups):
        state = final.podgroups[job]
        podgroups[str(job)] = {
            "phase": state.phase.value,
            "conditions": msgspec.to_builtins(state.conditions),
        }
    reservation = final.reservation
    return {
        "bindings": dict(sorted(bindings.items())),
        "lockedNodes": sorted(reservation.locked_nodes),
        "podgroups": podgroups,
        "targetJob": str(reservation.target_job) if reservation.target_job else None,
    }


def _now(raw: object) -> datetime:
    if raw is None:
        return DEFAULT_NOW
    try:
        return msgspec.convert(str(raw), datetime)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"now must be an RFC 3339 time, got {raw!r}") from exc


def _apply_reservation(
    view: ClusterView,
    previous_target: JobKey | None,
    result: SessionResult,
    moment: datetime,
    cycle: int,
) -> None:
    new = result.reservation_update
    if new is None:
        return
    eid = derive_event_id("reservation", "cluster", cycle)
    if new.target_job is None:
        if previous_target is not None:
            view.apply(
                NodesUnlocked(event_id=eid, occurred_at=moment, job=previous_target, nodes=())
            )
        return
    view.apply(TargetJobElected(event_id=eid, occurred_at=moment, job=new.target_job))
    view.apply(
        NodesLocked(
            event_id=eid,
            occurred_at=moment,
            job=new.target_job,
            nodes=tuple(NodeName(n) for n in sorted(new.locked_nodes)),
        )
    )
