"""``python -m tests.chaos``: the chaos run, with printed figures (``make chaos``).

Exit status 0 when every run passed (no violation), 1 otherwise.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from tests.chaos.run import ChaosConfig, render, run_chaos, write_report

LOAD_DUTY = 0.75
"""The hogs' duty cycle when ``--load`` names none."""


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """Run the chaos scenario ``--runs`` times; print and write the figures of each.

    SIGTERM stops the run like Ctrl-C: every service process and the broker are killed.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    defaults = ChaosConfig()
    parser.add_argument("--jobs", type=int, default=defaults.jobs, help="jobs to submit [500]")
    parser.add_argument("--kills", type=int, default=defaults.kills, help="SIGKILLs [20]")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of jobs and kills")
    parser.add_argument(
        "--kill-interval",
        type=float,
        default=defaults.kill_interval,
        help="seconds between kills; jobs are submitted over kills × this [7]",
    )
    parser.add_argument(
        "--outage", type=float, default=defaults.outage, help="seconds the broker freezes [15]"
    )
    parser.add_argument("--nodes", type=int, default=defaults.nodes, help="simulated nodes [8]")
    parser.add_argument(
        "--agents",
        type=int,
        default=defaults.agents,
        help="node agents running the real jobs as processes (0: none) [2]",
    )
    parser.add_argument(
        "--lock-read-bound",
        type=float,
        default=defaults.lock_read_bound,
        help="seconds the allocator may take to read a node lock [5]",
    )
    parser.add_argument(
        "--load",
        type=float,
        nargs="?",
        const=LOAD_DUTY,
        default=defaults.load,
        metavar="DUTY",
        help=f"run a CPU hog per core beside the system, busy DUTY of the time [{LOAD_DUTY}]",
    )
    parser.add_argument(
        "--runs", type=int, default=1, help="runs in a row (seed, seed+1, ...); stop at a failure"
    )
    parser.add_argument("--results", default=str(defaults.results_dir), help="where figures go")
    parser.add_argument("--log-dir", help="where service logs go [a new temporary folder]")
    args = parser.parse_args(argv)
    status = 0
    for number in range(args.runs):
        config = ChaosConfig(
            jobs=args.jobs,
            kills=args.kills,
            seed=args.seed + number,
            kill_interval=args.kill_interval,
            outage=args.outage,
            nodes=args.nodes,
            agents=args.agents,
            lock_read_bound=args.lock_read_bound,
            load=args.load,
            log_dir=Path(args.log_dir) / f"run-{number}" if args.log_dir else None,
        )
        report = run_chaos(config)
        path = write_report(report, Path(args.results))
        sys.stdout.write(render(report) + f"\n  figures         {path}\n")
        sys.stdout.flush()
        if not report.passed:
            status = 1
            break
    return status


if __name__ == "__main__":
    sys.exit(main())
