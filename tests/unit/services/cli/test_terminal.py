"""What the CLI prints: user-supplied text with its control characters escaped.

A queue or job name, or any text a rejection echoes, cannot drive the terminal (clear it,
set its title, reorder what it shows) from ``submit --wait``, ``get`` or ``describe``.
"""

from __future__ import annotations

import io
import json

import msgspec
import pytest

from tests.unit.services.cli.builders import PREFIX, SETTINGS, build_rejected, publish
from vcbus.contracts import JobRejected
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.services.cli import terminal
from vcbus.services.cli.describe import describe
from vcbus.services.cli.get import get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query
from vcbus.services.cli.status_store import StatusStore
from vcbus.services.cli.submit import Progress, outcome

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil"
"""Sets the title, clears the screen, a C1 CSI, a right-to-left override."""


@pytest.fixture
def bus() -> InMemoryBus:
    return InMemoryBus()


def store_of(*events) -> StatusStore:
    store = StatusStore(PREFIX)
    for offset, event in enumerate(events):
        out = event_record(event, PREFIX)
        store.fold(Record(out.topic, 0, offset, out.key, out.value, out.headers))
    return store


def rejected_with_escapes(key: str) -> JobRejected:
    event = build_rejected(key)
    violation = msgspec.structs.replace(event.violations[0], message=f"queue {ESCAPES} not found")
    return msgspec.structs.replace(event, violations=(violation,))


def without_controls(text: str) -> bool:
    return not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 for c in text) and (
        "\u202e" not in text
    )


def test_submit_wait_prints_escapes_escaped_when_a_rejection_names_them():
    store = store_of(rejected_with_escapes("default/a"))
    line = outcome(store, StatusStore(PREFIX), "default/a", unchanged=False).line
    for interactive in (False, True):
        out = io.StringIO()
        Progress(out, interactive=interactive).show({"default/a": line})
        shown = out.getvalue().replace("\x1b[2K", "")
        assert without_controls(shown)
        assert "queue \\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\u202eevil not found" in shown


async def test_get_and_describe_print_escapes_escaped_when_user_text_holds_them(bus, capsys):
    await publish(bus, rejected_with_escapes("default/a"), build_rejected(f"default/b{ESCAPES}"))
    out: list[str] = []
    await get(bus, SETTINGS, KINDS["jobs"], Query(), write=out.append)
    table = "".join(out)
    assert without_controls(table)
    assert "b\\u001b]0;owned\\u0007\\u001b[2J" in table
    out = []
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


def test_colours_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert terminal.colours_on(Tty())
    assert not terminal.colours_on(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not terminal.colours_on(Tty())
