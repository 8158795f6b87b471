"""Render the JSON Schema of every topic's union (``vcbus/contracts/schemas/<topic>.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from vcbus.contracts.objects.job import Job
from vcbus.contracts.topics import TOPICS

SCHEMA_DIR = Path(__file__).parent / "schemas"


def _schema_hook(kind: type) -> dict[str, object]:
    """Any JSON value, for the parts of a pod template kept as written."""
    if kind is object:
        return {"description": "any JSON value, kept as written"}
    raise NotImplementedError


def render_schemas() -> dict[str, str]:
    """Return ``{file name: JSON text}`` for every topic, plus the Job manifest."""
    out: dict[str, str] = {}
    for spec in TOPICS:
        schema = msgspec.json.schema(spec.union, schema_hook=_schema_hook)
        out[f"{spec.topic}.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    out["job.json"] = (
        json.dumps(msgspec.json.schema(Job, schema_hook=_schema_hook), indent=2, sort_keys=True)
        + "\n"
    )
    return out


def write_schemas(directory: Path = SCHEMA_DIR) -> list[str]:
    """Write the schemas and return the names of the files that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in sorted(render_schemas().items()):
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return changed


if __name__ == "__main__":
    for name in write_schemas():
        print(f"wrote vcbus/contracts/schemas/{name}")
