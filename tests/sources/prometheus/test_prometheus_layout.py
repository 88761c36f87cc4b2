"""Units, the exact fold of power-of-two buckets, rebinning of the others, and native-histogram folding."""

from __future__ import annotations

import bisect
import itertools
import math
import random
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_support import DEFAULT_BUCKETS, POW2_MS_BUCKETS, Exporter, NativeHistogramState, scraped_intervals

from latencymap.core.buckets import bin_values
from latencymap.core.rebin import bucket_ranges, rebin_counts, time_bounds
from latencymap.core.source_totals import SourceTotals
from latencymap.sources.prometheus.layout import (
    carried_counts,
    integer_counts,
    layout_of,
    metric_unit,
    stream_unit,
)
from latencymap.sources.prometheus.native import NativeError, fold_native, native_buckets
from latencymap.sources.prometheus.streams import Part, StreamBuilder

INF = math.inf


@pytest.mark.parametrize(("name", "declared", "override", "unit"), [
    ("http_request_duration_seconds", None, None, "sec"),
    ("http_request_duration_seconds_bucket", None, None, "sec"),
    ("rpc_latency_milliseconds", None, None, "millisec"),
    ("rpc_latency_ms_bucket", None, None, "millisec"),
    ("disk_io_microseconds", None, None, "microsec"),
    ("gc_pause_ns", None, None, "nanosec"),
    ("request_latency", None, None, "sec"),  # no unit in the name: Prometheus' convention, seconds
    ("request_latency", "milliseconds", None, "millisec"),  # an OpenMetrics UNIT line
    ("request_latency_seconds", "milliseconds", "us", "microsec"),  # --unit wins
])
def test_metric_unit(name: str, declared: str | None, override: str | None, unit: str) -> None:
    assert metric_unit(name, declared, override) == unit


def test_stream_unit_prefers_one_where_buckets_are_rows() -> None:
    assert stream_unit([*DEFAULT_BUCKETS], "sec") == "microsec"
    assert stream_unit([*POW2_MS_BUCKETS, INF], "sec") == "millisec"
    assert stream_unit([2.0**k * 1e-6 for k in range(10)] + [INF], "sec") == "microsec"
    assert stream_unit([2.0**k * 1e-9 for k in range(4, 10)] + [INF], "sec") == "nanosec"
    assert stream_unit([1e-10, INF], "sec") == "microsec"  # all in the zero row in ms: not an exact fold
    assert stream_unit([0.001, 0.004, 0.016, INF], "sec") == "microsec"  # powers of two, but 2 rows each
    assert stream_unit([INF], "nanosec") == "nanosec"


def test_powers_of_two_fold_exactly() -> None:
    layout = layout_of((*POW2_MS_BUCKETS, INF), 1000.0)  # seconds -> milliseconds
    assert layout.exact and layout.bounds[:3] == (1.0, 2.0, 4.0)
    values_ms = np.array([0.3, 1.5, 1.9, 3.0, 7.9, 600.0, 1500.0, 5000.0])
    per_bucket = np.bincount([bisect.bisect_left(POW2_MS_BUCKETS, v / 1000) for v in values_ms], minlength=12)
    rows, kept = layout.fold(per_bucket, 0.5)
    # kept: only its buckets tell the +Inf events (their values not known) from those of the row they land in
    assert kept is not None and kept.bounds == layout.bounds and kept.counts.tolist() == per_bucket.tolist()
    assert kept.total_time == 0.5
    assert layout_of(POW2_MS_BUCKETS, 1000.0).fold(per_bucket[:11])[1] is None  # no +Inf: the rows are the buckets
    # rows straight from the values: [0,1) [1,2) [2,4) ... [1024, 2048); +Inf (above 1024 ms) is the overflow row
    expected, _ = bin_values(np.minimum(values_ms, 1500.0))
    assert rows.tolist() == expected.tolist() and rows[11] == 2


def test_other_buckets_are_spread_and_kept() -> None:
    layout = layout_of((*DEFAULT_BUCKETS,), 1e6)
    assert not layout.exact
    assert layout.bounds[:4] == (5000.0, 10000.0, 25000.0, 50000.0) and layout.bounds[-1] == INF
    counts = np.arange(1, len(DEFAULT_BUCKETS) + 1)
    rows, kept = layout.fold(counts, 2.25)
    assert kept is not None and kept.bounds == layout.bounds and kept.total_time == 2.25
    assert kept.counts.tolist() == counts.tolist() and rows.sum() == counts.sum()
    assert rows.tolist() == rebin_counts(layout.bounds, counts).tolist()  # the shared rule, latencymap.core.rebin
    assert rows[:12].sum() == 0 and rows[12] > 0  # (0, 5 ms] taken as [2.5, 5) ms: from row 12 ([2.048, 4.096))
    assert rows[24] >= counts[-1] and rows[25:].sum() == 0  # +Inf whole in the row of 10 s = 1e7 us: [2**23, 2**24)


def test_nonpositive_bounds_go_to_the_zero_row() -> None:
    layout = layout_of((-1.0, 0.0, 0.004, INF), 1000.0)
    rows, _ = layout.fold(np.array([2, 3, 4, 5]))
    assert rows[:4].tolist() == [5, 0, 4, 5] and rows.sum() == 14  # (0, 4ms] as [2, 4): row 2; +Inf: row 3


_INCREASE = st.one_of(st.just(0.0), st.floats(0.0, 1.0), st.floats(0.0, 50.0), st.sampled_from([0.4, 0.5, 2.4]))


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 12).flatmap(lambda width: st.lists(st.lists(_INCREASE, min_size=width, max_size=width),
                                                         min_size=1, max_size=60)),
       st.integers(1, 4))
@example(steps=[[0.0, 0.0, 0.5], [0.0, 0.0, 0.375], [0.0, 1.375, 0.40625], [0.0, 1.8125, 0.25], [0.8125, 0.0, 1.875],
                [0.8125, 0.0, 1.875], [0.4375, 0.5, 0.0], [0.1875, 0.5, 0.0], [0.375, 0.5, 0.0], [0.375, 0.0, 0.0]],
         parts=1)  # the last step must count 1 (bucket 0 is at 2.0): 1.03 over in all, the most its buckets allow
@example(steps=[[0.4] * 6, [0.0, 0.0, 0.625, 0.625, 0.625, 0.625]], parts=1)  # see the test below
def test_carried_counts_track_the_running_sums_of_the_increases(steps: list[list[float]], parts: int) -> None:
    """Each bucket's count is within 1 of the sum of its increases at every step; the series' total is its running
    sum rounded (half up), so that a column counts its increase rounded down or up, except at a step where the
    buckets must count more to stay within 1 (each counts the least it may): later steps give it back."""
    values = np.array(steps)[:, None, :]
    counts, _ = carried_counts(values)
    left = None
    pieces = []  # the same steps in several calls (a long window's parts, a live source's polls): the same counts
    for chunk in np.array_split(values, min(parts, len(values))):
        got, left = carried_counts(chunk, left)
        pieces.append(got)
    assert (np.concatenate(pieces) == counts).all()
    assert counts.dtype == np.int64 and (counts >= 0).all()
    counted, summed = np.cumsum(counts[:, 0, :], axis=0), np.cumsum(values[:, 0, :], axis=0)
    off = counted - summed  # counted less the increases, every prefix
    assert (np.abs(off) < 1 + 1e-9).all()  # per bucket
    assert np.allclose(off[-1], -left[0])  # the carry is what is still owed
    total, eps = off.sum(axis=1), 1e-6 * (1 + summed.sum(axis=1))
    before = np.vstack([np.zeros_like(counted[:1]), counted[:-1]])
    least = np.maximum(before, np.floor(summed + 1e-9))  # what each bucket must have counted to stay within 1
    for k, (column, increase) in enumerate(zip(counts[:, 0, :].sum(axis=1), values[:, 0, :].sum(axis=1),
                                               strict=True)):
        assert total[k] > -0.5 - eps[k]  # never behind by half an event or more
        if (counted[k] == least[k]).all():
            continue  # its buckets may have to count more than the running total asks
        assert total[k] <= 0.5 + eps[k]
        if k == 0 or total[k - 1] <= 0.5 + eps[k]:
            assert math.floor(increase - eps[k]) <= column <= math.ceil(increase + eps[k])


def test_no_rounding_keeps_both_each_bucket_and_the_total_within_1_of_the_increases() -> None:
    """Why a column may count more than its increase rounded up: 0.4 in each of 6 buckets makes at least 2 counted
    (the total within 1 of 2.4), 1.2 ahead in those buckets; then 0.625 in the other 4 takes each to 1.025, which
    keeps within 1 only counting 1 each: 6 for 5.3 (every rounding, whichever 2 buckets the first step counts)."""
    for first in itertools.product((0, 1), repeat=6):
        ahead = np.array(first)
        if not abs(ahead.sum() - 2.4) < 1:
            continue
        summed = 0.4 + np.where(ahead == 0, 0.625, 0.0)
        picks = [range(int(a), math.floor(s) + 2) for a, s in zip(ahead, summed, strict=True)]
        assert not any((np.abs(np.array(c) - summed) < 1).all() and abs(sum(c) - summed.sum()) < 1
                       for c in itertools.product(*picks))
    values = np.array([[0.4] * 6, [0.0, 0.0, 0.625, 0.625, 0.625, 0.625]])[:, None, :]
    counts, _ = carried_counts(values)
    assert counts[:, 0, :].tolist() == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1]]  # each bucket within 1: 6 for 5.3


def test_carried_counts_keep_a_steady_fractional_tail() -> None:
    values = np.tile([6.0, 2.0, 2.4], (40, 1))[:, None, :]  # 2.4 a step in the tail: 96 over 40 steps
    counts, _ = carried_counts(values)
    assert counts[:, 0, 2].sum() == 96 and counts[:, 0, :2].sum(axis=0).tolist() == [240, 80]
    assert set(counts[:, 0, :].sum(axis=1).tolist()) == {10, 11}  # 10.4 a step: 10 or 11, 416 in all
    assert counts.sum() == 416
    rows, _ = carried_counts(np.array([[[1.0, np.nan], [0.4, 0.4]]]), np.array([[0.0, 0.0], [0.3, 0.0]]))
    assert rows.tolist() == [[[0, 0], [1, 0]]]  # a row with a NaN is skipped; the carry joins the next increase


# A real Prometheus 2.42's `increase()` per 5 s step of a GET series (default buckets in seconds, 1 s scrapes): the
# buckets (0, .005], (.005, .01], (.01, .025], (.1, .25], (.25, .5], (.5, .75] (none in the others) over 18 steps, a
# band of ~300 ms requests in the middle; the last step's `increase(_sum)`, when the band was over.
BAND_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, INF)
BAND_HELD = (0, 1, 2, 6, 7, 8)
BAND_STEPS = (
    (58.38, 25.02, 0.0, 0.0, 0.0, 0.0), (132.5, 63.75, 3.75, 0.0, 0.0, 0.0), (152.5, 45.0, 2.5, 0.0, 0.0, 0.0),
    (142.5, 55.0, 2.5, 0.0, 0.0, 0.0), (132.5, 62.5, 5.0, 0.0, 0.0, 0.0), (143.75, 55.0, 1.25, 0.0, 0.0, 0.0),
    (142.5, 57.5, 0.0, 0.0, 0.0, 0.0), (142.5, 56.25, 1.25, 0.0, 0.0, 0.0), (141.25, 57.5, 1.25, 0.0, 0.0, 0.0),
    (131.25, 67.5, 1.25, 0.0, 0.0, 0.0), (131.25, 60.0, 0.0, 0.0, 8.75, 0.0), (107.5, 51.25, 2.5, 5.0, 32.5, 1.25),
    (112.5, 55.0, 0.0, 6.25, 26.25, 0.0), (111.25, 48.75, 1.25, 7.5, 31.25, 0.0),
    (102.5, 55.0, 1.25, 11.25, 28.75, 1.25), (107.5, 46.25, 1.25, 5.0, 40.0, 0.0),
    (127.5, 38.75, 1.25, 8.75, 23.75, 0.0), (141.3914, 53.8038, 5.005, 0.0, 0.0, 0.0),
)
BAND_LAST_SUM = 0.8996618155821546


def test_an_event_carried_into_a_column_does_not_move_its_first_bucket_below_its_range() -> None:
    """The (.5, .75] bucket's 1.25 + 1.25 are counted 1 + 1 in their steps and the carried 0.5 comes to rest in the
    last column, whose `_sum` (0.90 s for 200 ~4 ms requests) holds no 500 ms event: read with the whole counts, the
    rule would leave the 141 events of (0, 5 ms] a mean of 0.57 ms and show them at 256 µs-1 ms (a false faster
    band). Read with the step's own increases, they stay in the rule's octave, [2.5, 5) ms."""
    increases = np.zeros((len(BAND_STEPS), len(BAND_BOUNDS)))
    increases[:, list(BAND_HELD)] = BAND_STEPS
    counts, _ = carried_counts(increases[:, None, :])
    counts = counts[:, 0]
    last = counts[-1]
    assert last[list(BAND_HELD)].tolist() == [141, 54, 5, 0, 0, 1]  # the carried event
    layout = layout_of(BAND_BOUNDS, 1e6)  # microseconds
    times = np.full(len(counts), math.nan)
    times[-1] = BAND_LAST_SUM * 1e6
    ranges = bucket_ranges(layout.bounds)
    assert time_bounds(*ranges, last[None, :], times[-1:])[0][1][0] < 600
    assert math.isnan(time_bounds(*ranges, increases[-1:], times[-1:])[0][1][0])
    rows = layout.fold_many(counts, times, increases)
    assert (rows.sum(axis=1) == counts.sum(axis=1)).all()
    assert rows[-1][:12].sum() == 0  # nothing below 2048 µs: the first bucket's octave is [2.5, 5) ms
    assert rows[-1][12:14].sum() >= 141 and rows[-1][20] == 1  # the carried event in [524, 1049) ms, its rows
    alone = layout.fold(last, BAND_LAST_SUM, times[-1], increases[-1])[0]
    assert alone.tolist() == rows[-1].tolist()


def test_scraped_events_the_sum_proves_at_their_buckets_floor_stay_there() -> None:
    """A real exporter's (0.05, 0.075] bucket holding 50 requests of 50.5 ms a scrape: every column's `_sum` leaves
    them no room past 51 ms, so all are in the row [32.8, 65.5) ms; the octave around 50.5 ms, clipped to the bucket,
    put 10 a column in [65.5, 131) ms, where the sum allows at most one."""
    columns = scraped_intervals(DEFAULT_BUCKETS, [0.0505] * 50, columns=5)[1:]
    assert len(columns) == 4
    for column in columns:  # microsecond rows: row 16 is [32768, 65536) µs
        assert column.counts[16] == 50 and column.counts.sum() == 50


def test_integer_counts_keep_the_rounded_total() -> None:
    assert integer_counts([1.2, 2.6, -0.3, 0.7], 4.5).tolist() == [1, 2, 0, 1]  # round(4.5) == 4
    assert integer_counts([0.5, 0.5, 0.5]).sum() == 2  # round(1.5) == 2
    assert integer_counts([math.nan, 2.0]).tolist() == [0, 2]


def _api_buckets(state: NativeHistogramState) -> list[list[object]]:
    """A native histogram the way the HTTP API writes it: [rule, left, right, count] strings."""
    base = 2.0 ** (2.0 ** -state.schema)
    out: list[list[object]] = []
    if state.zero_count:
        out.append([3, str(-state.zero_threshold), str(state.zero_threshold), str(state.zero_count)])
    for i in sorted(state.buckets):
        out.append([0, repr(base ** (i - 1)), repr(base ** i), str(state.buckets[i])])
    return out


@pytest.mark.parametrize("schema", [0, 1, 3, 8])
def test_native_schema_at_least_zero_folds_exactly_in_its_unit(schema: int) -> None:
    rng = random.Random(schema)
    values = [rng.lognormvariate(2.0, 1.5) for _ in range(2000)]  # milliseconds
    values = [v for v in values if abs(math.log2(v) * 2**schema - round(math.log2(v) * 2**schema)) > 1e-6]
    state = NativeHistogramState(schema)
    for v in values:
        state.observe(v)
    layout, counts, total, _, _ = fold_native({"count": str(state.count), "sum": repr(state.sum),
                                               "buckets": _api_buckets(state)}, 1.0)
    rows, kept = layout.fold(counts)
    assert layout.exact and total == pytest.approx(sum(values))
    if schema == 0 and min(values) >= 1:  # each bucket is one row: the rows are the buckets
        assert kept is None
    else:  # narrower than rows, or below 1 ms (the `<1ms` row holds them all): kept, as histogram_quantile reads them
        assert kept is not None and kept.counts.sum() == len(values) and kept.bounds == layout.bounds
    expected, _ = bin_values(np.array(values))
    assert rows.tolist() == expected.tolist()


def test_native_seconds_are_spread_onto_microsecond_rows() -> None:
    state = NativeHistogramState(2)
    for v in (0.0021, 0.0021, 0.0021, 0.0021, 0.0125):  # (2**-9, 2**-8.75] s = (1953, 2323] us straddles 2048 us
        state.observe(v)
    layout, counts, *_ = fold_native({"count": "5", "sum": "0.0209", "buckets": _api_buckets(state)}, 1e6)
    rows, kept = layout.fold(counts, 0.0209)
    assert not layout.exact and kept is not None and rows.sum() == 5 and kept.total_time == 0.0209
    real = [b for b, c in zip(kept.bounds, kept.counts, strict=True) if c]
    assert real == pytest.approx([2.0 ** -8.75 * 1e6, 2.0 ** -6.25 * 1e6])
    assert rows[11] + rows[12] == 4 and rows[11] > 0 and rows[12] > 0 and rows[14] == 1


def test_native_zero_bucket_holes_and_negative_buckets_left_out() -> None:
    raw = [[1, "-4", "-2", "1"], [3, "-0.001", "0.001", "2"], [0, "1", "2", "3"], [0, "8", "16", "4"]]
    bounds, counts, real, carried, negative = native_buckets(raw)
    assert bounds == [0.001, 1.0, 2.0, 8.0, 16.0]
    assert counts == [2.0, 0.0, 3.0, 0.0, 4.0] and real == [True, False, True, False, True]
    assert negative == 1.0 and carried == [0.0] * 5
    layout, whole, spent, left_out, _ = fold_native({"count": "10", "sum": "20.5", "buckets": raw}, 1.0)
    rows, kept = layout.fold(whole)
    assert layout.exact and kept is None  # the holes span several rows but hold nothing
    assert rows[0] == 2 and rows[1] == 3 and rows[4] == 4 and rows.sum() == 9  # not the value in (-4, -2]
    assert left_out == 1.0 and spent is None  # the sum counts the negative value too: it is not the time waited
    assert fold_native({"count": "9", "sum": "20.5", "buckets": raw[1:]}, 1.0).spent == 20.5


def test_a_zero_threshold_of_zero_is_the_zero_bucket_not_a_negative_one() -> None:
    got = native_buckets([[3, "-0", "0", "5"], [0, "1", "2", "1"]])
    assert got.negative == 0 and got.counts == [5.0, 0.0, 1.0] and got.bounds == [0.0, 1.0, 2.0]


def test_native_buckets_below_one_unit_of_the_stream_are_kept() -> None:
    """A `_milliseconds` metric at schema 0 folds exactly onto millisecond rows, but its `<1ms` row holds every octave
    below 1 ms: 0.3 µs values read p50 500 µs from it. Its buckets there are kept, so percentiles come from them."""
    raw = [[0, "0.000244140625", "0.00048828125", "90"], [0, "0.5", "1", "5"], [0, "2", "4", "5"]]
    layout, counts, *_ = fold_native({"count": "100", "sum": "15.05", "buckets": raw}, 1.0)
    rows, kept = layout.fold(counts)
    assert layout.exact and kept is not None and rows[0] == 95 and rows[2] == 5
    real = [b for b, c in zip(kept.bounds, kept.counts, strict=True) if c]
    assert real == [0.00048828125, 1.0, 4.0]
    whole = fold_native({"count": "10", "buckets": [[0, "1", "2", "5"], [0, "2", "4", "5"]]}, 1.0)
    assert whole.layout.exact and whole.layout.fold(whole.counts)[1] is None  # at or above 1 ms: rows are the buckets


def test_native_schema_below_zero_is_spread() -> None:
    layout, counts, *_ = fold_native({"count": "6", "buckets": [[0, "4", "16", "6"]]}, 1.0)  # schema -1
    rows, kept = layout.fold(counts)
    assert not layout.exact and kept is not None and rows[3:5].tolist() == [3, 3]


def test_native_float_counts_from_increase_are_rounded_to_the_count() -> None:
    raw = [[0, "1", "2", "1.4"], [0, "2", "4", "2.3"], [0, "4", "8", "0.3"]]
    counts = fold_native({"count": "4.0", "sum": "9.1", "buckets": raw}, 1.0).counts
    assert counts.tolist() == [0, 0, 2, 2, 0]  # [0, 0) and the hole [0, 1) first, then 1.4 2.3 0.3 -> 4


def test_native_garbage_is_refused() -> None:
    with pytest.raises(NativeError, match="expected a bucket"):
        fold_native({"count": "1", "buckets": [[0, "1"]]}, 1.0)
    with pytest.raises(NativeError, match="expected a number"):
        fold_native({"count": "x", "buckets": []}, 1.0)


def test_the_sum_places_a_fast_services_first_bucket() -> None:
    layout = layout_of((0.1, 0.2, 0.4, 1.0, INF), 1e6)  # Prometheus' own request histogram: (0, 100 ms] first
    counts = np.array([4, 0, 0, 0, 0])
    plain, _ = layout.fold(counts, 0.0038)
    placed, kept = layout.fold(counts, 0.0038, time=3800.0)  # four requests of 0.95 ms, as `_sum` says
    assert plain[16] + plain[17] == 4  # the rule alone: [50, 100) ms
    assert placed[:12].sum() == 4 and placed.sum() == 4  # [0, 2 ms): uniform from 0 to 1.9 ms, mean 0.95 ms
    assert kept is not None and kept.counts.tolist() == counts.tolist() and kept.total_time == 0.0038
    many = layout.fold_many(np.array([[4, 0, 0, 0, 0], [4, 0, 0, 0, 0]]), np.array([3800.0, math.nan]))
    assert many[0].tolist() == placed.tolist() and many[1].tolist() == plain.tolist()


def _bucket(i: int, count: int, schema: int = 3) -> list[object]:
    """Native bucket `i` of `schema` as the HTTP API writes it: [rule, left, right, count]."""
    return [0, repr(2.0 ** ((i - 1) / 2**schema)), repr(2.0 ** (i / 2**schema)), str(count)]


def test_a_native_bucket_inside_one_row_is_kept_for_percentiles() -> None:
    layout, counts, total, *_ = fold_native({"count": "100", "sum": "5.0", "buckets": [_bucket(-34, 100)]}, 1e6)
    rows, kept = layout.fold(counts, 5.0)  # (48.2, 52.6] ms: inside the row [32.8, 65.5) ms, folded exactly
    assert layout.exact and rows[16] == 100 and rows.sum() == 100
    assert kept is not None and kept.total_time == 5.0
    totals = SourceTotals(kept.bounds)
    totals.add(kept)
    low, high = 2.0 ** (-35 / 8) * 1e6, 2.0 ** (-34 / 8) * 1e6
    assert totals.percentile(0.5) == pytest.approx(low + 0.5 * (high - low))  # 50.4 ms, as histogram_quantile
    assert totals.percentile(0.99) == pytest.approx(low + 0.99 * (high - low))
    builder = StreamBuilder("x_seconds", "sec")
    stream = builder.stream(())
    column = builder.interval(stream, [Part(layout, counts, total)], 0.0, 1.0)
    assert column.source_buckets is not None and column.source_buckets.bounds == layout.bounds


def test_native_series_with_different_buckets_sum_on_the_union() -> None:
    fifty, seven, *_ = fold_native({"count": "7", "sum": "0.35", "buckets": [_bucket(-34, 7)]}, 1e6)
    hundred, two, *_ = fold_native({"count": "2", "sum": "0.2", "buckets": [_bucket(-26, 2)]}, 1e6)
    builder = StreamBuilder("x_seconds", "sec", sum_all=True)
    stream = builder.stream(())
    column = builder.interval(stream, [Part(fifty, seven, 0.35), Part(hundred, two, 0.2)], 0.0, 1.0)
    own = column.source_buckets
    assert builder.notices == [] and own is not None and own.total_time == pytest.approx(0.55)
    held = {b: int(n) for b, n in zip(own.bounds, own.counts, strict=True) if n}
    assert held == {2.0 ** (-34 / 8) * 1e6: 7, 2.0 ** (-26 / 8) * 1e6: 2}
    assert int(column.counts.sum()) == 9


def test_label_sets_longer_than_a_label_stay_apart() -> None:
    builder = StreamBuilder("req_seconds", "seconds")
    pods = [(("path", "/" + "x" * 500), ("pod", f"api-{k}")) for k in range(3)]  # alike but for their end
    same_cut = [(("path", "/a" + "y" * 500 + "b"), ("pod", "p")), (("path", "/a" + "y" * 501 + "b"), ("pod", "p"))]
    streams = [builder.stream(key, (0.1, 1.0)) for key in pods + same_cut]
    labels = [s.label for s in streams]
    assert len(set(streams)) == len(streams) and all(len(label) <= 400 for label in labels)
    assert all(f"api-{k}" in labels[k] for k in range(3))  # the end, where they differ, is kept
    assert labels[4].endswith(" (2)") and labels[3].count("…") == labels[4].count("…") == 1
    assert builder.stream(same_cut[1], (0.1, 1.0)) is streams[4]  # the same series, the same stream


@pytest.mark.slow
def test_a_scraped_reports_bucket_table_keeps_a_slow_request_in_its_own_bucket() -> None:
    """A real prometheus_client exporter: after every scrape, 10 requests of 0.5 ms, 5 of 5 ms and 1 of 500 ms. The
    report's bucket table puts every 500 ms request in a row of (100 ms, 1 s], none of them among the fast rows."""
    exporter = Exporter(name="req_seconds", labels=(), buckets=(0.001, 0.01, 0.1, 1.0), form="text")
    stop = threading.Event()

    def drive() -> None:
        seen = 0
        while not stop.is_set():
            if len(exporter.served) > seen:
                seen += 1
                for seconds in [0.0005] * 10 + [0.005] * 5 + [0.5]:
                    exporter.observe(seconds)
            time.sleep(0.005)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    try:
        r = subprocess.run([sys.executable, "-m", "latencymap", "report", "scrape", exporter.url, "--metric",
                            "req_seconds", "--interval", "0.3", "--count", "4"],
                           capture_output=True, text=True, timeout=60)
    finally:
        stop.set()
        thread.join(timeout=5)
        exporter.close()
    assert r.returncode == 0, r.stderr
    batches = (exporter.served[-1].get((), 0) - exporter.served[0].get((), 0)) // 16
    assert batches >= 3
    rows = {(low, high): int(n) for low, high, n in re.findall(r"^\s+(\S+)–(\S+)\s+(\d+)\s", r.stdout, re.M)}
    assert sum(rows.values()) == 16 * batches
    fast = ("512µs", "1.02ms", "2.05ms", "4.1ms")  # (0.5 ms as the first bucket's octave, 10 ms]
    assert sum(n for (low, _), n in rows.items() if low in fast) == 15 * batches
    assert sum(n for (low, _), n in rows.items() if low in ("65.5ms", "131ms", "262ms", "524ms")) == batches
    assert "bimodal" in r.stdout and "unimodal" not in r.stdout


def _tail_count(folded_counts: np.ndarray, bounds: tuple[float, ...], upper: float) -> int:
    """The whole count a folded column gives the bucket ending at `upper`."""
    return int(folded_counts[list(bounds).index(upper)]) if upper in bounds else 0


def test_native_increases_carry_each_buckets_fraction_to_the_next_column() -> None:
    """hn1's shape: 1 s scrapes, 5 s steps, so increase() gives a tail bucket 1.25 per event. Rounded alone each column
    counted it 1 (its quarter went to the fat body buckets): with the carry it counts 15 over 12 columns, as PromQL's
    increases add up, and the body keeps its own count."""
    carry: dict[tuple[float, float], float] = {}
    tail = body = 0
    alone = 0
    for _ in range(12):
        raw = [[0, "1", "2", "50.25"], [0, "2", "4", "30.5"], [0, "64", "128", "1.25"]]
        folded = fold_native({"count": "82", "buckets": raw}, 1.0, carry)
        carry = folded.carry
        tail += _tail_count(folded.counts, folded.layout.bounds, 128.0)
        body += int(folded.counts.sum())
        plain = fold_native({"count": "82", "buckets": raw}, 1.0)
        alone += _tail_count(plain.counts, plain.layout.bounds, 128.0)
    assert alone == 12  # what rounding column by column gave
    assert tail == 15 and body == round(12 * 82.0)
    assert all(abs(rem) < 1 for rem in carry.values())


def test_a_carried_fraction_waits_in_its_own_bucket_and_joins_a_coarser_one() -> None:
    """A tail bucket absent from a column keeps what it carries (an empty bucket of its own range in that column's
    layout); after the schema is lowered, a finer bucket's carry joins the coarser bucket that holds it."""
    carry: dict[tuple[float, float], float] = {}
    counted = waited = 0
    for k in range(10):
        raw = [[0, "1", "2", "10"]] + ([[0, "64", "90.50966799187808", "0.4"]] if k % 2 == 0 else [])
        folded = fold_native({"count": "10.4", "buckets": raw}, 1.0, carry)
        if k % 2 and (64.0, 90.50966799187808) in carry:  # absent, but carrying: its range is kept, empty
            assert 90.50966799187808 in folded.layout.bounds
            waited += 1
        carry = folded.carry
        counted += sum(int(n) for b, n in zip(folded.layout.bounds, folded.counts, strict=True) if b > 64)
    assert counted == 2 and waited  # 0.4 in five columns, not 0 every time
    fine = fold_native({"count": "10.6", "buckets": [[0, "1", "2", "10"], [0, "64", "90.50966799187808", "0.6"]]},
                       1.0, {})
    assert fine.carry[(64.0, 90.50966799187808)] == pytest.approx(-0.4)
    coarse = fold_native({"count": "10.3", "buckets": [[0, "1", "2", "10"], [0, "64", "128", "0.3"]]}, 1.0,
                         fine.carry)
    assert coarse.layout.bounds[-1] == 128.0 and 90.50966799187808 not in coarse.layout.bounds
    assert coarse.carry[(64.0, 128.0)] == pytest.approx(-0.1)  # -0.4 carried + 0.3, counted 0
