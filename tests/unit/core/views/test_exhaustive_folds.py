"""The folds of the status topics match every event of their topics; others pass them by.

Each fold declares the union it folds (``JobFoldEvent``, ``PodFoldEvent``, ...) and ends its
``match`` in ``assert_never``, so an event type added to one of those topics is a type
error (``make typecheck``) until the fold says what it does with it, never a silent skip.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

FOLDS = [
    "vcbus/core/views/jobs.py",
    "vcbus/core/views/pod_fold.py",
    "vcbus/core/views/events.py",
    "vcbus/core/views/live.py",
    "vcbus/services/simulation/outcome.py",
]


@pytest.mark.parametrize("path", FOLDS)
def test_every_fall_through_of_a_fold_is_assert_never(path: str) -> None:
    source = (ROOT / path).read_text()
    fall_throughs = re.findall(r"case _:\n\s*(.*)", source)
    assert fall_throughs
    assert all(line.startswith("assert_never(") for line in fall_throughs), fall_throughs
