"""Compact history (slot window, narrow counts, compressed cold chunks) against a plain dense reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chunks_support import chunk_columns
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core import chunked, columns
from latencymap.core.accumulator import Accumulator, HistoryLimit, StreamHistory, parse_history
from latencymap.core.buckets import NSLOTS, bin_extremes, bin_values, bounds_seconds, midpoints_seconds
from latencymap.core.columns import Block, Chunk, count_dtype, observed_s
from latencymap.core.model import Interval, IntervalRun, Notice, SourceBuckets, StreamId
from latencymap.core.percentiles import percentile_estimates
from latencymap.core.rebin import rebin_counts

S = StreamId("s", "bpf", "microsec")
MID = midpoints_seconds("bpf", "microsec")



class Dense:
    """The plain storage: every column as 64 int64 counts and 64 float64 times, as the history kept before."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.counts = np.zeros((0, NSLOTS), dtype=np.int64)
        self.time = np.zeros((0, NSLOTS))
        self.meta = np.zeros((0, 3))

    def extend(self, ivs: list[Interval]) -> None:
        counts = np.array([iv.counts for iv in ivs], dtype=np.int64).reshape(-1, NSLOTS)
        time = np.multiply(counts, MID)
        for j, iv in enumerate(ivs):
            if iv.time is not None:
                time[j] = iv.time
        self.counts = np.vstack((self.counts, counts))
        self.time = np.vstack((self.time, time))
        self.meta = np.vstack((self.meta, [[iv.start, iv.end, iv.duration] for iv in ivs]))
        if self.cap is not None and len(self.counts) > self.cap:
            self.counts, self.time, self.meta = (a[-self.cap:] for a in (self.counts, self.time, self.meta))


def total_time(ref: Dense) -> float:
    return float(ref.time.sum())


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


SPECIAL_TIMES = [0.0, -0.0, 1.5e-6, 0.1, 1 / 3, 2.0**-20, 1e300, float("nan"), 7.25]


@st.composite
def intervals(draw: st.DrawFn) -> list[Interval]:
    n = draw(st.integers(1, 40))
    lo = draw(st.integers(0, 60))
    width = draw(st.integers(1, min(8, NSLOTS - lo)))
    big = draw(st.sampled_from([3, 300, 70_000, 5_000_000_000]))
    signed = draw(st.booleans())
    out = []
    t = 1_700_000_000.0
    for _ in range(n):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        kind = draw(st.sampled_from(["empty", "counts", "counts", "timed", "timed_empty"]))
        if kind in ("counts", "timed"):
            vals = draw(st.lists(st.integers(-big if signed else 0, big), min_size=width, max_size=width))
            counts[lo: lo + width] = vals
        time = None
        if kind.startswith("timed"):
            time = np.zeros(NSLOTS)
            picks = draw(st.lists(st.sampled_from(SPECIAL_TIMES), min_size=width, max_size=width))
            time[lo: lo + width] = picks
            if draw(st.booleans()):
                time = counts * 1e-6 * 1.1  # float64 values that float32 cannot hold
        dur = draw(st.sampled_from([1.0, 0.5, 3.0000001]))
        out.append(Interval(S, t, t + dur, counts, time, reset=draw(st.booleans()), gap=False))
        t += dur
        lo = min(NSLOTS - width, max(0, lo + draw(st.integers(-2, 2))))  # the window drifts
    return out


@settings(max_examples=150, deadline=None)
@given(ivs=intervals(), chunk=st.integers(1, 9), cap=st.one_of(st.none(), st.integers(1, 30)),
       cuts=st.lists(st.integers(1, 12), min_size=1, max_size=6), ranges=st.lists(st.tuples(st.integers(0, 40),
                                                                                             st.integers(0, 40))),
       read_early=st.booleans())
def test_compact_and_plain_storage_give_the_same_numbers(ivs: list[Interval], chunk: int, cap: int | None,
                                                          cuts: list[int], ranges: list[tuple[int, int]],
                                                          read_early: bool) -> None:
    with chunk_columns(chunk):
        hist, ref = StreamHistory(S, cap), Dense(cap)
        at = 0
        for cut in [*cuts, len(ivs)]:
            batch = ivs[at: at + cut]
            at += len(batch)
            if batch:
                hist.extend(batch)
                ref.extend(batch)
                if read_early:  # the decoded metadata is then kept, and appended to, dropped from, as columns come
                    assert same_bits(hist.end, ref.meta[:, 1])
                    assert hist.exact_in() == hist.exact
        assert hist.n == len(ref.counts) and hist.n + hist.dropped == len(ivs)
        assert same_bits(hist.counts, ref.counts) and same_bits(hist.time, ref.time)
        assert same_bits(hist.start, ref.meta[:, 0]) and same_bits(hist.durations, ref.meta[:, 2])
        assert same_bits(hist.meta_in("end", slice(1, None)), ref.meta[1:, 1])
        with hist.dense():
            assert same_bits(hist.counts, ref.counts)
            assert same_bits(np.float64(hist.totals().time_s), np.float64(total_time(ref)))
        total = hist.totals()
        assert total.events == int(ref.counts.sum())
        assert same_bits(np.float64(total.time_s), np.float64(ref.time.sum()))
        exact_times = ref.time.sum(axis=0) if hist.exact else None  # exact times place events inside buckets
        expected = percentile_estimates(ref.counts.sum(axis=0), hist.low, hist.high, times=exact_times)
        assert same_bits(np.array(list(total.percentiles.values())), expected)
        fast = hist.totals(fast=True)
        assert fast.events == total.events and np.array_equal(fast.counts, total.counts)
        if np.isfinite(total.time_s):
            # summed in another order: the error is bounded by the magnitudes summed (negative counts cancel)
            assert fast.time_s == pytest.approx(total.time_s, rel=1e-9, abs=1e-12 * float(np.abs(ref.time).sum()))
        used = np.flatnonzero(ref.counts.any(axis=0))
        assert hist.used_slots() == ((int(used[0]), int(used[-1])) if used.size else None)
        for a, b in ranges:
            cols = slice(min(a, b), max(a, b))
            assert same_bits(hist.counts_in(cols), ref.counts[cols])
            assert same_bits(hist.time_in(cols), ref.time[cols])
            assert same_bits(hist.frequency(cols), ref.counts[cols] / ref.meta[cols, 2][:, None])
            stats = hist.column_stats(cols)
            means = np.where(hist.exact_columns(cols)[:, None], ref.time[cols], np.nan)  # exact columns' means
            expected_cols = percentile_estimates(ref.counts[cols], hist.low, hist.high, times=means)
            assert same_bits(stats.percentiles, expected_cols)


def test_a_stream_is_exact_when_every_column_with_events_carries_its_time() -> None:
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[3] = 5

    def col(i: int, events: bool, timed: bool) -> Interval:
        c = counts if events else np.zeros(NSLOTS, dtype=np.int64)
        return Interval(S, float(i), i + 1.0, c, c * 2e-6 if timed else None)

    timed_with_empty = StreamHistory(S)
    timed_with_empty.extend([col(0, True, True), col(1, False, False), col(2, True, True), col(3, False, False)])
    assert timed_with_empty.exact and timed_with_empty.exact_in(slice(1, 2))
    assert timed_with_empty.exact_columns().all()
    untimed = StreamHistory(S)
    untimed.extend([col(0, True, False), col(1, False, False)])
    assert not untimed.exact and not untimed.exact_in(slice(1, 2))
    assert not untimed.exact_columns().any()
    mixed = StreamHistory(S)
    mixed.extend([col(0, True, True), col(1, True, False)])
    assert not mixed.exact and mixed.exact_in(slice(0, 1))
    with chunk_columns(2):
        sealed = StreamHistory(S)
        sealed.extend([col(i, i % 3 != 1, i % 3 != 1) for i in range(11)])
        assert sealed.exact and len(sealed._chunks) == 5


def test_a_column_whose_source_gave_only_its_sum_spends_it_each_rows_events_moved_alike_inside_their_rows() -> None:
    """362.5 µs for 10 events in 0-1 µs, 40 in 4-8 µs and 2 in 64-100 µs (the part of the 64-128 µs row their bucket,
    (10, 100] µs, covers): 409 µs at their middles, 288 at their lower bounds, so each row's events go 38% of the way
    from their middle to their lower bound (scaled by one factor, the zero row's would keep 89% of its estimate, where
    its events' midpoint says least about them). (Until 2026-11-29 the 64-128 µs row's events were estimated at its
    midpoint, 96 µs, outside their bucket.)"""
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[[0, 3, 7]] = (10, 40, 2)
    source = SourceBuckets((10.0, 100.0, 1000.0), np.array([50, 2, 0]), 362.5e-6)
    no_sum = SourceBuckets((10.0, 100.0, 1000.0), np.array([40, 2, 0]), None)
    hist = StreamHistory(S)
    hist.extend([Interval(S, 0.0, 1.0, counts, source_buckets=source),
                 Interval(S, 1.0, 2.0, counts, source_buckets=no_sum), Interval(S, 2.0, 3.0, counts)])
    spent = hist.time_in()
    estimate = counts * MID
    low = bounds_seconds("bpf", "microsec")[0]
    middle = counts * np.where(np.arange(NSLOTS) == 7, 82e-6, MID)
    assert spent[0].sum() == pytest.approx(362.5e-6, rel=1e-12)  # the column's total is the source's sum
    assert spent[0] == pytest.approx(middle - (middle - counts * low) * 46.5 / 121, rel=1e-12)
    assert same_bits(spent[1], estimate) and same_bits(spent[2], estimate)
    assert not hist.exact and not hist.exact_columns()[0]  # the split is still an estimate
    plain = StreamHistory(S)
    plain.extend([Interval(S, float(i), i + 1.0, counts) for i in range(3)])
    assert hist.totals().percentiles == plain.totals().percentiles


def test_sealed_chunks_keep_the_narrowest_types_and_window() -> None:
    block = Block(4)
    c = np.zeros((4, NSLOTS), dtype=np.int64)
    c[:, 10:13] = [[1, 2, 3], [0, 250, 0], [4, 0, 1], [0, 0, 0]]
    block.append(c, None, np.arange(4.0), np.arange(4.0) + 1, np.ones(4), np.zeros(4, np.uint8), MID, 4)
    assert block.counts.dtype == np.uint8 and (block.lo, block.width) == (10, 3)
    big = np.zeros((1, NSLOTS), dtype=np.int64)
    big[0, 20] = 70_000
    block2 = Block(4)
    block2.append(c[:2], None, np.zeros(2), np.ones(2), np.ones(2), np.zeros(2, np.uint8), MID, 4)
    block2.append(big, None, np.zeros(1), np.ones(1), np.ones(1), np.zeros(1, np.uint8), MID, 4)
    assert block2.counts.dtype == np.uint32 and (block2.lo, block2.width) == (10, 11)
    chunk = Chunk.seal(block2, MID)
    assert chunk.count_type == np.uint32 and chunk.time_type is None
    back = chunk.decode()
    dense = np.zeros((3, NSLOTS), dtype=np.int64)
    back.dense_counts(slice(0, 3), dense)
    assert np.array_equal(dense, np.vstack((c[:2], big)))
    assert count_dtype(-1, 127) == np.int8 and count_dtype(0, 1 << 40) == np.int64


def test_times_are_kept_as_float32_only_when_every_value_survives() -> None:
    def sealed(values: list[float]) -> Chunk:
        block = Block(2)
        c = np.zeros((2, NSLOTS), dtype=np.int64)
        c[:, 5] = 1
        t = np.zeros((2, NSLOTS))
        t[:, 5] = values
        block.append(c, t, np.zeros(2), np.ones(2), np.ones(2), np.zeros(2, np.uint8), MID, 2)
        return Chunk.seal(block, MID)

    assert sealed([0.5, 2.0**-20]).time_type == np.float32
    assert sealed([0.5, 0.1]).time_type == np.float64


def test_compact_history_costs_few_bytes_per_column() -> None:
    rng = np.random.default_rng(7)
    hist = StreamHistory(S)
    lam = np.zeros(NSLOTS)
    lam[8:14] = [50, 200, 300, 100, 20, 2]
    t0 = 1_700_000_000.0
    for start in range(0, 20_480, 1024):
        hist.extend([Interval(S, t0 + i, t0 + i + 1, rng.poisson(lam).astype(np.int64))
                     for i in range(start, start + 1024)])
    assert hist.n == 20_480
    per_column = hist.nbytes / hist.n
    assert per_column < 24, per_column  # the dense history took 64 x 8 + 64 x 8 + 25 = 1049 bytes


def test_memory_budget_drops_the_oldest_chunks_of_all_streams_and_says_so() -> None:
    other = StreamId("o", "bpf", "microsec")
    rng = np.random.default_rng(1)
    with chunk_columns(64):
        acc = Accumulator(cap=HistoryLimit(budget=60_000))
        for step in range(40):
            batch: list[Interval | Notice] = []
            for stream in (S, other):
                for i in range(64):
                    counts = np.zeros(NSLOTS, dtype=np.int64)
                    counts[5:60] = rng.integers(0, 1 << 30, 55)  # incompressible: chunks are big
                    batch.append(Interval(stream, step * 64.0 + i, step * 64.0 + i + 1, counts))
            acc.add(batch)
    hists = list(acc.streams.values())
    assert all(h.dropped > 0 for h in hists) and acc.dropped_for_budget == sum(h.dropped for h in hists)
    assert all(h.n + h.dropped == 40 * 64 for h in hists)
    assert acc.nbytes <= 60_000 + sum(h._hot.nbytes for h in hists)
    assert sum("memory budget" in m for m in acc.messages) == 1 and acc.skipped == 0
    assert hists[0].start[0] == 64.0 * (hists[0].dropped // 64)


@pytest.mark.parametrize(("text", "limit"), [
    ("5000", HistoryLimit(columns=5000)), ("512M", HistoryLimit(budget=512 << 20)),
    ("2GB", HistoryLimit(budget=2 << 30)), ("1.5GiB", HistoryLimit(budget=3 << 29)),
    ("64 m", HistoryLimit(budget=64 << 20)),
])
def test_history_is_a_budget_or_a_number_of_columns(text: str, limit: HistoryLimit) -> None:
    assert parse_history(text) == limit


@pytest.mark.parametrize("text", ["0", "1.5", "-3", "5X", "12K", "", "G"])
def test_bad_history_values_say_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"memory size|number of columns|under 1 MiB"):
        parse_history(text)


@pytest.mark.parametrize("kind", ["random", "regular"])
def test_times_come_back_bit_for_bit_whichever_encoding_compresses_better(kind: str) -> None:
    rng = np.random.default_rng(5)
    block = Block(512)
    c = np.zeros((512, NSLOTS), dtype=np.int64)
    c[:, 9:15] = rng.poisson(50, (512, 6))
    t = c * (rng.uniform(1e-6, 2e-6, (512, NSLOTS)) if kind == "random" else 1.1e-6)
    block.append(c, t, np.arange(512.0), np.arange(512.0) + 1, np.ones(512), np.zeros(512, np.uint8), MID, 512)
    chunk = Chunk.seal(block, MID)
    assert chunk.time_shuffled == (kind == "random") and chunk.time_type == np.float64
    out = np.zeros((512, NSLOTS))
    chunk.decode().dense_time(slice(0, 512), out, MID)
    assert same_bits(out, t)


def test_views_are_told_once_when_the_budget_drops_columns() -> None:
    told: list[Notice] = []
    rng = np.random.default_rng(2)
    with chunk_columns(32):
        acc = Accumulator(cap=HistoryLimit(budget=20_000), on_notice=told.append)
        for step in range(30):
            batch = []
            for i in range(32):
                counts = np.zeros(NSLOTS, dtype=np.int64)
                counts[3:50] = rng.integers(0, 1 << 30, 47)
                batch.append(Interval(S, step * 32.0 + i, step * 32.0 + i + 1, counts))
            acc.add(batch)
    assert len(told) == 1 and told[0].skipped == 0 and told[0].message in acc.messages
    assert acc.dropped_for_budget > 0 and acc.streams[S].dropped == acc.dropped_for_budget


@pytest.mark.parametrize("rates", [[3, 40, 320, 1000, 25, 2], [50, 50]])
def test_counts_come_back_whichever_of_one_frame_and_a_frame_per_slot_is_smaller(rates: list[int]) -> None:
    rng = np.random.default_rng(11)
    n = 1024
    block = Block(n)
    c = np.zeros((n, NSLOTS), dtype=np.int64)
    c[:, 20: 20 + len(rates)] = rng.poisson(rates, (n, len(rates)))
    block.append(c, None, np.arange(float(n)), np.arange(float(n)) + 1, np.ones(n), np.zeros(n, np.uint8), MID, n)
    chunk = Chunk.seal(block, MID)
    one_frame = len(columns._compress(columns._shuffle(c[:, 20: 20 + len(rates)].astype(chunk.count_type))))
    assert len(chunk.counts_blob) + 8 * len(chunk.count_frames) <= one_frame
    if len(rates) == 6:  # slots of very different sizes: apart they compress better
        assert len(chunk.count_frames) == 6
    out = np.zeros((n, NSLOTS), dtype=np.int64)
    chunk.decode().dense_counts(slice(0, n), out)
    assert np.array_equal(out, c)
    assert np.array_equal(chunk.slot_counts, c[:, 20: 20 + len(rates)].sum(axis=0))


@settings(max_examples=300, deadline=None)
@given(ivs=intervals(), chunk=st.integers(1, 9), cap=st.one_of(st.none(), st.integers(1, 30)),
       steps=st.lists(st.tuples(st.integers(1, 12), st.sampled_from(["", "seal", "drop", "seal drop", "empty"])),
                      min_size=1, max_size=8),
       read=st.booleans())
def test_totals_over_every_column_seen_are_the_unbounded_historys(ivs: list[Interval], chunk: int, cap: int | None,
                                                                 steps: list[tuple[int, str]], read: bool) -> None:
    # Columns dropped at random points (a column limit, a budget dropping the oldest chunk, chunks sealed early, every
    # column of a stream that ended) leave their sums: totals over every column seen are an unbounded history's.
    with chunk_columns(chunk):
        hist, whole = StreamHistory(S, cap), StreamHistory(S)
        at = 0
        for cut, act in [*steps, (len(ivs), "")]:
            batch = ivs[at: at + cut]
            at += len(batch)
            if batch:
                hist.extend(batch)
                whole.extend(batch)
            if "seal" in act:
                hist.seal_open()
            if "drop" in act and hist.can_drop_oldest_chunk():
                hist.drop_oldest_chunk()
            if act == "empty":
                hist.drop_all()
                assert hist.n == 0 and hist.nbytes == 0
            if read:  # what reading keeps decoded changes nothing
                hist.totals(fast=True, all_seen=True)
                assert same_bits(hist.end, whole.end[hist.dropped:])
        assert hist.n + hist.dropped == len(ivs) == whole.n
        assert hist.n >= 1 or any(act == "empty" for _, act in steps)
        assert same_bits(hist.counts, whole.counts[hist.dropped:]) and same_bits(hist.time, whole.time[hist.dropped:])
        assert hist.dropped_sums().columns == hist.dropped
        expected = whole.totals()
        # sums in another order: as close as the summands' size allows (signed counts' times cancel out)
        scale = 1e-9 * float(np.nansum(np.abs(whole.time)))
        no_cancelling = bool((whole.counts >= 0).all() and not (whole.time < 0).any())
        for fast in (False, True):
            got = hist.totals(fast=fast, all_seen=True)
            assert got.events == expected.events and np.array_equal(got.counts, expected.counts)
            np.testing.assert_allclose(got.time_s, expected.time_s, rtol=1e-9, atol=scale, equal_nan=True)
            assert got.duration_s == pytest.approx(expected.duration_s, rel=1e-9)
            if no_cancelling:  # else a bucket's time may be any rounding residue, and so may its percentiles
                np.testing.assert_allclose(list(got.percentiles.values()), list(expected.percentiles.values()),
                                           rtol=1e-9, equal_nan=True)
        counts, times, dur = hist.slot_sums(all_seen=True)
        assert np.array_equal(counts, expected.counts) and dur == pytest.approx(expected.duration_s, rel=1e-9)
        np.testing.assert_allclose(times, whole.time.sum(axis=0), rtol=1e-9, atol=scale, equal_nan=True)
        if hist.dropped and hist.n:
            with pytest.raises(ValueError, match="first kept column"):
                hist.totals(slice(1, None), all_seen=True)


@settings(max_examples=200, deadline=None)
@given(ivs=intervals(), chunk=st.integers(1, 9), rows=st.integers(1, 12), cap=st.one_of(st.none(), st.integers(1, 30)),
       ranges=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3))
def test_totals_and_rates_read_a_chunk_at_a_time_are_the_dense_arrays(ivs: list[Interval], chunk: int, rows: int,
                                                                      cap: int | None,
                                                                      ranges: list[tuple[int, int]]) -> None:
    # a report reads every column's totals, time per slot and rates `rows` columns at a time: the same numbers, bit
    # for bit, as the dense arrays of them all give
    with chunk_columns(chunk):
        hist, ref = StreamHistory(S, cap), Dense(cap)
        hist.extend(ivs)
        ref.extend(ivs)
    before = chunked.ROWS
    chunked.ROWS = rows
    try:
        for a, b in [(0, hist.n), *ranges]:
            cols = slice(min(a, b), max(a, b))
            counts, time, dur = ref.counts[cols], ref.time[cols], ref.meta[cols, 2]
            total = hist.totals(cols)
            assert total.events == int(counts.sum()) and same_bits(total.counts, counts.sum(axis=0))
            assert same_bits(np.float64(total.time_s), np.float64(time.sum()))
            assert same_bits(np.float64(total.duration_s), np.float64(observed_s(dur, hist.flags[cols], counts)))
            exact_times = time.sum(axis=0) if hist.exact_in(cols) else None
            expected = percentile_estimates(counts.sum(axis=0), hist.low, hist.high, times=exact_times)
            assert same_bits(np.array(list(total.percentiles.values())), expected)
            slots = slice(min(a, b) % NSLOTS, max(a, b) % NSLOTS + 1)
            assert same_bits(hist.frequency(cols, slots), counts[:, slots] / dur[:, None])
            assert same_bits(hist.intensity(cols, slots), time[:, slots] / dur[:, None])
    finally:
        chunked.ROWS = before


def test_values_seen_per_slot_are_kept_over_the_run_and_bound_its_percentiles() -> None:
    """Columns with extremes widen the stream's range per slot (past dropped columns too); a column without them
    makes its slots unknown; column and whole-run percentiles stay within the values seen."""
    stream = StreamId("seen", "spark", "millisec")
    hist = StreamHistory(stream, cap=2)
    low = bounds_seconds(stream.datasource, stream.unit)[0]

    def column(t: float, values: list[float], extremes: bool = True) -> Interval:
        counts, sums = bin_values(np.asarray(values))
        seen = bin_extremes(np.asarray(values)) / 1000 if extremes else None
        return Interval(stream, t, t + 1, counts, sums / 1000, extremes=seen)

    assert hist.seen is None
    hist.extend([column(0, [1430.0, 1440.0]), column(1, [1100.0])])
    hist.extend([column(2, [1200.0, 300.0])])
    assert hist.seen is not None
    least, most = hist.seen
    assert (least[11], most[11]) == (1.1, 1.44) and (least[9], most[9]) == (0.3, 0.3)
    totals = hist.totals(all_seen=True)
    assert max(totals.percentiles.values()) <= 1.44 and min(totals.percentiles.values()) >= 0.3
    assert np.nanmax(hist.column_stats().percentiles) <= 1.44
    hist.extend([column(3, [1500.0], extremes=False)])
    least, most = hist.seen
    assert (least[11], most[11]) == (-np.inf, np.inf) and (least[9], most[9]) == (0.3, 0.3)
    assert hist.totals(all_seen=True).percentiles[0.999] > 1.44  # slot 11 is no longer bounded
    assert low[11] == 1.024


def test_a_run_of_columns_with_values_seen_keeps_them_as_its_columns_one_by_one_do() -> None:
    """What the bulk reader gives a recording of an exact source (an IntervalRun with extremes) widens each slot's
    values seen exactly as the same columns appended one by one."""
    stream = StreamId("seen", "spark", "millisec")
    rng = np.random.default_rng(5)
    ivs = []
    for t in range(40):
        values = rng.lognormal(5, 1.5, int(rng.integers(1, 30)))
        counts, sums = bin_values(values)
        ivs.append(Interval(stream, float(t), t + 1.0, counts, sums / 1000, extremes=bin_extremes(values) / 1000))
    times = np.stack([iv.time for iv in ivs if iv.time is not None])
    seen = np.stack([iv.extremes for iv in ivs if iv.extremes is not None])
    flags = np.zeros(40, dtype=bool)
    run = IntervalRun([stream] * 40, np.arange(40.0), np.arange(40.0) + 1, np.ones(40),
                      np.stack([iv.counts for iv in ivs]), times, flags, flags, [""] * 40, extremes=seen)
    one, bulk, head = StreamHistory(stream), StreamHistory(stream), StreamHistory(stream)
    one.extend(ivs)
    bulk.extend_run(run)
    head.extend_run(run, rows=list(range(10)))
    assert one.seen is not None and bulk.seen is not None and head.seen is not None
    for a, b in zip(one.seen, bulk.seen, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
    assert one.totals(all_seen=True).percentiles == bulk.totals(all_seen=True).percentiles
    back = [iv.extremes for iv in run.intervals() if iv.extremes is not None]
    assert len(back) == 40 and np.array_equal(np.stack(back), seen, equal_nan=True)
    assert np.array_equal(run.head(10).extremes, run.extremes[:10], equal_nan=True)  # type: ignore[index]
    assert np.nanmax(head.seen[1]) <= np.nanmax(one.seen[1])


def test_a_streams_total_events_pass_2_63_exactly() -> None:
    """Three buckets of 2**62 - 1 events (the most a record may give one): 2**63 + 2**62 - 3 events in all, which
    int64 wraps to a negative total; the report's header said -4,611,686,018,427,387,907 events."""
    stream = StreamId("huge", "bpf", "microsec")
    counts = np.zeros((1, NSLOTS), dtype=np.int64)
    counts[0, [3, 5, 7]] = 2**62 - 1
    hist = StreamHistory(stream)
    one, no = np.ones(1), np.zeros(1, dtype=bool)
    hist.extend_columns(counts, None, None, one, one + 1, one, no, no, "")
    assert hist.totals().events == 3 * (2**62 - 1)
    assert hist.totals(fast=True).events == 3 * (2**62 - 1)


@pytest.mark.parametrize("chunk", [1, 2, 1024])
def test_per_slot_sums_past_2_63_are_exact(chunk: int) -> None:
    """Three columns of 2**62 - 1 events in one bucket (the most a record may give one): the slot's sum, 2**63 + 2**62
    - 3, wrapped in int64 (totals and each sealed chunk's sums), and the report said -4,611,686,018,427,387,907
    events with no percentile. Sealed one column a chunk, two (a chunk's own sum passes 2**63), or none."""
    big = 2**62 - 1
    counts = np.zeros((3, NSLOTS), dtype=np.int64)
    counts[:, 4] = big
    counts[0, 5] = 7
    one, no = np.arange(3.0), np.zeros(3, dtype=bool)
    low, high = bounds_seconds("bpf", "microsec")
    with chunk_columns(chunk):
        hist, limited = StreamHistory(S), StreamHistory(S, cap=1)
        for h in (hist, limited):
            h.extend_columns(counts, None, None, one, one + 1, np.ones(3), no, no, "")
        for got in (hist.totals(), hist.totals(fast=True), limited.totals(all_seen=True),
                    limited.totals(fast=True, all_seen=True)):
            assert got.events == 3 * big + 7 and got.counts[4] == 3 * big and got.counts[5] == 7
            assert all(low[4] <= p < high[4] for p in got.percentiles.values())
        assert hist.slot_sums()[0][4] == 3 * big == limited.slot_sums(all_seen=True)[0][4]
        hist.drop_all()
        assert hist.dropped_sums().counts[4] == 3 * big and hist.totals(all_seen=True).events == 3 * big + 7
    two = StreamHistory(S)  # one column, two such buckets: its rate
    two.extend_columns(np.where(np.isin(np.arange(NSLOTS), [4, 6]), big, 0)[None], None, None, one[:1], one[:1] + 1,
                       np.ones(1), no[:1], no[:1], "")
    assert two.column_stats().events_per_s[0] == pytest.approx(2 * big)
    small = StreamHistory(S)  # the usual counts keep int64 sums
    small.extend_columns(counts % 1000, None, None, one, one + 1, np.ones(3), no, no, "")
    assert small.totals().counts.dtype == np.int64 and small.slot_sums()[0].dtype == np.int64


@pytest.mark.parametrize("chunk", [1024, 2, 3])
def test_a_rebinned_columns_inf_bucket_makes_its_percentiles_past_the_rest_lower_bounds_at_its_bound(
        chunk: int) -> None:
    """Buckets up to 100 ms and `+Inf` (µs): the rows hold the `+Inf` events in the slot of 100 ms, as if they were
    65.5-131 ms; a percentile whose rank passes every finite bucket's events (hand count) is `≥` 100 ms, in one
    column, in several, over columns dropped too; and a column run (`extend_run`) keeps them as intervals do (kept in
    the growing block, or in sealed chunks dropped whole or in part)."""
    ps = StreamId("req", "prometheus", "microsec")
    bounds = (50_000.0, 100_000.0, float("inf"))
    given = [(60, 30, 10), (95, 5, 0), (50, 0, 50), (98, 1, 1), (10, 0, 90), (70, 20, 10)]  # per bucket, per column

    def interval(k: int, buckets: tuple[int, int, int]) -> Interval:
        return Interval(ps, float(k), k + 1.0, rebin_counts(bounds, buckets),
                        source_buckets=SourceBuckets(bounds, np.array(buckets), None))

    with chunk_columns(chunk):
        hist = StreamHistory(ps, cap=4)
        for k, buckets in enumerate(given):
            hist.extend([interval(k, buckets)])
    over, at = hist.overflow_in()  # the 4 newest columns kept
    assert [hist.overflow_in(slice(k, k + 1))[0].tolist() for k in range(4)] == [[50], [1], [90], [10]]
    assert hist.overflow(slice(1, 3)) == (91.0, 0.1) and hist.overflow(slice(2, 2))[0] == 0.0
    assert over.tolist() == [50, 1, 90, 10] and at.tolist() == [0.1] * 4
    stats = hist.column_stats()
    # of 100 events, `+Inf` holding n: the percentiles whose rank passes 100 - n (p50 50, p90 90, p99 99, p99.9 99.9)
    assert stats.open.tolist() == [[False, True, True, True], [False, False, False, True], [True] * 4,
                                   [False, False, True, True]]
    assert (stats.percentiles[stats.open] == 0.1).all() and (stats.percentiles[~stats.open] < 0.1).all()
    kept = hist.totals()  # 400 events, 249 finite: p90 (rank 360) and up past them, not p50 (200)
    assert kept.open == (0.9, 0.99, 0.999) and [kept.percentiles[q] for q in kept.open] == [0.1] * 3
    whole = hist.totals(all_seen=True)  # 600 events, 161 in `+Inf` (10 of them dropped): p90 (rank 540) past 439
    assert hist.overflow(all_seen=True) == (161.0, 0.1) and hist.overflow() == (151.0, 0.1)
    assert whole.open == (0.9, 0.99, 0.999) and whole.percentiles[0.5] < 0.1
    run = StreamHistory(ps)
    ivs = [interval(k, buckets) for k, buckets in enumerate(given)]
    run.extend_run(IntervalRun([ps] * len(ivs), np.arange(6.0), np.arange(1.0, 7.0), np.ones(6),
                               np.stack([iv.counts for iv in ivs]), None, np.zeros(6, bool), np.zeros(6, bool),
                               [""] * 6, source_buckets=[iv.source_buckets for iv in ivs]))
    assert run.overflow_in()[0].tolist() == [b[2] for b in given]
    with chunk_columns(chunk):
        capped = StreamHistory(ps, cap=4)  # more columns in one go than the history keeps
        capped.extend([interval(k, buckets) for k, buckets in enumerate(given)])
    assert capped.overflow_in()[0].tolist() == [50, 1, 90, 10] and capped.overflow(all_seen=True) == (161.0, 0.1)
    capped.drop_all()
    assert capped.overflow_in()[0].size == 0 and capped.overflow(all_seen=True) == (161.0, 0.1)
    assert capped.overflow() == (0.0, pytest.approx(math.nan, nan_ok=True))


def _prometheus_like(columns: int, inf_events: int, budget: int) -> StreamHistory:
    """A Prometheus-like stream (buckets to 100 ms, then `+Inf` with `inf_events` events in every column) read under a
    memory budget, in batches of 50 columns."""
    ps = StreamId("req", "prometheus", "microsec")
    bounds = (1000.0, 5000.0, 25_000.0, 100_000.0, float("inf"))
    acc = Accumulator(HistoryLimit(budget=budget))
    rng = np.random.default_rng(1)
    batch = []
    for k in range(columns):
        given = (int(rng.integers(50, 100)), int(rng.integers(10, 30)), int(rng.integers(0, 10)), 3, inf_events)
        batch.append(Interval(ps, float(k), k + 1.0, rebin_counts(bounds, given),
                              source_buckets=SourceBuckets(bounds, np.array(given), None)))
        if len(batch) == 50:
            acc.add(batch)
            batch = []
    acc.add(batch)
    assert acc.held_bytes == acc.nbytes
    return acc.streams[ps]


def test_inf_bucket_events_in_every_column_take_about_no_more_memory_than_none() -> None:
    """The `+Inf` events kept per column (`overflow_in`) are stored with the columns, compressed and dropped with them:
    12,000 columns with 5 each fit a budget that holds 12,000 without (they used to take 24 bytes a column,
    uncompressed, never freed: the budget dropped all but 46 columns, and said their newest columns alone took more
    than it)."""
    n, budget = 12_000, 150_000
    with chunk_columns(256):
        none, five = _prometheus_like(n, 0, budget), _prometheus_like(n, 5, budget)
    assert none.n == five.n == n and none.dropped == five.dropped == 0
    assert five.nbytes <= 1.1 * none.nbytes and five.sealed_bytes <= 1.1 * none.sealed_bytes
    over, at = five.overflow_in()
    assert over.tolist() == [5.0] * n and at.tolist() == [0.1] * n
    assert five.overflow(all_seen=True) == (5.0 * n, 0.1) and none.overflow(all_seen=True)[0] == 0.0
    with chunk_columns(256):
        small = _prometheus_like(n, 5, 40_000)  # holds a few thousand columns: what is dropped is freed, and summed
    assert 0 < small.n < n and small.nbytes <= 40_000
    assert small.overflow() == (5.0 * small.n, 0.1) and small.overflow(all_seen=True) == (5.0 * n, 0.1)


def test_an_inf_bucket_ended_by_the_largest_value_seen_is_no_lower_bound() -> None:
    """OpenTelemetry's points say their max: past the top finite bound the values are known to end there."""
    ot = StreamId("req", "otlp", "microsec")
    bounds = (50_000.0, 100_000.0, float("inf"))
    extremes = np.full((2, NSLOTS), np.nan)
    extremes[:, 17] = (0.12, 0.3)  # seconds: the values past 100 ms end at 300 ms
    hist = StreamHistory(ot)
    hist.extend([Interval(ot, 0.0, 1.0, rebin_counts(bounds, (10, 0, 90)), extremes=extremes,
                          source_buckets=SourceBuckets(bounds, np.array([10, 0, 90]), None))])
    assert hist.overflow() == (0.0, pytest.approx(math.nan, nan_ok=True)) and not hist.column_stats().open.any()
