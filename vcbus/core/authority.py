"""Launch authority: only the control plane can make a node run something.

Admission signs each job it admits (the digest of the admitted manifest, on the
``jobs.admitted`` record); the allocator signs each binding (the pod's identity, its node,
its requests and grace period, and the digest of the admitted manifest its pod was made
from, on ``bindings``). A node agent verifies both with public keys alone before it
starts anything, as slurmd verifies slurmctld's job credential: a record a bus writer
forged, or changed, starts nothing. docs/security.md is the threat model.

Signatures are Ed25519 (deterministic: the same record signed twice is the same bytes).
A signature's text is ``ed25519:<key id>:<base64>``; the key id (16 hex digits of the
public key's SHA-256) lets an agent trust several keys of a role (a rotation).

What is signed is a canonical text built from the fields, not the record's bytes: a
reader of another version (fields added since, with defaults) verifies the same message.
The manifest's digest leaves out every field whose value equals its default (compared by
value), so a field added later with a default does not change the digest of a job that
does not set it.

Pure: keys and bytes in, signatures and verdicts out; the key files are read and written by
:func:`load_signing_key`, :func:`load_trust` and :func:`write_keys` alone.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from vcbus.contracts import reasons as codes
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.objects.job import Job


class Role(enum.StrEnum):
    """Who signs what: admission the jobs it admits, the allocator the bindings."""

    ADMISSION = "admission"
    ALLOCATOR = "allocator"


SCHEME = "ed25519"
KEY_FILES = {Role.ADMISSION: "admission.key", Role.ALLOCATOR: "allocator.key"}
"""The private key files :func:`write_keys` makes (PKCS#8 PEM, mode 0600)."""
TRUST_FILE = "trust"
"""The public keys an agent trusts, one ``<role> <base64 public key>`` a line."""
KEY_SETTINGS = {Role.ADMISSION: "VCBUS_ADMISSION_KEY", Role.ALLOCATOR: "VCBUS_ALLOCATOR_KEY"}
"""The setting naming each signing service's private key file (docs/configuration.md)."""
TRUST_SETTING = "VCBUS_AGENT_TRUST"
"""The setting naming an agent's trust file (or ``vcbus agent --trust``)."""

REASON_UNSIGNED = codes.REASON_UNSIGNED
REASON_UNTRUSTED_KEY = codes.REASON_UNTRUSTED_KEY
REASON_BAD_SIGNATURE = codes.REASON_BAD_SIGNATURE
REASON_DIGEST_MISMATCH = codes.REASON_DIGEST_MISMATCH
REASON_SPEC_NOT_ADMITTED = codes.REASON_SPEC_NOT_ADMITTED

_ADMITTED = "vcbus.admitted.v1"
_BINDING = "vcbus.binding.v1"
_ENCODER = msgspec.json.Encoder(order="sorted")


class LaunchRefusedError(ValueError):
    """A record that may not make a node run anything; ``reason`` is its code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def key_id(public: Ed25519PublicKey) -> str:
    """The 16 hex digits that name a public key in signatures and messages."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class SigningKey:
    """A role's private key: what admission or the allocator signs with."""

    role: Role
    private: Ed25519PrivateKey
    id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", key_id(self.private.public_key()))

    def sign(self, message: bytes) -> str:
        """The signature text of ``message``."""
        signature = base64.b64encode(self.private.sign(message)).decode()
        return f"{SCHEME}:{self.id}:{signature}"

    def public_line(self) -> str:
        """This key's line of a trust file."""
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return f"{self.role} {base64.b64encode(raw).decode()}"


@dataclass(frozen=True)
class Trust:
    """The public keys an agent trusts, by role and key id."""

    keys: Mapping[Role, Mapping[str, Ed25519PublicKey]]

    def verify(self, role: Role, message: bytes, signature: str, what: str) -> None:
        """Check ``signature`` is a trusted ``role`` key's signature of ``message``.

        Raises:
            LaunchRefusedError: unsigned, signed by a key not trusted for ``role``, or a
                signature that does not verify; the message names ``what`` and why.
        """
        if not signature:
            raise LaunchRefusedError(REASON_UNSIGNED, f"{what} is not signed by {role}")
        scheme, _, rest = signature.partition(":")
        signer, _, text = rest.partition(":")
        public = self.keys.get(role, {}).get(signer) if scheme == SCHEME else None
        if public is None:
            raise LaunchRefusedError(
                REASON_UNTRUSTED_KEY,
                f"{what} is signed by key {signer or '?'} ({scheme or '?'}), "
                f"which this node does not trust for {role}",
            )
        try:
            public.verify(base64.b64decode(text, validate=True), message)
        except (InvalidSignature, binascii.Error, ValueError):
            raise LaunchRefusedError(
                REASON_BAD_SIGNATURE,
                f"{what}: the signature of {role} key {signer} does not match the record "
                "(forged or changed after signing)",
            ) from None


# --- what is signed --------------------------------------------------------------------------


def manifest_digest(manifest: Job) -> str:
    """The SHA-256 (hex) of the admitted manifest's canonical form.

    Keys sorted; a field equal to its default (by value) left out, at every level.
    """
    return hashlib.sha256(_ENCODER.encode(_canonical(manifest))).hexdigest()


def admitted_message(event: JobAdmitted) -> bytes:
    """What admission signs for an admitted job: its key and its manifest's digest."""
    return _ENCODER.encode([_ADMITTED, str(event.job), event.manifest_digest])


def binding_message(binding: BindingCreated) -> bytes:
    """What the allocator signs for a binding: every field of it a node acts on."""
    pod = binding.pod
    grace = pod.termination_grace_period_seconds
    return _ENCODER.encode(
        [
            _BINDING,
            str(binding.node),
            pod.uid,
            pod.namespace,
            pod.name,
            str(pod.job),
            pod.task,
            pod.index,
            sorted(pod.requests.items()),
            -1 if grace is None else grace,
            pod.admitted_digest,
        ]
    )


def sign_admitted(key: SigningKey, event: JobAdmitted) -> JobAdmitted:
    """The admitted job with its manifest's digest and admission's signature."""
    digested = msgspec.structs.replace(event, manifest_digest=manifest_digest(event.manifest))
    return msgspec.structs.replace(digested, signature=key.sign(admitted_message(digested)))


def sign_binding(key: SigningKey, binding: BindingCreated) -> BindingCreated:
    """The binding with the allocator's signature."""
    return msgspec.structs.replace(binding, signature=key.sign(binding_message(binding)))


def check_admitted(trust: Trust, event: JobAdmitted) -> None:
    """Check an admitted job is admission's, unchanged.

    Raises:
        LaunchRefusedError: unsigned, mis-signed, or a manifest whose digest is not the
            signed one.
    """
    what = f"admitted job {event.job}"
    trust.verify(Role.ADMISSION, admitted_message(event), event.signature, what)
    digest = manifest_digest(event.manifest)
    if digest != event.manifest_digest:
        raise LaunchRefusedError(
            REASON_DIGEST_MISMATCH,
            f"{what}: its manifest's digest is {digest[:16]}, the signed digest "
            f"{event.manifest_digest[:16]} (the manifest was changed after admission)",
        )


def check_binding(trust: Trust, binding: BindingCreated) -> None:
    """Check a binding is the allocator's, unchanged.

    Raises:
        LaunchRefusedError: unsigned or mis-signed.
    """
    what = f"binding of pod {binding.pod.namespace}/{binding.pod.name} (uid {binding.pod.uid})"
    trust.verify(Role.ALLOCATOR, binding_message(binding), binding.signature, what)


# --- key files -------------------------------------------------------------------------------


def generate_key(role: Role) -> SigningKey:
    """A new private key for ``role``."""
    return SigningKey(role, Ed25519PrivateKey.generate())


def write_keys(directory: Path) -> dict[Role, Path]:
    """Make (or keep) a key of each role in ``directory``, and the trust file of both.

    Private key files are created mode 0600 (never readable by another user, nor by a
    pod); an existing one is kept, so a restart keeps its keys. Returns each role's key file.

    Raises:
        ValueError: a key's path is a link or not a regular file.
    """
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[Role, Path] = {}
    lines: list[str] = []
    for role, name in KEY_FILES.items():
        path = directory / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise ValueError(f"{path}: not a regular file; a key file is never a link")
        if not path.exists():
            pem = generate_key(role).private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(pem)
        os.chmod(path, 0o600)
        paths[role] = path
        lines.append(load_signing_key(path, role).public_line())
    trust = directory / TRUST_FILE
    trust.write_text("".join(f"{line}\n" for line in lines))
    return paths


def signing_key_from(settings: Mapping[str, str], role: Role) -> SigningKey | None:
    """The role's key named by its setting (:data:`KEY_SETTINGS`), ``None`` when unset.

    Raises:
        ValueError: the file cannot be read, or not as an Ed25519 private key; the message
            names the setting.
    """
    name = KEY_SETTINGS[role]
    path = settings.get(name, "")
    if not path:
        return None
    try:
        return load_signing_key(Path(path), role)
    except OSError as exc:
        raise ValueError(f"{name}: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def load_signing_key(path: Path, role: Role) -> SigningKey:
    """A role's private key from a PKCS#8 PEM file (``openssl genpkey -algorithm ed25519``).

    Raises:
        ValueError: not an Ed25519 private key; the message names the file.
    """
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a PEM private key without a passphrase: {exc}") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 private key")
    return SigningKey(role, private)


def load_trust(path: Path) -> Trust:
    """The public keys of a trust file: ``<role> <base64 of the 32-byte key>`` a line.

    Blank lines and lines starting with ``#`` are skipped; a role may have several keys.

    Raises:
        ValueError: a line that does not read, named by its number.
    """
    keys: dict[Role, dict[str, Ed25519PublicKey]] = {role: {} for role in Role}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        role_name, _, encoded = text.partition(" ")
        try:
            role = Role(role_name)
            public = Ed25519PublicKey.from_public_bytes(
                base64.b64decode(encoded.strip(), validate=True)
            )
        except (ValueError, binascii.Error) as exc:
            raise ValueError(
                f"{path}:{number}: expected '<admission|allocator> <base64 Ed25519 public key>': "
                f"{exc}"
            ) from None
        keys[role][key_id(public)] = public
    missing = [str(role) for role in Role if not keys[role]]
    if missing:
        raise ValueError(f"{path}: no public key for {', '.join(missing)}")
    return Trust(keys)


# --- the canonical form ------------------------------------------------------------------------


def _canonical(value: object) -> object:
    if isinstance(value, msgspec.Struct):
        out: dict[str, object] = {}
        for name, encoded, default in _fields(type(value)):
            item = getattr(value, name)
            if default is not _NO_DEFAULT and item == default:
                continue
            out[encoded] = _canonical(item)
        return out
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


_NO_DEFAULT = object()


@cache
def _fields(kind: type[msgspec.Struct]) -> tuple[tuple[str, str, object], ...]:
    out = []
    for info in msgspec.structs.fields(kind):
        if info.default is not msgspec.NODEFAULT:
            default: object = info.default
        elif info.default_factory is not msgspec.NODEFAULT:
            default = info.default_factory()
        else:
            default = _NO_DEFAULT
        out.append((info.name, info.encode_name, default))
    return tuple(out)
