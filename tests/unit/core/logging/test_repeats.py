"""A client cut off from its broker: aiokafka logs the same lines for every retry (about 215 a
second from one cut-off agent). A service writes one such line per interval, with a count."""

from __future__ import annotations

import logging

from vcbus.core.logging.repeats import RepeatFilter


def _record(name: str, message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, message, args, None)


def test_one_record_of_a_kind_per_interval_then_one_with_the_count_held_back() -> None:
    now = [0.0]
    limit = RepeatFilter(10.0, clock=lambda: now[0])
    passed = []
    for step in range(250):  # 25 s of a retry every 0.1 s
        now[0] = step * 0.1
        record = _record("aiokafka.conn", "Unable connect to %s: %s", "node 1", step)
        if limit.filter(record):
            passed.append((now[0], getattr(record, "repeated", 0)))
    assert [(round(at, 1), held) for at, held in passed] == [(0.0, 0), (10.0, 99), (20.0, 99)]


def test_kinds_are_held_back_apart_and_other_loggers_never() -> None:
    limit = RepeatFilter(10.0, clock=lambda: 0.0)
    assert limit.filter(_record("aiokafka.conn", "Unable connect to %s"))
    assert limit.filter(_record("aiokafka.cluster", "Unable connect to %s"))
    assert limit.filter(_record("aiokafka.conn", "Heartbeat failed"))
    assert not limit.filter(_record("aiokafka.conn", "Unable connect to %s"))
    assert all(limit.filter(_record("vcbus.agent", "pod_started")) for _ in range(3))
