"""The ``jobs`` changelog stays readable across record formats."""

from __future__ import annotations

import msgspec

from vcbus.core.runtime.reactor import Entry
from vcbus.services.job_controller.state import JobRecord

from .builders import Driver, build_job, build_task


def test_a_record_written_with_applied_ids_decodes_when_the_controller_restores_it() -> None:
    """Records written before the shell kept the only ids carry ``applied_ids``; it is ignored."""
    driver = Driver(build_job(build_task("worker", 2)))
    driver.start()
    record = driver.current
    old = msgspec.json.decode(msgspec.json.encode(Entry[JobRecord](state=record, seen=("e1",))))
    old["state"]["applied_ids"] = ["e1"]

    decoded = msgspec.json.Decoder(Entry[JobRecord]).decode(msgspec.json.encode(old))

    assert decoded == Entry[JobRecord](state=record, seen=("e1",))
