"""Reservation composes with will-bind (docs/design.md#reservation): a lock never refuses a job its
own room."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import msgspec

from tests.unit.core.scheduling.will_bind_builders import (
    NOW,
    RUNNING,
    binds,
    build_held,
    build_master,
    build_mpi_podgroup,
    build_nodes,
    build_small,
    build_snapshot,
    build_workers,
    run,
)
from vcbus.contracts.keys import JobKey
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.scheduler import conf_from_mapping

ELECT = conf_from_mapping({"actions": "elect, enqueue, reserve"})
"""podgroup-enqueue's default tiers (the reservation plugin among them)."""
LOCKED_FOR_SMALL = Reservation(
    target_job=JobKey("ns/s9"), locked_nodes=frozenset({"n2"}), generation=1
)


def test_master_binds_in_its_will_bind_room_when_the_node_is_locked_for_another_job() -> None:
    """The workers run on n1; n2 holds the master's room and is locked for ns/s9."""
    target, target_pod = build_small("s9", cpu="4")
    other, other_pod = build_small("s8", cpu="1")
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(), target, other],
        pods=[*build_workers("n1", RUNNING), build_master(), target_pod, other_pod],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    shot = replace(shot, reservation=LOCKED_FOR_SMALL)
    _, result = run(shot)
    placed = binds(result)
    assert placed.get("ns/mpi-master-0") == "n2"
    assert "ns/s8-w-0" not in placed, "n1 is full and n2 is locked for ns/s9"


def test_another_job_gets_no_room_on_a_locked_node_from_the_masters_will_bind() -> None:
    other, other_pod = build_small("s8", cpu="1")
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(), other],
        pods=[*build_workers("n1", RUNNING), other_pod],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    shot = replace(shot, reservation=LOCKED_FOR_SMALL)
    _, result = run(shot)
    assert binds(result) == {}, "n1 is full; n2 is locked, and its room is the master's"


def test_job_waiting_only_for_another_jobs_will_bind_room_is_not_elected() -> None:
    """s3 (2 cpu) was overtaken by s4 on n2, but n2's only other room is the master's."""
    s3, s3_pod = build_small("s3", cpu="2")
    s4, s4_pod = build_small("s4", cpu="1", node="n2")
    s3 = replace(s3, podgroup=msgspec.structs.replace(s3.podgroup, creation_timestamp=NOW))
    s4 = replace(
        s4,
        podgroup=msgspec.structs.replace(
            s4.podgroup, creation_timestamp=NOW + timedelta(seconds=1)
        ),
    )
    shot = build_snapshot(
        podgroups=[build_mpi_podgroup(), s3, s4],
        pods=[*build_workers("n1", RUNNING), s3_pod, s4_pod],
        node_list=build_nodes("4", "4"),
        will_bind=[build_held(("master", 0, "n2"))],
    )
    ssn, _ = run(shot, ELECT)
    assert ssn.reservation.target_job is None
    without_room = build_snapshot(
        podgroups=[build_mpi_podgroup(), s3, s4],
        pods=[*build_workers("n1", RUNNING), s3_pod, s4_pod, build_master(0, "n2")],
        node_list=build_nodes("4", "4"),
    )
    ssn, _ = run(without_room, ELECT)
    assert ssn.reservation.target_job == JobKey("ns/s3"), "the master's pod itself: it starves"
