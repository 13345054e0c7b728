"""Small helpers shared by the benchmarks."""

from __future__ import annotations

import statistics


def summarise(samples: list[float]) -> tuple[float, float]:
    """Median and 99th percentile, in the samples' unit."""
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), p99


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms"
