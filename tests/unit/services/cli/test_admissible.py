"""A job the services say cannot be enqueued is marked Inadmissible; a waiting job's place
in its queue."""

from __future__ import annotations

import json
from datetime import timedelta

import msgspec

from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_phase,
    build_podgroup,
    build_status,
    publish,
)
from vcbus.contracts import Topic
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.reasons import NEVER_ADMITTED
from vcbus.services.cli.admissible import Place, place_in_queue
from vcbus.services.cli.describe import describe
from vcbus.services.cli.get import get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query
from vcbus.services.cli.status_store import StatusStore, read_store

KEY = "default/huge"
INFEASIBLE = "no node could ever hold a minimum pod"


def podgroup(key: str, *, queue: str = "default", priority: int = 0, at: int = 0):
    event = build_podgroup(key, queue=queue)
    group = msgspec.structs.replace(
        event.podgroup, priority=priority, creation_timestamp=NOW + timedelta(seconds=at)
    )
    return msgspec.structs.replace(event, event_id=f"{key}-pg", podgroup=group)


def waiting(reason: str, message: str):
    return (
        build_admitted(KEY),
        podgroup(KEY),
        build_status(KEY, "Pending"),
        build_phase(KEY, PodGroupPhase.PENDING, reason=reason, message=message),
    )


async def test_describe_marks_an_infeasible_job_inadmissible_and_says_its_place():
    bus = InMemoryBus()
    await publish(bus, *waiting("Infeasible", INFEASIBLE))
    text = await describe(bus, SETTINGS, KEY, now=NOW)
    assert text is not None
    assert "Admission:        Inadmissible (Infeasible)\nPending Reason:   Infeasible\n" in text
    assert "Queue Position:   1 of 1 waiting in queue default\n" in text


NEVER = "minResources cpu 9 exceed queue default's capability (cpu 8): " + NEVER_ADMITTED


async def test_get_jobs_json_marks_the_job_and_not_one_that_only_waits_its_turn():
    """Inadmissible only for a minimum alone over the capability, not one beside running jobs."""
    bus = InMemoryBus()
    await publish(bus, *waiting("QueueOverCapability", NEVER))
    await publish(
        bus,
        build_status("default/turn", "Pending"),
        build_phase("default/turn", PodGroupPhase.PENDING, reason="ClusterOverused", message="m"),
        build_status("default/beside", "Pending"),
        build_phase(
            "default/beside",
            PodGroupPhase.PENDING,
            reason="QueueOverCapability",
            message="queue default would exceed its capability: minResources cpu 4 do not "
            "fit beside its running and inqueue jobs (capability cpu 8)",
        ),
    )
    out: list[str] = []
    await get(bus, SETTINGS, KINDS["jobs"], Query(), output="json", write=out.append)
    items = {i["name"]: i for i in json.loads("".join(out))["items"]}
    assert (items["huge"]["reason"], items["huge"]["admission"]) == (
        "QueueOverCapability",
        "Inadmissible",
    )
    assert (items["turn"]["reason"], items["turn"]["admission"]) == ("ClusterOverused", "")
    assert (items["beside"]["reason"], items["beside"]["admission"]) == ("QueueOverCapability", "")


async def test_the_place_in_the_queue_counts_waiting_podgroups_by_priority_then_age():
    bus = InMemoryBus()
    await publish(
        bus,
        podgroup("default/old", at=0),
        podgroup("default/new", at=5),
        podgroup("default/urgent", at=9, priority=100),
        podgroup("default/enqueued", at=1),
        build_phase("default/enqueued", PodGroupPhase.INQUEUE),
        podgroup("default/elsewhere", queue="other"),
    )
    store: StatusStore = await read_store(bus, SETTINGS, (Topic.PODGROUPS, Topic.PODGROUPS_STATUS))
    places = [place_in_queue(store, k) for k in ("default/urgent", "default/old", "default/new")]
    assert [(p.position, p.waiting) for p in places if p] == [(1, 3), (2, 3), (3, 3)]
    assert place_in_queue(store, "default/enqueued") is None
    assert place_in_queue(store, "default/elsewhere") == Place("other", 1, 1)
