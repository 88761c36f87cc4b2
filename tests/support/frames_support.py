"""Streams for the bulk-frames tests: generated intervals with resets, gaps, row-range changes, exact times."""

from __future__ import annotations

import numpy as np

from latencymap.core.buckets import midpoints_seconds
from latencymap.core.model import Interval, Notice, StreamId


def generated(n: int, seed: int = 7, *, exact_from: int | None = None, label: str = "gen\tdisk",
              unit: str = "microsec") -> list[Interval]:
    """`n` intervals of one stream whose latencies wander and jump (the rows re-fit), with empty columns, resets,
    gaps, slow outliers, counts from units to millions (k and M suffixes), durations that vary, dates with
    control characters now and then, and exact per-slot times from interval `exact_from` on."""
    rng = np.random.default_rng(seed)
    stream = StreamId(label, "bpf", unit)
    mid = midpoints_seconds("bpf", unit)
    out: list[Interval] = []
    start, center = 1_800_000_000.0, 9.0
    for i in range(n):
        counts = np.zeros(64, dtype=np.int64)
        if i % 37 != 36:
            center += rng.normal(0, 0.3) + (7 if i == n // 3 else 0) - (9 if i == n // 2 else 0)
            center = float(np.clip(center, 2, 50))
            slots = np.clip(rng.normal(center, 1.2, int(rng.integers(1, 300))).astype(int), 0, 63)
            np.add.at(counts, slots, 1)
            if i % 23 == 5:
                counts[min(63, int(center) + 8)] += int(rng.integers(1, 4))  # a slow outlier in the tail
            counts *= 10 ** int(rng.integers(0, 5))
        duration = 1.0 + (0.25 if i % 5 == 0 else 0.0) + float(rng.uniform(-1e-3, 1e-3))
        time = None
        if exact_from is not None and i >= exact_from:
            time = counts * mid * rng.uniform(0.6, 1.4, 64)
        date = f"2027-01-{1 + i % 28:02d} 10:{i % 60:02d}" + ("\x1b[31m!" if i % 19 == 3 else "")
        out.append(Interval(stream, start, start + duration, counts, time, reset=i % 41 == 40, gap=i % 53 == 52,
                            date=date))
        start += duration
    return out


def with_notices(items: list[Interval], every: int) -> list[Interval | Notice]:
    """`items` with a Notice (a skipped record) after every `every`-th one."""
    out: list[Interval | Notice] = []
    for i, item in enumerate(items):
        out.append(item)
        if i % every == every - 1:
            out.append(Notice(f"line {i}: skipped", skipped=1))
    return out
