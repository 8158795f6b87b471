"""Waits and bounded slowdown of finished jobs, overall and by size class."""

from __future__ import annotations

from vcbus.services.simulation.job_metrics import JobRun, job_metrics, percentile, size_class


def test_bounded_slowdown_counts_short_runs_as_ten_seconds_and_is_at_least_one():
    assert JobRun(pods=1, submitted=0, running=20, finished=22).bounded_slowdown == 2.2
    assert JobRun(pods=1, submitted=0, running=0, finished=100).bounded_slowdown == 1.0
    assert JobRun(pods=1, submitted=0, running=100, finished=200).bounded_slowdown == 2.0


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([7.0], 95) == 7.0


def test_size_classes_by_pods():
    assert [size_class(n) for n in (1, 2, 4, 5, 64, 65, 256, 257)] == [
        "1",
        "2-4",
        "2-4",
        "5-16",
        "17-64",
        "65-256",
        "65-256",
        "257+",
    ]


def test_metrics_give_spreads_and_waits_by_size_in_size_order():
    runs = [
        JobRun(pods=32, submitted=0, running=100, finished=200),
        JobRun(pods=1, submitted=0, running=0, finished=50),
        JobRun(pods=1, submitted=10, running=30, finished=40),
    ]
    metrics = job_metrics(runs)
    assert metrics["finishedJobs"] == 3
    assert metrics["wait"] == {"avg": 40.0, "p50": 20.0, "p95": 100.0, "max": 100.0}
    assert metrics["boundedSlowdown"] == {"avg": 2.0, "p50": 2.0, "p95": 3.0, "max": 3.0}
    assert list(metrics["waitBySize"]) == ["1", "17-64"]  # type: ignore[call-overload]
    assert metrics["waitBySize"]["1"] == {  # type: ignore[index]
        "jobs": 2,
        "avg": 10.0,
        "p50": 0.0,
        "p95": 20.0,
        "max": 20.0,
    }


def test_no_finished_job_gives_only_the_count():
    assert job_metrics([]) == {"finishedJobs": 0}
