"""The JSON Schemas committed in ``vcbus/contracts/schemas/`` are the ones the types give today.

On a difference, run ``make schemas`` and commit the result with the change that caused it.
"""

from __future__ import annotations

from vcbus.contracts._schemas import SCHEMA_DIR, render_schemas


def test_committed_schemas_match_the_types_when_rendered_again() -> None:
    rendered = render_schemas()
    committed = {path.name: path.read_text() for path in SCHEMA_DIR.glob("*.json")}
    assert sorted(committed) == sorted(rendered), "run make schemas"
    stale = [name for name, text in rendered.items() if committed[name] != text]
    assert not stale, f"stale schemas {stale}: run make schemas"
