"""Lifecycle-policy rules, applied to a job's and to each task's ``policies``.

Port of volcano v1.12 ``pkg/webhooks/admission/jobs/validate/util.go``
``validatePolicies`` (same at HEAD). Messages keep Volcano's wording.

Deviations (docs/design.md#every-violation): Volcano stops at the first error of a list; this
reports every one, each at its own path. Volcano appends the valid events and actions to the message
in Go map order; here they are sorted, and only added to the "invalid event/action" texts
they explain. As in Volcano, the action of an exit-code policy is not validated.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.objects.job import LifecyclePolicy

ANY_EVENT = "*"

VALID_EVENTS: frozenset[str] = frozenset(
    {
        ANY_EVENT,
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "JobUpdated",
    }
)
"""Events a user may name (``policyEventMap`` entries allowed externally)."""

VALID_ACTIONS: frozenset[str] = frozenset(
    {
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "RestartPartition",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
    }
)
"""Actions a user may name (``policyActionMap`` entries allowed externally)."""


def _valid_events_text() -> str:
    return f"valid events are [{' '.join(sorted(VALID_EVENTS))}]"


def _valid_actions_text() -> str:
    return f"valid actions are [{' '.join(sorted(VALID_ACTIONS))}]"


def validate_policies(policies: Sequence[LifecyclePolicy], path: str) -> Iterator[Violation]:
    """Yield every violation of one ``policies`` list.

    Args:
        policies: the list, in spec order.
        path: its field path (``spec.policies``, ``spec.tasks[0].policies``).

    Yields:
        Violations in spec order, then the ``*``-with-others violation if any.
    """
    seen_events: set[str] = set()
    seen_exit_codes: set[int] = set()
    for index, policy in enumerate(policies):
        here = f"{path}[{index}]"
        has_event = bool(policy.event) or bool(policy.events)
        if has_event and policy.exit_code is not None:
            yield Violation(
                path=here,
                reason="PolicyEventAndExitCode",
                message="must not specify event and exitCode simultaneously",
            )
            continue
        if not has_event and policy.exit_code is None:
            yield Violation(
                path=here,
                reason="PolicyWithoutEventOrExitCode",
                message="either event and exitCode should be specified",
            )
            continue
        if has_event:
            yield from _event_policy(policy, here, seen_events)
        elif policy.exit_code is not None:
            yield from _exit_code_policy(policy.exit_code, here, seen_exit_codes)
    if ANY_EVENT in seen_events and len(seen_events) > 1:
        yield Violation(
            path=path,
            reason="AnyEventWithOthers",
            message="if there's * here, no other policy should be here",
        )


def _event_list(policy: LifecyclePolicy) -> list[tuple[str, str]]:
    """``events ∪ {event}`` de-duplicated, in Volcano's order, with each one's field path."""
    named = [(event, f"events[{i}]") for i, event in enumerate(policy.events)]
    if policy.event:
        named.append((policy.event, "event"))
    unique: dict[str, str] = {}
    for event, field in named:
        unique.setdefault(event, field)
    return list(unique.items())


def _event_policy(policy: LifecyclePolicy, here: str, seen: set[str]) -> Iterator[Violation]:
    if policy.action not in VALID_ACTIONS:
        yield Violation(
            path=f"{here}.action",
            reason="InvalidPolicyAction",
            message=(
                f'{here}.action: Invalid value: "{policy.action}": invalid policy action; '
                f"{_valid_actions_text()}"
            ),
        )
    for event, field in _event_list(policy):
        if event not in VALID_EVENTS:
            yield Violation(
                path=f"{here}.{field}",
                reason="InvalidPolicyEvent",
                message=(
                    f'{here}.{field}: Invalid value: "{event}": invalid policy event; '
                    f"{_valid_events_text()}"
                ),
            )
            continue
        if event in seen:
            yield Violation(
                path=f"{here}.{field}",
                reason="DuplicatePolicyEvent",
                message=f"duplicate event {event}  across different policy",
            )
            continue
        seen.add(event)


def _exit_code_policy(exit_code: int, here: str, seen: set[int]) -> Iterator[Violation]:
    if exit_code == 0:
        yield Violation(
            path=f"{here}.exitCode", reason="InvalidExitCode", message="0 is not a valid error code"
        )
    elif exit_code in seen:
        yield Violation(
            path=f"{here}.exitCode",
            reason="DuplicateExitCode",
            message=f"duplicate exitCode {exit_code}",
        )
    else:
        seen.add(exit_code)
