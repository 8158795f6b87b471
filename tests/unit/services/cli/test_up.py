"""``vcbus up``: its demo jobs, shipped with the package, and how it reports what it runs."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml

import vcbus.services.cli
from tests.unit.services.cli.builders import build_status
from vcbus.contracts.objects import Queue
from vcbus.core.bus.listeners import listener
from vcbus.core.scheduling.taints import tolerates_all
from vcbus.core.views.jobs import JobView
from vcbus.core.views.live import StatusView
from vcbus.services.cli import build_parser
from vcbus.services.cli.admit import admit, admit_queue, as_text
from vcbus.services.cli.agent import _taint
from vcbus.services.cli.up import (
    DEMO_DIR,
    REAL_DEMO,
    REAL_NODE_TAINT,
    agent_args,
    demo_texts,
    health_lines,
)
from vcbus.services.cli.up_broker import join_lines
from vcbus.services.cli.up_progress import (
    phase_counts,
    ready_services,
    starting_line,
    waiting_lines,
)
from vcbus.services.job_controller.job_pods import pod_tolerations


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


def test_the_agent_directory_up_makes_goes_when_up_exits_and_a_given_one_stays(
    tmp_path: Path,
) -> None:
    """Every ``up --agent`` used to leave a ``vcbus-up-agent-*`` directory in the temp folder."""
    given = tmp_path / "given"
    script = (
        "import pathlib, sys\n"
        "from vcbus.services.cli.up import agent_data_dir\n"
        "made = pathlib.Path(agent_data_dir(''))\n"
        "(made / 'pod-0').mkdir()\n"
        "(made / 'pod-0' / 'out.log').write_text('what a pod left')\n"
        "print(made)\n"
        f"print(agent_data_dir({str(given)!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    made, kept = done.stdout.split()
    assert Path(made).name.startswith("vcbus-up-agent-")
    assert not Path(made).exists()
    assert Path(kept) == given
    assert given.is_dir()


def test_up_agents_real_node_is_tainted_beside_simulated_ones_and_only_real_jobs_tolerate_it(
    tmp_path: Path,
) -> None:
    """A job with no node selector would land on the real host and fail NoCommand."""
    beside = agent_args(build_parser().parse_args(["up", "--agent"]), str(tmp_path))
    assert beside[beside.index("--taint") + 1] == REAL_NODE_TAINT
    alone = build_parser().parse_args(["up", "--agent", "--no-simulated-nodes"])
    alone.nodes = 0  # as `vcbus up` sets it: this host is the whole cluster
    assert "--taint" not in agent_args(alone, str(tmp_path))

    taint = _taint(REAL_NODE_TAINT)

    def tolerated(folder: Traversable) -> list[bool]:
        specs = []
        for path in sorted(folder.iterdir(), key=lambda item: item.name):
            if not path.name.endswith(".yaml") or not path.is_file():
                continue
            for document in yaml.safe_load_all(path.read_text()):
                if document.get("kind") == "Job":
                    tasks = document["spec"]["tasks"]
                    specs += [t["template"].get("spec", {}) for t in tasks]
        return [tolerates_all(pod_tolerations(spec), (taint,)) for spec in specs]

    real, simulated = tolerated(DEMO_DIR / REAL_DEMO), tolerated(DEMO_DIR)
    assert real
    assert all(real)
    assert simulated
    assert not any(simulated)
