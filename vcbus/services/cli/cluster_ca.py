"""The cluster's CA: it issues each agent a certificate for its node's name (``openssl``).

``vcbus logs`` and the dashboard send the logs token only to an agent whose certificate
this CA issued for the node the pod is bound to (``vcbus.services.cli.logs``); a ``nodes``
record that names another address gets a failed TLS handshake, not the token. ``vcbus up
--agent`` makes a CA in its data dir and its agent's certificate; on one's own cluster the
same two ``openssl`` commands (docs/security.md) make them.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vcbus.services.admission import dns1123_subdomain_errors

DAYS = 825
"""How long a certificate is valid (the most browsers accept for a server's)."""


class CertificateError(RuntimeError):
    """``openssl`` is missing or refused; the message says which and its answer."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key (mode 0600), as PEM files."""

    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise CertificateError("`openssl` is needed to make the cluster's certificates")
    done = subprocess.run(
        [binary, *args], capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        raise CertificateError(
            f"openssl {args[0]} failed: {done.stderr.decode(errors='replace').strip()[-400:]}"
        )


def _key_only_for_us(path: Path) -> None:
    os.chmod(path, 0o600)


def make_ca(folder: Path, name: str = "vcbus cluster CA") -> KeyPair:
    """A new self-signed CA (EC P-256) in ``folder``: ``ca.pem``, ``ca.key``.

    Raises:
        CertificateError: ``openssl`` is missing or refused.
    """
    folder.mkdir(parents=True, exist_ok=True)
    pair = KeyPair(folder / "ca.pem", folder / "ca.key")
    pair.key.unlink(missing_ok=True)
    pair.key.touch(mode=0o600)
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(pair.key), "-out", str(pair.cert), "-days", str(DAYS),
        "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _key_only_for_us(pair.key)
    return pair


def ensure_ca(folder: Path) -> KeyPair:
    """The CA kept in ``folder`` (an earlier run's), or a new one made there.

    Raises:
        CertificateError: ``openssl`` is missing or refused.
    """
    pair = KeyPair(folder / "ca.pem", folder / "ca.key")
    if pair.cert.is_file() and pair.key.is_file():
        return pair
    return make_ca(folder)


def _subject_name(name: str) -> str:
    """``DNS:name``, or ``IP:address`` for an address (a broker advertised by its IP)."""
    try:
        return f"IP:{ipaddress.ip_address(name.strip('[]'))}"
    except ValueError:
        pass
    if dns1123_subdomain_errors(name):
        raise CertificateError(f"node name {name!r} is not a DNS name: no certificate for it")
    return f"DNS:{name}"


def issue(ca: KeyPair, node: str, folder: Path) -> KeyPair:
    """A certificate of ``ca`` for node ``node`` (its DNS name, or an address), in ``folder``.

    Raises:
        CertificateError: ``node`` is neither, or ``openssl`` is missing or refused.
    """
    subject = _subject_name(node)
    folder.mkdir(parents=True, exist_ok=True)
    pair = KeyPair(folder / f"{node}.pem", folder / f"{node}.key")
    request = folder / f"{node}.csr"
    extensions = folder / f"{node}.ext"
    extensions.write_text(
        f"subjectAltName={subject}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
    )
    pair.key.unlink(missing_ok=True)
    pair.key.touch(mode=0o600)
    try:
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(pair.key), "-out", str(request), "-subj", f"/CN={node}",
        )  # fmt: skip
        _key_only_for_us(pair.key)
        _openssl(
            "x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key),
            "-CAcreateserial", "-out", str(pair.cert), "-days", str(DAYS),
            "-extfile", str(extensions),
        )  # fmt: skip
    finally:
        request.unlink(missing_ok=True)
        extensions.unlink(missing_ok=True)
    return pair
