"""One side's buckets on the other side's rows (`diff` of two units): estimated log-uniform, tested as near as they
may be."""

from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval, StreamId
from latencymap.core.units import unit_seconds
from latencymap.outputs.compare_rows import onto_rows, same_rows


def stream(values: list[float] | np.ndarray, unit: str, exact: bool = True) -> StreamHistory:
    """One column of raw `values` (in `unit`), with their exact sums or counts only."""
    counts, sums = bin_values(np.asarray(values, dtype=np.float64))
    acc = Accumulator()
    sid = StreamId("io", "bpf", unit)
    acc.add([Interval(sid, 0.0, 1.0, counts, sums * unit_seconds(unit) if exact else None)])
    return acc.streams[sid]


def test_rows_of_one_unit_are_the_same_and_of_two_not() -> None:
    assert same_rows(stream([3.0], "millisec"), stream([5.0], "millisec"))
    assert not same_rows(stream([3.0], "millisec"), stream([3000.0], "microsec"))


def test_a_bucket_cut_by_a_row_edge_is_spread_log_uniformly_its_total_kept() -> None:
    """1,000 events in [2.048, 4.096) ms (µs rows) on ms rows: 96.6% below 4 ms, log-uniform; every event kept, and
    the time with them."""
    us = stream(np.full(1000, 3000.0), "microsec", exact=False)
    ms = stream([1.5, 3.0, 6.0], "millisec")
    on = onto_rows(us, ms)
    rows = {float(ms.low[r]): k for r, k in enumerate(on.events) if k}
    share = np.log2(4 / 2.048)
    assert rows == {0.002: round(1000 * share), 0.004: 1000 - round(1000 * share)}
    assert sum(on.events) == 1000 and on.time.sum() == pytest.approx(us.time.sum())


def test_an_exact_mean_keeps_the_estimate_where_the_values_can_be() -> None:
    """Every value 1.01 ms: µs rows put it in [512 µs, 1.024 ms), which log-uniform values would leave 3.4% at 1 ms or
    more; its mean, 1,010 µs, needs 42% or more there. Tested, as near the ms side's as that allows: all of them."""
    us = stream(np.full(100, 1010.0), "microsec")
    ms = stream(np.full(100, 1.01), "millisec")
    on = onto_rows(us, ms)
    row = int(np.flatnonzero(ms.low == 0.001)[0])
    assert on.events[row] == round(100 * 10 / 24) and sum(on.events) == 100
    assert on.closest_events[row] == pytest.approx(100) and on.closest_events.sum() == pytest.approx(100)


def test_the_test_takes_the_cut_no_further_than_twice_its_smaller_side() -> None:
    """Counts only, no mean: a cut leaving 3.4% of a bucket above a row edge may be read as anything from none to
    6.8% there, no more (the other side's 50% there is beyond it)."""
    us = stream(np.full(1000, 1500.0), "microsec", exact=False)  # [1.024, 2.048) ms: cut at 2 ms
    ms = stream(np.concatenate([np.full(500, 1.5), np.full(500, 3.0)]), "millisec")
    on = onto_rows(us, ms)
    rows = {float(ms.low[r]): v for r, v in enumerate(on.closest_events) if v}
    assert rows == {0.001: pytest.approx(1000 * (1 - 2 * np.log2(2.048 / 2))),
                    0.002: pytest.approx(1000 * 2 * np.log2(2.048 / 2))}
