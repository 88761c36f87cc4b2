from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import bin_extremes, bin_values, bounds_in_unit, bounds_seconds
from latencymap.core.percentiles import column_medians, exact_bucket_range, median_of, percentile_estimates


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("mu", "sigma"), [(np.log(300e3), 0.6), (np.log(5e6), 1.5), (np.log(2e3), 0.3)])
def test_percentiles_within_one_bucket_of_numpy(seed: int, mu: float, sigma: float) -> None:
    rng = np.random.default_rng(seed)
    values = rng.lognormal(mu, sigma, 50_000)  # nanoseconds
    counts, _ = bin_values(values)
    low, high = bounds_seconds("bpf", "nanosec")
    qs = (0.5, 0.9, 0.99, 0.999)
    est = percentile_estimates(counts, low, high, qs)
    for q, e in zip(qs, est, strict=True):
        truth = np.quantile(values, q) * 1e-9
        slot = int(np.searchsorted(low, truth, side="right") - 1)
        assert low[max(slot - 1, 0)] <= e < high[min(slot + 1, 63)], (q, e, truth)


def test_empty_rows_give_nan_and_rows_are_vectorized() -> None:
    low, high = bounds_seconds("bpf", "microsec")
    counts = np.zeros((3, 64))
    counts[1, 10] = 4
    counts[2, 0] = 2
    est = percentile_estimates(counts, low, high, (0.5,))
    assert np.isnan(est[0, 0])
    assert low[10] <= est[1, 0] < high[10]
    assert 0 <= est[2, 0] < high[0]  # zero bucket interpolates linearly from 0


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([np.float64, np.float32, np.int64]),
       st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=40))
def test_median_of_is_numpys_median(dtype: type, values: list[float]) -> None:
    import warnings

    if dtype is np.int64:
        values = [v for v in values if math.isfinite(v) and abs(v) < 2**53]
    arr = np.array(values, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(np.median(arr))
        got = median_of(arr)
    assert got == expected or (math.isnan(got) and math.isnan(expected))


def test_exact_bucket_means_place_events_inside_their_bucket() -> None:
    """With the exact time per bucket: a lone event is at its value; many events of one value are read near it
    (not at the bucket's log-uniform middle); a row without exact times (NaN) keeps the log-uniform estimate."""
    low, high = bounds_seconds("bpf", "nanosec")
    one, one_t = bin_values(np.array([123_456.0]))
    assert percentile_estimates(one, low, high, times=one_t * 1e-9) == pytest.approx([123.456e-6] * 4)
    many, many_t = bin_values(np.full(1000, 123_456.0))
    plain = percentile_estimates(many, low, high)
    mean_aware = percentile_estimates(many, low, high, times=many_t * 1e-9)
    assert plain[0] == pytest.approx(92.7e-6, rel=1e-3)  # log-uniform in [65.5, 131) µs
    assert abs(mean_aware[0] - 123.456e-6) < 0.03 * 123.456e-6 and (mean_aware < 131.073e-6).all()
    rows = np.stack([many, many])
    times = np.stack([many_t * 1e-9, np.full(64, np.nan)])
    both = percentile_estimates(rows, low, high, times=times)
    assert both[0].tolist() == mean_aware.tolist() and both[1].tolist() == plain.tolist()
    # the helper's HdrHistogram case, in small: the p99 rank falls among a few events just above a bucket's low end
    values = np.r_[np.full(985, 200e3), np.full(10, 270e3), np.full(5, 50e6)]
    counts, sums = bin_values(values)
    p99_log, p99_mean = (percentile_estimates(counts, low, high, times=t)[2] for t in (None, sums * 1e-9))
    assert p99_log > 1.3 * 270e-6 and abs(p99_mean / 270e-6 - 1) < 0.03
    zero, zero_t = bin_values(np.zeros(10))
    assert percentile_estimates(zero, low, high, times=zero_t)[0] == 0.0  # all zeros read 0, not a µs


@given(st.integers(1, 40), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_column_medians_are_numpys_column_medians(rows: int, cols: int, seed: int) -> None:
    values = np.random.default_rng(seed).integers(0, 5, size=(rows, cols)).astype(np.float64) / 7
    assert np.array_equal(column_medians(values), np.median(values, axis=0))


def _allowed_range(counts: np.ndarray, sums: np.ndarray, low: np.ndarray,
                   high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per slot, the least and most a value can be given its bucket's count and exact sum (every value >= low and
    < high): the oracle of the tests below, written out apart from `exact_bucket_range`."""
    others = np.maximum(counts - 1.0, 0.0)
    return np.maximum(low, sums - others * high), np.minimum(high, sums - others * low)


_QS = (0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0)
#: Values inside a bucket: where in it (0: its low end, just under 1: its top), clustered ends included.
_WHERE = st.one_of(st.sampled_from([0.0, 1e-9, 0.001, 0.5, 0.999, 1 - 2**-40]),
                   st.floats(0.0, 1.0, exclude_max=True))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.lists(_WHERE, min_size=1, max_size=8)), min_size=1, max_size=5))
def test_exact_percentiles_lie_within_the_values_their_buckets_allow_and_grow_with_q(
        groups: list[tuple[int, list[float]]]) -> None:
    """Random exact buckets built from real values: each percentile lies in the bucket holding its rank, between
    the least and the most value its count and sum allow (so never past the bucket's largest possible value: a
    lone event is read as itself), and percentiles grow with q."""
    low, high = bounds_in_unit("bpf")
    values = np.array([low[k] + u * (high[k] - low[k]) for k, where in groups for u in where])
    counts, sums = bin_values(values)
    pct = percentile_estimates(counts, low, high, _QS, times=sums)
    slots = np.where(values >= 1.0, np.frexp(values)[1], 0)  # as bin_values bins them
    least, most = _allowed_range(counts.astype(np.float64), sums, low, high)
    cum = np.cumsum(counts)
    for q, p in zip(_QS, pct, strict=True):
        k = int(np.argmax(cum >= q * cum[-1] - 1e-9 * cum[-1]))  # the bucket holding the rank
        mine = values[slots == k]
        tol = 1e-12 * high[k] * len(mine)  # the sum's rounding
        assert mine.min() >= least[k] - tol and mine.max() <= most[k] + tol  # the oracle holds the true values
        assert least[k] - tol <= p <= most[k] + tol, (q, p, k, mine.tolist())
        if len(mine) == 1:
            assert p == pytest.approx(mine[0], rel=1e-12)
    assert (np.diff(pct) >= -1e-12 * pct[1:]).all(), pct


def test_spark_stragglers_alone_in_their_bucket_read_no_p999_past_what_their_sum_allows() -> None:
    """fixtures/spark (85 tasks): the two stragglers, 2.55 s and 2.534 s, are alone in [2.048, 4.096) s. Spread over
    the whole bucket they read p999 = 3.53 s, though two tasks of 5.084 s in all, neither under 2.048 s, leave at
    most 3.036 s to the slower one. (Nearer the slowest, 2.55 s, no reading of a count and a sum can promise: only
    the mean is sure to lie between the bucket's fastest and slowest.)"""
    low, high = bounds_seconds("spark", "millisec")
    counts, sums = np.zeros(64), np.zeros(64)
    slots = np.searchsorted(low, [0.032, 0.064, 0.256, 0.512, 2.048])
    counts[slots] = [12, 3, 66, 2, 2]
    sums[slots] = [0.657, 0.258, 24.327, 1.986, 5.084]  # seconds: the fixture's exact time per bucket
    plain = percentile_estimates(counts, low, high)
    p50, p90, p99, p999 = percentile_estimates(counts, low, high, times=sums)
    assert p999 <= 5.084 - 2.048 and p999 == pytest.approx(2.994, abs=1e-3)  # was 3.534
    assert 2.048 <= p99 <= p999  # 2.616, was 2.495: the same mean on a narrower range moves it up, inside the range
    assert (p50, p90) == (0.34131625624680745, 0.48720922724528426)  # their buckets' sums allow the whole bucket
    assert plain[3] > 3.0  # counts alone know nothing of the sums: log-uniform as ever


def test_only_exact_buckets_are_narrowed_estimated_ones_read_as_before() -> None:
    """Rows (or buckets) without an exact time give the numbers they gave before exact buckets were narrowed to
    what their sums allow, in the same call as rows that are narrowed; and edge cases of exact buckets: a zero
    bucket of small values, a sum that float rounding puts past the bucket, a lone event, an empty bucket."""
    low, high = bounds_seconds("bpf", "microsec")
    counts = np.zeros((5, 64))
    counts[0, 0], counts[0, 3], counts[0, 4], counts[0, 9] = 5, 40, 30, 2
    counts[1, 10], counts[1, 11], counts[1, 20] = 700, 290, 3
    counts[2, 0] = 4
    counts[3, 20] = 3  # exact: three values just above the bucket's low end
    counts[4, 0] = 3  # exact, zero bucket: 0, 0 and 0.3 µs
    times = np.full((5, 64), np.nan)
    times[3, 20] = 3 * low[20] + 1e-6
    times[4, 0] = 0.3e-6
    qs = (0.01, 0.5, 0.9, 0.99, 0.999)
    pct = percentile_estimates(counts, low, high, qs, times=times)
    before = [[1.54e-07, 7.14780362956521e-06, 1.4025691541056561e-05, 0.0003920788472561625, 0.0004985173825923063],
              [0.0005170592197402991, 0.0008371171443536322, 0.0016269238772828388, 0.0020143566816330214,
               0.8336024544990616],
              [1e-08, 5e-07, 9e-07, 9.9e-07, 9.989999999999999e-07]]
    assert pct[:3].tolist() == before
    assert percentile_estimates(counts[:3], low, high, qs).tolist() == before
    assert (pct[3] >= low[20]).all() and (pct[3] <= low[20] + 1e-6).all()  # not up to 2x low[20]
    assert (pct[4] >= 0).all() and (pct[4] <= 0.3e-6).all()  # not up to 1 µs
    assert np.diff(pct[3]).min() >= 0 and np.diff(pct[4]).min() >= 0


def test_exact_bucket_range_edge_cases() -> None:
    """`exact_bucket_range`, which percentiles read: never empty nor inverted, the mean always inside."""
    lo, hi = np.full(6, 2.0), np.full(6, 4.0)
    n = np.array([0.0, 1.0, 1.0, 3.0, 2.0, 1000.0])
    s = np.array([0.0, 3.0, 4.0 + 1e-15, 6.0 + 1e-3, 4.0 * 2 + 1e-12, 1000 * 2.0 + 0.5])
    least, most, mean = exact_bucket_range(n, s, lo, hi)
    assert np.isnan([least[0], most[0], mean[0]]).all()  # no events
    assert least[1] == most[1] == mean[1] == 3.0  # a lone event is its value
    assert least[2] == most[2] == mean[2] == 4.0  # a sum rounded past the bucket: its top, not an empty range
    assert least[3] == 2.0 and most[3] == pytest.approx(2.001)  # three just above 2: the largest is at most 2.001
    assert least[4] == most[4] == mean[4] == 4.0  # two at the top, and the sum rounded up: not inverted
    assert most[5] == pytest.approx(2.5) and least[5] == 2.0
    assert (least[1:] <= mean[1:]).all() and (mean[1:] <= most[1:]).all()
    zero_least, zero_most, _ = exact_bucket_range(np.array([10.0]), np.array([0.0]), np.array([0.0]), np.array([1.0]))
    assert zero_least[0] == zero_most[0] == 0.0  # S = 0 in a zero-floor bucket: every value is 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 2.0), st.floats(1.0, 1e7), st.sampled_from([10.5, 10.8, 40.0, 1435.0])),
                min_size=1, max_size=300),
       st.sampled_from(["millisec", "microsec", "nanosec"]), st.booleans())
def test_percentiles_lie_within_the_values_seen_in_their_slot(values: list[float], unit: str, exact: bool) -> None:
    """Values binned by the real `bin_values`: with the extremes of each slot, every percentile lies within
    [min, max] of the values, and within [smallest, largest] of the values of one slot."""
    low, high = bounds_seconds("bpf", unit)
    per = float(low[1])  # the slot [1, 2) of the unit starts at one unit
    counts, sums = bin_values(np.asarray(values))
    extremes = bin_extremes(np.asarray(values)) * per
    qs = (0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0)
    pct = percentile_estimates(counts, low, high, qs, times=sums * per if exact else None,
                               seen=(extremes[0], extremes[1]))
    used = np.flatnonzero(counts)
    for p in pct.tolist():
        assert min(values) * per <= p <= max(values) * per
        assert any(extremes[0, k] <= p <= extremes[1, k] for k in used.tolist()), (p, extremes[:, used])
    assert np.all(np.diff(pct) >= -1e-12 * pct[:-1])


def test_values_all_at_one_point_read_that_point() -> None:
    """Training steps of exactly 10.5 ms with 1% at 10.8 ms: p99 is 10.8 ms, not interpolated up the slot."""
    values = np.array([10.5] * 990 + [10.8] * 10)
    low, high = bounds_seconds("bpf", "millisec")
    counts, sums = bin_values(values)
    seen = bin_extremes(values) * 1e-3
    p50, p99 = percentile_estimates(counts, low, high, (0.5, 0.99), times=sums * 1e-3, seen=(seen[0], seen[1]))
    assert p50 == pytest.approx(10.5e-3, rel=1e-3) and 10.5e-3 <= p99 <= 10.8e-3
    unbounded = percentile_estimates(counts, low, high, (0.99,), times=sums * 1e-3)[0]
    assert unbounded > 10.8e-3  # what the bound changes


def test_unknown_extremes_leave_the_estimate_as_it_was() -> None:
    """NaN (none seen) and infinite (not all values seen) slots read as without `seen`."""
    counts = np.zeros(64, dtype=np.int64)
    counts[3:6] = (5, 10, 1)
    low, high = bounds_seconds("bpf", "millisec")
    plain = percentile_estimates(counts, low, high)
    nan = np.full(64, np.nan)
    assert np.array_equal(percentile_estimates(counts, low, high, seen=(nan, nan)), plain)
    inf = np.full(64, np.inf)
    assert np.array_equal(percentile_estimates(counts, low, high, seen=(-inf, inf)), plain)


def test_percentiles_in_the_open_top_slot_reach_the_values_seen_there_or_say_they_are_a_lower_bound() -> None:
    """The top slot, [2**62, 2**63) of the unit, is open: it counts every longer value too. Percentiles there were
    interpolated inside [low, 2 x low) and stopped at its nominal end. With the values seen in it (2**64 and 2**66
    ns), they lie among them, past that end; without, they are the slot's low and `open_percentiles` says so."""
    from latencymap.core.buckets import TOP_SLOT
    from latencymap.core.percentiles import open_percentiles

    low, high = bounds_seconds("bpf", "nanosec")
    values = np.r_[np.full(98, 1500.0), 2.0**64, 2.0**66]
    counts, sums = bin_values(values)
    seen = bin_extremes(values) * 1e-9
    qs = (0.5, 0.995, 1.0)
    for times in (None, sums * 1e-9):
        p50, p995, p100 = percentile_estimates(counts, low, high, qs, times=times, seen=(seen[0], seen[1]))
        assert 1024e-9 <= p50 < 2048e-9
        assert 2.0**64 * 1e-9 <= p995 <= p100 == pytest.approx(2.0**66 * 1e-9) and p995 > high[TOP_SLOT]
        assert not open_percentiles(counts, qs, seen=(seen[0], seen[1])).any()
        unknown = percentile_estimates(counts, low, high, qs, times=times)
        assert 1024e-9 <= unknown[0] < 2048e-9 and unknown[1] == unknown[2] == low[TOP_SLOT]
        assert open_percentiles(counts, qs).tolist() == [False, True, True]
    rows = np.stack([counts, np.zeros(64), np.eye(64)[3]])
    assert open_percentiles(rows, qs).tolist() == [[False, True, True], [False] * 3, [False] * 3]
    assert not open_percentiles(counts[:10], qs).any()  # not the whole scale: no top slot


def test_a_slot_s_values_lie_within_the_values_seen_in_it_and_past_the_open_top_s_end() -> None:
    """`seen_bucket`: a slot's bucket narrowed to the values seen in it; not known (NaN, infinite): the bucket; the
    open top slot reaches its largest value seen, past its nominal end."""
    from latencymap.core.buckets import NSLOTS, TOP_SLOT
    from latencymap.core.percentiles import seen_bucket

    low, high = bounds_seconds("bpf", "nanosec")
    least, most = np.full(NSLOTS, np.nan), np.full(NSLOTS, np.nan)
    least[30], most[30] = 0.6, 0.7
    least[TOP_SLOT], most[TOP_SLOT] = low[TOP_SLOT] * 1.5, high[TOP_SLOT] * 4
    assert seen_bucket(30, low, high, (least, most)) == (0.6, 0.7)
    assert seen_bucket(29, low, high, (least, most)) == (low[29], high[29])
    assert seen_bucket(30, low, high, None) == (low[30], high[30])
    assert seen_bucket(30, low, high, (np.full(NSLOTS, -np.inf), np.full(NSLOTS, np.inf))) == (low[30], high[30])
    assert seen_bucket(TOP_SLOT, low, high, (least, most)) == (low[TOP_SLOT] * 1.5, high[TOP_SLOT] * 4)
