"""No module under vcbus/ is over 600 lines: a module is small and named for what it owns.

The modules over the limit today are listed with the reason they still are; each leaves the
list when it is split, and the list only shrinks (an entry that no longer applies fails too).
"""

from __future__ import annotations

from tests.conftest import ROOT

LIMIT = 600

# Known offenders, each with the reason it still is; empty, and it stays so.
ALLOWED: dict[str, str] = {}


def sizes() -> dict[str, int]:
    """Lines of every module under vcbus/, by path from the repository root."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "vcbus").rglob("*.py"))
    }


def test_no_module_is_over_the_limit_unless_listed() -> None:
    over = {path: n for path, n in sizes().items() if n > LIMIT and path not in ALLOWED}
    assert over == {}, f"split these along what they own (at most {LIMIT} lines): {over}"


def test_the_allowed_list_names_only_modules_still_over_the_limit() -> None:
    now = sizes()
    stale = {path: now.get(path) for path in ALLOWED if now.get(path, 0) <= LIMIT}
    assert stale == {}, f"take these off ALLOWED (gone or within {LIMIT} lines): {stale}"
