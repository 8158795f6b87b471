"""The pipeline benchmark: every service its own process on a real broker, jobs in, pods out.

One run:

1. start Tansu on a free port and create the topics;
2. measure the raw broker on it (:mod:`tests.bench.raw`) before any service starts;
3. start the services (``python -m vcbus.services.cli serve …``), the partition-scaled ones
   (admission, job-controller, cluster) with ``replicas`` replicas, and wait until each
   answers ``/readyz`` and every node is registered;
4. probe: submit ``probe_jobs`` gang jobs one at a time, each once the last is gang-ready
   (the unloaded submit→gang-ready latency; the first few are warm-up and not counted);
5. burst: submit ``jobs`` jobs as fast as the producer takes them and wait until every
   pod is Running and every job gang-ready (job phase Running on ``jobs.status``).

Times are taken in the driver: a job's submit time just before its records are sent, a
pod's Running time and a job's gang-ready time when the driver's consumer receives the
event (so the last hop, to the driver, is inside every latency). pods/s is the burst's
pods over first submit → last pod Running. Allocate cycle times come from the allocator's
``cycle_decided`` log lines during the burst. Events/s counts every record written to any
topic (outputs, changelogs, the driver's submissions) during the burst.

Everything (broker, services, driver, py-spy) shares the machine's cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition

from tests.bench.profile import Profiler, summarise
from tests.bench.raw import measure_raw
from tests.bench.stats import per_pod, percentile, summary_ms
from tests.bench.workload import HOPS, BenchJob, build_jobs, node_shape
from vcbus.contracts.topics import Topic
from vcbus.core.bus.broker import EmbeddedBroker, free_port, start_broker
from vcbus.core.bus.kafka import AioKafkaBus, KafkaProducer
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import contract_topics
from vcbus.services.submission import records_for

PREFIX = "bench."
WARMUP_PROBES = 3
SCALABLE = ("admission", "job-controller", "cluster")
SINGLETONS = ("podgroup-enqueue", "allocator")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """What one run does."""

    nodes: int
    jobs: int
    replicas: int = 1
    run_seconds: float = 30.0
    probe_jobs: int = 20
    timeout: float = 600.0
    partitions: int = 4
    raw_hops: int = 300
    raw_messages: int = 20_000
    payload_bytes: int = 600
    profile: bool = False
    cprofile: Path | None = None
    """Run every service under cProfile, its whole life; a ``<label>.prof`` file each here."""
    log_level: str = "info"
    env: dict[str, str] = field(default_factory=dict)


class _Peek(msgspec.Struct):
    type: str = ""
    pod: str = ""
    job: str = ""
    phase: str = ""


class Observer:
    """Follows ``pods.status``, ``jobs.status`` and ``jobs.rejected`` with a plain consumer."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.pod_running: dict[str, float] = {}
        self.job_ready: dict[str, float] = {}
        self.rejected: dict[str, float] = {}
        self.refused = 0
        self.bytes = 0
        self.records = 0
        self.changed = asyncio.Event()
        self._decoder = msgspec.json.Decoder(_Peek | list[_Peek])
        self._consumer: AIOKafkaConsumer | None = None

    def pause(self) -> None:
        """Stop fetching (the broker answers no fetch of this driver) until ``resume``.

        The observer fetches with a 10 ms wait, to time what it sees to the millisecond:
        about 100 empty fetches a second of its 12 partitions, which cost the broker more
        than the whole system does when nothing is submitted. The idle figure is the
        system's, so the observer is paused while it is measured.
        """
        if self._consumer is not None:
            self._consumer.pause(*self._consumer.assignment())

    def resume(self) -> None:
        """Fetch again, at once (the consumer's fetcher wakes on the resume)."""
        if self._consumer is not None:
            self._consumer.resume(*self._consumer.assignment())

    async def run(self) -> None:
        """Read the topics from their start until cancelled."""
        topics = [
            f"{PREFIX}{topic}"
            for topic in (Topic.PODS_STATUS, Topic.JOBS_STATUS, Topic.JOBS_REJECTED)
        ]
        consumer = AIOKafkaConsumer(
            *topics,
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=10,
        )
        await consumer.start()
        self._consumer = consumer
        try:
            while True:
                batches = await consumer.getmany(timeout_ms=200, max_records=5000)
                now = time.perf_counter()
                for messages in batches.values():
                    for message in messages:
                        self._take(message.value or b"", now)
                if batches:
                    self.changed.set()
        finally:
            await consumer.stop()

    def _take(self, value: bytes, now: float) -> None:
        self.records += 1
        self.bytes += len(value)
        peeked = self._decoder.decode(value)
        for peek in peeked if isinstance(peeked, list) else (peeked,):
            self._note(peek, now)

    def _note(self, peek: _Peek, now: float) -> None:
        if peek.type == "pod.phase_changed.v1" and peek.phase == "Running":
            self.pod_running.setdefault(peek.pod, now)
        elif peek.type == "job.status_changed.v1" and peek.phase == "Running":
            self.job_ready.setdefault(peek.job, now)
        elif peek.type == "job.rejected.v1":
            self.rejected.setdefault(peek.job, now)
        elif peek.type == "binding.refused.v1":
            self.refused += 1

    async def wait_for(self, done: Any, timeout: float) -> bool:
        """Wait until ``done()`` holds; False on timeout."""
        deadline = time.perf_counter() + timeout
        while not done():
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(left, 1.0)):
                    await self.changed.wait()
        return True


@dataclass
class ServiceProcess:
    """One ``vcbus serve`` process."""

    name: str
    instance: str
    process: subprocess.Popen[bytes]
    health_port: int
    log: Path

    @property
    def label(self) -> str:
        """``name`` or ``name#instance``."""
        return self.name if self.instance == "0" else f"{self.name}#{self.instance}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, every process)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _CLOCK_TICKS


def _service_command(name: str, instance: str, config: PipelineConfig) -> list[str]:
    command = [sys.executable, "-m", "vcbus.services.cli", "serve", name, "--instance", instance]
    if config.cprofile is not None:
        output = config.cprofile / f"{name}-{instance}.prof"
        command[1:1] = ["-m", "cProfile", "-o", str(output)]
    if name == "cluster":
        shape = node_shape(config.nodes, config.jobs * 10)
        command += [
            "--nodes",
            str(config.nodes),
            "--node-cpu",
            str(shape.cpu),
            "--node-memory",
            shape.memory,
            "--node-pods",
            str(shape.pods),
        ]
    return command


async def _ready(port: int) -> bool:
    try:
        async with asyncio.timeout(2.0):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n")
            await writer.drain()
            status = await reader.readline()
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
    except (OSError, TimeoutError):
        return False
    return b" 200 " in status


async def _metrics(port: int) -> dict[str, float]:
    """The ``vcbus_cycle_duration_seconds`` count and sum a service reports on ``/metrics``."""
    try:
        async with asyncio.timeout(5.0):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            await writer.drain()
            body = (await reader.read()).decode("utf-8", "replace")
            writer.close()
    except (OSError, TimeoutError):
        return {}
    out: dict[str, float] = {}
    for line in body.splitlines():
        name, _, value = line.partition(" ")
        base = name.split("{", 1)[0]
        if base in ("vcbus_cycle_duration_seconds_count", "vcbus_cycle_duration_seconds_sum"):
            with contextlib.suppress(ValueError):
                out[base.rsplit("_", 1)[1]] = out.get(base.rsplit("_", 1)[1], 0.0) + float(
                    value.split()[0]
                )
    return out


async def _topic_ends(bootstrap: str) -> dict[str, int]:
    """End offsets summed over the partitions of each topic of the run."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        topics = sorted(t for t in await consumer.topics() if t.startswith(PREFIX))
        partitions = [
            TopicPartition(topic, partition)
            for topic in topics
            for partition in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        ends = await consumer.end_offsets(partitions) if partitions else {}
    finally:
        await consumer.stop()
    out: dict[str, int] = {}
    for tp, end in ends.items():
        name = tp.topic.removeprefix(PREFIX)
        out[name] = out.get(name, 0) + int(end)
    return out


async def _submit(producer: KafkaProducer, jobs: Sequence[BenchJob]) -> float:
    """Publish the jobs' manifests; return the time just before sending."""
    clock = SystemClock()
    records = [
        item.record for job in jobs for item in records_for(job.manifest, PREFIX, clock.now())
    ]
    started = time.perf_counter()
    await producer.send(records)
    return started


def _cycle_lines(path: Path, start: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        handle.seek(start)
        for line in handle:
            if b"cycle_decided" not in line:
                continue
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry.get("event") == "cycle_decided":
                    out.append(entry)
    return out


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class Pipeline:
    """One benchmark run; see the module docstring."""

    def __init__(self, config: PipelineConfig, work: Path) -> None:
        self.config = config
        self.work = work
        self.broker: EmbeddedBroker | None = None
        self.services: list[ServiceProcess] = []

    def _env(self, bootstrap: str) -> dict[str, str]:
        env = dict(os.environ)
        for name in [k for k in env if k.startswith(("OTEL_", "VCBUS_"))]:
            env.pop(name)
        env.update(
            KAFKA_BOOTSTRAP_SERVERS=bootstrap,
            VCBUS_TOPIC_PREFIX=PREFIX,
            VCBUS_PARTITIONS=str(self.config.partitions),
            VCBUS_LOG_LEVEL=self.config.log_level,
            OTEL_TRACES_EXPORTER="none",
        )
        env.update(self.config.env)
        return env

    def _start(self, env: dict[str, str]) -> None:
        for name in ("cluster", "admission", "job-controller", *SINGLETONS):
            count = self.config.replicas if name in SCALABLE else 1
            for index in range(count):
                port = free_port()
                log = self.work / f"{name}-{index}.log"
                with log.open("wb") as out:
                    process = subprocess.Popen(
                        _service_command(name, str(index), self.config),
                        env={
                            **env,
                            "VCBUS_HEALTH_PORT": str(port),
                            "VCBUS_HEALTH_HOST": "127.0.0.1",
                        },
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                self.services.append(ServiceProcess(name, str(index), process, port, log))

    def stop(self) -> None:
        """Stop the services (SIGTERM, then SIGKILL) and the broker."""
        for service in self.services:
            if service.process.poll() is None:
                service.process.send_signal(signal.SIGTERM)
        for service in self.services:
            try:
                service.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                service.process.kill()
                service.process.wait()
        if self.broker is not None:
            self.broker.stop()

    def _check_alive(self) -> None:
        dead = [s.label for s in self.services if s.process.poll() is not None]
        if dead:
            raise RuntimeError(f"services exited: {', '.join(dead)} (logs in {self.work})")

    async def run(self) -> dict[str, Any]:
        """Run the benchmark once and return its figures."""
        config = self.config
        self.broker = start_broker()
        bootstrap = self.broker.bootstrap_servers
        env = self._env(bootstrap)
        settings = Settings.from_env(env)
        bus = AioKafkaBus(settings.kafka)
        await bus.ensure_topics(contract_topics(settings.topics, PREFIX, config.partitions))
        raw = await measure_raw(
            settings.kafka,
            payload_bytes=config.payload_bytes,
            hops=config.raw_hops,
            count=config.raw_messages,
            partitions=config.partitions,
        )
        started_services = time.perf_counter()
        self._start(env)
        observer = Observer(bootstrap)
        follow = asyncio.create_task(observer.run())
        producer = bus.producer(client_id="bench-driver")
        try:
            return await self._measure(
                observer=observer,
                producer=producer,
                raw=raw,
                bootstrap=bootstrap,
                started_services=started_services,
                settings=settings,
            )
        finally:
            follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follow
            await producer.stop()

    async def _wait_ready(self, bootstrap: str) -> float:
        started = time.perf_counter()
        deadline = started + 300
        pending = list(self.services)
        while pending:
            self._check_alive()
            if time.perf_counter() > deadline:
                raise RuntimeError(f"not ready: {', '.join(s.label for s in pending)}")
            pending = [s for s in pending if not await _ready(s.health_port)]
            await asyncio.sleep(0.2)
        # every node registered on the nodes topic
        consumer = AIOKafkaConsumer(
            f"{PREFIX}{Topic.NODES}",
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            seen = 0
            while seen < self.config.nodes:
                self._check_alive()
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"only {seen} of {self.config.nodes} nodes registered")
                batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
                seen += sum(len(batch) for batch in batches.values())
        finally:
            await consumer.stop()
        return time.perf_counter() - started

    def _cpu(self) -> dict[str, float]:
        out = {s.label: cpu_seconds(s.process.pid) for s in self.services}
        out["broker"] = cpu_seconds(self.broker.process.pid) if self.broker else 0.0
        out["driver"] = cpu_seconds(os.getpid())
        out["machine"] = machine_busy_seconds()
        return out

    async def _idle_cpu(
        self, settings: Settings, observer: Observer, seconds: float = 5.0
    ) -> dict[str, float]:
        """Cores used by each process while nothing is submitted (polling, heartbeats).

        Measured once the consumers have been quiet for their ``idle_after_ms`` (and a
        second more), so they hold their fetches for ``idle_fetch_max_wait_ms``, with the
        driver's observer paused (``Observer.pause``): the broker's figure is what the
        services cost it.
        """
        observer.pause()
        try:
            await asyncio.sleep(settings.kafka.idle_after_ms / 1000 + 1.0)
            before = self._cpu()
            await asyncio.sleep(seconds)
            after = self._cpu()
        finally:
            observer.resume()
        return {name: round((after[name] - before[name]) / seconds, 3) for name in after}

    async def _measure(
        self,
        *,
        observer: Observer,
        producer: KafkaProducer,
        raw: dict[str, Any],
        bootstrap: str,
        started_services: float,
        settings: Settings,
    ) -> dict[str, Any]:
        config = self.config
        ready_s = await self._wait_ready(bootstrap)
        startup_s = time.perf_counter() - started_services
        idle = await self._idle_cpu(settings, observer)

        # probe: one job at a time, unloaded; the first comes after the quiet spell
        probe_latency: list[float] = []
        after_quiet: float | None = None
        for index, job in enumerate(
            build_jobs(config.probe_jobs + WARMUP_PROBES, config.run_seconds, prefix="probe")
        ):
            if job.kind != "gang":
                continue
            sent = await _submit(producer, [job])
            if not await observer.wait_for(lambda job=job: job.key in observer.job_ready, 60):
                self._check_alive()
                raise RuntimeError(f"probe job {job.key} not gang-ready within 60 s")
            if after_quiet is None:
                after_quiet = observer.job_ready[job.key] - sent
            if index >= WARMUP_PROBES:
                probe_latency.append(observer.job_ready[job.key] - sent)
            await asyncio.sleep(0.05)

        # burst
        jobs = build_jobs(config.jobs, config.run_seconds)
        pods_total = len(jobs) * 10
        ends_before = await _topic_ends(bootstrap)
        cpu_before = self._cpu()
        load_before = os.getloadavg()[0]
        schedulers = [s for s in self.services if s.name in SINGLETONS]
        metrics_before = {s.name: await _metrics(s.health_port) for s in schedulers}
        allocator_log = next(s.log for s in self.services if s.name == "allocator")
        enqueue_log = next(s.log for s in self.services if s.name == "podgroup-enqueue")
        log_marks = {allocator_log: _size(allocator_log), enqueue_log: _size(enqueue_log)}
        profilers = []
        if config.profile:
            profilers = [
                prof
                for s in self.services
                if (prof := Profiler.attach(s.label, s.process.pid, self.work)) is not None
            ]
        submit_at: dict[str, float] = {}
        first_submit = time.perf_counter()
        for chunk_start in range(0, len(jobs), 100):
            chunk = jobs[chunk_start : chunk_start + 100]
            sent = await _submit(producer, chunk)
            submit_at.update((job.key, sent) for job in chunk)
        submitted_s = time.perf_counter() - first_submit
        keys = {job.key for job in jobs}
        burst_pods = 0

        def done() -> bool:
            nonlocal burst_pods
            burst_pods = sum(1 for pod in observer.pod_running if pod.startswith("bench/job-"))
            ready = sum(1 for key in keys if key in observer.job_ready or key in observer.rejected)
            return burst_pods >= pods_total and ready >= len(keys)

        finished = await observer.wait_for(done, config.timeout)
        burst_end = time.perf_counter()
        for profiler in profilers:
            profiler.stop()
        cpu_after = self._cpu()
        load_after = os.getloadavg()[0]
        metrics_after = {s.name: await _metrics(s.health_port) for s in schedulers}
        cycles_run = {
            name: {
                "cycles": int(after.get("count", 0) - metrics_before[name].get("count", 0)),
                "seconds": round(after.get("sum", 0) - metrics_before[name].get("sum", 0), 2),
            }
            for name, after in metrics_after.items()
        }
        ends_after = await _topic_ends(bootstrap)
        self._check_alive()

        running_times = [
            t for pod, t in observer.pod_running.items() if pod.startswith("bench/job-")
        ]
        last_running = max(running_times, default=burst_end)
        span = last_running - first_submit
        latency = {
            kind: [
                observer.job_ready[job.key] - submit_at[job.key]
                for job in jobs
                if job.kind == kind and job.key in observer.job_ready
            ]
            for kind in HOPS
        }
        all_latency = [value for values in latency.values() for value in values]
        cycles = _cycle_lines(allocator_log, log_marks[allocator_log])
        enqueue_cycles = _cycle_lines(enqueue_log, log_marks[enqueue_log])
        working = [c for c in cycles if c.get("events", 0) > 0]
        raw_hop = raw["hop"]["p50_ms"] / 1000
        best_hop = raw["hop_best"]["p50_ms"] / 1000
        probe_p50 = percentile(probe_latency, 50)
        burst_s = burst_end - first_submit
        by_topic = {
            topic: end - ends_before.get(topic, 0)
            for topic, end in sorted(ends_after.items())
            if end > ends_before.get(topic, 0)
        }
        events = sum(by_topic.values())
        burst_cpu = {
            name: round(cpu_after[name] - cpu_before.get(name, 0.0), 2)
            for name in cpu_after
            if name != "machine"
        }
        result: dict[str, Any] = {
            "config": {
                "nodes": config.nodes,
                "jobs": config.jobs,
                "pods": pods_total,
                "replicas": config.replicas,
                "run_seconds": config.run_seconds,
                "partitions": config.partitions,
                "node_shape": dataclasses.asdict(node_shape(config.nodes, pods_total)),
                "linger_ms": settings.kafka.linger_ms,
                "fetch_max_wait_ms": settings.kafka.fetch_max_wait_ms,
                "max_poll_records": settings.max_poll_records,
                "log_level": config.log_level,
                "cpus": os.cpu_count(),
            },
            "finished": finished,
            "startup_s": round(startup_s, 2),
            "ready_s": round(ready_s, 2),
            "raw": raw,
            "idle_cores": idle,
            "probe": {
                "gang_ready": summary_ms(probe_latency),
                "first_after_quiet_ms": round((after_quiet or 0.0) * 1000, 2),
                "hops": HOPS["gang"],
                "ratio_p50": round(probe_p50 / (HOPS["gang"] * raw_hop), 2)
                if probe_p50 is not None
                else None,
                "ratio_p50_best": round(probe_p50 / (HOPS["gang"] * best_hop), 2)
                if probe_p50 is not None
                else None,
            },
            "burst": {
                "pods_running": len(running_times),
                "pods_per_s": round(len(running_times) / span, 1) if span > 0 else None,
                "span_s": round(span, 2),
                "submit_s": round(submitted_s, 2),
                "gang_ready": summary_ms(all_latency),
                "gang_ready_by_kind": {kind: summary_ms(v) for kind, v in latency.items()},
                "ratio_p50_by_kind": {
                    kind: round(p / (HOPS[kind] * raw_hop), 2)
                    for kind, values in latency.items()
                    if (p := percentile(values, 50)) is not None
                },
                "ratio_p50_best_by_kind": {
                    kind: round(p / (HOPS[kind] * best_hop), 2)
                    for kind, values in latency.items()
                    if (p := percentile(values, 50)) is not None
                },
                "jobs_ready": sum(1 for key in keys if key in observer.job_ready),
                "jobs_rejected": sum(1 for key in keys if key in observer.rejected),
                "bindings_refused": observer.refused,
                "observed_mean_value_bytes": round(observer.bytes / max(observer.records, 1)),
                "events": events,
                "events_by_topic": by_topic,
                "events_per_s": round(events / burst_s, 1) if burst_s > 0 else None,
                "events_ratio_to_raw": round(events / burst_s / raw["messages_per_s"], 3)
                if burst_s > 0
                else None,
                "allocate_cycle": {
                    **summary_ms([c["decide_ms"] / 1000 for c in working]),
                    "all_cycles": len(cycles),
                    "publish": summary_ms([c.get("publish_ms", 0) / 1000 for c in working]),
                    "max_pending": max((c.get("pending", 0) for c in cycles), default=0),
                },
                "cycles_run": cycles_run,
                "enqueue_cycle": summary_ms(
                    [c["decide_ms"] / 1000 for c in enqueue_cycles if c.get("events", 0) > 0]
                ),
                "cpu_s": burst_cpu,
                "machine_busy_s": round(cpu_after["machine"] - cpu_before["machine"], 2),
                "other_processes_cpu_s": round(
                    (cpu_after["machine"] - cpu_before["machine"])
                    - sum(
                        cpu_after[name] - cpu_before.get(name, 0.0)
                        for name in cpu_after
                        if name != "machine"
                    ),
                    2,
                ),
                "loadavg_1m": [round(load_before, 2), round(load_after, 2)],
                "per_pod": per_pod(burst_cpu, events, pods_total, SINGLETONS),
                "pods_per_raw_msg": round(len(running_times) / span / raw["messages_per_s"], 4)
                if span > 0 and raw["messages_per_s"]
                else None,
            },
            "hop_path": HOPS,
        }
        if profilers:
            result["profile"] = {p.name: summarise(p.output) for p in profilers}
        return result


def run_pipeline(config: PipelineConfig, *, keep_logs: Path | None = None) -> dict[str, Any]:
    """Run :class:`Pipeline` once in a fresh broker; logs go to ``keep_logs`` or a temp folder."""
    with contextlib.ExitStack() as stack:
        if keep_logs is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vcbus-bench-")))
        else:
            work = keep_logs
            work.mkdir(parents=True, exist_ok=True)
        pipeline = Pipeline(config, work)
        try:
            return asyncio.run(pipeline.run())
        finally:
            pipeline.stop()
