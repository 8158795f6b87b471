"""The garbage collector's thresholds in a vcbus process: a service or a simulation."""

from __future__ import annotations

import gc

THRESHOLDS = (100_000, 10, 10)
"""The collector's thresholds (Python's are 700, 10, 10).

A service keeps a large, long-lived heap (a scheduler's view of every pod, a controller's
jobs) and allocates fast; at 700 the collector ran so often that a 5,000-node scheduling
session spent about 30 % of its time collecting (74-93 of 250 ms), at 100,000 about 7 %.
A simulation runs every service in one process on the same heap: a 400-job trace replay
took 10 % less CPU. The garbage it leaves longer is at most that many container objects
(tens of MB).
"""


def tune_collector() -> None:
    """Set this process's collector thresholds to :data:`THRESHOLDS`."""
    gc.set_threshold(*THRESHOLDS)
