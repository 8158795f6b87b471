"""SWF traces read into scenarios: each job one gang, its run time and its time limit."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.swf import (
    TTL_AFTER_FINISHED,
    Shape,
    TraceError,
    add_arguments,
    document_from_args,
    read_trace,
    trace_document,
)

TRACE = """\
; Version: 2
; MaxNodes: 8
; MaxProcs: 8
1  100 -1   50  2 -1 -1  2  120 -1 1 -1 -1 -1 0 -1 -1 -1
2  160 -1    0  1 -1 -1  1   -1 -1 0 -1 -1 -1 0 -1 -1 -1
3  170 -1   -1  1 -1 -1  4   -1 -1 1 -1 -1 -1 0 -1 -1 -1
4  200 -1   30  1 -1 -1 16   -1 -1 1 -1 -1 -1 0 -1 -1 -1
5  260 -1   90  3 -1 -1 -1   60 -1 1 -1 -1 -1 0 -1 -1 -1
"""


def _jobs(document: dict[str, Any]) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = document["jobs"]
    return jobs


def test_reader_takes_header_and_applies_rlscheduler_rules():
    trace = read_trace(TRACE.splitlines())
    assert trace.processors == 8
    assert [(j.number, j.run, j.processors, j.requested) for j in trace.jobs] == [
        (1, 50, 2, 120),
        (3, 10, 4, None),
        (4, 30, 16, None),
        (5, 90, 3, 60),
    ]


def test_each_job_becomes_a_gang_of_one_cpu_pods_with_run_seconds_and_deadline():
    document = trace_document(read_trace(TRACE.splitlines()), Shape(nodes=4, cpu=2))
    nodes: list[dict[str, Any]] = document["nodes"]  # type: ignore[assignment]
    assert len(nodes) == 4
    assert nodes[0]["allocatable"] == {"cpu": "2", "memory": "2Gi", "pods": 110}
    first = _jobs(document)[0]
    assert first["at"] == 0
    spec = first["job"]["spec"]
    assert spec["minAvailable"] == 2
    (task,) = spec["tasks"]
    assert task["replicas"] == 2
    assert task["template"]["metadata"]["annotations"] == {"vcbus.io/run-seconds": "50"}
    assert task["template"]["spec"]["activeDeadlineSeconds"] == 120


def test_jobs_wider_than_the_cluster_are_left_out_and_times_start_at_the_slice():
    document = trace_document(read_trace(TRACE.splitlines()), Shape(nodes=8), start=1)
    assert [(j["at"], j["job"]["metadata"]["name"]) for j in _jobs(document)] == [
        (0, "job-3"),
        (90, "job-5"),
    ]


def test_walltime_run_gives_the_run_time_where_the_trace_has_no_request():
    trace = read_trace(TRACE.splitlines())
    by_request = trace_document(trace, Shape(nodes=8), start=1, count=1)
    by_run = trace_document(trace, Shape(nodes=8), start=1, count=1, walltime="run")
    assert (
        "activeDeadlineSeconds"
        not in _jobs(by_request)[0]["job"]["spec"]["tasks"][0]["template"]["spec"]
    )
    assert (
        _jobs(by_run)[0]["job"]["spec"]["tasks"][0]["template"]["spec"]["activeDeadlineSeconds"]
        == 10
    )


def test_a_request_below_the_run_time_is_raised_to_it():
    document = trace_document(read_trace(TRACE.splitlines()), Shape(nodes=8), start=2)
    spec = _jobs(document)[0]["job"]["spec"]["tasks"][0]["template"]["spec"]
    assert spec["activeDeadlineSeconds"] == 90


def test_a_line_that_is_not_numbers_names_its_line():
    with pytest.raises(TraceError, match="line 2"):
        read_trace(["; MaxNodes: 1", "1 2 x"])


def test_an_empty_slice_is_refused():
    with pytest.raises(TraceError, match="no job"):
        trace_document(read_trace(TRACE.splitlines()), Shape(nodes=8), start=10)


def _job_spec(document: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = _jobs(document)[0]["job"]["spec"]
    return spec


def _parsed(tmp_path: Path, *options: str) -> dict[str, object]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    path = tmp_path / "small.swf"
    path.write_text(TRACE)
    return document_from_args(path, parser.parse_args(list(options)))


def test_trace_jobs_are_deleted_as_they_finish_unless_told_otherwise(tmp_path: Path):
    assert _job_spec(_parsed(tmp_path))["ttlSecondsAfterFinished"] == TTL_AFTER_FINISHED == 0
    assert (
        _job_spec(_parsed(tmp_path, "--ttl-after-finished", "600"))["ttlSecondsAfterFinished"]
        == 600
    )
    kept = _job_spec(_parsed(tmp_path, "--ttl-after-finished", "never"))
    assert "ttlSecondsAfterFinished" not in kept


@pytest.mark.parametrize("value", ["-1", "soon", "1.5"])
def test_a_ttl_that_is_not_whole_seconds_or_never_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--ttl-after-finished", value])
    assert "whole seconds from 0 or never" in capsys.readouterr().err


def test_a_finished_trace_job_is_deleted_with_its_pods_and_its_summary_is_unchanged():
    trace = read_trace(TRACE.splitlines())
    kept: dict[str, Any] = simulate_document(
        trace_document(trace, Shape(nodes=8), ttl_after_finished=None)
    )
    deleted: dict[str, Any] = simulate_document(trace_document(trace, Shape(nodes=8)))
    assert {job["phase"] for job in kept["jobs"].values()} == {"Completed"}
    assert {job["phase"] for job in deleted["jobs"].values()} == {"Deleted"}
    assert deleted["summary"] == kept["summary"]
    assert [job["times"]["finished"] for job in deleted["jobs"].values()] == [
        job["times"]["finished"] for job in kept["jobs"].values()
    ]
