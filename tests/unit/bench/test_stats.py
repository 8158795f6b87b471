"""The benchmark's per-pod figures: a singleton's CPU per pod, its ceiling, records per pod."""

from __future__ import annotations

from tests.bench.stats import per_pod


def test_a_singletons_ceiling_is_one_over_its_cpu_per_pod() -> None:
    figures = per_pod(
        {"allocator": 2.0, "podgroup-enqueue": 1.0, "cluster": 9.0},
        events=70_000,
        pods=20_000,
        services=("podgroup-enqueue", "allocator"),
    )
    assert figures["allocator"] == {"cpu_ms_per_pod": 0.1, "ceiling_pods_per_s": 10_000}
    assert figures["podgroup-enqueue"] == {"cpu_ms_per_pod": 0.05, "ceiling_pods_per_s": 20_000}
    assert figures["records_per_pod"] == 3.5
    assert "cluster" not in figures


def test_replicas_of_a_service_add_up() -> None:
    figures = per_pod(
        {"allocator": 1.0, "allocator#b": 1.0}, events=0, pods=10_000, services=("allocator",)
    )
    assert figures["allocator"] == {"cpu_ms_per_pod": 0.2, "ceiling_pods_per_s": 5_000}


def test_no_pods_gives_no_figures() -> None:
    figures = per_pod({"allocator": 1.0}, events=5, pods=0, services=("allocator",))
    assert figures == {
        "allocator": {"cpu_ms_per_pod": None, "ceiling_pods_per_s": None},
        "records_per_pod": None,
    }
