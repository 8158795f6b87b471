"""Reservation plugin: arguments, and the moments its time-based rules fall due."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.builders import build_node, build_podgroup
from tests.support.scheduling import NOW
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.framework.conf import ConfError
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.plugins.reservation import ReservationPlugin
from vcbus.core.scheduling.plugins.reservation_arguments import LockMode, ReservationArgs
from vcbus.core.scheduling.scheduler import parse_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot


def test_arguments_take_their_defaults_when_none_are_given() -> None:
    args = ReservationArgs.parse({})
    assert args.lock_mode is LockMode.SINGLE
    assert args.lock_interval == timedelta(seconds=1)
    assert args.lock_timeout is None
    assert args.limits.lock_max == timedelta(minutes=10)
    assert args.limits.lock_backoff == timedelta(minutes=5)
    assert args.min_waiting is None
    assert args.min_resources is None


def test_arguments_are_read_when_all_are_given() -> None:
    args = ReservationArgs.parse(
        {
            "lock-mode": "multi",
            "lock-nodes": "25%",
            "lock-interval": "2s",
            "lock-timeout": "1h30m",
            "lock-max": "2h",
            "lock-backoff": "15m",
            "target-min-waiting": 90,
            "target-min-resources.cpu": "8",
            "target-min-resources.memory": "16Gi",
        }
    )
    assert args.lock_mode is LockMode.MULTI
    assert args.step_size(10) == 3
    assert args.lock_interval == timedelta(seconds=2)
    assert args.lock_timeout == timedelta(hours=1, minutes=30)
    assert args.limits.lock_max == timedelta(hours=2)
    assert args.limits.lock_backoff == timedelta(minutes=15)
    assert args.min_waiting == timedelta(seconds=90)
    assert args.min_resources is not None
    assert args.min_resources.amount("cpu") == 8000
    assert args.min_resources.amount("memory") == 16 * 2**30


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"lock-mode": "some"}, "lock-mode 'some' is not one of single, multi, cluster"),
        ({"lock-nodes": 0}, "lock-nodes must be at least 1"),
        ({"lock-nodes": "150%"}, "at most 100%"),
        ({"lock-nodes": "many"}, "neither a count nor a percentage"),
        ({"lock-timeout": "soon"}, "is not a duration"),
        ({"lock-timeout": "10m"}, "must be shorter than lock-max"),
        ({"lock-max": "later"}, "is not a duration"),
        ({"target-min-waiting": -5}, "negative duration"),
        ({"target-min-resources.cpu": "lots"}, "target-min-resources"),
    ],
)
def test_configuration_fails_at_parse_time_when_an_argument_is_malformed(
    arguments: dict[str, object], message: str
) -> None:
    lines = "\n".join(f"      {k}: {v!r}" for k, v in arguments.items())
    text = (
        'actions: "elect, enqueue, reserve"\ntiers:\n- plugins:\n  - name: reservation\n'
        f"    arguments:\n{lines}\n"
    )
    with pytest.raises(ConfError, match=message):
        parse_conf(text)


def _snapshot(reservation: Reservation, *, first_seen_ago: int = 0) -> ClusterSnapshot:
    return ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": "4"}), build_node("n2", {"cpu": "4"})],
        podgroups=[
            build_podgroup(
                "waiting",
                "ns",
                "default",
                1,
                None,
                PodGroupPhase.PENDING,
                first_seen=NOW - timedelta(seconds=first_seen_ago),
            )
        ],
        reservation=reservation,
    )


TARGET = Reservation(
    target_job=JobKey("ns/waiting"),
    locked_nodes=frozenset({"n1"}),
    elected_at=NOW,
    generation=1,
    locked_at=NOW,
)


def test_next_lock_step_is_due_one_interval_after_the_last_lock() -> None:
    plugin = ReservationPlugin({"lock-interval": "5s"})
    assert plugin.next_due(_snapshot(TARGET), NOW) == NOW + timedelta(seconds=5)


def test_lock_timeout_is_due_when_it_comes_before_the_next_step() -> None:
    plugin = ReservationPlugin({"lock-interval": "1m", "lock-timeout": "20s"})
    assert plugin.next_due(_snapshot(TARGET), NOW) == NOW + timedelta(seconds=20)


def test_only_lock_max_is_due_when_every_node_is_locked() -> None:
    full = Reservation(
        target_job=JobKey("ns/waiting"),
        locked_nodes=frozenset({"n1", "n2"}),
        elected_at=NOW,
        generation=1,
        locked_at=NOW,
    )
    plugin = ReservationPlugin({"lock-timeout": "20s", "lock-max": "1m"})
    assert plugin.next_due(_snapshot(full), NOW) == NOW + timedelta(minutes=1)


def test_end_of_a_backoff_is_due_when_no_target_is_elected() -> None:
    backoff = Reservation(
        generation=1, backoff=((JobKey("ns/waiting"), NOW + timedelta(minutes=3)),)
    )
    assert ReservationPlugin({}).next_due(_snapshot(backoff), NOW) == NOW + timedelta(minutes=3)


def test_waiting_threshold_is_due_when_a_job_will_cross_it() -> None:
    plugin = ReservationPlugin({"target-min-waiting": "1m"})
    snapshot = _snapshot(Reservation(), first_seen_ago=20)
    assert plugin.next_due(snapshot, NOW) == NOW + timedelta(seconds=40)


def test_passed_moments_are_not_due_again_when_now_is_given() -> None:
    plugin = ReservationPlugin({"target-min-waiting": "1m"})
    snapshot = _snapshot(Reservation(), first_seen_ago=90)
    assert plugin.next_due(snapshot, NOW) is None


def test_nothing_is_due_when_no_threshold_and_no_target() -> None:
    assert ReservationPlugin({}).next_due(_snapshot(Reservation()), NOW) is None
