"""A history that drops columns (`--history`) keeps the source buckets of the columns it keeps: a report's figures
cover those, while `Accumulator.sources` goes on covering the whole run (the views' figures)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chunks_support import chunk_columns

from latencymap.core.accumulator import Accumulator, HistoryLimit
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, SourceBuckets, StreamId
from latencymap.core.source_totals import SourceTotals

PROM = StreamId("api", "prometheus", "sec")
OTLP = StreamId("api", "otlp", "sec")
#: Bounds a column picks from (seconds), as a native histogram's columns list their occupied buckets.
GRID = [0.001 * 2 ** (i / 4) for i in range(40)]


@pytest.fixture
def small_chunks():  # type: ignore[no-untyped-def]
    with chunk_columns(16):
        yield


def column(stream: StreamId, k: int, rng: np.random.Generator) -> Interval:
    """Column `k`: a few occupied grid buckets, shifting slower as k grows (so that the oldest columns differ from
    the newest), its exact sum, and for OpenTelemetry its smallest and largest value."""
    at = np.unique(rng.integers(k // 20, k // 20 + 8, 3))
    bounds = [GRID[i] for i in sorted({*at.tolist(), *(at - 1).tolist()}) if i >= 0]
    counts = np.array([int(b in {GRID[i] for i in at}) * int(rng.integers(1, 9)) for b in bounds], dtype=np.int64)
    slots = np.zeros(NSLOTS, dtype=np.int64)
    slots[10] = counts.sum()
    extremes = None
    if stream.datasource == "otlp":
        extremes = np.full((2, NSLOTS), np.nan)
        extremes[:, 10] = (bounds[0] * (1 + k / 1e4), bounds[-1] * (1 - k / 1e4))
    return Interval(stream, float(k), k + 1.0, slots, source_buckets=SourceBuckets(bounds, counts, 0.01 * k),
                    extremes=extremes)


def expected(kept: list[Interval]) -> SourceTotals:
    """The totals of `kept` alone, added up as the accumulator adds a stream's columns."""
    first = kept[0].source_buckets
    assert first is not None
    totals = SourceTotals(tuple(map(float, first.bounds)), rows_inside=kept[0].stream.datasource == "otlp")
    for iv in kept:
        seen = None
        if iv.extremes is not None:
            seen = (float(np.nanmin(iv.extremes[0])), float(np.nanmax(iv.extremes[1])))
        totals.add(iv.source_buckets, seen)
    return totals


def same(got: SourceTotals | None, want: SourceTotals) -> None:
    assert got is not None
    assert got.bounds == want.bounds and got.counts.tolist() == want.counts.tolist() and not got.mixed
    assert got.intervals == want.intervals and got.time_s == pytest.approx(want.time_s)
    assert got.buckets_time_s == pytest.approx(want.buckets_time_s) and got.timed == want.timed
    assert (got.least, got.most, got.bounded) == (want.least, want.most, want.bounded)


@pytest.mark.parametrize("cap", [HistoryLimit(columns=70), HistoryLimit(columns=7)])
@pytest.mark.parametrize("stream", [PROM, OTLP])
@pytest.mark.usefixtures("small_chunks")
def test_under_a_column_limit_the_kept_columns_buckets_are_theirs_alone(cap: HistoryLimit, stream: StreamId) -> None:
    rng = np.random.default_rng(3)
    items = [column(stream, k, rng) for k in range(300)]
    acc = Accumulator(cap=cap)
    for at in range(0, 300, 45):  # batches larger and smaller than the limit
        acc.add(items[at: at + 45])
    hist = acc.streams[stream]
    assert hist.n == cap.columns and hist.dropped == 300 - hist.n
    same(acc.kept_source(hist), expected(items[-hist.n:]))
    assert acc.sources[stream].events == expected(items).events  # the whole run's stay the views'


@pytest.mark.parametrize("stream", [PROM, OTLP])
@pytest.mark.usefixtures("small_chunks")
def test_under_a_memory_budget_the_chunks_kept_keep_their_buckets(stream: StreamId) -> None:
    rng = np.random.default_rng(4)
    items = [column(stream, k, rng) for k in range(600)]
    acc = Accumulator(cap=HistoryLimit(budget=12_000))
    for at in range(0, 600, 20):
        acc.add(items[at: at + 20])
    hist = acc.streams[stream]
    assert hist.dropped > 50 and hist.n + hist.dropped == 600
    same(acc.kept_source(hist), expected(items[-hist.n:]))
    assert acc.sources[stream].events == expected(items).events


def test_a_stream_that_dropped_nothing_reports_the_whole_runs_own_buckets() -> None:
    rng = np.random.default_rng(5)
    acc = Accumulator(cap=HistoryLimit(columns=100))
    acc.add([column(PROM, k, rng) for k in range(40)])
    hist = acc.streams[PROM]
    assert acc.kept_source(hist) is acc.sources[PROM]


@pytest.mark.usefixtures("small_chunks")
def test_columns_without_buckets_of_their_own_before_the_first_with_them_keep_the_chunks_in_step() -> None:
    """A stream whose first columns had no source buckets (a scrape before the histogram appeared): the chunks the
    history drops still line up with those the buckets are kept in."""
    rng = np.random.default_rng(6)
    bare = [Interval(PROM, float(k), k + 1.0, np.zeros(NSLOTS, dtype=np.int64)) for k in range(-25, 0)]
    items = [column(PROM, k, rng) for k in range(400)]
    acc = Accumulator(cap=HistoryLimit(budget=10_000))
    acc.add(bare)
    for at in range(0, 400, 10):
        acc.add(items[at: at + 10])
    hist = acc.streams[PROM]
    assert hist.dropped > 25
    same(acc.kept_source(hist), expected(items[-hist.n:]))


@pytest.mark.usefixtures("small_chunks")
def test_a_history_emptied_keeps_no_buckets_and_no_bytes_for_them() -> None:
    rng = np.random.default_rng(7)
    acc = Accumulator(cap=None)
    acc.add([column(PROM, k, rng) for k in range(100)])
    hist = acc.streams[PROM]
    assert hist.sealed_bytes > 0
    hist.drop_all()
    assert hist.sealed_bytes == 0 and hist.n == 0
    assert acc.kept_source(hist) is None and acc.sources[PROM].events > 0
    assert not math.isnan(acc.sources[PROM].percentile(0.5))
