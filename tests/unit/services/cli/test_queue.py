"""``vcbus queue delete``'s rule: never ``default``, never a parent, never while jobs name it."""

from __future__ import annotations

from vcbus.contracts.objects import Queue
from vcbus.services.cli.queue import delete_refusal

QUEUES = {
    "default": Queue(name="default"),
    "team": Queue(name="team"),
    "sub": Queue(name="sub", parent="team"),
}


def test_an_empty_queue_without_children_can_be_deleted() -> None:
    assert delete_refusal("sub", QUEUES, {"ns/a": "team"}) is None


def test_default_unknown_and_parent_queues_are_refused_with_the_reason() -> None:
    assert delete_refusal("default", QUEUES, {}) == 'queue "default" cannot be deleted'
    assert delete_refusal("nosuch", QUEUES, {}) == 'queue "nosuch" not found'
    assert (
        delete_refusal("team", QUEUES, {}) == 'queue "team" is the parent of sub: delete them first'
    )


def test_a_queue_holding_jobs_is_refused_naming_a_bounded_few() -> None:
    jobs = {f"ns/j{i}": "sub" for i in range(7)} | {"ns/other": "team"}
    assert delete_refusal("sub", QUEUES, jobs) == (
        'queue "sub" holds 7 job(s) (ns/j0, ns/j1, ns/j2, ns/j3, ns/j4 and 2 more): '
        "delete them first"
    )
