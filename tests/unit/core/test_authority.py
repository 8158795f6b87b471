"""Launch signatures: what admission and the allocator sign, and what an agent refuses.

Each refusal test states the attack: a bus writer (anyone who can publish to the topics)
forges or changes a launch record; it must not verify.
"""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
import yaml

from vcbus.contracts import BindingCreated, JobAdmitted, Topic
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.topics import TOPIC_SPECS
from vcbus.core.authority import (
    KEY_FILES,
    KEY_SETTINGS,
    REASON_BAD_SIGNATURE,
    REASON_DIGEST_MISMATCH,
    REASON_UNSIGNED,
    REASON_UNTRUSTED_KEY,
    TRUST_FILE,
    LaunchRefusedError,
    Role,
    SigningKey,
    Trust,
    check_admitted,
    check_binding,
    generate_key,
    load_signing_key,
    load_trust,
    manifest_digest,
    sign_admitted,
    sign_binding,
    signing_key_from,
    write_keys,
)
from vcbus.core.bus.codec import TopicCodec, encode
from vcbus.core.step import Ctx
from vcbus.services.admission.core import (
    AdmissionLimits,
    Submission,
    decide,
    queues_from_manifests,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted(
    [
        *(path for path in ROOT.glob("examples/jobs/*.yaml") if path.name != "invalid.yaml"),
        *ROOT.glob("vcbus/services/cli/demo/*.yaml"),
        *ROOT.glob("vcbus/services/cli/demo/real/*.yaml"),
    ]
)

QUEUES = queues_from_manifests(
    yaml.safe_load_all((ROOT / "vcbus/services/cli/demo/00-queue.yaml").read_text())
)


def job_name(text: str) -> str:
    return str(yaml.safe_load(text)["metadata"]["name"])


def trust_of(*keys: SigningKey) -> Trust:
    table: dict[Role, dict[str, object]] = {role: {} for role in Role}
    for key in keys:
        table[key.role][key.id] = key.private.public_key()
    return Trust(table)  # type: ignore[arg-type]


ADMISSION = generate_key(Role.ADMISSION)
ALLOCATOR = generate_key(Role.ALLOCATOR)
TRUST = trust_of(ADMISSION, ALLOCATOR)


def admitted(text: str, offset: int = 1, now: datetime = NOW) -> JobAdmitted:
    """What the real admission core admits for a manifest (unsigned)."""
    submission = Submission(text.encode(), SubmissionOrigin(topic="t", partition=0, offset=offset))
    (event,) = decide(QUEUES, submission, Ctx(now=now), AdmissionLimits())
    assert isinstance(event, JobAdmitted), event
    return event


def job_texts() -> list[str]:
    out = []
    for path in EXAMPLES:
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "Job":
                out.append(yaml.safe_dump(document))
    return out


def binding(digest: str = "d" * 64, **changes: object) -> BindingCreated:
    pod = Pod(
        name="j-task-0",
        namespace="default",
        job=JobKey("default/j"),
        task="task",
        index=0,
        podgroup="j",
        uid="abcd1234-j-task-0-v0-i0",
        requests={"cpu": 100, "memory": 32 << 20},
        termination_grace_period_seconds=5,
        admitted_digest=digest,
    )
    pod = msgspec.structs.replace(pod, **changes)
    return BindingCreated(event_id="e", occurred_at=NOW, pod=pod, node=NodeName("real-0"))


def refused(call: object) -> str:
    with pytest.raises(LaunchRefusedError) as caught:
        call()  # type: ignore[operator]
    return caught.value.reason


# --- admitted jobs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", job_texts(), ids=lambda text: yaml.safe_load(text)["metadata"]["name"]
)
def test_an_admitted_job_verifies_when_read_back_from_its_record(text: str) -> None:
    signed = sign_admitted(ADMISSION, admitted(text))
    (read,) = TopicCodec[JobAdmitted](TOPIC_SPECS[Topic.JOBS_ADMITTED].union).decode_all(
        encode(signed)
    )  # type: ignore[misc]
    assert isinstance(read, JobAdmitted)
    check_admitted(TRUST, read)
    assert read.manifest_digest == manifest_digest(read.manifest) == signed.manifest_digest


def test_an_unsigned_admitted_job_is_refused_when_checked() -> None:
    """Attack: a bus writer publishes a jobs.admitted record of its own, unsigned."""
    event = admitted(job_texts()[0])
    assert refused(lambda: check_admitted(TRUST, event)) == REASON_UNSIGNED


def test_an_admitted_job_signed_by_another_key_is_refused_when_checked() -> None:
    """Attack: a bus writer signs its own jobs.admitted record with a key of its own."""
    event = sign_admitted(generate_key(Role.ADMISSION), admitted(job_texts()[0]))
    assert refused(lambda: check_admitted(TRUST, event)) == REASON_UNTRUSTED_KEY


def test_an_admitted_job_signed_by_the_allocator_is_refused_when_checked() -> None:
    """Attack: a holder of the allocator's key (or its signature) poses as admission."""
    event = sign_admitted(SigningKey(Role.ALLOCATOR, ALLOCATOR.private), admitted(job_texts()[0]))
    assert refused(lambda: check_admitted(TRUST, event)) == REASON_UNTRUSTED_KEY


def test_an_admitted_job_whose_manifest_was_changed_is_refused_when_checked() -> None:
    """Attack: a bus writer copies a signed record and changes the command it runs."""
    event = sign_admitted(ADMISSION, admitted(job_texts()[0]))
    task = event.manifest.spec.tasks[0]
    spec = dict(task.template.spec)
    spec["containers"] = [{"name": "main", "image": "x", "command": ["sh", "-c", "id"]}]
    changed_task = msgspec.structs.replace(
        task, template=msgspec.structs.replace(task.template, spec=spec)
    )
    changed = msgspec.structs.replace(
        event,
        manifest=msgspec.structs.replace(
            event.manifest,
            spec=msgspec.structs.replace(
                event.manifest.spec, tasks=(changed_task, *event.manifest.spec.tasks[1:])
            ),
        ),
    )
    assert refused(lambda: check_admitted(TRUST, changed)) == REASON_DIGEST_MISMATCH


def test_an_admitted_job_renamed_is_refused_when_checked() -> None:
    """Attack: a bus writer replays another job's signed record under its own job key."""
    event = sign_admitted(ADMISSION, admitted(job_texts()[0]))
    renamed = msgspec.structs.replace(event, job=JobKey("default/other"))
    assert refused(lambda: check_admitted(TRUST, renamed)) == REASON_BAD_SIGNATURE


def test_a_manifest_digest_ignores_fields_left_at_their_default_when_compared() -> None:
    # a reader of another version (a field added since, with its default) digests the same
    job = admitted(job_texts()[0]).manifest
    spelled = msgspec.json.decode(msgspec.json.encode(msgspec.to_builtins(job)), type=Job)
    assert manifest_digest(spelled) == manifest_digest(job)
    explicit = msgspec.structs.replace(job, kind="Jo" + "b")  # equal, not identical
    assert manifest_digest(explicit) == manifest_digest(job)


def test_signing_twice_gives_the_same_record_when_signed() -> None:
    event = admitted(job_texts()[0])
    assert encode(sign_admitted(ADMISSION, event)) == encode(sign_admitted(ADMISSION, event))


# --- bindings --------------------------------------------------------------------------------


def test_a_signed_binding_verifies_when_read_back_from_its_record() -> None:
    signed = sign_binding(ALLOCATOR, binding())
    (read,) = TopicCodec[BindingCreated](TOPIC_SPECS[Topic.BINDINGS].union).decode_all(
        encode(signed)
    )  # type: ignore[misc]
    assert isinstance(read, BindingCreated)
    check_binding(TRUST, read)


def test_an_unsigned_binding_is_refused_when_checked() -> None:
    """Attack: a bus writer publishes a binding of its own to a node's agent."""
    assert refused(lambda: check_binding(TRUST, binding())) == REASON_UNSIGNED


def test_a_binding_signed_by_admission_is_refused_when_checked() -> None:
    """Attack: a holder of admission's key poses as the allocator."""
    event = sign_binding(SigningKey(Role.ADMISSION, ADMISSION.private), binding())
    assert refused(lambda: check_binding(TRUST, event)) == REASON_UNTRUSTED_KEY


@pytest.mark.parametrize(
    "change",
    [
        {"uid": "../../victim"},
        {"name": "j-task-1"},
        {"namespace": "kube-system"},
        {"job": JobKey("default/other")},
        {"task": "other"},
        {"index": 7},
        {"requests": {"cpu": 64000, "memory": 32 << 20}},
        {"termination_grace_period_seconds": 3600},
        {"admitted_digest": "e" * 64},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_binding_changed_after_signing_is_refused_when_checked(change: dict[str, object]) -> None:
    """Attack: a bus writer copies a signed binding and changes a field the node acts on."""
    signed = sign_binding(ALLOCATOR, binding())
    changed = msgspec.structs.replace(signed, pod=msgspec.structs.replace(signed.pod, **change))
    assert refused(lambda: check_binding(TRUST, changed)) == REASON_BAD_SIGNATURE


def test_a_binding_sent_to_another_node_is_refused_when_checked() -> None:
    """Attack: a bus writer replays a node's signed binding to another node."""
    signed = sign_binding(ALLOCATOR, binding())
    moved = msgspec.structs.replace(signed, node=NodeName("real-1"))
    assert refused(lambda: check_binding(TRUST, moved)) == REASON_BAD_SIGNATURE


def test_a_garbled_signature_is_refused_when_checked() -> None:
    signed = sign_binding(ALLOCATOR, binding())
    garbled = msgspec.structs.replace(signed, signature=signed.signature[:-6] + "!!!!!!")
    assert refused(lambda: check_binding(TRUST, garbled)) == REASON_BAD_SIGNATURE


# --- key files -------------------------------------------------------------------------------


def test_written_keys_are_readable_by_their_owner_alone_and_kept_when_written_again(
    tmp_path: Path,
) -> None:
    paths = write_keys(tmp_path / "keys")
    for role, path in paths.items():
        assert path.name == KEY_FILES[role]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = {role: load_signing_key(path, role).id for role, path in paths.items()}
    again = write_keys(tmp_path / "keys")
    assert {role: load_signing_key(path, role).id for role, path in again.items()} == first
    trust = load_trust(tmp_path / "keys" / TRUST_FILE)
    assert {role: set(keys) for role, keys in trust.keys.items()} == {
        role: {key_id} for role, key_id in first.items()
    }
    signed = sign_binding(load_signing_key(paths[Role.ALLOCATOR], Role.ALLOCATOR), binding())
    check_binding(trust, signed)


def test_a_trust_file_with_a_bad_line_is_refused_naming_it_when_read(tmp_path: Path) -> None:
    path = tmp_path / "trust"
    path.write_text(f"# keys\n{ADMISSION.public_line()}\nallocator not-base64!\n")
    with pytest.raises(ValueError, match=r"trust:3: expected"):
        load_trust(path)


def test_a_trust_file_without_a_role_is_refused_naming_it_when_read(tmp_path: Path) -> None:
    path = tmp_path / "trust"
    path.write_text(f"{ADMISSION.public_line()}\n")
    with pytest.raises(ValueError, match="no public key for allocator"):
        load_trust(path)


def test_a_key_file_that_is_not_ed25519_is_refused_naming_it_when_read(tmp_path: Path) -> None:
    path = tmp_path / "admission.key"
    path.write_text("not a key\n")
    with pytest.raises(ValueError, match=r"admission\.key"):
        load_signing_key(path, Role.ADMISSION)


def test_a_key_setting_naming_a_missing_or_bad_file_is_refused_naming_the_setting(
    tmp_path: Path,
) -> None:
    assert signing_key_from({}, Role.ADMISSION) is None
    missing = {KEY_SETTINGS[Role.ALLOCATOR]: str(tmp_path / "missing.key")}
    with pytest.raises(ValueError, match=r"^VCBUS_ALLOCATOR_KEY: cannot read .*missing\.key"):
        signing_key_from(missing, Role.ALLOCATOR)
    (tmp_path / "bad.key").write_text("junk\n")
    bad = {KEY_SETTINGS[Role.ADMISSION]: str(tmp_path / "bad.key")}
    with pytest.raises(ValueError, match=r"^VCBUS_ADMISSION_KEY: .*bad\.key: not a PEM"):
        signing_key_from(bad, Role.ADMISSION)


def test_a_key_file_planted_as_a_link_is_refused_when_keys_are_written(tmp_path: Path) -> None:
    """Attack: a local user plants a link where ``vcbus up`` keeps a key, to have it
    chmod (or read) a file of its choosing."""
    folder = tmp_path / "keys"
    folder.mkdir()
    target = tmp_path / "victim"
    target.write_text("not a key\n")
    target.chmod(0o644)
    (folder / KEY_FILES[Role.ADMISSION]).symlink_to(target)
    with pytest.raises(ValueError, match="never a link"):
        write_keys(folder)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
