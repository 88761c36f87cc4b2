"""Vectorized estimates from log2 histograms: percentiles, means, rates."""

from __future__ import annotations

import math

import numpy as np

PERCENTILES: tuple[float, ...] = (0.50, 0.90, 0.99, 0.999)
#: How reports, gates and diffs name them.
PERCENTILE_NAMES: dict[float, str] = {0.50: "p50", 0.90: "p90", 0.99: "p99", 0.999: "p999"}


def percentile_estimates(counts: np.ndarray, low: np.ndarray, high: np.ndarray,
                         qs: tuple[float, ...] = PERCENTILES) -> np.ndarray:
    """Percentiles (seconds) of each histogram row in `counts` (..., slots); NaN for empty rows.

    Inside the bucket holding the target rank the value is interpolated geometrically
    (log-uniform within `[low, high)`), linearly in a bucket that starts at 0.
    """
    counts = np.asarray(counts, dtype=np.float64)
    squeeze = counts.ndim == 1
    if squeeze:
        counts = counts[None, :]
    cum = np.cumsum(counts, axis=-1)
    total = cum[:, -1]
    out = np.full((counts.shape[0], len(qs)), np.nan)
    rows = np.arange(counts.shape[0])
    ok = total > 0
    for j, q in enumerate(qs):
        target = q * total
        idx = np.argmax(cum >= target[:, None] - 1e-9 * total[:, None], axis=1)
        before = np.where(idx > 0, cum[rows, np.maximum(idx - 1, 0)], 0.0)
        inside = counts[rows, idx]
        frac = np.clip(np.divide(target - before, inside, out=np.zeros_like(target), where=inside > 0), 0.0, 1.0)
        lo, hi = low[idx], high[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            geometric = lo * np.power(np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), 1.0), frac)
        value = np.where(lo > 0, geometric, lo + frac * (hi - lo))
        out[:, j] = np.where(ok, value, np.nan)
    return out[0] if squeeze else out


def safe_ratio(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    """num / den with NaN where den is 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out: np.ndarray = np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den != 0)
    return out


def median_of(values: np.ndarray | list[float]) -> float:
    """`np.median` of a 1-D array, the same number, without the ~20 ms import of numpy.ma it makes on first use."""
    a = np.asarray(values).ravel()
    n = a.size
    if n == 0 or (a.dtype.kind == "f" and np.isnan(a).any()):
        return math.nan
    k = n // 2
    if n % 2:
        return float(np.partition(a, k)[k])
    part = np.partition(a, (k - 1, k))
    if part.dtype.kind != "f":
        part = part.astype(np.float64)
    return float((part[k - 1] + part[k]) / 2)  # in the array's float type, as np.median's mean is
