"""SourceTotals: intervals whose bucket bounds differ add up exactly on the union of their bounds, or are mixed."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from types import FrameType

import numpy as np
import pytest

from latencymap.core.model import SourceBuckets
from latencymap.core.source_totals import SourceTotals, combine_buckets, merge_buckets

#: Schema 3 bounds (2**(i/8)), as a native histogram's columns list them: each only from its own first bucket.
GRID = [2.0 ** (i / 8) for i in range(-40, -20)]


def native_column(filled: dict[int, int]) -> SourceBuckets:
    """Bounds from 0 through the last filled grid bucket, the first filled one's lower bound included."""
    first, last = min(filled), max(filled)
    bounds = (0.0, *GRID[first - 1: last + 1])
    counts = [0, 0, *(filled.get(i, 0) for i in range(first, last + 1))]
    return SourceBuckets(bounds, np.array(counts), 0.1)


def histogram_quantile(q: float, bounds: list[float], counts: list[int]) -> float:
    """Prometheus' histogram_quantile over explicit buckets (linear inside the bucket that holds the rank)."""
    rank, seen = q * sum(counts), 0
    for i, n in enumerate(counts):
        if n and seen + n >= rank:
            low = bounds[i - 1] if i else 0.0
            return low + (bounds[i] - low) * (rank - seen) / n
        seen += n
    raise AssertionError


def test_columns_of_one_schema_add_up_on_the_union_of_their_bounds() -> None:
    columns = [native_column({5: 90, 6: 8}), native_column({5: 70, 12: 3}), native_column({6: 40}),
               native_column({9: 1, 5: 50})]
    totals = SourceTotals(tuple(columns[0].bounds))
    for c in columns:
        totals.add(c)
    assert not totals.mixed and totals.events == 262 and totals.intervals == 4
    assert totals.time_s == pytest.approx(0.4)
    expected = {GRID[5]: 210, GRID[6]: 48, GRID[9]: 1, GRID[12]: 3}
    held = {b: int(n) for b, n in zip(totals.bounds, totals.counts, strict=True) if n}
    assert held == expected
    bounds, counts = list(expected), list(expected.values())
    lows = [GRID[4], GRID[5], GRID[8], GRID[11]]  # each bucket's own lower bound, not the previous filled one
    for q in (0.5, 0.9, 0.99):
        full = [b for pair in zip(lows, bounds, strict=True) for b in pair]
        assert totals.percentile(q) == pytest.approx(
            histogram_quantile(q, full, [n for c in counts for n in (0, c)]), rel=1e-12)
    assert GRID[4] < totals.percentile(0.5) < GRID[5]


def test_a_union_that_would_split_a_bucket_with_events_is_coarsened_when_the_layouts_nest_else_mixed() -> None:
    fine = SourceBuckets((1.0, 1.5, 2.0, math.inf), np.array([1, 2, 3, 0]), 0.5)
    coarse = SourceBuckets((1.0, 2.0, math.inf), np.array([0, 4, 0]), 0.25)  # (1, 2] holds events: 1.5 would split
    totals = SourceTotals(tuple(fine.bounds))
    totals.add(fine)
    totals.add(coarse)
    assert not totals.mixed and totals.bounds == coarse.bounds and totals.counts.tolist() == [1, 9, 0]
    assert totals.buckets_time_s == totals.time_s == 0.75
    other = SourceBuckets((1.5, 3.0, math.inf), np.array([0, 5, 0]), 1.0)  # (1.5, 3] splits (1, 2] and back
    totals.add(other)
    assert totals.mixed and totals.events == 10 and totals.intervals == 3
    assert totals.time_s == 1.75 and totals.timed and totals.buckets_time_s == 0.75  # the time stays whole
    totals.add(SourceBuckets(coarse.bounds, np.array([2, 0, 0]), 0.125))  # the kept bounds still add up
    assert totals.events == 12 and totals.time_s == 1.875 and totals.buckets_time_s == 0.875
    totals.add(SourceBuckets.sum_only(0.5))
    assert totals.time_s == 2.375 and totals.intervals == 5 and totals.events == 12
    empty_between = SourceBuckets((1.0, 2.0, math.inf), np.array([5, 0, 1]))  # (1, 2] empty: nothing split
    again = SourceTotals(tuple(fine.bounds))
    again.add(fine)
    again.add(empty_between)
    assert not again.mixed and again.counts.tolist() == [6, 2, 3, 1] and again.bounds == fine.bounds
    first_bucket = SourceBuckets((2.0, math.inf), np.array([3, 0]))  # (0, 2] holds events: 1 and 1.5 split it
    assert merge_buckets(fine.bounds, fine.counts, first_bucket.bounds, first_bucket.counts) is None


def test_an_interval_without_events_fits_any_bounds() -> None:
    totals = SourceTotals((0.0,))
    totals.add(SourceBuckets((0.0,), np.array([0]), 0.0))  # a native column without events
    totals.add(SourceBuckets((0.0, 3.0, 4.0), np.array([0, 0, 7]), 0.02))
    totals.add(SourceBuckets((1.0, math.inf), np.array([0, 0]), 0.0))
    assert not totals.mixed and totals.bounds == (0.0, 3.0, 4.0) and totals.events == 7 and totals.intervals == 3
    same = combine_buckets((1.0, 2.0), np.array([1, 2]), (1.0, 2.0), np.array([3, 4]))
    assert same is not None and same[1].tolist() == [4, 6]


def test_bounds_in_seconds_are_the_sources_own_values() -> None:
    les = (0.005, 0.01, 0.025, 0.1, 0.3, 2.5, math.inf)
    in_us = tuple(le * 1e6 for le in les)
    assert in_us[2] * 1e-6 != 0.025  # 0.024999999999999998: the noise a plain product gives
    assert SourceTotals(in_us).bounds_seconds(1e-6) == [0.005, 0.01, 0.025, 0.1, 0.3, 2.5, None]
    native = tuple(2.0 ** (i / 8) * 1e3 for i in (-40, -39, -38))  # a native seconds metric kept in ms
    got = SourceTotals(native).bounds_seconds(1e-3)
    assert got == pytest.approx([2.0 ** (i / 8) for i in (-40, -39, -38)], rel=1e-15)


def test_exponential_scales_that_change_add_up_exactly_at_the_coarser_one() -> None:
    """OTLP delta points whose scale alternates 4/5 (and a cumulative one downscaling): the scale-5 buckets merge
    into the scale-4 ones exactly, wherever a scale-4 bucket holds events; the total is every event, not a mix."""
    from latencymap.sources.otlp.expo import downscale, spread_expo

    rng = np.random.default_rng(1)
    totals: SourceTotals | None = None
    at_4: dict[int, int] = {}
    for k in range(12):
        scale = 5 if k % 2 else 4
        offset = int(rng.integers(-40, -30)) * 2
        counts = rng.integers(0, 6, int(rng.integers(5, 30)))
        _, bounds, held = spread_expo(scale, offset, counts, 0, 0.0, 1e6)  # seconds read as microseconds
        column = SourceBuckets(bounds, held, 0.01)
        totals = totals or SourceTotals(bounds)
        totals.add(column)
        low, down = downscale(offset, counts, scale - 4)
        for i, n in enumerate(down.tolist()):
            at_4[low + i] = at_4.get(low + i, 0) + n
    assert totals is not None and not totals.mixed
    assert totals.events == sum(at_4.values()) and totals.time_s == pytest.approx(0.12)
    assert totals.buckets_time_s == pytest.approx(0.12)
    back_at_4: dict[int, int] = {}  # each kept bucket, a scale-4 one or a scale-5 one inside it, at scale 4
    for upper, n in zip(totals.bounds, totals.counts.tolist(), strict=True):
        if n:
            i = (round(math.log2(upper / 1e6) * 32) - 1) >> 1
            back_at_4[i] = back_at_4.get(i, 0) + n
    assert back_at_4 == {i: n for i, n in at_4.items() if n}


def test_columns_that_list_only_their_occupied_buckets_add_up_where_they_fall() -> None:
    """HdrHistogram's columns: occupied buckets only, bridged by empty ones, finer or coarser from column to column.
    A held bucket goes to the totals' own or into a held coarser one that holds it (no merge needed); one inside an
    empty bridge is merged in at its own resolution; a coarser one over finer ones coarsens them."""
    totals = SourceTotals((4.0, 8.0, 12.0, 16.0))
    totals.add(SourceBuckets((4.0, 8.0, 12.0, 16.0), np.array([0, 5, 0, 1]), None))
    same_and_nested = SourceBuckets((9.0, 10.0, 15.0, 16.0), np.array([0, 0, 0, 2]), None)  # (15, 16] in (12, 16]
    totals.add(same_and_nested)
    assert totals.bounds == (4.0, 8.0, 12.0, 16.0) and totals.counts.tolist() == [0, 5, 0, 3]
    in_a_bridge = SourceBuckets((9.0, 10.0), np.array([0, 4]), None)  # (9, 10] inside (8, 12], which holds nothing
    totals.add(in_a_bridge)
    assert totals.bounds == (4.0, 8.0, 9.0, 10.0, 12.0, 16.0) and totals.counts.tolist() == [0, 5, 0, 4, 0, 3]
    coarser = SourceBuckets((8.0, 12.0), np.array([0, 1]), None)  # (8, 12] over the finer (9, 10]
    totals.add(coarser)
    assert not totals.mixed and totals.events == 13
    assert totals.bounds == (4.0, 8.0, 12.0, 16.0) and totals.counts.tolist() == [0, 5, 5, 3]
    assert totals.percentile(0.5) == pytest.approx(8.0 + 4.0 * (6.5 - 5) / 5)
    assert not totals.timed and totals.buckets_time_s is None  # no sum: the rows carry the time


def test_a_percentile_in_a_bucket_wider_than_a_row_is_the_rows_where_the_source_places_them_by_the_sum() -> None:
    """OpenTelemetry's (`rows_inside`): a percentile whose bucket is wider than the rows there (the row holding the
    rows' percentile lies inside it) is the rows' bounded to the bucket narrowed to the values seen, and no
    first-bucket caveat is owed (the figure is not histogram_quantile's line); where a row reaches past the bucket, or
    the intervals lack a sum, the source's figure stays. Prometheus' (not `rows_inside`) keeps histogram_quantile's,
    with the caveat."""
    bounds, counts = [5000.0, 6000.0, math.inf], [90, 10, 0]  # µs: (0, 5 ms], (5 ms, 6 ms]
    for rows_inside in (True, False):
        totals = SourceTotals(tuple(bounds), rows_inside=rows_inside)
        totals.add(SourceBuckets(tuple(bounds), np.array(counts), 0.2), (700.0, 5800.0))
        source = totals.percentile(0.5)
        assert source == pytest.approx(700 * (5000 / 700) ** (50 / 90))  # log-uniform in [0.7, 5] ms
        assert totals.known_range(0) == (700.0, 5000.0)
        assert totals.estimate(0.99, 1234.0) == totals.percentile(0.99)  # (5, 6] ms: finer than a row
        if rows_inside:
            assert totals.rows_within(0.5, 2100.0) == (700.0, 5000.0)  # the row [2048, 4096) µs: inside (0, 5 ms]
            assert totals.estimate(0.5, 2100.0) == 2100.0
            assert totals.estimate(0.5, 300.0) == 700.0  # bounded to the values seen
            assert totals.estimate(0.5, 4500.0) == source  # the row [4096, 8192) µs reaches past 5 ms
        else:
            assert totals.rows_within(0.5, 2100.0) is None and totals.estimate(0.5, 2100.0) == source
    untimed = SourceTotals(tuple(bounds), rows_inside=True)
    untimed.add(SourceBuckets(tuple(bounds), np.array(counts), None), (700.0, 5800.0))
    assert untimed.rows_within(0.5, 2100.0) is None
    faster = {}
    for rows_inside in (True, False):
        totals = SourceTotals((1e5, math.inf), rows_inside=rows_inside)
        totals.add(SourceBuckets((1e5, math.inf), np.array([4, 0]), 4 * 300e-6))  # four 300 µs in (0, 100 ms]
        faster[rows_inside] = totals.first_bucket_faster(1e-6)
    assert faster == {True: None, False: (4, 1e5, pytest.approx(300.0))}


def _lines_run(fn: Callable[[], object]) -> int:
    """How many lines of Python `fn` runs (every frame's, the libraries' too)."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Callable[..., object]:
        nonlocal count
        count += event == "line"
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(before)
    return count


def test_a_columns_python_work_does_not_grow_with_the_streams_buckets() -> None:
    """A busy HdrHistogram log's stream holds thousands of sub-buckets, and each column lists a few of its own, often
    inside one of the stream's empty buckets (a merge): the Python work of adding a column grows with its buckets,
    not the stream's (a Python loop over them per column read some 240 lines a second). Counted in lines run, not
    time."""
    def lines_for(n: int) -> int:
        bounds = np.arange(1.0, n + 1.0)
        counts = np.where(np.arange(n) % 2, 1, 0).astype(np.int64)  # every other bucket empty: room to merge into
        totals = SourceTotals(tuple(bounds.tolist()))
        totals.add(SourceBuckets(bounds, counts))
        column = SourceBuckets(np.array([10.25, 10.5, 20.5, 30.5]), np.array([0, 3, 4, 2]))  # inside (9, 10], ...
        lines = _lines_run(lambda: totals.add(column))
        assert totals.events == counts.sum() + 9 and 10.5 in totals.bounds
        return lines

    small, large = lines_for(2_000), lines_for(40_000)
    assert large <= small + 10, (small, large)
