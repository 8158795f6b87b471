"""Only the control plane can make a node run something: launches are signed and verified.

One system (the five services, no simulated node) whose admission and allocator sign with
keys of their own (``VCBUS_ADMISSION_KEY``, ``VCBUS_ALLOCATOR_KEY``), and one real agent,
``signed-0``, that trusts their public keys (``--trust``). The attacker is a bus writer:
any client that can publish to the topics (on the embedded broker, any local process, a
pod included). Each test publishes straight to the real broker and checks what the agent
ran (processes, files, its pod directories) and what it dead-lettered.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    pod_statuses,
    simple_job,
    start_agent,
    wait_for_statuses,
)
from tests.e2e.system import WAIT, System, read_topic, running_system, submit
from tests.support.processes import Processes
from vcbus.contracts import BindingCreated, Event, JobAdmitted, Topic
from vcbus.contracts._base import tag_of
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.contracts.topics import DLT_SUFFIX
from vcbus.core.authority import (
    KEY_SETTINGS,
    REASON_SPEC_NOT_ADMITTED,
    REASON_UNSIGNED,
    TRUST_FILE,
    Role,
    check_admitted,
    check_binding,
    load_signing_key,
    load_trust,
    manifest_digest,
    sign_admitted,
    sign_binding,
    write_keys,
)
from vcbus.core.bus.codec import encode
from vcbus.core.bus.envelope import HEADER_DLT_ERROR, HEADER_DLT_SERVICE, HEADER_EVENT_TYPE
from vcbus.core.bus.records import OutRecord, Record
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission, decide

pytestmark = pytest.mark.timeout(300)

NODE = "signed-0"
SIGNED = {"pool": "signed"}


@pytest.fixture(scope="module")
def keys() -> Iterator[Path]:
    """Admission's and the allocator's keys and the trust file, as ``vcbus up`` makes them."""
    folder = Path(tempfile.mkdtemp(prefix="vcbus-authority-keys-"))
    write_keys(folder)
    yield folder
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str, keys: Path) -> Iterator[System]:
    """The five services, no simulated node; admission and the allocator sign."""
    env = {
        KEY_SETTINGS[Role.ADMISSION]: str(keys / "admission.key"),
        KEY_SETTINGS[Role.ALLOCATOR]: str(keys / "allocator.key"),
    }
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-auth.", cluster_args=("--nodes", "0"), env=env
    ) as running_:
        yield running_


@pytest.fixture(scope="module")
def data_dirs() -> Iterator[DataDirs]:
    with DataDirs() as dirs:
        yield dirs


@pytest.fixture(scope="module")
def agent(system: System, data_dirs: DataDirs, keys: Path) -> Iterator[RealNode]:
    """The agent of node ``signed-0``, trusting admission's and the allocator's keys."""
    with Processes() as processes:
        yield start_agent(
            processes,
            system,
            data_dirs.new("agent"),
            NODE,
            "--label",
            "pool=signed",
            "--trust",
            str(keys / TRUST_FILE),
        )


@pytest.fixture
def marker_dir() -> Iterator[Path]:
    """A directory the pods' user (``nobody``) may write a marker file in."""
    folder = Path(tempfile.mkdtemp(prefix="vcbus-authority-marker-"))
    folder.chmod(0o777)
    yield folder
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


def admitted_of(text: str) -> JobAdmitted:
    """What admission would admit for ``text``: made with vcbus' own code, as an attacker can."""
    submission = Submission(text.encode(), SubmissionOrigin(topic="x", partition=0, offset=0))
    (event,) = decide({}, submission, Ctx(now=SystemClock().now()), AdmissionLimits())
    assert isinstance(event, JobAdmitted), event
    return event


def binding_for(event: JobAdmitted, uid: str, digest: str) -> BindingCreated:
    """A binding of the job's first pod to ``signed-0``."""
    namespace, name = str(event.job).split("/")
    task = event.manifest.spec.tasks[0].name
    pod = Pod(
        name=f"{name}-{task}-0",
        namespace=namespace,
        job=event.job,
        task=task,
        index=0,
        podgroup=name,
        uid=uid,
        requests={"cpu": 100, "memory": 32 << 20},
        admitted_digest=digest,
    )
    return BindingCreated(
        event_id=f"forged-{uid}", occurred_at=SystemClock().now(), pod=pod, node=NodeName(NODE)
    )


async def publish(system: System, topic: Topic, key: str, event: Event) -> None:
    """Publish one event to ``topic`` as any Kafka client can."""
    record = OutRecord(
        f"{system.prefix}{topic}",
        key.encode(),
        encode(event),
        ((HEADER_EVENT_TYPE, tag_of(type(event)).encode()),),
    )
    producer = system.bus.producer(client_id="attacker")
    try:
        await producer.send([record])
    finally:
        await producer.stop()


async def dead_letter(system: System, topic: Topic, found: Callable[[str], bool]) -> Record | None:
    """The first record of ``topic``'s DLT whose error ``found`` accepts (or None in time)."""
    consumer = system.bus.consumer(
        [f"{system.prefix}{topic}{DLT_SUFFIX}"], group=None, client_id="authority-dlt"
    )
    await consumer.start()
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WAIT):
                while True:
                    for record in await consumer.getmany(timeout=0.5, max_records=500):
                        error = (record.header(HEADER_DLT_ERROR) or b"").decode()
                        if found(error):
                            return record
    finally:
        await consumer.stop()
    return None


def marker_job(name: str, marker: Path) -> str:
    """A job whose one pod writes ``marker``: proof that it ran."""
    return simple_job(name, f"echo ran > {marker}", selector=SIGNED)


async def run_real_job(system: System, name: str) -> list[str]:
    """Submit a job for ``signed-0`` and wait until its pod ended; its pod's phases."""
    await submit(system, simple_job(name, "true", selector=SIGNED))
    key = f"default/{name}"
    statuses = await wait_for_statuses(
        system,
        key,
        lambda found: any(s.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED) for s in found),
    )
    return [str(status.phase) for status in statuses]


async def test_a_real_job_runs_when_admission_and_the_allocator_signed_its_launch(
    system: System, agent: RealNode, keys: Path, marker_dir: Path
) -> None:
    marker = marker_dir / "ran"
    await submit(system, marker_job("signed-run", marker))
    statuses = await wait_for_statuses(
        system,
        "default/signed-run",
        lambda found: any(s.phase is PodPhase.SUCCEEDED for s in found),
    )
    assert PodPhase.SUCCEEDED in [s.phase for s in statuses], agent.process.tail(30)
    assert marker.read_text() == "ran\n"

    trust = load_trust(keys / TRUST_FILE)
    launches = [
        event
        for _, event in [
            *await read_topic(system, Topic.JOBS_ADMITTED),
            *await read_topic(system, Topic.BINDINGS),
        ]
        if (isinstance(event, JobAdmitted) and event.job == "default/signed-run")
        or (isinstance(event, BindingCreated) and event.pod.job == "default/signed-run")
    ]
    admitted = [event for event in launches if isinstance(event, JobAdmitted)]
    bindings = [event for event in launches if isinstance(event, BindingCreated)]
    assert admitted
    assert bindings
    for event in admitted:
        check_admitted(trust, event)
    for binding in bindings:
        check_binding(trust, binding)
        assert binding.pod.admitted_digest == admitted[-1].manifest_digest


async def test_a_forged_launch_without_signatures_starts_nothing_and_is_dead_lettered(
    system: System, agent: RealNode, marker_dir: Path
) -> None:
    """Attack: a bus writer (any local process on the embedded broker, a pod included)
    publishes a ``jobs.admitted`` record of its own and a binding of one of its pods to a
    real node, both unsigned, to run its command as the node's pods run."""
    marker = marker_dir / "pwned"
    forged = admitted_of(marker_job("forged-launch", marker))
    uid = "forged-launch-uid-0"
    binding = binding_for(forged, uid, manifest_digest(forged.manifest))

    await publish(system, Topic.JOBS_ADMITTED, str(forged.job), forged)
    await publish(system, Topic.BINDINGS, NODE, binding)

    admitted_letter = await dead_letter(
        system, Topic.JOBS_ADMITTED, lambda error: "default/forged-launch is not signed" in error
    )
    assert admitted_letter is not None, agent.process.tail(30)
    assert admitted_letter.header(HEADER_DLT_SERVICE) == f"agent-{NODE}".encode()
    binding_letter = await dead_letter(
        system,
        Topic.BINDINGS,
        lambda error: error.startswith(f"{REASON_UNSIGNED}:") and uid in error,
    )
    assert binding_letter is not None, agent.process.tail(30)
    assert b"is not signed by allocator" in (binding_letter.header(HEADER_DLT_ERROR) or b"")

    # a real job bound after the forged one runs: the agent went on, and by then it had
    # handled (and refused) the forged binding
    assert "Succeeded" in await run_real_job(system, "after-forged-launch"), agent.process.tail(30)
    assert not marker.exists()
    assert not (agent.data_dir / "pods" / uid).exists()
    assert uid not in (agent.data_dir / "agent.json").read_text()
    assert not [s for s in await pod_statuses(system, "default/forged-launch") if s.pod_uid == uid]


async def test_a_signed_binding_naming_a_spec_admission_did_not_sign_starts_nothing(
    system: System, agent: RealNode, keys: Path, marker_dir: Path
) -> None:
    """Attack: a bus writer forges a pod of an admitted job on ``pods`` (or a job-controller
    is compromised) carrying the digest of a spec of its own; the allocator signs its
    binding, since it does not read specs. The node must not run the forged spec, nor the
    admitted one for a binding that does not name it."""
    marker = marker_dir / "pwned"
    admitted = sign_admitted(
        load_signing_key(keys / "admission.key", Role.ADMISSION),
        admitted_of(simple_job("spec-mismatch", "true", selector=SIGNED)),
    )
    other = admitted_of(marker_job("spec-mismatch", marker))
    uid = "spec-mismatch-uid-0"
    binding = sign_binding(
        load_signing_key(keys / "allocator.key", Role.ALLOCATOR),
        binding_for(admitted, uid, manifest_digest(other.manifest)),
    )
    assert binding.pod.admitted_digest != admitted.manifest_digest

    await publish(system, Topic.JOBS_ADMITTED, str(admitted.job), admitted)
    await publish(system, Topic.JOBS_ADMITTED, str(other.job), other)
    await publish(system, Topic.BINDINGS, NODE, binding)

    letter = await dead_letter(
        system,
        Topic.BINDINGS,
        lambda error: error.startswith(f"{REASON_SPEC_NOT_ADMITTED}:") and uid in error,
    )
    assert letter is not None, agent.process.tail(30)
    error = (letter.header(HEADER_DLT_ERROR) or b"").decode()
    assert manifest_digest(other.manifest)[:16] in error
    assert admitted.manifest_digest[:16] in error

    assert "Succeeded" in await run_real_job(system, "after-spec-mismatch"), agent.process.tail(30)
    assert not marker.exists()
    assert not (agent.data_dir / "pods" / uid).exists()
    assert uid not in (agent.data_dir / "agent.json").read_text()
