"""Spreading non-power-of-two buckets onto the log2 slots."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import NSLOTS
from latencymap.core.rebin import (
    bucket_ranges,
    largest_remainder,
    rebin_columns,
    rebin_counts,
    slot_edges,
    slot_of_value,
    spread_fractions,
    spread_matrix,
    time_bounds,
    timed_rows,
    uniform_fractions,
    whole_rows,
    widest_ranges,
    within_octaves,
)

PROMETHEUS_DEFAULT_US = [5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, math.inf]


def test_bucket_inside_one_slot_stays_there() -> None:
    shares = spread_fractions(8192, 12000)
    assert shares[14] == 1.0 and shares.sum() == 1.0


def test_bucket_over_two_slots_splits_by_log_width() -> None:
    shares = spread_fractions(10_000, 25_000)
    expected = math.log2(16384 / 10_000) / math.log2(2.5)
    assert shares[14] == pytest.approx(expected)
    assert shares[15] == pytest.approx(1 - expected)
    assert np.count_nonzero(shares) == 2


def test_zero_lower_bound_is_one_octave_and_overflow_is_one_slot() -> None:
    assert spread_fractions(0, 5000)[12:14] == pytest.approx([math.log2(4096 / 2500), math.log2(5000 / 4096)])
    assert spread_fractions(1e7, math.inf)[24] == 1.0  # 2**23 <= 1e7 < 2**24


def test_rebin_keeps_the_total_exactly() -> None:
    counts = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    slots = rebin_counts(PROMETHEUS_DEFAULT_US, counts)
    assert slots.sum() == sum(counts)
    assert (slots >= 0).all()
    assert spread_matrix(PROMETHEUS_DEFAULT_US).sum(axis=1) == pytest.approx(np.ones(12))


def test_largest_remainder_rounds_to_the_total() -> None:
    assert list(largest_remainder(np.array([0.4, 0.4, 0.2]), 1)) == [1, 0, 0]
    assert largest_remainder(np.array([2.6, 0.7]), 3).sum() == 3


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="ascending"):
        spread_matrix([1.0, 1.0])
    with pytest.raises(ValueError, match="counts"):
        rebin_counts([1.0, 2.0], [1])


def test_totals_past_float_precision_stay_exact() -> None:
    counts = [(1 << 60) + 12345, 7, (1 << 59) + 3]
    slots = rebin_counts([10.0, 100.0, math.inf], counts)
    assert int(slots.sum()) == sum(counts)
    assert not slots[spread_matrix([10.0, 100.0, math.inf]).sum(axis=0) == 0].any()  # none outside the buckets


def test_a_lone_slow_event_stays_in_its_own_bucket() -> None:
    """One event in (100 ms, 1 s] beside fifteen fast ones stays in the rows of (100 ms, 1 s], not 8 ms below."""
    slots = rebin_counts([1000, 10_000, 100_000, 1_000_000, math.inf], [10, 5, 0, 1, 0])  # µs
    placed = {int(2 ** (slot - 1)): int(n) for slot, n in enumerate(slots) if n}  # each row's lower edge, µs
    assert placed == {512: 10, 1024: 2, 2048: 2, 4096: 1, 131_072: 1}


def test_the_first_bucket_goes_as_low_as_the_columns_time_proves() -> None:
    bounds = [1e5, 2e5, 4e5, math.inf]  # a first bucket of 100 ms, in µs: the rule's octave is [50, 100) ms
    matrix = spread_matrix(bounds)
    counts = np.array([[2, 0, 0, 0],    # two 0.72 ms events: the time is their own
                       [3, 0, 0, 1],    # three 1 ms events and one of 400 ms, the most that overflow's low allows
                       [2, 1, 0, 0],    # the other event's lower bound leaves the first two up to 75 ms: the rule
                       [2, 0, 0, 0],    # no time known
                       [2, 0, 0, 0]])   # a time below zero after the others: not believed, the rule
    times = np.array([1449.0, 3000.0 + 4e5, 1449.0 + 2.5e5, math.nan, -5.0])
    cols, buckets, placed = timed_rows(*bucket_ranges(bounds), counts, times)
    assert cols.tolist() == [0, 1] and buckets.tolist() == [0, 0]
    rows = dict(zip(cols.tolist(), placed, strict=True))
    assert rows[0] == pytest.approx(uniform_fractions(0.0, 1449.0))  # from 0: uniform, averaging 724.5 µs
    assert rows[1] == pytest.approx(uniform_fractions(0.0, 2000.0))
    assert 2 not in rows and 3 not in rows and 4 not in rows  # the rule's rows
    slots = rebin_columns(matrix, counts, bounds, times)
    assert slots.sum(axis=1).tolist() == counts.sum(axis=1).tolist()
    assert slots[0][10] == 2 and slots[0].sum() == 2  # [512, 1024) µs, not 75 ms (nor one in [1024, 2048): 1.5 ms+)
    assert slots[1][10:12].tolist() == [1, 2] and slots[1][19] == 1  # [0.5, 2) ms, and 400 ms in [262, 524) ms
    assert slots[2].tolist() == rebin_counts(bounds, counts[2]).tolist()


def test_the_first_bucket_reads_the_columns_time_with_the_counts_it_is_the_time_of() -> None:
    """Whole counts that carry rounding remainders between columns can hold an event whose time is in another
    column's: 200 events of ~4.5 ms (0.9 s) and one carried into (500, 750] ms, which 0.9 s has no room for, would
    leave the 200 a mean of 2 ms at most, an octave below their bucket's; read with the step's own increases (200.2,
    and 0.3 of a slow one), the time leaves them 3.75 ms: the rule's octave, [2.5, 5) ms."""
    bounds = [5e3, 1e4, 5e5, 7.5e5, math.inf]  # µs
    matrix = spread_matrix(bounds)
    counts = np.array([[200, 0, 0, 1, 0]])
    measured = np.array([[200.2, 0.0, 0.0, 0.3, 0.0]])
    times = np.array([9e5])
    carried = timed_rows(*bucket_ranges(bounds), counts, times)
    assert carried[1].tolist() == [0] and carried[2][0][11] > 0  # [1.39, 2.77) ms: what the carried event did
    placed = timed_rows(*bucket_ranges(bounds), measured, times)
    assert not placed[0].size  # the rule's rows
    slots = rebin_columns(matrix, counts, bounds, times, measured)
    assert slots[0].tolist() == rebin_counts(bounds, counts[0]).tolist()
    assert slots[0][:12].sum() == 0 and slots[0][12:14].sum() == 200 and slots[0][20] == 1


def _supports(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last slot each bucket's row of shares overlaps."""
    held = rows > 0
    return held.argmax(axis=1), NSLOTS - 1 - held[:, ::-1].argmax(axis=1)


@st.composite
def _histograms(draw: st.DrawFn) -> tuple[list[float], np.ndarray, np.ndarray | None]:
    """Ascending upper bounds (µs, from below one unit to past an hour, the last maybe +Inf), per-bucket counts of a
    few columns, and maybe the columns' times."""
    edges = draw(st.lists(st.floats(-3.0, 10.0), min_size=1, max_size=12, unique=True))
    bounds = sorted({float(10.0 ** e) for e in edges})
    if draw(st.booleans()):
        bounds.append(math.inf)
    columns = draw(st.integers(1, 4))
    counts = np.array(draw(st.lists(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 10**6)),
                                             min_size=len(bounds), max_size=len(bounds)),
                                    min_size=columns, max_size=columns)), dtype=np.int64)
    times = None
    if draw(st.booleans()):
        times = np.array(draw(st.lists(st.floats(0.0, 1e12), min_size=columns, max_size=columns)))
    return bounds, counts, times


def _bucket_slots(lows: np.ndarray, highs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last slot holding values of each bucket `[low, high]` (the slot of `high` itself included)."""
    edges = slot_edges()
    return (np.searchsorted(edges, lows, side="right") - 1,
            np.minimum(np.searchsorted(edges, highs, side="right") - 1, NSLOTS - 1))


def _matched(row: np.ndarray, n: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether the events of `row` can be matched to the buckets (`n` events each) whose slots `[start, end]` hold
    them. The buckets' slots are intervals ordered by both ends, so that matching exists exactly when, for every row
    k, the events up to k are at least those of the buckets that end by k and at most those of the buckets that
    start by k."""
    upto = np.cumsum(row)
    return all(n[ends <= k].sum() <= upto[k] <= n[starts <= k].sum() for k in range(NSLOTS))


def time_range(row: np.ndarray, n: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> tuple[float, float]:
    """The least and the most time the events of `row` can take, each in its row and in a bucket (`n` events each,
    over `[lows, highs]`): the rows' events matched to the buckets in order, which gives both (larger lower bounds
    and smaller upper ones of row and bucket are Monge: the matching in order is the best for each)."""
    edges = slot_edges()
    left = n.astype(np.int64).copy()
    least = most = 0.0
    bucket = 0
    for slot in np.flatnonzero(row):
        events = int(row[slot])
        while events:
            while not left[bucket]:
                bucket += 1
            take = min(events, int(left[bucket]))
            assert edges[slot] <= highs[bucket] and edges[slot + 1] > lows[bucket]  # the row holds its values
            least += take * max(edges[slot], lows[bucket])
            most += take * min(edges[slot + 1], highs[bucket])
            events -= take
            left[bucket] -= take
    return least, most


def _bucket_range(n: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> tuple[float, float]:
    """The least and the most time `n` events per bucket `[lows, highs]` can take (no most past an overflow's)."""
    with np.errstate(invalid="ignore"):
        return float((n * lows).sum()), float(np.where(n > 0, n * highs, 0.0).sum())


def _holds(bounds: tuple[float, float], time: float) -> bool:
    """Whether `time` lies between the least and the most time `bounds`, but for float rounding."""
    return bounds[0] * (1 - 1e-9) <= time <= bounds[1] * (1 + 1e-9)


@settings(max_examples=400, deadline=None)
@given(_histograms())
def test_every_bucket_keeps_its_events_in_the_rows_it_overlaps(case: tuple[list[float], np.ndarray,
                                                                           np.ndarray | None]) -> None:
    """Per column: the total is kept, the events can be matched to buckets whose range overlaps their row, and each
    row is within one event per bucket of its share, with the events matched to the buckets whose rows of shares
    overlap it; but where those rows cannot hold the column's time and the buckets can: then the rows hold it."""
    bounds, counts, times = case
    matrix = spread_matrix(bounds)
    slots = rebin_columns(matrix, counts, bounds, times)
    lows, highs = bucket_ranges(bounds)
    placed = None if times is None else timed_rows(lows, highs, counts, times)
    for col, (row, n) in enumerate(zip(slots, counts, strict=True)):
        rows = matrix.copy()
        if placed is not None:
            rows[placed[1][placed[0] == col]] = placed[2][placed[0] == col]
        starts, ends = _supports(rows)
        assert (np.diff(starts) >= 0).all() and (np.diff(ends) >= 0).all()
        assert (row >= 0).all() and int(row.sum()) == int(n.sum())
        assert _matched(row, n, *_bucket_slots(lows, highs)), row.tolist()
        rounded = whole_rows(n[:, None] * rows, n).sum(axis=0)  # each bucket's shares rounded, nothing moved
        if times is not None and row.tolist() != rounded.tolist():
            least, most = time_range(rounded, n, lows, highs)
            assert not least * (1 + 1e-9) <= times[col] <= most * (1 - 1e-9)  # moved: they could not hold it
            assert _holds(time_range(row, n, lows, highs), times[col])
            continue
        if times is not None and _holds(_bucket_range(n, lows, highs), times[col]):
            assert _holds(time_range(row, n, lows, highs), times[col])
        assert row.tolist() == rounded.tolist()
        spread = n[:, None] * rows
        assert (row >= np.floor(spread).sum(axis=0) - 1e-6).all() and (row <= np.ceil(spread).sum(axis=0)).all()
        assert _matched(row, n, starts, ends), row.tolist()
        if placed is None:
            assert row.tolist() == rebin_counts(bounds, n).tolist()


def log_uniform_mean(low: float, high: float) -> float:
    return (high - low) / math.log(high / low)


@pytest.mark.parametrize(("low", "high", "mean", "start", "stop"), [
    (50.0, 75.0, 50.5, 50.0, None),         # below [50, 75]'s own mean (61.7): the top lowered, to about 51
    (3.0, 300.0, 67.5, None, 300.0),        # above [3, 300]'s (64.5): the bottom raised, to about 3.7
    (4.0, 16.0, 12.0 / math.log(4.0), 4.0, 16.0),  # its own mean: the whole range
    (0.0, 100.0, 20.0, 0.0, 40.0),          # from 0: uniform, [0, 2 mean]
    (0.0, 100.0, 70.0, 40.0, 100.0),        # ... and [2 mean - high, high] above high / 2
    (50.0, 75.0, 40.0, 50.0, 50.0),         # a mean outside the range: its nearest end
    (50.0, 75.0, 80.0, 75.0, 75.0),
])
def test_the_widest_range_whose_mean_is_the_proven_one(low: float, high: float, mean: float, start: float | None,
                                                        stop: float | None) -> None:
    (got_start,), (got_stop,) = widest_ranges(np.array([low]), np.array([high]), np.array([mean]))
    if start is not None:
        assert got_start == pytest.approx(start)
    if stop is not None:
        assert got_stop == pytest.approx(stop)
    if low < mean < high:
        placed = (got_start + got_stop) / 2 if low == 0 else log_uniform_mean(got_start, got_stop)
        assert placed == pytest.approx(mean, rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-9, 1e9), st.floats(1e-6, 200.0), st.floats(1e-3, 1 - 1e-3))
def test_the_widest_range_keeps_one_end_and_averages_the_mean(low: float, octaves: float, where: float) -> None:
    """Log-uniform over the part found, the events average the mean; it keeps the bucket's end on the mean's side
    (a range with neither end could widen while keeping its mean)."""
    high = low * 2.0**octaves
    mean = low * (high / low) ** where
    (start,), (stop,) = widest_ranges(np.array([low]), np.array([high]), np.array([mean]))
    assert low <= start <= mean <= stop <= high
    assert start == low or stop == high
    if stop > start * (1 + 1e-9):
        assert log_uniform_mean(start, stop) == pytest.approx(mean, rel=1e-6)


def test_the_columns_time_places_its_lowest_and_highest_buckets_within_their_ranges() -> None:
    """The time bounds the mean of the lowest bucket's events from above (every other event at its bucket's lower
    bound) and the highest's from below (every other at its upper bound): a bucket the time proves placed too fast
    or too slow goes over the widest part of its range ([low, high], as narrowed by a min and a max) whose mean is
    that one: log-uniform from its low end, or to its high end."""
    lows, highs = np.array([500.0, 10_000.0]), np.array([200_000.0, 20_000.0])  # µs: [0.5, 200] ms narrowed
    counts = np.array([[100, 0], [100, 0], [100, 0], [0, 0], [99, 1]])
    times = np.array([3300.0 * 100, 60_000.0 * 100, 199_500 / math.log(400) * 100, 1.0, 3000.0 * 99 + 15_000.0])
    cols, buckets, rows = timed_rows(lows, highs, counts, times)
    placed = dict(zip(cols.tolist(), zip(buckets.tolist(), rows, strict=True), strict=True))
    assert sorted(placed) == [0, 1, 4]  # col 2: the mean the rule places ([0.5, 200] ms log-uniform); 3: no events
    (_, start, _), (faster, _, slower) = widest_ranges(np.array([500.0] * 3), np.array([200_000.0] * 3),
                                                       np.array([3300.0, 60_000.0, (3000.0 * 99 + 5_000.0) / 99]))
    assert log_uniform_mean(500.0, faster) == pytest.approx(3300.0)
    assert placed[0][0] == 0 and placed[0][1] == pytest.approx(spread_fractions(500.0, faster))  # faster
    assert log_uniform_mean(start, 200_000.0) == pytest.approx(60_000.0) and start < 10_000.0
    assert placed[1][0] == 0 and placed[1][1] == pytest.approx(spread_fractions(start, 200_000.0))  # slower
    assert placed[4][0] == 0  # 99 events of 3 ms beside one in [10, 20] ms, put at 10 ms: at most 3.05 ms
    assert placed[4][1] == pytest.approx(spread_fractions(500.0, slower))
    one = np.array([[1.0, 0.0]])  # a mean near a bucket's low end: from that end, up to where the mean is it
    (_, _, (row,)) = timed_rows(np.array([4000.0, 10_000.0]), np.array([9000.0, 20_000.0]), one, np.array([4300.0]))
    (_,), (top,) = widest_ranges(np.array([4000.0]), np.array([9000.0]), np.array([4300.0]))
    assert row == pytest.approx(spread_fractions(4000.0, top)) and log_uniform_mean(4000.0, top) == pytest.approx(4300)


def test_the_lowest_bucket_goes_as_high_as_the_columns_time_proves() -> None:
    """A prometheus_client exporter's default buckets: 100 values in 4.5-5 ms, 100 in 9.5-10 ms, `_sum` 1.4485 s.
    Even with the other 100 at 10 ms, the first bucket's average at least 4.485 ms: they are over [3.97, 5] ms
    (uniform, from 0), 12 below 4.1 ms. The lowest bucket was only ever moved down: 71 in 2.05-4.1 ms, which the
    sum rules out (71 at 4.1 ms or less leave at most 1.436 s), read as a faster band 3.55x sooner."""
    bounds = [5e3, 1e4, 2.5e4, math.inf]  # µs
    counts = np.array([[100, 100, 0, 0]])
    total = 1_448_537.1915773428
    lows, highs = bucket_ranges(bounds)
    least = (total - 100 * 1e4) / 100
    assert time_bounds(lows, highs, counts, np.array([total]))[2] == (np.array([0]), pytest.approx([least]))
    slots = rebin_columns(spread_matrix(bounds), counts, bounds, np.array([total]))[0]
    below = 100 * uniform_fractions(2 * least - 5e3, 5e3)[12]  # [2 * 4.485 - 5, 5] ms: 12.2% below 4.1 ms
    assert slots[12:15].tolist() == [round(below), 100 - round(below), 100] and slots.sum() == 200
    assert _holds(time_range(slots, counts[0], lows, highs), total)


def test_the_highest_bucket_goes_as_low_as_the_columns_time_proves() -> None:
    """100 events in (0, 5] ms and 100 in (5, 10] ms, 0.6 s: even with the first 100 at 0, the others average at
    most 6 ms, below (5, 10] ms spread log-uniformly (7.2 ms): they are over [5, 7.25] ms, all in 4.1-8.19 ms (the
    rule put 29 in 8.19-16.4 ms: at least 0.64 s)."""
    bounds = [5e3, 1e4, math.inf]  # µs
    counts = np.array([[100, 100, 0]])
    lows, highs = bucket_ranges(bounds)
    entries = time_bounds(lows, highs, counts, np.array([6e5]))
    assert entries[0] == (np.array([0]), pytest.approx([1e3])) and entries[3] == (np.array([1]), pytest.approx([6e3]))
    slots = rebin_columns(spread_matrix(bounds), counts, bounds, np.array([6e5]))[0]
    assert slots[13] == 100 and slots[14:].sum() == 0
    assert _holds(time_range(slots, counts[0], lows, highs), 6e5)


@st.composite
def _held_times(draw: st.DrawFn) -> tuple[list[float], np.ndarray, float]:
    """Ascending upper bounds (µs, the last maybe +Inf), one column's counts, and a time its buckets can hold: from
    every event at its bucket's lower bound (0, at 0) to every one at its upper bound, and both ends."""
    edges = draw(st.lists(st.floats(-1.0, 8.0), min_size=1, max_size=10, unique=True))
    bounds = sorted({float(10.0 ** e) for e in edges})
    if draw(st.booleans()):
        bounds.append(math.inf)
    counts = np.array(draw(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 10**5)), min_size=len(bounds),
                                    max_size=len(bounds))), dtype=np.int64)
    floor, ceiling = _bucket_range(counts, *bucket_ranges(bounds))
    where = draw(st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)))
    top = ceiling if math.isfinite(ceiling) else 100.0 * (floor + 1.0)
    return bounds, counts, floor + where * (top - floor)


@settings(max_examples=600, deadline=None)
@given(_held_times())
def test_no_placement_contradicts_the_columns_time(case: tuple[list[float], np.ndarray, float]) -> None:
    """Whatever its buckets, counts, and a time they can hold: the rebinned rows can hold it too, each event in its
    row and in its bucket (a row the time rules out would show events where none can be)."""
    bounds, counts, total = case
    row = rebin_columns(spread_matrix(bounds), counts[None, :], bounds, np.array([total]))[0]
    assert int(row.sum()) == int(counts.sum())
    assert _holds(time_range(row, counts, *bucket_ranges(bounds)), total), row.tolist()


def test_a_bucket_the_time_proves_near_its_floor_gets_no_events_above_what_the_time_allows() -> None:
    """Fifty events of 50.5 ms in (50, 75] ms: all in the row [32.8, 65.5) ms (its part of the bucket is 50-65.5 ms,
    and the time leaves them no room past 51 ms); clipped to the bucket, the octave around 50.5 ms put 20% in
    [65.5, 131) ms, which the time allows at most one of."""
    bounds = [5e4, 7.5e4, math.inf]  # µs
    counts = np.array([[0, 50, 0]])
    slots = rebin_columns(spread_matrix(bounds), counts, bounds, np.array([50 * 50_500.0]))
    assert slots[0][16] == 50 and slots[0].sum() == 50


def test_a_range_too_narrow_for_log2_to_tell_its_ends_apart_is_one_value() -> None:
    """A sum that places a bucket's events at its top gives [9999.99999999999, 10000): log2 of both ends is one float,
    and the shares divided by that width (ZeroDivisionError on a real Prometheus restart in CI)."""
    shares = spread_fractions(9999.99999999999, 10000.0)
    assert shares.sum() == 1.0 and shares[slot_of_value(9999.99999999999)] == 1.0


def test_an_overflow_the_time_proves_slower_than_its_bound_is_placed_above_it() -> None:
    """900 events of 3 ms and 100 of 30 s past the last bound, 10 s, with no max: the overflow went whole into the
    row of 10 s, and the 3,000 s its events took beyond the rows' estimate went, scaled, into the fast rows too. The
    time leaves the overflow's events at least 29.98 s on average (every other at its bucket's top): they go over
    the widest range from 10 s up whose mean that is, log-uniform; a time that proves nothing leaves them at 10 s."""
    bounds = [5e3, 1e4, 1e7, math.inf]  # µs
    counts = np.array([[900, 0, 0, 100], [900, 0, 0, 100]])
    times = np.array([900 * 3e3 + 100 * 3e7, 900 * 3e3 + 100 * 1e7])
    slots = rebin_columns(spread_matrix(bounds), counts, bounds, times)
    (start,), (stop,) = widest_ranges(np.array([1e7]), np.array([math.inf]), np.array([(times[0] - 900 * 5e3) / 100]))
    assert start == 1e7 and log_uniform_mean(start, stop) == pytest.approx((times[0] - 900 * 5e3) / 100, rel=1e-9)
    fractions = spread_fractions(1e7, stop)
    assert (np.flatnonzero(slots[0][20:]) + 20).tolist() == np.flatnonzero(fractions).tolist() == [24, 25, 26]
    assert slots[0][24:].sum() == 100 and slots[0][24:] == pytest.approx(100 * fractions[24:], abs=1)
    assert slots[1][24] == 100 and slots[1][25:].sum() == 0  # its mean at most 10 s: at its bound
    assert slots[0][:14].sum() == slots[1][:14].sum() == 900  # the fast events stay in their bucket (rows to 8.19 ms)


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-6, 1e9), st.floats(0.5, 60.0), st.floats(1e-3, 1 - 1e-3), st.floats(0.05, 1.0))
def test_a_range_narrowed_to_fewer_octaves_keeps_its_mean_and_lies_within_it(low: float, octaves: float, where: float,
                                                                               part: float) -> None:
    """The widest range averaging a mean, narrowed to `part` of its octaves (a cumulative column's width, from its
    series' first column): log-uniform over the part found, the events average the same mean, inside the range."""
    high = low * 2.0**octaves
    mean = low * (high / low) ** where
    (start,), (stop,) = widest_ranges(np.array([low]), np.array([high]), np.array([mean]))
    width = math.log2(stop / start) * part
    (a,), (b,) = within_octaves(np.array([start]), np.array([stop]), np.array([mean]), np.array([width]))
    assert start <= a <= mean <= b <= stop
    if part < 1 and width > 1e-6:
        assert math.log2(b / a) == pytest.approx(width, rel=1e-6)
        assert log_uniform_mean(a, b) == pytest.approx(mean, rel=1e-6)
    (c,), (d,) = within_octaves(np.array([start]), np.array([stop]), np.array([mean]), np.array([math.nan]))
    assert (c, d) == (start, stop)  # no limit
