"""The gate's pure parts: the SCRAM-SHA-512 server against aiokafka's own client, and the
produce request's largest batch, in both the classic and the flexible encoding."""

from __future__ import annotations

import struct

import pytest
from aiokafka.conn import ScramAuthenticator

from vcbus.core.bus.gate import _largest_batch, _put_uvarint, no_auto_creation
from vcbus.core.bus.scram import ScramError, ScramServer, StoredCredential

USERS = {"vcbus": StoredCredential.of("s3cret", iterations=4096)}


def _client(password: str, user: str = "vcbus") -> ScramAuthenticator:
    return ScramAuthenticator(
        loop=None,
        sasl_plain_password=password,
        sasl_plain_username=user,
        sasl_mechanism="SCRAM-SHA-512",
    )


def test_the_right_password_is_proven_and_the_server_signs_back() -> None:
    client, server = _client("s3cret"), ScramServer(USERS)
    server_first = server.first(client.first_message().encode())
    client.process_server_first_message(server_first.decode())
    server_final = server.final(client.final_message().encode())
    client.process_server_final_message(server_final.decode())  # raises on a bad signature
    assert server.user == "vcbus"


def test_a_wrong_password_is_refused_and_no_user_is_set() -> None:
    client, server = _client("guess"), ScramServer(USERS)
    client.process_server_first_message(server.first(client.first_message().encode()).decode())
    with pytest.raises(ScramError, match="wrong password"):
        server.final(client.final_message().encode())
    assert server.user is None


def test_an_unknown_user_ends_the_exchange_at_its_first_message() -> None:
    with pytest.raises(ScramError, match="unknown user 'attacker'"):
        ScramServer(USERS).first(_client("x", "attacker").first_message().encode())


def test_a_proof_for_another_exchange_is_refused() -> None:
    """A proof replayed from an earlier exchange answers that exchange's nonce."""
    client = _client("s3cret")
    first = ScramServer(USERS)
    client.process_server_first_message(first.first(client.first_message().encode()).decode())
    replayed = client.final_message().encode()
    second = ScramServer(USERS)
    second.first(_client("s3cret").first_message().encode())
    with pytest.raises(ScramError, match="another nonce"):
        second.final(replayed)


def _header(version: int) -> bytes:
    return struct.pack(">hhih", 0, version, 7, 4) + b"test"


def test_the_largest_batch_of_a_classic_produce_request() -> None:
    batches = [b"a" * 10, b"b" * 300]
    body = struct.pack(">h", -1) + struct.pack(">hi", 1, 1000) + struct.pack(">i", 1)
    body += struct.pack(">h", 5) + b"topic" + struct.pack(">i", len(batches))
    for index, batch in enumerate(batches):
        body += struct.pack(">ii", index, len(batch)) + batch
    assert _largest_batch(_header(7) + body) == 300


def test_the_largest_batch_of_a_flexible_produce_request() -> None:
    batch = b"c" * 2000
    body = b"\x00"  # header tags
    body += _put_uvarint(0)  # null transactional id
    body += struct.pack(">hi", 1, 1000) + _put_uvarint(2)  # one topic
    body += _put_uvarint(6) + b"topic" + _put_uvarint(2)  # one partition
    body += struct.pack(">i", 0) + _put_uvarint(len(batch) + 1) + batch + b"\x00"
    body += b"\x00" + b"\x00"  # topic tags, request tags
    assert _largest_batch(_header(9) + body) == 2000


def _metadata(version: int, topics: list[str]) -> bytes:
    header = struct.pack(">hhih", 3, version, 7, 4) + b"test"
    if version >= 9:
        body = b"\x00" + _put_uvarint(len(topics) + 1)
        for topic in topics:
            body += (b"\x00" * 16 if version >= 10 else b"") + _put_uvarint(len(topic) + 1)
            body += topic.encode() + b"\x00"
        return header + body + b"\x01\x00\x00\x00"
    body = struct.pack(">i", len(topics))
    for topic in topics:
        body += struct.pack(">h", len(topic)) + topic.encode()
    return header + body + b"\x01" + (b"\x00\x00" if version >= 8 else b"")


@pytest.mark.parametrize("version", [4, 5, 8, 9, 10, 12])
def test_a_metadata_request_is_asked_not_to_create_topics(version: int) -> None:
    frame = _metadata(version, ["one", "two"])
    rewritten = no_auto_creation(frame)
    assert len(rewritten) == len(frame)
    assert rewritten != frame  # the flag, true, became false
    assert no_auto_creation(rewritten) == rewritten


def test_a_metadata_request_before_v4_has_no_flag_and_passes() -> None:
    frame = struct.pack(">hhih", 3, 1, 7, 4) + b"test" + struct.pack(">i", 0)
    assert no_auto_creation(frame) == frame
