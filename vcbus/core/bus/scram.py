"""The server side of SASL SCRAM-SHA-512 (RFC 5802, RFC 7677's SHA-512 variant): pure, no I/O.

The broker gate (:mod:`vcbus.core.bus.gate`) checks each client with it before the
client reaches the broker. A :class:`ScramServer` takes the client's two messages and
answers each; :attr:`ScramServer.user` is set only once the client proved it knows the
password. Anything unexpected raises :class:`ScramError`, whose message is the answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

MECHANISM = "SCRAM-SHA-512"
ITERATIONS = 4096
"""PBKDF2 rounds (Kafka's default for SCRAM credentials)."""


class ScramError(ValueError):
    """The client's message is malformed or its proof is wrong."""


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.digest(key, message, "sha512")


def _fields(message: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ScramError(f"malformed SCRAM message part {part[:40]!r}")
        fields.setdefault(name, value)
    return fields


@dataclass(frozen=True, slots=True)
class StoredCredential:
    """What the server keeps of a password: salt, rounds, stored and server keys."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def of(cls, password: str, *, iterations: int = ITERATIONS) -> StoredCredential:
        """Derive the credential of ``password`` with a fresh salt."""
        salt = secrets.token_bytes(24)
        salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
        client_key = _hmac(salted, b"Client Key")
        return cls(
            salt=salt,
            iterations=iterations,
            stored_key=hashlib.sha512(client_key).digest(),
            server_key=_hmac(salted, b"Server Key"),
        )


class ScramServer:
    """One client's SCRAM exchange: ``first`` then ``final``; ``user`` once it is proven."""

    def __init__(self, users: dict[str, StoredCredential]) -> None:
        self._users = users
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._claimed = ""
        self.user: str | None = None

    @property
    def started(self) -> bool:
        """Whether the client's first message was answered (its final one comes next)."""
        return bool(self._server_first)

    def first(self, message: bytes) -> bytes:
        """Answer the client-first message with the server-first message.

        Raises:
            ScramError: malformed, a channel binding asked for, or an unknown user (the
                exchange ends there: nothing in the answer would let the client go on).
        """
        text = message.decode("utf-8", "replace")
        gs2, sep, bare = text.partition(",,")
        if not sep or gs2 not in ("n", "y"):
            raise ScramError("SCRAM client-first must start with 'n,,' (no channel binding)")
        fields = _fields(bare)
        user, nonce = fields.get("n", ""), fields.get("r", "")
        if not user or not nonce:
            raise ScramError("SCRAM client-first needs a user name (n=) and a nonce (r=)")
        user = user.replace("=2C", ",").replace("=3D", "=")
        credential = self._users.get(user)
        if credential is None:
            raise ScramError(f"unknown user {user[:64]!r}")
        self._claimed = user
        self._client_first_bare = bare
        self._nonce = nonce + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        """Check the client-final message's proof; answer with the server's signature.

        Raises:
            ScramError: malformed, out of order, another nonce, or a wrong proof.
        """
        if not self._server_first or self.user is not None:
            raise ScramError("SCRAM client-final out of order")
        text = message.decode("utf-8", "replace")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ScramError("SCRAM client-final has no proof (p=)")
        fields = _fields(without_proof)
        if fields.get("r") != self._nonce:
            raise ScramError("SCRAM client-final answers another nonce")
        credential = self._users[self._claimed]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError as exc:
            raise ScramError("SCRAM proof is not base64") from exc
        signature = _hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("wrong password")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.sha512(client_key).digest(), credential.stored_key):
            raise ScramError("wrong password")
        self.user = self._claimed
        server_signature = _hmac(credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
