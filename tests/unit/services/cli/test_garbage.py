"""Read commands against garbage on the status topics, and user text with terminal escapes.

A record no contract decodes is skipped (counted, said at ``-v``), so it hides nothing it
shares a key with; whatever users wrote is printed with its control characters escaped.
"""

from __future__ import annotations

import io
import json

import msgspec
import pytest

from contracts import JobRejected, Topic
from contracts.objects import PodGroupPhase
from services.cli import terminal
from services.cli.describe import describe
from services.cli.get import KINDS, Query, get
from services.cli.status import StatusStore
from services.cli.submit import Progress, outcome
from shared.bus.memory import InMemoryBus
from shared.bus.outbox import event_record
from shared.bus.records import OutRecord, Record
from tests.unit.services.cli.builders import (
    PREFIX,
    SETTINGS,
    build_node,
    build_phase,
    build_rejected,
    build_status,
    publish,
)

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil"
"""Sets the title, clears the screen, a C1 CSI, a right-to-left override."""

GARBAGE = (
    b"not json",
    b'{"type": "job.status_changed.v1", "job_key": 7}',
    b'{"type": "from.the.future.v9"}',
    b"[" * 100_000,
    None,
)
"""Not JSON, a known type that does not decode, an unknown type, deep nesting, no value."""


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


async def send_garbage(bus: InMemoryBus, topic: Topic, key: str) -> None:
    records = [OutRecord(f"{PREFIX}{topic}", key.encode(), value) for value in GARBAGE]
    await bus.producer(client_id="garbage").send(records)


async def listing(bus: InMemoryBus, kind: str, *names: str, verbose: int = 0) -> str:
    out: list[str] = []
    await get(
        bus, SETTINGS, KINDS[kind], Query(names), output="table", write=out.append, verbose=verbose
    )
    return "".join(out)


async def test_garbage_keyed_like_a_job_does_not_hide_it_from_get(bus, capsys):
    await publish(bus, build_status("default/twice", "Running", running=2))
    await send_garbage(bus, Topic.JOBS_STATUS, "default/twice")
    text = await listing(bus, "jobs", "twice")
    assert text.splitlines()[1].split()[:3] == ["default", "twice", "Running"]
    assert capsys.readouterr().err == ""


async def test_garbage_keyed_like_a_node_does_not_remove_it_from_get_nodes(bus):
    await publish(bus, build_node("node-0"), build_node("node-1"))
    await send_garbage(bus, Topic.NODES, "node-0")
    rows = (await listing(bus, "nodes")).splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["node-0", "node-1"]


async def test_verbose_says_how_many_records_were_skipped_and_where(bus, capsys):
    await publish(bus, build_node("node-0"))
    await send_garbage(bus, Topic.NODES, "node-0")
    await listing(bus, "nodes", verbose=1)
    assert capsys.readouterr().err == (
        f"skipped {len(GARBAGE)} record(s) on nodes that no contract decodes\n"
    )


async def test_describe_still_describes_a_job_whose_newest_record_is_garbage(bus):
    await publish(bus, build_status("default/twice", "Pending", reason="PodGroupPending"))
    await send_garbage(bus, Topic.JOBS_STATUS, "default/twice")
    await send_garbage(bus, Topic.PODGROUPS_STATUS, "default/twice")
    text = await describe(bus, SETTINGS, "default/twice")
    assert text is not None
    assert "Pending" in text


def fold(store: StatusStore, *records: OutRecord) -> StatusStore:
    for offset, out in enumerate(records):
        store.fold(Record(out.topic, 0, offset, out.key, out.value, out.headers))
    return store


def test_submit_wait_sees_the_status_garbage_came_after():
    garbage = [OutRecord(f"{PREFIX}{Topic.JOBS_STATUS}", b"default/a", v) for v in GARBAGE]
    store = fold(
        StatusStore(PREFIX),
        event_record(build_status("default/a", "Running", running=2), PREFIX),
        event_record(build_phase("default/a", PodGroupPhase.RUNNING), PREFIX),
        *garbage,
    )
    result = outcome(store, StatusStore(PREFIX), "default/a", unchanged=False)
    assert result.done
    assert result.line == "default/a: Running, PodGroup Running, 2/2 started"
    assert store.skipped == {Topic.JOBS_STATUS: len(GARBAGE)}


def rejected_with_escapes(key: str) -> JobRejected:
    event = build_rejected(key)
    violation = msgspec.structs.replace(event.violations[0], message=f"queue {ESCAPES} not found")
    return msgspec.structs.replace(event, violations=(violation,))


def without_controls(text: str) -> bool:
    return not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 for c in text) and (
        "\u202e" not in text
    )


def test_control_characters_are_escaped_newline_and_tab_kept_except_in_a_cell():
    assert terminal.printable("a\x1b[2Jb\n\tc\x9b\x7f\u202e") == (
        "a\\u001b[2Jb\n\tc\\u009b\\u007f\\u202e"
    )
    assert terminal.cell("a\nb\tc") == "a\\u000ab\\u0009c"
    assert terminal.printable("plain é 名前") == "plain é 名前"


def test_submit_wait_prints_a_rejection_with_its_escapes_escaped():
    store = fold(StatusStore(PREFIX), event_record(rejected_with_escapes("default/a"), PREFIX))
    line = outcome(store, StatusStore(PREFIX), "default/a", unchanged=False).line
    for interactive in (False, True):
        out = io.StringIO()
        Progress(out, interactive=interactive).show({"default/a": line})
        shown = out.getvalue().replace("\x1b[2K", "")
        assert without_controls(shown)
        assert "queue \\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\u202eevil not found" in shown


async def test_get_and_describe_print_user_text_escaped(bus, capsys):
    await publish(bus, rejected_with_escapes("default/a"), build_rejected(f"default/b{ESCAPES}"))
    table = await listing(bus, "jobs")
    assert without_controls(table)
    assert "b\\u001b]0;owned\\u0007\\u001b[2J" in table
    out: list[str] = []
    await get(bus, SETTINGS, KINDS["jobs"], Query(), output="json", write=out.append)
    document = json.loads("".join(out))
    assert document["items"][0]["message"] == f"queue {ESCAPES} not found"
    assert document["items"][1]["name"] == f"b{ESCAPES}"
    assert without_controls("".join(out))
    text = await describe(bus, SETTINGS, "default/a")
    assert text is not None
    terminal.write(text)
    shown = capsys.readouterr().out
    assert without_controls(shown)
    assert "\\u001b]0;owned" in shown
