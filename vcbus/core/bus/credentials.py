"""The bus credentials ``vcbus up`` makes: one SCRAM user, kept in a file its user alone reads.

The file holds the ``KAFKA_*`` settings a client needs, one ``NAME=value`` a line; a
client names it in ``VCBUS_KAFKA_CREDENTIALS`` (``vcbus.core.runtime.settings`` reads it,
and a setting given in the environment wins over the file's). The broker gate
(:mod:`vcbus.core.bus.gate`) reads the same file for the user it lets in.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from vcbus.core.bus.scram import MECHANISM

CREDENTIALS_ENV = "VCBUS_KAFKA_CREDENTIALS"
"""The setting that names a credentials file."""
USER = "vcbus"
"""The one user of the embedded broker."""
FILE_NAME = "bus.credentials"
MAX_FILE_BYTES = 4096


class CredentialsError(ValueError):
    """The credentials file cannot be used; the message names it and why."""


@dataclass(frozen=True, slots=True)
class BusCredentials:
    """A SCRAM-SHA-512 user name and password."""

    username: str
    password: str = field(repr=False)

    @classmethod
    def make(cls) -> BusCredentials:
        """A new password (256 random bits) for :data:`USER`."""
        return cls(USER, secrets.token_urlsafe(32))

    def settings(self) -> dict[str, str]:
        """The ``KAFKA_*`` settings that log a client in with these credentials."""
        return {
            "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "KAFKA_SASL_MECHANISM": MECHANISM,
            "KAFKA_SASL_USERNAME": self.username,
            "KAFKA_SASL_PASSWORD": self.password,
        }

    def write(self, path: Path, extra: dict[str, str] | None = None) -> None:
        """Write the settings (and ``extra`` over them) to ``path``, 0600 from its creation."""
        settings = {**self.settings(), **(extra or {})}
        text = "".join(f"{name}={value}\n" for name, value in settings.items())
        tmp = path.with_name(path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        tmp.replace(path)


def read_settings(path: str) -> dict[str, str]:
    """The ``NAME=value`` lines of the credentials file at ``path``.

    Raises:
        CredentialsError: it cannot be read, is too large, or holds a line without ``=``.
    """
    try:
        with open(path, "rb") as source:
            data = source.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CredentialsError(f"{CREDENTIALS_ENV}={path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise CredentialsError(f"{CREDENTIALS_ENV}={path}: over {MAX_FILE_BYTES} bytes")
    out: dict[str, str] = {}
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.startswith("KAFKA_"):
            raise CredentialsError(
                f"{CREDENTIALS_ENV}={path}: line {number} is not KAFKA_NAME=value"
            )
        out[name.strip()] = value.strip()
    return out


def read(path: str) -> BusCredentials:
    """The user and password of the credentials file at ``path``.

    Raises:
        CredentialsError: as :func:`read_settings`, or no user or password in it.
    """
    values = read_settings(path)
    user, password = values.get("KAFKA_SASL_USERNAME"), values.get("KAFKA_SASL_PASSWORD")
    if not user or not password:
        raise CredentialsError(
            f"{CREDENTIALS_ENV}={path}: needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD"
        )
    return BusCredentials(user, password)
