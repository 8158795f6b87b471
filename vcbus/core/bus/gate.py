"""The broker gate: SASL SCRAM-SHA-512 checked in front of the embedded broker.

Tansu 0.6, the embedded broker, has an ``--authentication`` switch, but it lets in a client
whose SCRAM exchange *failed* (an unknown user, or a wrong password: its session ends
"finished" either way, and every later request is served), and it cannot be given a user
when its storage is in memory. So ``vcbus up`` runs Tansu without authentication where no
client can reach it (a network namespace of its own, with nothing but loopback), and this
gate on the address clients use. For each connection the gate

- forwards ``ApiVersions`` (clients ask it first) and answers ``SaslHandshake`` (only
  SCRAM-SHA-512) and ``SaslAuthenticate`` itself, checking the proof
  (:mod:`vcbus.core.bus.scram`);
- closes the connection on any other request before the client is authenticated, and on
  a failed exchange, after the answer that says why (``SaslAuthenticationFailed``);
- once authenticated, copies bytes both ways, asks ``Metadata`` (v4 and later) not to
  create unknown topics, and closes a connection whose produce
  request holds a record batch larger than ``max_record_bytes`` (and its framing), or whose
  request is over :data:`MAX_REQUEST_BYTES`: Tansu has no record size limit of its own.

With a certificate and key the gate serves TLS (clients use ``SASL_SSL``), for a broker
that listens beyond loopback.

``python -m vcbus.core.bus.gate`` is the process :func:`vcbus.core.bus.broker.start_broker`
starts inside the new namespace: it brings loopback up, starts Tansu there, and serves the
listening socket it inherits from outside.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import fcntl
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections.abc import Mapping

from vcbus.core.bus import credentials
from vcbus.core.bus.scram import MECHANISM, ScramError, ScramServer, StoredCredential

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
UNSUPPORTED_VERSION = 35
SASL_AUTHENTICATION_FAILED = 58
MAX_SASL_FRAME_BYTES = 64 * 1024
"""Largest request before authentication (an ApiVersions or SASL message is far smaller)."""
PRODUCE = 0
METADATA = 3
BATCH_OVERHEAD_BYTES = 64 * 1024
"""What a record batch may carry beyond its records' bytes (its framing)."""
MAX_REQUEST_BYTES = 64 << 20
"""Largest request at all once authenticated (a produce request carries one batch per
partition)."""
COPY_CHUNK_BYTES = 256 * 1024
INNER_CONNECT_SECONDS = 5.0


class _RefusedError(Exception):
    """The connection ends here; the reason is for the gate's log."""


def _uvarint(data: bytes, offset: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if offset >= len(data) or shift > 28:
            raise _RefusedError("truncated varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def _put_uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _skip_tags(data: bytes, offset: int) -> int:
    count, offset = _uvarint(data, offset)
    for _ in range(count):
        _, offset = _uvarint(data, offset)
        size, offset = _uvarint(data, offset)
        offset += size
    return offset


def _header(frame: bytes) -> tuple[int, int, int, int]:
    """``api_key, api_version, correlation_id`` and where the (v1) header ends."""
    if len(frame) < 10:
        raise _RefusedError("request shorter than its header")
    api_key, api_version, correlation = struct.unpack_from(">hhi", frame)
    (client_len,) = struct.unpack_from(">h", frame, 8)
    return api_key, api_version, correlation, 10 + max(client_len, 0)


def _handshake_answer(frame: bytes, version: int, correlation: int, end: int) -> tuple[bytes, bool]:
    if len(frame) < end + 2:
        raise _RefusedError("SaslHandshake without a mechanism")
    (size,) = struct.unpack_from(">h", frame, end)
    mechanism = frame[end + 2 : end + 2 + max(size, 0)].decode("utf-8", "replace")
    ok = mechanism == MECHANISM and version == 1
    error = (
        0 if ok else (UNSUPPORTED_VERSION if mechanism == MECHANISM else UNSUPPORTED_SASL_MECHANISM)
    )
    name = MECHANISM.encode()
    body = struct.pack(">ihi", correlation, error, 1) + struct.pack(">h", len(name)) + name
    return body, ok


def _auth_bytes(frame: bytes, version: int, end: int) -> bytes:
    if version >= 2:
        end = _skip_tags(frame, end)
        size, end = _uvarint(frame, end)
        return frame[end : end + size - 1]
    if len(frame) < end + 4:
        raise _RefusedError("SaslAuthenticate without its bytes")
    (size,) = struct.unpack_from(">i", frame, end)
    return frame[end + 4 : end + 4 + max(size, 0)]


def _auth_answer(version: int, correlation: int, error: int, message: str, data: bytes) -> bytes:
    text = message.encode()
    if version >= 2:
        body = struct.pack(">ib", correlation, 0) + struct.pack(">h", error)
        body += _put_uvarint(len(text) + 1) + text + _put_uvarint(len(data) + 1) + data
        return body + struct.pack(">q", 0) + b"\x00"
    body = struct.pack(">ih", correlation, error) + struct.pack(">h", len(text)) + text
    body += struct.pack(">i", len(data)) + data
    return body + (struct.pack(">q", 0) if version >= 1 else b"")


def _largest_batch(frame: bytes) -> int:
    """The largest record batch of a produce request (v3 and later), in bytes.

    Raises:
        _RefusedError: an older version (record formats before batches), or a malformed request.
    """
    _, version, _, offset = _header(frame)
    if version < 3:
        raise _RefusedError(f"produce request v{version}: only v3 and later are let through")
    flexible = version >= 9
    try:
        if flexible:
            offset = _skip_tags(frame, offset)
            size, offset = _uvarint(frame, offset)
            offset += max(size - 1, 0) + 6
            topics, offset = _uvarint(frame, offset)
            topics -= 1
        else:
            (size,) = struct.unpack_from(">h", frame, offset)
            offset += 2 + max(size, 0) + 6
            (topics,) = struct.unpack_from(">i", frame, offset)
            offset += 4
        largest = 0
        for _ in range(max(topics, 0)):
            if flexible:
                size, offset = _uvarint(frame, offset)
                offset += max(size - 1, 0)
                partitions, offset = _uvarint(frame, offset)
                partitions -= 1
            else:
                (size,) = struct.unpack_from(">h", frame, offset)
                offset += 2 + max(size, 0)
                (partitions,) = struct.unpack_from(">i", frame, offset)
                offset += 4
            for _ in range(max(partitions, 0)):
                offset += 4
                if flexible:
                    size, offset = _uvarint(frame, offset)
                    size -= 1
                else:
                    (size,) = struct.unpack_from(">i", frame, offset)
                    offset += 4
                largest = max(largest, size)
                offset += max(size, 0)
                if flexible:
                    offset = _skip_tags(frame, offset)
            if flexible:
                offset = _skip_tags(frame, offset)
    except struct.error as exc:
        raise _RefusedError(f"malformed produce request: {exc}") from None
    return largest


def no_auto_creation(frame: bytes) -> bytes:
    """A ``Metadata`` request (v4 and later) with ``allow_auto_topic_creation`` false.

    Tansu would create each unknown topic a client asks about; it honours the flag, and has
    no setting of its own. Earlier versions carry no flag and pass as they are.

    Raises:
        _RefusedError: a malformed request.
    """
    _, version, _, offset = _header(frame)
    if version < 4:
        return frame
    try:
        if version >= 9:
            offset = _skip_tags(frame, offset)
            count, offset = _uvarint(frame, offset)
            for _ in range(max(count - 1, 0)):
                if version >= 10:
                    offset += 16
                size, offset = _uvarint(frame, offset)
                offset += max(size - 1, 0)
                offset = _skip_tags(frame, offset)
        else:
            (count,) = struct.unpack_from(">i", frame, offset)
            offset += 4
            for _ in range(max(count, 0)):
                (size,) = struct.unpack_from(">h", frame, offset)
                offset += 2 + max(size, 0)
    except struct.error as exc:
        raise _RefusedError(f"malformed metadata request: {exc}") from None
    if offset >= len(frame):
        raise _RefusedError("metadata request without its auto-creation flag")
    return frame[:offset] + b"\x00" + frame[offset + 1 :]


async def _read_frame(reader: asyncio.StreamReader, limit: int) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    if size < 0 or size > limit:
        raise _RefusedError(f"request of {size} bytes, over the limit of {limit}")
    return await reader.readexactly(size)


def _send(writer: asyncio.StreamWriter, body: bytes) -> None:
    writer.write(struct.pack(">i", len(body)) + body)


class Gate:
    """Lets a client through to ``inner`` once it proves a password of ``users``."""

    def __init__(
        self,
        inner: tuple[str, int],
        users: Mapping[str, StoredCredential],
        *,
        max_record_bytes: int,
    ) -> None:
        self._inner = inner
        self._users = dict(users)
        self._max_batch = max_record_bytes + BATCH_OVERHEAD_BYTES
        self.refused = 0
        """Connections closed before or while authenticating (for tests and the log)."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one client connection to its end."""
        inner: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            async with asyncio.timeout(INNER_CONNECT_SECONDS):
                inner = await asyncio.open_connection(*self._inner)
            if await self._authenticate(reader, writer, inner):
                await self._relay(reader, writer, *inner)
        except (_RefusedError, asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            self.refused += 1
        finally:
            for each in (writer, inner[1] if inner else None):
                if each is not None:
                    each.close()
                    with contextlib.suppress(ConnectionError, OSError):
                        await each.wait_closed()

    async def _authenticate(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        inner: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> bool:
        server = ScramServer(self._users)
        handshaken = False
        while True:
            frame = await _read_frame(reader, MAX_SASL_FRAME_BYTES)
            api_key, version, correlation, end = _header(frame)
            if api_key == API_VERSIONS:
                _send(inner[1], frame)
                _send(writer, await _read_frame(inner[0], MAX_SASL_FRAME_BYTES))
            elif api_key == SASL_HANDSHAKE:
                answer, handshaken = _handshake_answer(frame, version, correlation, end)
                _send(writer, answer)
                if not handshaken:
                    await writer.drain()
                    raise _RefusedError("SaslHandshake for another mechanism or version")
            elif api_key == SASL_AUTHENTICATE and handshaken:
                data = _auth_bytes(frame, version, end)
                try:
                    reply = server.final(data) if server.started else server.first(data)
                except ScramError as exc:
                    _send(
                        writer,
                        _auth_answer(
                            version,
                            correlation,
                            SASL_AUTHENTICATION_FAILED,
                            f"authentication failed: {exc}",
                            b"",
                        ),
                    )
                    await writer.drain()
                    raise _RefusedError(str(exc)) from None
                _send(writer, _auth_answer(version, correlation, 0, "", reply))
                if server.user is not None:
                    await writer.drain()
                    return True
            else:
                raise _RefusedError(f"request {api_key} before authentication")
            await writer.drain()

    async def _relay(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        inner_reader: asyncio.StreamReader,
        inner_writer: asyncio.StreamWriter,
    ) -> None:
        async def upstream() -> None:
            while True:
                frame = await _read_frame(reader, MAX_REQUEST_BYTES)
                api_key = struct.unpack_from(">h", frame)[0] if len(frame) >= 2 else -1
                if api_key == METADATA:
                    frame = no_auto_creation(frame)
                elif api_key == PRODUCE:
                    largest = _largest_batch(frame)
                    if largest > self._max_batch:
                        raise _RefusedError(
                            f"a record batch of {largest} bytes, over {self._max_batch}"
                        )
                _send(inner_writer, frame)
                await inner_writer.drain()

        async def downstream() -> None:
            while chunk := await inner_reader.read(COPY_CHUNK_BYTES):
                writer.write(chunk)
                await writer.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(
                    asyncio.CancelledError,
                    _RefusedError,
                    asyncio.IncompleteReadError,
                    ConnectionError,
                ):
                    await task


SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_PDEATHSIG = 1


def loopback_up() -> None:
    """Bring ``lo`` up in this (new) network namespace, as ``ip link set lo up`` does."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack_from("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def _die_with_parent() -> None:
    """In the broker's child: SIGKILL when the gate dies, however it dies (``PR_SET_PDEATHSIG``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _start_tansu(
    binary: str, port: int, advertised: str, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [
            binary,
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(env),
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - prctl only, before exec
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the broker exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return process
        time.sleep(0.05)
    process.kill()
    raise SystemExit("the broker did not listen within 20s")


async def _serve(
    sock: socket.socket,
    gate: Gate,
    tansu: subprocess.Popen[bytes],
    tls: ssl.SSLContext | None,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    server = await asyncio.start_server(
        gate.handle,
        sock=sock,
        limit=COPY_CHUNK_BYTES,
        ssl=tls,
        ssl_handshake_timeout=10 if tls is not None else None,
    )
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    async with server:
        while not stop.is_set() and tansu.poll() is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """The gate's process: loopback up, Tansu on it, the gate on the inherited socket."""
    parser = argparse.ArgumentParser(prog="python -m vcbus.core.bus.gate")
    parser.add_argument("--fd", type=int, required=True, help="the listening socket, inherited")
    parser.add_argument("--advertised", required=True, help="tcp://host:port clients use")
    parser.add_argument("--credentials", required=True, help="the credentials file")
    parser.add_argument("--tansu", required=True, help="the broker binary")
    parser.add_argument("--max-record-bytes", type=int, required=True)
    parser.add_argument("--inner-port", type=int, default=9092)
    parser.add_argument("--certfile", default="", help="TLS: the gate's certificate")
    parser.add_argument("--keyfile", default="", help="TLS: its key")
    args = parser.parse_args(argv)
    tls = None
    if args.certfile:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.certfile, args.keyfile or None)
    user = credentials.read(args.credentials)
    loopback_up()
    sock = socket.socket(fileno=args.fd)
    import os  # noqa: PLC0415 - only the process needs the environment

    env = {k: v for k, v in os.environ.items() if k not in ("OTEL_EXPORTER_OTLP_ENDPOINT",)}
    tansu = _start_tansu(args.tansu, args.inner_port, args.advertised, env)
    gate = Gate(
        ("127.0.0.1", args.inner_port),
        {user.username: StoredCredential.of(user.password)},
        max_record_bytes=args.max_record_bytes,
    )
    try:
        asyncio.run(_serve(sock, gate, tansu, tls))
    finally:
        tansu.terminate()
        try:
            tansu.wait(timeout=10)
        except subprocess.TimeoutExpired:
            tansu.kill()
            tansu.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
