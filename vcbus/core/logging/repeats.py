"""One line per interval for a library's repeated complaints, with how many were held back.

A client cut off from its broker makes aiokafka log the same few lines for every retry:
hundreds a second, for as long as the cut lasts (measured: about 215 lines a second and 7 %
of a core, from one agent). :class:`RepeatFilter` lets the first record of a kind through
(a kind: the logger, the level and the message's template, not its arguments), holds back
the same kind for ``interval`` seconds, then lets the next one through with ``repeated``:
how many were held back since the last line. So an operator still sees at once that the
broker is unreachable, and how often the client tried, at one line per interval.

Bounded: the kinds are the library's message templates (a handful); at most
:data:`MAX_KINDS` are tracked, the oldest forgotten first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

INTERVAL_SECONDS = 10.0
"""How long a kind of line is held back after one was written."""
MAX_KINDS = 256
LIMITED_LOGGERS: tuple[str, ...] = ("aiokafka", "kafka")
"""The loggers (and their children) whose repeated lines are held back."""
REPEATED = "repeated"
"""The field that says how many lines of the kind were held back before this one."""


class RepeatFilter(logging.Filter):
    """Passes one record of a kind per ``interval``; the next carries the count held back."""

    def __init__(
        self,
        interval: float = INTERVAL_SECONDS,
        *,
        loggers: Sequence[str] = LIMITED_LOGGERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.loggers = tuple(loggers)
        self.clock = clock
        self._kinds: dict[tuple[str, int, str], tuple[float, int]] = {}
        """Per kind: when its last line was written, and how many were held back since."""

    def _limited(self, name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in self.loggers)

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to write the record (it gets ``repeated`` when some were held back)."""
        if not self._limited(record.name):
            return True
        kind = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        seen = self._kinds.get(kind)
        if seen is not None and now - seen[0] < self.interval:
            self._kinds[kind] = (seen[0], seen[1] + 1)
            return False
        if seen is not None and seen[1]:
            setattr(record, REPEATED, seen[1])
        self._kinds.pop(kind, None)
        self._kinds[kind] = (now, 0)
        if len(self._kinds) > MAX_KINDS:
            del self._kinds[next(iter(self._kinds))]
        return True
