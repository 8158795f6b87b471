"""Every reason code is defined once, in ``vcbus/contracts/reasons.py``: any other module
names it from there (an alias ``X = codes.X`` is a name, not a second definition)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT
from vcbus.contracts import reasons

HOME = ROOT / "vcbus" / "contracts" / "reasons.py"
CODES = {
    value: name
    for name, value in vars(reasons).items()
    if name.isupper() and isinstance(value, str)
}


def literal_definitions(path) -> list[tuple[int, str, str]]:
    """Each module-level ``NAME = "Code"`` of a code of the list, with its line."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(node.value, ast.Constant)
            and node.value.value in CODES
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            out += [(node.lineno, name, str(node.value.value)) for name in names]
    return out


def test_every_code_has_one_name_in_its_home() -> None:
    assert len(CODES) == len([n for n in vars(reasons) if n.isupper()]), "a code defined twice"
    assert {"OOMKilled", "DeadlineExceeded", "NodeLost", "QueueNotFound", "Unsigned"} <= set(CODES)


def test_no_module_but_the_home_defines_a_reason_code() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line} {name} = {value!r}"
        for path in sorted((ROOT / "vcbus").rglob("*.py"))
        if path != HOME
        for line, name, value in literal_definitions(path)
    }
    assert not found, sorted(found)
