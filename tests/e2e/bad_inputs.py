"""Seeded generators of bad input: submissions admission must reject, records no reader decodes.

``bad_submissions(count, seed)`` mixes malformed JSON and YAML, wrong types, deep nesting,
huge numbers, payloads over the size limit (a few of 5 MiB), ``dependsOn`` cycles, unknown
fields beside a real fault, binary garbage and empty or scalar documents — every one a
submission admission must answer on ``jobs.rejected``. ``garbage_records(topic, count,
seed)`` gives values for an internal topic that its contract cannot decode: binary, cut
JSON, a known ``type`` with wrong field types, deep nesting, tombstones.
"""

from __future__ import annotations

import json
import random  # noqa: TID251 - the tests' own seeded generator, not a service's
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from vcbus.contracts import TOPIC_SPECS, Event, Topic
from vcbus.core.bus.codec import Poison, TopicCodec

MIB = 1 << 20
BIG_PAYLOADS = 3
"""How many 5 MiB submissions a batch holds (the rest are small, to keep the run short)."""


@dataclass(frozen=True, slots=True)
class BadInput:
    """One record to publish: key, value and the kind of fault it carries."""

    kind: str
    key: bytes | None
    value: bytes | None


def _job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": 2,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


def _malformed_json(rng: random.Random, name: str) -> bytes:
    text = json.dumps(_job(name))
    match rng.randrange(3):
        case 0:
            return text[: rng.randrange(1, len(text) - 1)].encode()
        case 1:
            # between two members, where a stray bracket, comma or colon breaks the document
            gaps = [n + 2 for n in range(len(text)) if text.startswith(", ", n)]
            at = rng.choice(gaps)
            return (text[:at] + rng.choice(("}", "]", ",", ":")) + text[at:]).encode()
        case _:
            return text.replace(":", "=", 1).encode()


def _malformed_yaml(rng: random.Random, name: str) -> bytes:
    lines = yaml.safe_dump(_job(name)).splitlines()
    at = rng.randrange(1, len(lines))
    match rng.randrange(3):
        case 0:
            lines[at] = "\t" + lines[at].lstrip()
        case 1:
            lines.insert(at, 'broken: "never closed')
        case _:
            lines.append("]: [")
    return "\n".join(lines).encode()


_WRONG_TYPES: tuple[tuple[tuple[str | int, ...], object], ...] = (
    (("metadata", "name"), 12),
    (("metadata",), "a string"),
    (("spec", "tasks"), {"not": "a list"}),
    (("spec", "tasks"), "x"),
    (("spec", "tasks", 0, "replicas"), "two"),
    (("spec", "tasks", 0, "replicas"), [2]),
    (("spec", "minAvailable"), "all"),
    (("spec", "tasks", 0, "template"), 5),
    (("spec", "tasks", 0, "template", "spec", "containers"), "c"),
    (("spec", "tasks", 0, "template", "spec", "containers", 0, "resources"), ["cpu"]),
    (("spec",), None),
)


def _set(document: Any, path: tuple[str | int, ...], value: object) -> None:
    for part in path[:-1]:
        document = document[part]
    document[path[-1]] = value


def _wrong_types(rng: random.Random, name: str) -> bytes:
    job = _job(name)
    path, value = rng.choice(_WRONG_TYPES)
    _set(job, path, value)
    return json.dumps(job).encode()


def _deep_nesting(rng: random.Random, name: str) -> bytes:
    depth = rng.randrange(200, 20_000)
    match rng.randrange(3):
        case 0:
            return ("[" * depth + "]" * depth).encode()
        case 1:
            return ('{"a":' * depth + "1" + "}" * depth).encode()
        case _:
            job = _job(name)
            inner: Any = "x"
            for _ in range(min(depth, 900)):
                inner = {"n": inner}
            job["metadata"]["labels"] = inner
            return json.dumps(job).encode()


def _huge_numbers(rng: random.Random, name: str) -> bytes:
    job = _job(name)
    match rng.randrange(4):
        case 0:
            job["spec"]["tasks"][0]["replicas"] = 10 ** rng.randrange(20, 400)
        case 1:
            job["spec"]["minAvailable"] = -(10 ** rng.randrange(20, 400))
        case 2:
            requests = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]
            requests["requests"]["cpu"] = f"1e{rng.randrange(400, 9999)}"
        case _:
            job["spec"]["tasks"][0]["replicas"] = 1e308
            job["spec"]["minAvailable"] = float("inf")
    return json.dumps(job).encode()


def _cycle(rng: random.Random, name: str) -> bytes:
    job = _job(name)
    size = rng.randrange(2, 6)
    task = job["spec"]["tasks"][0]
    tasks = []
    for n in range(size):
        copy = json.loads(json.dumps(task))
        copy["name"] = f"t{n}"
        copy["dependsOn"] = {"name": [f"t{(n + 1) % size}"]}
        tasks.append(copy)
    job["spec"]["tasks"] = tasks
    job["spec"]["minAvailable"] = 2 * size
    return json.dumps(job).encode()


def _unknown_fields(rng: random.Random, name: str) -> bytes:
    job = _job(name)
    job["surprise"] = {"nested": [1, 2, 3]}
    job["spec"][f"x-{rng.randrange(1000)}"] = "unknown"
    job["spec"]["tasks"][0]["colour"] = "blue"
    # unknown fields are kept and ignored (Volcano's files carry many); the fault is here:
    job[rng.choice(("kind", "apiVersion"))] = rng.choice(("Jobb", "batch.volcano.sh/v9", ""))
    return json.dumps(job).encode()


def _binary(rng: random.Random, name: str) -> bytes:
    return b"\xff" + rng.randbytes(rng.randrange(1, 4096))


def _scalar(rng: random.Random, name: str) -> bytes:
    return rng.choice((b"", b"   \n", b"null", b"[]", b"42", b'"a job"', b"---\n---\n", b"\x00"))


SMALL: tuple[tuple[str, Callable[[random.Random, str], bytes]], ...] = (
    ("malformed-json", _malformed_json),
    ("malformed-yaml", _malformed_yaml),
    ("wrong-types", _wrong_types),
    ("deep-nesting", _deep_nesting),
    ("huge-numbers", _huge_numbers),
    ("cycle", _cycle),
    ("unknown-fields", _unknown_fields),
    ("binary", _binary),
    ("scalar", _scalar),
)


def _big(rng: random.Random, name: str, size: int) -> bytes:
    job = _job(name)
    job["metadata"]["annotations"] = {"blob": "x" * size}
    return json.dumps(job).encode()


def bad_submissions(count: int, seed: int) -> list[BadInput]:
    """``count`` submissions admission must reject, in publishing order.

    Three are 5 MiB and three 1.5 MiB (over the default 1 MiB limit); the rest are small.
    Keys are ``bad/<n>``, sometimes none or not UTF-8.
    """
    rng = random.Random(seed)
    out: list[BadInput] = []
    big_at = {rng.randrange(count): 5 * MIB for _ in range(BIG_PAYLOADS)}
    big_at |= {rng.randrange(count): 3 * MIB // 2 for _ in range(BIG_PAYLOADS)}
    for n in range(count):
        name = f"bad-{n}"
        key: bytes | None = rng.choice((f"bad/{name}".encode(), None, b"\xff\xfe"))
        if n in big_at:
            out.append(BadInput("too-large", key, _big(rng, name, big_at[n])))
            continue
        kind, make = rng.choice(SMALL)
        out.append(BadInput(kind, key, make(rng, name)))
    return out


def _wrong_typed(tag: str) -> bytes:
    return json.dumps({"type": tag, "event_id": 7, "occurred_at": [], "job": {"x": 1}}).encode()


def garbage_records(topic: Topic, count: int, seed: int) -> list[BadInput]:
    """``count`` values for ``topic`` that its contract cannot decode (checked here)."""
    rng = random.Random(f"{topic}-{seed}")
    codec = TopicCodec[Event](TOPIC_SPECS[topic].union)
    tags = sorted(codec.tags)
    makers: tuple[tuple[str, Callable[[], bytes | None]], ...] = (
        ("binary", lambda: b"\xff" + rng.randbytes(rng.randrange(1, 512))),
        ("cut-json", lambda: _wrong_typed(rng.choice(tags))[: rng.randrange(2, 20)]),
        ("wrong-types", lambda: _wrong_typed(rng.choice(tags))),
        ("deep-nesting", lambda: b'{"type":' * rng.randrange(5_000, 50_000)),
        ("not-an-object", lambda: rng.choice((b"[]", b"42", b'"x"', b"null"))),
        ("tombstone", lambda: None),
    )
    out: list[BadInput] = []
    for _ in range(count):
        kind, make = rng.choice(makers)
        value = make()
        assert isinstance(codec.decode_all(value), Poison), (topic, kind, value)
        key = rng.choice((b"garbage", None)) if value is not None else b"tombstone"
        out.append(BadInput(kind, key, value))
    return out
