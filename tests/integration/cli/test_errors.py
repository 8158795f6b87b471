"""The CLI's error paths through its entry point (``main``), on the session's real broker.

Each failure is one or two lines on standard error with a distinct exit status, never a
traceback; nothing is published when ``submit`` refuses a file. No services run here:
what is checked happens in the CLI before any service would see a record.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import socket

import pytest

from vcbus.contracts import Topic
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.records import TopicPartition
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.cli import main
from vcbus.services.cli.up import log_dir_lock

pytestmark = pytest.mark.slow

GOOD = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: good
spec:
  tasks:
    - name: a
      replicas: 1
      template:
        spec:
          containers: [{name: c, image: busybox}]
"""
UNKNOWN_DEPENDENCY = GOOD.replace("name: good", "name: deps").replace(
    "replicas: 1", "replicas: 1\n      dependsOn: {name: [nosuch]}"
)


def cli(monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run ``vcbus <args>`` in this process: exit status, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exit_:  # argparse's answer to a bad argument
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def on_broker(monkeypatch: pytest.MonkeyPatch, kafka_bootstrap: str, topic_prefix: str) -> str:
    for name in ("KAFKA_SECURITY_PROTOCOL", "VCBUS_TOPICS_FILE", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("VCBUS_TOPIC_PREFIX", topic_prefix)
    return topic_prefix


def submitted_count() -> int:
    """How many records ``jobs.submitted`` holds (the environment's broker and prefix)."""
    settings = Settings.from_env()
    topic = f"{settings.topic_prefix}{Topic.JOBS_SUBMITTED}"

    async def count() -> int:
        bus = AioKafkaBus(settings.kafka)
        await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
        partitions = [TopicPartition(topic, n) for n in range(await bus.partitions(topic))]
        consumer = bus.consumer([topic], group=None, client_id="t-count")
        try:
            await consumer.start()
            return sum((await consumer.end_offsets(partitions)).values())
        finally:
            await consumer.stop()

    return asyncio.run(count())


def test_a_file_that_does_not_exist_is_named_with_exit_2(on_broker, monkeypatch, tmp_path):
    status, out, err = cli(monkeypatch, "submit", str(tmp_path / "nosuch.yaml"))
    assert (status, out) == (2, "")
    assert "Traceback" not in err
    assert err.splitlines()[-1].endswith("nosuch.yaml: No such file or directory")
    usage, _, error = err.rpartition("vcbus submit: error: ")
    assert usage.startswith("usage: vcbus submit ")  # argparse's usage, and the one error
    assert error.count("\n") == 1


def test_a_refused_file_publishes_nothing_and_prints_the_violations(
    on_broker, monkeypatch, tmp_path
):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    deps = tmp_path / "deps.yaml"
    deps.write_text(UNKNOWN_DEPENDENCY)

    status, out, err = cli(monkeypatch, "submit", str(bad))
    assert (status, out) == (1, "")
    assert err.startswith("REJECTED document 1: 1 violation(s)\n  (payload): MalformedYaml: ")
    assert err.endswith(
        f"admission would refuse 1 of 1 document(s) of {bad}; nothing submitted "
        "(`vcbus admit FILE` checks a file)\n"
    )
    status, out, err = cli(monkeypatch, "submit", str(deps))
    assert (status, out) == (1, "")
    assert err.splitlines()[:2] == [
        "REJECTED default/deps: 1 violation(s)",
        "  spec.tasks[0].dependsOn.name[0]: UnknownDependency: "
        "dependsOn of task a names unknown task nosuch",
    ]
    status, out, err = cli(monkeypatch, "submit", "-", stdin="\n")
    assert (status, out, err) == (
        1,
        "",
        "vcbus submit: standard input holds no Job or Queue; nothing submitted\n",
    )
    assert submitted_count() == 0

    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    status, out, err = cli(monkeypatch, "submit", str(good))
    assert (status, out.startswith("job default/good created trace_id="), err) == (0, True, "")
    assert submitted_count() == 1


def test_a_job_in_a_queue_only_the_topic_or_the_file_declares_is_not_refused(
    on_broker, monkeypatch, tmp_path
):
    in_queue = GOOD.replace("spec:\n  tasks:", "spec:\n  queue: research\n  tasks:", 1)
    job = tmp_path / "job.yaml"
    job.write_text(in_queue)
    status, _, err = cli(monkeypatch, "submit", str(job))
    assert status == 1
    assert 'queue.scheduling.volcano.sh "research" not found' in err

    assert cli(monkeypatch, "queue", "create", "research")[0] == 0
    status, out, err = cli(monkeypatch, "submit", str(job))
    assert (status, err) == (0, "")

    both = tmp_path / "both.yaml"
    queue = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: team}\n"
    both.write_text(queue + "---\n" + in_queue.replace("research", "team"))
    status, out, err = cli(monkeypatch, "submit", str(both))
    assert (status, err) == (0, "")
    assert out.splitlines()[0].startswith("submitted queue/team ")


def test_delete_of_an_unknown_job_says_so_and_publishes_nothing(on_broker, monkeypatch):
    status, out, err = cli(monkeypatch, "delete", "job", "nosuch", "--wait", "--timeout", "60")
    assert (status, out, err) == (1, "", 'vcbus delete: job "default/nosuch" not found\n')
    assert submitted_count() == 0


def test_no_broker_answering_ends_within_seconds_with_exit_3_and_the_address(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"  # nothing listens: never listen()
        monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", address)
        status, out, err = cli(monkeypatch, "get", "jobs")
    assert (status, out) == (3, "")
    assert err.splitlines() == [
        f"vcbus get: no broker answers at {address} (waited up to 5 s): "
        f"connection refused at {address} (nothing listens there)",
        "  start one with `vcbus up` (it prints the KAFKA_BOOTSTRAP_SERVERS to export), "
        "or point KAFKA_BOOTSTRAP_SERVERS at yours",
    ]


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        (
            "http://127.0.0.1:9092",
            "'http://127.0.0.1:9092' is not a Kafka address: http:// is not Kafka's protocol; "
            "give host:port; did you mean '127.0.0.1:9092'?",
        ),
        (
            "127.0.0.1:90x",
            "'127.0.0.1:90x' is not a Kafka address: port '90x' is not a number 1-65535",
        ),
        ("a:1:2", "'a:1:2' is not a Kafka address: give host:port (an IPv6 host as [host]:port)"),
    ],
)
def test_a_malformed_broker_address_is_named_at_once_with_exit_2(monkeypatch, servers, message):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", servers)
    status, out, err = cli(monkeypatch, "get", "jobs")
    assert (status, out) == (2, "")
    assert err.splitlines() == [f"vcbus get: KAFKA_BOOTSTRAP_SERVERS: {message}"]


def test_an_unknown_host_is_told_apart_from_a_refused_connection(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "no-such-host.invalid")
    status, out, err = cli(monkeypatch, "get", "jobs")
    assert (status, out) == (3, "")
    first = err.splitlines()[0]
    assert first.startswith(
        "vcbus get: no broker answers at no-such-host.invalid:9092 (waited up to 5 s): "
        "host 'no-such-host.invalid' does not resolve ("
    )


def test_no_broker_set_is_one_line_and_debug_shows_the_traceback(monkeypatch):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    status, out, err = cli(monkeypatch, "delete", "job", "x")
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        "vcbus delete: KAFKA_BOOTSTRAP_SERVERS is not set; set it to host:port of a Kafka "
        "broker (or use `vcbus up`, which starts one)"
    ]
    status, _, err = cli(monkeypatch, "delete", "job", "x", "--debug")
    assert status == 2
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith("vcbus delete: KAFKA_BOOTSTRAP_SERVERS is not set")


@pytest.mark.parametrize("folder", ["nonexistent", "empty"])
def test_up_demo_without_jobs_is_refused_before_anything_starts(monkeypatch, tmp_path, folder):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no jobs here")
    demo_dir, log_dir = tmp_path / folder, tmp_path / "logs"
    status, out, err = cli(
        monkeypatch, "up", "--demo", "--demo-dir", str(demo_dir), "--log-dir", str(log_dir)
    )
    assert (status, out) == (2, "")
    assert err == (
        f"vcbus up: no demo jobs (*.yaml) in {demo_dir} (--demo-dir takes a folder of job files)\n"
    )
    assert not log_dir.exists()


def test_up_names_a_taken_port_and_an_absent_broker(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    log_dir = str(tmp_path / "logs")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = cli(monkeypatch, "up", "--port", str(port), "--log-dir", log_dir)
        assert (status, out) == (2, "")
        assert err == f"vcbus up: port {port} is taken; choose another with --port\n"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", address)
        status, out, err = cli(monkeypatch, "up", "--log-dir", log_dir)
    assert (status, out) == (3, "")
    # a stale export of an earlier `vcbus up`: said as such, with what to unset
    assert err.splitlines() == [
        f"vcbus up: no broker answers at {address} (waited up to 5 s): "
        f"connection refused at {address} (nothing listens there) "
        "(KAFKA_BOOTSTRAP_SERVERS is set in this shell)",
        "  with KAFKA_BOOTSTRAP_SERVERS set, `vcbus up` uses that broker and starts "
        "none; if it is the address an earlier `vcbus up` printed, that broker stopped with "
        "it: `unset KAFKA_BOOTSTRAP_SERVERS` and run `vcbus up` again to start a broker of "
        "its own",
    ]


def test_a_second_up_with_the_same_log_dir_is_refused_and_leaves_the_logs(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "allocator.log").write_text("the first up's log\n")
    with log_dir_lock(log_dir) as holder:  # what the first `vcbus up` holds while it runs
        assert holder is None
        status, out, err = cli(monkeypatch, "up", "--log-dir", str(log_dir))
    assert (status, out) == (2, "")
    assert err == (
        f"vcbus up: another vcbus up (pid {os.getpid()}) writes its logs in {log_dir}; "
        "stop it first, or give this one another --log-dir\n"
    )
    assert (log_dir / "allocator.log").read_text() == "the first up's log\n"


def test_several_files_are_submitted_together_or_not_at_all(on_broker, monkeypatch, tmp_path):
    first, second, bad = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "bad.yaml"
    first.write_text(GOOD)
    second.write_text(GOOD.replace("name: good", "name: second", 1))
    bad.write_text(GOOD.replace("name: good", "name: bad", 1).replace("replicas:", "replica:"))

    status, out, err = cli(monkeypatch, "submit", str(first), str(bad))
    assert (status, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"vcbus submit: admission would refuse 1 of 2 document(s) of {first}, {bad}; "
        "nothing submitted (`vcbus admit FILE` checks a file)"
    )
    assert submitted_count() == 0

    status, out, err = cli(monkeypatch, "submit", str(first), str(second))
    assert (status, err) == (0, "")
    assert [line.split(" trace_id=")[0] for line in out.splitlines()] == [
        "job default/good created",
        "job default/second created",
    ]
    assert submitted_count() == 2


def test_up_refuses_to_advertise_every_interface_and_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    log_dir = str(tmp_path / "logs")
    status, out, err = cli(monkeypatch, "up", "--listen", "0.0.0.0:0", "--log-dir", log_dir)
    assert (status, out) == (2, "")
    assert err.startswith("vcbus up: the broker would advertise 0.0.0.0:")
    assert "pass --advertise HOST[:PORT]" in err
