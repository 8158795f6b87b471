"""Where a trace replay's scheduling cycles go: per service, decided or not.

``python -m tests.bench.replay_cycles --count 300`` replays a slice as ``tests.bench.replay``
does and prints, for podgroup-enqueue and the allocator, how many cycles decided something
(published) and how many decided nothing, with the CPU seconds of each kind. A cycle that
decided nothing is the share a replay by what changed could skip; what it read is the whole
view and the clock (the aging order and the planned starts read the time). Figures:
docs/performance.md ("Trace replay speed").
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import vcbus.core.runtime.scheduler as scheduling_shell
from tests.bench.replay import replay
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime import cycle as cycles_module
from vcbus.core.runtime.collector import tune_collector
from vcbus.core.runtime.service import Runtime

_RUN_CYCLES = "run_cycles"
"""The scheduling shell's name for the cycle loop, wrapped here to count its cycles."""


class CycleCounts:
    """Cycles and their CPU seconds, by service and whether they decided anything."""

    def __init__(self) -> None:
        self.cycles: Counter[tuple[str, bool]] = Counter()
        self.cpu: dict[tuple[str, bool], float] = {}

    def wrap(self, run: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
        """``run_cycles`` counting each cycle it runs."""

        async def counted_run(
            runtime: Runtime, table: Any, cycle: Callable[[], Awaitable[bool]], **kw: Any
        ) -> None:
            async def counted() -> bool:
                started = time.process_time()
                decided = await cycle()
                key = (runtime.name, decided)
                self.cpu[key] = self.cpu.get(key, 0.0) + time.process_time() - started
                self.cycles[key] += 1
                return decided

            await run(runtime, table, counted, **kw)

        return counted_run

    def lines(self) -> list[str]:
        """One line per service and kind of cycle."""
        return [
            f"{name}: {self.cycles[name, decided]} cycles "
            f"{'decided' if decided else 'decided nothing'}, "
            f"{self.cpu.get((name, decided), 0.0):.1f} s CPU"
            for name, decided in sorted(self.cycles)
        ]


def main(argv: Sequence[str] | None = None) -> None:
    """Replay one slice with its cycles counted; print the figures and the counts."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.replay_cycles")
    parser.add_argument("--trace", default="lublin_256.swf")
    parser.add_argument("--count", type=int, default=300, help="jobs [300]")
    parser.add_argument("--walltime", choices=("request", "run"), default="run")
    args = parser.parse_args(argv)
    tune_collector()
    configure_logging("simulate", level="warning")
    counts = CycleCounts()
    original = getattr(scheduling_shell, _RUN_CYCLES)
    setattr(scheduling_shell, _RUN_CYCLES, counts.wrap(cycles_module.run_cycles))
    try:
        figures = replay(args.trace, args.count, args.walltime)
    finally:
        setattr(scheduling_shell, _RUN_CYCLES, original)
    print(", ".join(f"{name} {value}" for name, value in figures.items()))
    for line in counts.lines():
        print(line, flush=True)


if __name__ == "__main__":
    main()
