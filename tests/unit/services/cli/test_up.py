"""``vcbus up``: its demo jobs, shipped with the package, and how it reports what it runs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import vcbus.services.cli
from tests.unit.services.cli.builders import build_status
from vcbus.contracts.objects import Queue
from vcbus.services.cli.admit import admit, admit_queue, as_text
from vcbus.services.cli.up import (
    DEMO_DIR,
    demo_texts,
    health_lines,
    join_lines,
    phase_counts,
    ready_services,
    starting_line,
    waiting_lines,
)
from vcbus.shared.bus.listeners import listener
from vcbus.shared.views.jobs import JobView
from vcbus.shared.views.status import StatusView


def test_the_demo_jobs_are_package_data_that_admission_allows():
    """Shipped in the wheel (``tool.setuptools.package-data``), so an installed ``--demo`` runs."""
    root = Path(__file__).resolve().parents[4]
    package_data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert str(DEMO_DIR) == str(Path(vcbus.services.cli.__file__).parent / "demo")
    assert "*.yaml" in package_data["*"]
    queue, *jobs = demo_texts(DEMO_DIR)  # the demo's queue first, then three jobs
    declared = admit_queue(queue.encode(), 0)
    assert declared is not None
    assert declared.allowed, as_text(declared)
    assert len(jobs) == 3
    for index, text in enumerate(jobs, start=1):
        verdict = admit({"demo": Queue(name="demo")}, text.encode(), index)
        assert verdict.allowed, as_text(verdict)


def test_progress_counts_the_jobs_in_each_phase_and_the_unseen_as_submitted():
    view = StatusView()
    view.jobs["default/a"] = JobView("default/a", phase="Running")
    view.jobs["default/b"] = JobView("default/b")
    view.jobs["default/c"] = JobView("default/c", phase="Running")

    line = phase_counts(view, ["default/a", "default/b", "default/c", "default/d"])

    assert line == "4 jobs: Running 2, Submitted 2"


def test_each_service_health_address_is_printed_when_health_ports_are_on():
    assert health_lines(["cluster", "admission"], 9100) == (
        "  cluster: http://127.0.0.1:9100/healthz /readyz /metrics\n"
        "  admission: http://127.0.0.1:9101/healthz /readyz /metrics\n"
    )
    assert health_lines(["cluster"], 0).startswith("health and metrics: off (--health-port PORT")


def test_a_service_is_ready_once_its_log_says_it_has_its_partitions(tmp_path: Path) -> None:
    (tmp_path / "cluster.log").write_bytes(b"... service_starting\n... partitions_assigned\n")
    (tmp_path / "admission.log").write_bytes(b"... service_starting\n")
    (tmp_path / "allocator.log").write_bytes(b"... lease_acquired\n")  # a singleton leads
    names = ["cluster", "admission", "allocator", "job-controller"]  # the last: no log yet

    ready = ready_services(tmp_path, names)

    assert ready == ["cluster", "allocator"]
    assert starting_line(names, ready) == (
        "starting services: admission, job-controller… (2/4 ready)"
    )


def test_the_demo_says_why_a_pending_job_waits_once_per_change() -> None:
    view = StatusView()
    view.apply(build_status("default/big", "Pending", reason="PodGroupPending", message="waits"))
    view.apply(build_status("default/small", "Running", running=2))
    assert waiting_lines(view, ["default/big", "default/small"]) == {
        "default/big": "default/big waits: PodGroupPending: waits"
    }


def test_another_host_is_given_the_exact_agent_command_that_joins_it():
    chosen = listener("0.0.0.0", 9092, "10.0.0.5")
    env = {"KAFKA_BOOTSTRAP_SERVERS": "10.0.0.5:9092", "VCBUS_TOPIC_PREFIX": "lab."}
    lines = join_lines(chosen, env).splitlines()
    assert lines[1] == (
        "  KAFKA_BOOTSTRAP_SERVERS=10.0.0.5:9092 VCBUS_TOPIC_PREFIX=lab. "
        "vcbus agent --node-name NAME"
    )
    assert "port 9092 open to it" in lines[0]


def test_a_broker_on_loopback_says_how_other_hosts_could_join():
    text = join_lines(listener("127.0.0.1", 9092, ""), {"KAFKA_BOOTSTRAP_SERVERS": "x"})
    assert "vcbus agent" not in text
    assert "--listen 0.0.0.0 --advertise ADDRESS" in text
