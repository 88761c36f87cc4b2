from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import bin_values, bounds_seconds
from latencymap.core.percentiles import median_of, percentile_estimates


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
