from __future__ import annotations

import numpy as np

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import midpoints_seconds
from latencymap.core.model import Interval, Notice, StreamId

S = StreamId("s", "bpf", "microsec")


def interval(i: int, counts: list[int], exact: bool = False) -> Interval:
    c = np.zeros(64, dtype=np.int64)
    c[: len(counts)] = counts
    t = c * 1e-6 if exact else None
    return Interval(S, float(i), float(i) + 2.0, c, t)


def test_frequency_and_estimated_intensity() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 4, 2])])
    assert np.allclose(h.frequency()[0, :3], [0, 2, 1])
    mid = midpoints_seconds("bpf", "microsec")
    assert np.allclose(h.intensity()[0, :3], [0, 4 * mid[1] / 2, 2 * mid[2] / 2])
    assert not h.exact


def test_exact_time_is_kept() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 4], exact=True)])
    assert h.exact and np.isclose(h.time[0, 1], 4e-6)


def test_history_cap_drops_oldest_and_counts_them() -> None:
    h = StreamHistory(S, cap=100)
    for start in range(0, 250, 10):
        h.extend([interval(i, [i]) for i in range(start, start + 10)])
    assert h.n == 100 and h.dropped == 150
    assert h.start[0] == 150.0 and h.counts[-1, 0] == 249


def test_column_stats_and_totals() -> None:
    h = StreamHistory(S)
    h.extend([interval(0, [0, 10]), interval(2, [0, 0, 10])])
    stats = h.column_stats()
    assert np.allclose(stats.events_per_s, [5, 5])
    t = h.totals()
    assert t.events == 20 and t.duration_s == 4.0
    assert h.used_slots() == (1, 2)


def test_accumulator_routes_streams_and_counts_notices() -> None:
    acc = Accumulator()
    other = StreamId("o", "oracle", "millisec")
    acc.add([interval(0, [1]), Notice("bad"), Interval(other, 0, 1, np.ones(64, dtype=np.int64))])
    assert set(acc.streams) == {S, other}
    assert acc.skipped == 1 and acc.messages == ["bad"]
