from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import bin_values, bounds_seconds
from latencymap.core.percentiles import column_medians, median_of, percentile_estimates


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
