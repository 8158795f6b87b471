"""The in-process runner and ``vcbus simulate`` on small inline scenarios."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from vcbus.core.runtime.clock import EPOCH
from vcbus.services.cli import simulate
from vcbus.services.simulation import scenario
from vcbus.services.simulation.inprocess import ScaledClock
from vcbus.services.simulation.report import render_json
from vcbus.services.simulation.run import MEMORY_SETTINGS, simulate_document


def job(name: str, *, replicas: int = 1, cpu: str = "1", annotations: dict[str, str] | None = None):
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "tasks": [
                {
                    "name": "main",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"annotations": annotations or {}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                                }
                            ]
                        },
                    },
                }
            ]
        },
    }


NODE = {"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}

SNAPSHOT: dict[str, Any] = {
    "nodes": [NODE],
    "podgroups": [
        {
            "name": "pg1",
            "namespace": "default",
            "queue": "default",
            "minMember": 1,
            "phase": "Inqueue",
        }
    ],
    "pods": [
        {
            "name": "p0",
            "namespace": "default",
            "podgroup": "pg1",
            "task": "main",
            "requests": {"cpu": "1"},
            "phase": "Pending",
        }
    ],
}
"""A snapshot scenario: one Inqueue PodGroup with one pending pod, one node."""


def run(document: dict[str, Any]) -> Any:
    return json.loads(render_json(simulate_document(document)))


def test_run_stops_at_the_given_time_when_until_is_a_number():
    outcome = run({"nodes": [NODE], "jobs": [{"at": 0, "job": job("forever")}], "until": 5})
    assert outcome["stoppedBy"] == "until"
    assert outcome["jobs"]["default/forever"]["phase"] == "Running"
    assert outcome["pods"]["default/forever-main-0"]["phase"] == "Running"


def test_unfinished_system_stalls_when_nothing_happens_for_quiet_seconds():
    outcome = run({"nodes": [NODE], "jobs": [{"at": 0, "job": job("forever")}], "quiet": 3})
    assert outcome["stoppedBy"] == "stalled"
    assert outcome["jobs"]["default/forever"]["phase"] == "Running"
    assert outcome["summary"]["unfinished"] == ["default/forever"]


def test_job_and_pod_times_follow_the_run_when_a_pod_runs_for_set_seconds():
    outcome = run(
        {
            "nodes": [NODE],
            "jobs": [{"at": 2, "job": job("timed", annotations={"vcbus.io/run-seconds": "10"})}],
        }
    )
    times = outcome["jobs"]["default/timed"]["times"]
    pod = outcome["pods"]["default/timed-main-0"]
    assert times["submitted"] == 2.0
    assert 2.0 <= times["admitted"] <= times["inqueue"] <= times["firstBound"] == pod["bound"]
    assert pod["running"] == times["running"]
    assert pod["finished"] == times["finished"] == pytest.approx(pod["running"] + 10.0)
    assert pod["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert outcome["jobs"]["default/timed"]["queue"] == "default"
    assert outcome["stoppedBy"] == "settled"


def test_summary_counts_each_queue_use_when_two_queues_run_side_by_side():
    timed = {"vcbus.io/run-seconds": "30"}
    first, second = job("a", cpu="1", annotations=timed), job("b", cpu="3", annotations=timed)
    first["spec"]["queue"], second["spec"]["queue"] = "qa", "qb"
    outcome = run(
        {
            "nodes": [NODE],
            "queues": [{"name": "qa", "weight": 1}, {"name": "qb", "weight": 3}],
            "jobs": [{"at": 0, "job": first}, {"at": 0, "job": second}],
        }
    )
    summary = outcome["summary"]
    assert summary["queues"]["qa"]["resourceSeconds"]["cpu"] == pytest.approx(30.0, abs=0.1)
    assert summary["queues"]["qb"]["resourceSeconds"]["cpu"] == pytest.approx(90.0, abs=0.1)
    assert summary["queues"]["qa"]["share"]["cpu"] == pytest.approx(0.25, abs=0.01)
    assert summary["utilisation"]["cpu"] == pytest.approx(1.0, abs=0.01)
    assert summary["makespan"] == pytest.approx(30.0, abs=0.1)
    assert summary["unfinished"] == []


def test_pod_phase_event_is_ignored_when_the_pod_is_on_no_node():
    outcome = run(
        {
            "nodes": [NODE],
            "jobs": [{"at": 0, "job": job("big", cpu="8")}],
            "events": [{"at": 1, "pod": "default/big-main-0", "phase": "Succeeded"}],
            "quiet": 3,
        }
    )
    ignored = [e for e in outcome["timeline"] if e["event"] == "ignored"]
    assert ignored == [
        {
            "event": "ignored",
            "input": "pod default/big-main-0 Succeeded",
            "reason": "pod not on a node",
            "t": 1.0,
        }
    ]
    assert outcome["jobs"]["default/big"]["phase"] == "Pending"
    assert outcome["jobs"]["default/big"]["reason"]


def test_pod_fails_with_the_given_code_when_an_event_sets_its_phase():
    outcome = run(
        {
            "nodes": [NODE],
            "jobs": [{"at": 0, "job": job("manual")}],
            "events": [{"at": 2, "pod": "default/manual-main-0", "phase": "Failed", "exitCode": 7}],
        }
    )
    pod = outcome["pods"]["default/manual-main-0"]
    assert (pod["phase"], pod["exitCode"]) == ("Failed", 7)
    assert outcome["stoppedBy"] == "settled"


def test_an_aborted_job_runs_again_when_it_is_resumed():
    outcome = run(
        {
            "nodes": [NODE],
            "jobs": [{"at": 0, "job": job("paused", replicas=2)}],
            "events": [{"at": 2, "abort-job": "default/paused"}],
            "until": 5,
        }
    )
    assert outcome["jobs"]["default/paused"]["phase"] == "Aborted"
    outcome = run(
        {
            "nodes": [NODE],
            "jobs": [{"at": 0, "job": job("paused", replicas=2)}],
            "events": [
                {"at": 2, "abort-job": "default/paused"},
                {"at": 4, "resume-job": "default/paused"},
            ],
            "until": 8,
        }
    )
    assert outcome["jobs"]["default/paused"]["phase"] == "Running"
    binds = [e["t"] for e in outcome["timeline"] if e["event"] == "bind"]
    assert len(binds) == 4  # its two pods bound, killed by the abort, bound again
    assert max(binds) >= 4.0


def test_cordoned_node_takes_no_pod_until_it_is_uncordoned():
    outcome = run(
        {
            "nodes": [NODE],
            "events": [{"at": 0, "cordon": "n1"}, {"at": 4, "uncordon": "n1"}],
            "jobs": [{"at": 1, "job": job("short", annotations={"vcbus.io/run-seconds": "1"})}],
        }
    )
    binds = [e["t"] for e in outcome["timeline"] if e["event"] == "bind"]
    assert binds
    assert min(binds) >= 4.0
    assert outcome["jobs"]["default/short"]["phase"] == "Completed"


def test_snapshot_scenario_runs_scheduling_alone_when_it_has_podgroups_and_no_jobs():
    document = {**SNAPSHOT, "queues": [{"name": "default", "weight": 1}]}
    assert scenario.is_snapshot(document)
    outcome = simulate_document(document)
    assert outcome["bindings"] == {"default/p0": "n1"}


def test_scenario_is_refused_with_the_entry_named_when_an_event_is_unknown():
    with pytest.raises(scenario.ScenarioFileError, match=r"events\[0\]"):
        scenario.scenario_inputs(
            scenario.parse_scenario({"events": [{"at": 1, "explode": "n1"}]}),
            MEMORY_SETTINGS,
            EPOCH,
        )


def test_cli_prints_sorted_json_and_exits_zero_when_scenario_runs(tmp_path: Path, capsys):
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"nodes": [NODE], "jobs": [{"at": 0, "job": job("one")}], "until": 1})
    )
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path), "--json"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert list(json.loads(out)) == sorted(json.loads(out))
    args = parser.parse_args(["simulate", str(path)])
    assert args.func(args) == 0
    assert "default/one-main-0 -> n1" in capsys.readouterr().out


def test_cli_warns_once_per_name_when_config_names_volcano_plugins_vcbus_lacks(
    tmp_path: Path, capsys
):
    path = tmp_path / "volcano-conf.yaml"
    config = {
        "actions": "enqueue, allocate, backfill",
        "tiers": [{"plugins": [{"name": "gang"}, {"name": "sla"}, {"name": "tdm"}]}],
    }
    timed = job("one", annotations={"vcbus.io/run-seconds": "1"})
    path.write_text(
        json.dumps({"config": config, "nodes": [NODE], "jobs": [{"at": 0, "job": timed}]})
    )
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path), "--json"])

    assert args.func(args) == 0

    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert warnings == [
        "vcbus simulate: warning: config: plugin 'sla' is a Volcano plugin vcbus does not "
        "implement; running without it",
        "vcbus simulate: warning: config: plugin 'tdm' is a Volcano plugin vcbus does not "
        "implement; running without it",
    ]
    assert json.loads(captured.out)["jobs"]["default/one"]["phase"] == "Completed"


def test_cli_exits_two_with_the_reason_when_file_is_not_a_scenario(tmp_path: Path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("- just a list\n")
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path)])
    assert args.func(args) == 2
    assert "scenario" in capsys.readouterr().err


class FakeClock:
    """A base clock for ScaledClock: records what it was asked to wait."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.slept: list[float] = []

    def now(self):
        return EPOCH + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def wait_for(self, event: asyncio.Event, timeout: float) -> bool:
        self.slept.append(timeout)
        return event.is_set()


async def test_scaled_clock_runs_speed_times_faster_when_sped_up():
    base = FakeClock()
    clock = ScaledClock(10.0, EPOCH, base)
    base.seconds = 1.5
    assert clock.now() == EPOCH + timedelta(seconds=15)
    await clock.sleep(20.0)
    await clock.wait_for(asyncio.Event(), 5.0)
    assert base.slept == [2.0, 0.5]


def test_cli_prints_json_when_scenario_is_a_snapshot(tmp_path: Path, capsys):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(SNAPSHOT))
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path)])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["bindings"] == {"default/p0": "n1"}


@pytest.mark.parametrize("cpus", [2, "2"])
def test_queue_capability_is_in_kubernetes_quantities_when_given_in_full_mode(cpus: object):
    small = job("small", annotations={"vcbus.io/run-seconds": "5"})
    small["spec"]["queue"] = "capped"
    outcome = run(
        {
            "nodes": [NODE],
            "queues": [{"name": "capped", "capability": {"cpu": cpus}}],
            "jobs": [{"at": 0, "job": small}],
        }
    )
    assert outcome["jobs"]["default/small"]["phase"] == "Completed"


def test_scenario_is_refused_naming_the_field_when_a_queue_capability_is_not_a_quantity():
    document = {"nodes": [NODE], "queues": [{"name": "q", "capability": {"cpu": [2]}}], "jobs": []}
    with pytest.raises(scenario.ScenarioFileError, match=r"capability\.cpu: expected a quantity"):
        simulate_document(document)
