"""Rebinned rows moved until they can hold their column's exact time."""

from __future__ import annotations

import math

import numpy as np

from latencymap.core.bucket_cells import cells
from latencymap.core.buckets import NSLOTS
from latencymap.core.rebin import bucket_ranges, rebin_columns, slot_edges, spread_matrix
from latencymap.core.rebin_hold import hold_time, time_range

PROMETHEUS_DEFAULT_US = [5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, math.inf]


def placed(bounds: list[float], counts: list[int], time: float) -> dict[int, int]:
    """The rebinned rows of one column, {slot: events}."""
    row = rebin_columns(spread_matrix(bounds), np.array([counts]), bounds, np.array([time]))[0]
    return {slot: int(n) for slot, n in enumerate(row.tolist()) if n}


def test_one_event_spread_over_many_rows_goes_to_a_row_where_the_time_can_be() -> None:
    """One event of 1.1 ms past the last bound, 100 µs: the time places it over the widest range from 100 µs up
    averaging 1.1 ms, log-uniform, and one event rounds into the row of largest share, [128, 256) µs: at most
    256 µs. Moved a row at a time, it stops in the first that holds 1.1 ms, [1024, 2048) µs."""
    assert placed([1.0, 10.0, 100.0, math.inf], [0, 0, 0, 1], 1100.0) == {11: 1}


def test_wide_buckets_the_time_leaves_unmoved_are_moved_where_it_raises_their_bound_most() -> None:
    """Decade-wide buckets, 10 events in (1, 10] ms and one in (10, 100] ms, 120 ms: neither bound proves either
    bucket slower than spread log-uniformly, but spread so the rows hold at most 53 + 32.8 ms. The slow event goes
    up to [65.5, 100] ms, which holds the time, rather than any of the ten moving."""
    assert placed([1e3, 1e4, 1e5], [0, 10, 1], 120_000.0) == {11: 3, 12: 3, 13: 3, 14: 1, 17: 1}


def test_a_time_below_what_the_rows_allow_moves_the_fewest_events_down() -> None:
    """416 lognormal events (median 1.9 ms) and their sum, 2.206 s: the rows put 4 of the 6 of (50, 100] ms at
    65.5 ms or more, and the rows' least was 2.225 s. Two of them go down to [50, 65.5] ms, nothing else moves."""
    assert placed(PROMETHEUS_DEFAULT_US, [310, 52, 36, 12, 6, 0, 0, 0, 0, 0, 0, 0], 2_205_905.1) == {
        11: 59, 12: 174, 13: 114, 14: 34, 15: 22, 16: 11, 17: 2}


def test_a_time_the_buckets_cannot_hold_moves_nothing() -> None:
    """100 events in (5, 10] ms and 0.4 s: less than every event at 5 ms. Nothing the rows could do holds it."""
    lows, highs = bucket_ranges([5e3, 1e4])
    whole = np.zeros((2, NSLOTS), dtype=np.int64)
    whole[1, 13:15] = [71, 29]
    assert (hold_time(whole, lows, highs, slot_edges(), 4e5) == whole).all()
    assert (hold_time(whole, lows, highs, slot_edges(), math.nan) == whole).all()


def test_an_event_moved_into_the_open_top_row_holds_any_time() -> None:
    """Two events of an overflow bucket in the row below the top one, and a time past that row: one of them moves
    into the open top row, which holds any time."""
    edges = slot_edges()
    lows, highs = np.array([2.0**61]), np.array([math.inf])
    whole = np.zeros((1, NSLOTS), dtype=np.int64)
    whole[0, NSLOTS - 2] = 2
    moved = hold_time(whole, lows, highs, edges, 2.0**64)
    assert moved[0, NSLOTS - 2:].tolist() == [1, 1]
    low, high, allowed = cells(lows, highs, edges)
    assert allowed[0, NSLOTS - 2:].all() and time_range(moved, low, high) == (2.0**61 + 2.0**62, math.inf)
