"""Display units: cpu in cores, memory in Gi, the one place every view takes them from."""

from __future__ import annotations

import pytest

from vcbus.core.units import show_amount, show_resources, show_used, unit_of


@pytest.mark.parametrize(
    ("name", "amount", "shown"),
    [
        ("cpu", 31100, "31.1"),
        ("cpu", 64000, "64"),
        ("cpu", 250, "0.25"),
        ("cpu", 1, "0.001"),
        ("cpu", 0, "0"),
        ("nvidia.com/gpu", 2000, "2"),
        ("memory", 329853488333, "307.2Gi"),
        ("memory", 256 << 30, "256Gi"),
        ("memory", 512 << 20, "0.5Gi"),
        ("memory", 0, "0"),
        ("memory", 3 << 20, "3Mi"),
        ("memory", 1536, "1.5Ki"),
        ("memory", 100, "100"),
        ("ephemeral-storage", 10 << 30, "10Gi"),
        ("pods", 110, "110"),
    ],
)
def test_amounts_are_shown_in_cores_and_gi(name: str, amount: int, shown: str) -> None:
    assert show_amount(name, amount) == shown


def test_an_amount_of_a_total_names_its_unit() -> None:
    assert show_used("cpu", 31100, 64000) == "31.1 / 64 cores"
    assert show_used("memory", 329853488333, 512 << 30) == "307.2Gi / 512Gi"
    assert show_used("pods", 12, 110) == "12 / 110 pods"
    assert (unit_of("cpu"), unit_of("memory"), unit_of("pods")) == ("cores", "Gi", "")


def test_resource_lists_leave_pods_out_unless_named() -> None:
    amounts = {"cpu": 7200, "memory": 24 << 30, "pods": 3}

    assert show_resources(amounts) == "cpu=7.2,memory=24Gi"
    assert show_resources(amounts, ("memory", "pods")) == "memory=24Gi,pods=3"
    assert show_resources({}) == "-"
