"""A rejected record that names no job is shown once, under a heading of its own."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

import pytest

from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_rejected,
    build_status,
    publish,
)
from vcbus.contracts import JobRejected, RejectionsCleared, SubmissionOrigin, Violation
from vcbus.core.bus.memory import InMemoryBus
from vcbus.services.cli.clear_rejected import origin_arg, origin_text
from vcbus.services.cli.get import UNNAMED_HEADING, get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query

LATER = NOW + timedelta(seconds=90)


def junk(offset: int) -> JobRejected:
    return JobRejected(
        event_id=f"junk-{offset}",
        occurred_at=NOW + timedelta(seconds=offset),
        job=None,
        violations=(Violation(path="", reason="MalformedJson", message="not JSON"),),
        payload="{oops",
        origin=SubmissionOrigin(topic="t.jobs.submitted", partition=0, offset=offset),
    )


async def listing(bus: InMemoryBus, query: Query, output: str = "table") -> str:
    out: list[str] = []
    await get(
        bus, SETTINGS, KINDS["jobs"], query, output=output, write=out.append, clock=lambda: LATER
    )
    return "".join(out)


@pytest.fixture
async def bus() -> InMemoryBus:
    bus = InMemoryBus()
    await publish(
        bus, build_status("default/a", "Running"), build_rejected("default/bad"), junk(3), junk(7)
    )
    return bus


async def test_junk_is_listed_once_apart_from_the_jobs_and_never_in_another_namespace(
    bus: InMemoryBus,
) -> None:
    text = await listing(bus, Query((), "default"))
    jobs, _, section = text.partition(f"\n{UNNAMED_HEADING}\n")
    assert [line.split()[1] for line in jobs.splitlines()[1:]] == ["a", "bad"]
    assert "(unnamed)" not in jobs
    assert [line.split()[:3] for line in section.splitlines()] == [
        ["ORIGIN", "AGE", "REASON"],
        ["t.jobs.submitted/0:3", "87s", "MalformedJson"],
        ["t.jobs.submitted/0:7", "83s", "MalformedJson"],
    ]
    assert text.count("t.jobs.submitted/0:3") == 1
    assert UNNAMED_HEADING in await listing(bus, Query((), None))  # -A
    assert await listing(bus, Query((), "nosuchns")) == ""
    assert "unnamed" not in await listing(bus, Query((), "team"))
    assert UNNAMED_HEADING not in await listing(bus, Query(("a",), "default"))


async def test_json_lists_junk_beside_the_items_not_among_them(bus: InMemoryBus) -> None:
    document = json.loads(await listing(bus, Query((), "default"), "json"))
    assert [item["name"] for item in document["items"]] == ["a", "bad"]
    assert [r["origin"] for r in document["rejectedRecords"]] == [
        "t.jobs.submitted/0:3",
        "t.jobs.submitted/0:7",
    ]
    assert "rejectedRecords" not in json.loads(await listing(bus, Query((), "team"), "json"))


def cleared(at: int, *offsets: int) -> RejectionsCleared:
    return RejectionsCleared(
        event_id=f"clear-{at}",
        occurred_at=NOW + timedelta(seconds=at),
        before=NOW + timedelta(seconds=at),
        origins=tuple(
            SubmissionOrigin(topic="t.jobs.submitted", partition=0, offset=o) for o in offsets
        ),
    )


async def test_a_clear_by_origin_then_of_all_takes_junk_out_and_leaves_the_rejected_job(
    bus: InMemoryBus,
) -> None:
    await publish(bus, cleared(8, 3))
    document = json.loads(await listing(bus, Query((), "default"), "json"))
    assert [r["origin"] for r in document["rejectedRecords"]] == ["t.jobs.submitted/0:7"]
    await publish(bus, cleared(8), junk(9))
    text = await listing(bus, Query((), "default"))
    _, _, section = text.partition(f"\n{UNNAMED_HEADING}\n")
    assert [line.split()[0] for line in section.splitlines()[1:]] == ["t.jobs.submitted/0:9"]
    assert "bad" in text  # a rejected job is deleted as a job, not cleared


def test_an_origin_is_read_as_get_jobs_shows_it_and_anything_else_refused() -> None:
    assert origin_arg("vcbus.jobs.submitted/2:40") == SubmissionOrigin(
        topic="vcbus.jobs.submitted", partition=2, offset=40
    )
    assert origin_text(origin_arg("t/0:1")) == "t/0:1"
    for text in ("nope", "t/0", "t/x:1", "/0:1"):
        with pytest.raises(argparse.ArgumentTypeError, match="TOPIC/PARTITION:OFFSET"):
            origin_arg(text)
