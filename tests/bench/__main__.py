"""``python -m tests.bench`` (``make bench``): the pipeline benchmark and the allocate cycle.

Runs, each on a fresh embedded broker:

1. the main run: 5,000 simulated nodes, 2,000 jobs of 10 pods (gangs with task minimums,
   every fifth with dependsOn), one replica of each service, the raw broker measured first;
2. the scaling table: 100 / 1,000 / 5,000 nodes × 1 and 2 replicas of the partition-scaled
   services (admission, job-controller, cluster); the main run is its 5,000 × 1 cell;
3. one allocate cycle in process (``tests.bench.allocate_cycle``), 10,000 pending pods ×
   5,000 nodes and smaller sizes.

Prints the figures and writes them as JSON to ``bench/results/<UTC timestamp>.json``.
``--quick`` runs a small main run and a small cycle only (a minute or two).
Every process shares this machine's cores: the broker, five or more services, the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench import allocate_cycle
from tests.bench.pipeline import PipelineConfig, run_pipeline
from tests.bench.workload import HOP_PATH
from vcbus.core.runtime.clock import SystemClock

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def _fmt(value: object, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def report(result: dict[str, Any]) -> str:
    """The printed form of one pipeline run."""
    config, raw, probe, burst = result["config"], result["raw"], result["probe"], result["burst"]
    cycle = burst["allocate_cycle"]
    lines = [
        f"pipeline: {config['nodes']} nodes, {config['jobs']} jobs x 10 pods, "
        f"{config['replicas']} replica(s); {config['cpus']} cores shared by broker, services, "
        "driver",
        f"  raw broker (same run, same Tansu): hop p50 {raw['hop']['p50_ms']} ms, "
        f"p99 {raw['hop']['p99_ms']} ms (lowest-latency tuning: p50 "
        f"{raw['hop_best']['p50_ms']} ms, p99 {raw['hop_best']['p99_ms']} ms); "
        f"{raw['messages_per_s']} msgs/s "
        f"({raw['payload_bytes']} B values, linger {raw['linger_ms']} ms, "
        f"fetch wait {raw['fetch_max_wait_ms']} ms)",
        f"  probe (unloaded, one job at a time): gang-ready p50 "
        f"{probe['gang_ready']['p50_ms']} ms, p99 {probe['gang_ready']['p99_ms']} ms; "
        f"ratio p50 / ({probe['hops']} hops x raw hop p50) = {probe['ratio_p50']} "
        f"(x best raw hop: {probe['ratio_p50_best']}); the first, after the quiet spell: "
        f"{probe['first_after_quiet_ms']} ms",
        f"  burst: {burst['pods_running']} pods Running in {burst['span_s']} s = "
        f"{burst['pods_per_s']} pods/s (submit took {burst['submit_s']} s)"
        + ("" if result["finished"] else "  [TIMED OUT]"),
        f"  burst gang-ready: p50 {burst['gang_ready']['p50_ms']} ms, "
        f"p99 {burst['gang_ready']['p99_ms']} ms; by kind "
        + ", ".join(
            f"{kind} p50 {v['p50_ms']} / p99 {v['p99_ms']} ms"
            for kind, v in burst["gang_ready_by_kind"].items()
        )
        + f"; ratio p50 / (hops x raw hop) {burst['ratio_p50_by_kind']} "
        f"(x best raw hop: {burst['ratio_p50_best_by_kind']})",
        f"  allocate cycle (burst, cycles that bound): p50 {cycle['p50_ms']} ms, "
        f"p99 {cycle['p99_ms']} ms over {cycle['count']} cycles; publish p50 "
        f"{cycle['publish']['p50_ms']} ms; all cycles run (metrics): {burst['cycles_run']}",
        f"  events: {burst['events']} records in the burst = {burst['events_per_s']} /s; "
        f"ratio to raw msgs/s {burst['events_ratio_to_raw']}; per pod by topic: "
        + ", ".join(
            f"{topic} {count / config['pods']:.2f}"
            for topic, count in burst["events_by_topic"].items()
        ),
        f"  cpu seconds in the burst: {burst['cpu_s']}; machine busy {burst['machine_busy_s']} s "
        f"of which other processes (not this benchmark) {burst['other_processes_cpu_s']} s; "
        f"load average {burst['loadavg_1m']}",
        f"  idle (nothing submitted, consumers quiet): cores used {result['idle_cores']}",
        "  singletons in the burst: "
        + ", ".join(
            f"{name} {figures['cpu_ms_per_pod']} ms CPU per pod = ceiling "
            f"{figures['ceiling_pods_per_s']} pods/s"
            for name, figures in burst["per_pod"].items()
            if isinstance(figures, dict)
        )
        + f"; records per pod {burst['per_pod']['records_per_pod']}; pods/s per raw msgs/s "
        f"{burst['pods_per_raw_msg']}",
    ]
    for name, profile in result.get("profile", {}).items():
        top = ", ".join(f"{frame} {share}%" for frame, share in profile["self"][:6])
        lines.append(f"  profile {name} ({profile['samples']} samples) self: {top}")
    return "\n".join(lines)


def scaling_table(rows: Sequence[dict[str, Any]]) -> str:
    """The scaling table: nodes × replicas → pods/s, latencies, cycle."""
    out = ["nodes  replicas  pods/s   burst p50 ms  burst p99 ms  probe p50 ms  cycle p50/p99 ms"]
    for row in rows:
        burst, probe = row["burst"], row["probe"]
        cycle = burst["allocate_cycle"]
        out.append(
            f"{row['config']['nodes']:>5}  {row['config']['replicas']:>8}  "
            f"{_fmt(burst['pods_per_s']):>7}  {_fmt(burst['gang_ready']['p50_ms']):>12}  "
            f"{_fmt(burst['gang_ready']['p99_ms']):>12}  {_fmt(probe['gang_ready']['p50_ms']):>12}"
            f"  {_fmt(cycle['p50_ms'])}/{_fmt(cycle['p99_ms'])}"
            + ("" if row["finished"] else "  TIMED OUT")
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print them, write the JSON file; 0 unless a run failed."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small runs only")
    parser.add_argument("--nodes", type=int, help="main run: nodes [5000; quick 500]")
    parser.add_argument("--jobs", type=int, help="main run: jobs of 10 pods [2000; quick 200]")
    parser.add_argument("--replicas", type=int, default=1, help="main run: replicas [1]")
    parser.add_argument("--run-seconds", type=float, default=30.0, help="pod run time [30]")
    parser.add_argument("--probe-jobs", type=int, help="unloaded probe jobs [20; quick 5]")
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling table")
    parser.add_argument("--no-cycle", action="store_true", help="skip the in-process cycle")
    parser.add_argument("--profile", action="store_true", help="py-spy the main run's burst")
    parser.add_argument(
        "--cprofile",
        type=Path,
        metavar="FOLDER",
        help="run each service under cProfile; its <service>-<n>.prof written here on stop",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment of the services and the raw clients (VCBUS_LINGER_MS=5)",
    )
    parser.add_argument("--keep-logs", type=Path, help="keep the services' logs here")
    parser.add_argument("--output", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)

    quick = args.quick
    config = PipelineConfig(
        nodes=args.nodes or (500 if quick else 5000),
        jobs=args.jobs or (200 if quick else 2000),
        replicas=args.replicas,
        run_seconds=args.run_seconds,
        probe_jobs=args.probe_jobs if args.probe_jobs is not None else (5 if quick else 20),
        profile=args.profile,
        cprofile=args.cprofile,
        env=dict(item.split("=", 1) for item in args.set),
    )
    stamp = SystemClock().now().strftime("%Y%m%dT%H%M%SZ")
    results: dict[str, Any] = {
        "timestamp": stamp,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "note": "broker, every service and the driver share this machine's cores",
        "hop_path": HOP_PATH,
    }

    def logs(name: str) -> Path | None:
        return args.keep_logs / name if args.keep_logs else None

    main_run = run_pipeline(config, keep_logs=logs("main"))
    results["main"] = main_run
    print(report(main_run), flush=True)

    if not args.no_scaling and not quick:
        rows = []
        for nodes in (100, 1000, 5000):
            for replicas in (1, 2):
                if nodes == config.nodes and replicas == config.replicas:
                    rows.append(main_run)
                    continue
                cell = PipelineConfig(
                    nodes=nodes,
                    jobs=config.jobs,
                    replicas=replicas,
                    run_seconds=config.run_seconds,
                    probe_jobs=max(5, config.probe_jobs // 2),
                    raw_hops=100,
                    raw_messages=5000,
                    env=config.env,
                )
                row = run_pipeline(cell, keep_logs=logs(f"n{nodes}-r{replicas}"))
                print(report(row), flush=True)
                rows.append(row)
        results["scaling"] = rows
        print(scaling_table(rows), flush=True)

    if not args.no_cycle:
        sizes = ((1_000, 1_000),) if quick else allocate_cycle.SIZES
        figures = [
            allocate_cycle.measure_cycle(pods, nodes, 1 if quick else 3) for pods, nodes in sizes
        ]
        results["allocate_cycle"] = figures
        for figure in figures:
            print("allocate cycle (in process): " + allocate_cycle.line(figure), flush=True)

    args.output.mkdir(parents=True, exist_ok=True)
    path = args.output / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {path}")
    return 0 if main_run["finished"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
