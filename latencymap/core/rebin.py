"""Histograms whose buckets are not latencymap's powers of two, mapped onto the 64 log2 slots.

Prometheus classic histograms (`le` bounds such as .005 .01 .025 ... 10) and OpenTelemetry explicit bounds
keep their own boundaries. Their counts are placed on the display rows by one documented rule:

- a bucket `[low, high)` is spread over the slots it overlaps in proportion to the log-width of each overlap
  (log-uniform density inside the bucket);
- a first bucket whose lower bound is 0 (Prometheus' `(0, le]`) is taken as one octave, `[high/2, high)`, unless
  the column's exact time (`_sum`) proves its events faster: then it is the octave `[a, 2a)` whose mean, `a / ln 2`,
  is the most that time leaves them once every other event is put at its bucket's lower bound (a service whose
  requests all take 0.7 ms, under a first bucket of 100 ms, shows at 0.7 ms, not at 50-100 ms); a bucket whose
  upper bound is 0 (OpenTelemetry's default first bucket, `(-inf, 0]`) goes to slot 0;
- an overflow bucket (`high` infinite, Prometheus' `+Inf`) goes whole into the slot holding its lower bound;
- the fractional counts are rounded to integers by largest remainder, so the total of events is exact.

Streams built this way are *rebinned*: views and reports must say so, and only the totals are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from latencymap.core.buckets import NSLOTS


def slot_edges() -> np.ndarray:
    """The 65 slot edges in the stream unit on the zero-floor scale: 0, 1, 2, 4, ... 2**62, inf."""
    edges = np.empty(NSLOTS + 1, dtype=np.float64)
    edges[0] = 0.0
    edges[1:NSLOTS] = np.exp2(np.arange(0, NSLOTS - 1, dtype=np.float64))
    edges[NSLOTS] = math.inf
    return edges


_EDGES = slot_edges()


def slot_of_value(value: float) -> int:
    """The slot (zero-floor scale) that holds `value`, in the stream unit."""
    if not value >= 1.0:
        return 0
    if math.isinf(value):
        return NSLOTS - 1
    _, exponent = math.frexp(value)
    return min(exponent, NSLOTS - 1)


def spread_fractions(low: float, high: float) -> np.ndarray:
    """The share of a bucket `[low, high)` that falls in each slot under the rule above (sums to 1)."""
    if not (high > low >= 0.0 or high == low == 0.0) or math.isnan(high):
        raise ValueError(f"bucket [{low}, {high}) is not an increasing range of non-negative values")
    shares = np.zeros(NSLOTS, dtype=np.float64)
    if high == 0.0:  # OpenTelemetry's first default bucket, (-inf, 0]: zero latencies
        shares[0] = 1.0
        return shares
    if math.isinf(high):
        shares[slot_of_value(low)] = 1.0
        return shares
    if low == 0.0:
        low = high / 2.0
    if high <= 1.0:
        shares[0] = 1.0
        return shares
    log_low, log_high = math.log2(low), math.log2(high)
    width = log_high - log_low
    first, last = slot_of_value(low), slot_of_value(math.nextafter(high, 0.0))
    for slot in range(first, last + 1):
        lo = max(low, _EDGES[slot]) if slot else low
        hi = min(high, _EDGES[slot + 1])
        if hi > lo:
            shares[slot] = (math.log2(hi) - math.log2(lo)) / width
    normalized: np.ndarray = shares / shares.sum()
    return normalized


def spread_matrix(bounds: Sequence[float]) -> np.ndarray:
    """Rows of slot shares, one per bucket, for ascending upper `bounds` (the last may be inf).

    Bucket `i` is `[bounds[i-1], bounds[i])`, the first `[0, bounds[0])`.
    """
    uppers = [float(b) for b in bounds]
    if any(b <= a for a, b in pairwise(uppers)):
        raise ValueError(f"bucket bounds are not strictly ascending: {uppers}")
    lows = [0.0, *uppers[:-1]]
    return np.vstack([spread_fractions(lo, hi) for lo, hi in zip(lows, uppers, strict=True)])


def faster_first_bucket(uppers: Sequence[float], counts: np.ndarray,
                        times: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The first bucket above 0, and per column the most its events' mean can be when the column's exact time
    proves them faster than the rule's octave `[high/2, high)` (every other event put at its bucket's lower bound);
    NaN in the other columns. None when there is no such bucket (nothing above 0, or only `+Inf`).

    `uppers` are the buckets' ascending upper bounds (the last may be inf), `counts` per-bucket counts (columns x
    buckets) and `times` each column's time (NaN: unknown), bounds and times in the same unit.
    """
    highs = np.asarray(uppers, dtype=np.float64)
    above = np.flatnonzero(highs > 0)
    if not above.size or not math.isfinite(highs[above[0]]):
        return None
    first = int(above[0])
    lows = np.maximum(np.concatenate([[0.0], highs[:-1]]), 0.0)
    n_first = counts[:, first]
    with np.errstate(invalid="ignore", divide="ignore"):
        most = (np.asarray(times, dtype=np.float64) - counts @ lows) / n_first
    octave_mean = highs[first] / 2.0 / math.log(2.0)  # the log-uniform mean of [high/2, high)
    return first, np.where((n_first > 0) & (most > 0) & (most < octave_mean), most, np.nan)


def with_time(matrix: np.ndarray, uppers: Sequence[float], counts: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Float slot counts (columns x slots) of per-bucket `counts` (columns x buckets) spread by `matrix`, the first
    bucket above 0 moved to the octave its column's exact time allows (the rule above; see `faster_first_bucket`).
    """
    counts = np.asarray(counts, dtype=np.float64)
    shares: np.ndarray = counts @ matrix
    faster = faster_first_bucket(uppers, counts, times)
    if faster is None:
        return shares
    first, most = faster
    for col in np.flatnonzero(~np.isnan(most)):
        low = float(most[col]) * math.log(2.0)  # the octave [low, 2 low) whose log-uniform mean is `most`
        shares[col] += counts[col, first] * (spread_fractions(low, 2.0 * low) - matrix[first])
    return shares


def largest_remainder(values: np.ndarray, total: int) -> np.ndarray:
    """Non-negative integers close to `values` that add up to `total` exactly."""
    floors: np.ndarray = np.floor(values).astype(np.int64)
    missing = int(total - floors.sum())
    if missing > len(floors):  # float rounding of totals past 2**53: the surplus joins the fullest slot
        floors[int(np.argmax(values))] += missing - len(floors)
        missing = len(floors)
    if missing > 0:
        order = np.argsort(-(values - floors), kind="stable")
        floors[order[:missing]] += 1
    elif missing < 0:
        order = np.argsort(values - floors, kind="stable")
        for slot in order:
            if missing == 0:
                break
            take = min(int(floors[slot]), -missing)
            floors[slot] -= take
            missing += take
    return floors


def rebin_counts(bounds: Sequence[float], counts: Sequence[int] | np.ndarray,
                 matrix: np.ndarray | None = None) -> np.ndarray:
    """Per-slot integer counts for per-bucket (not cumulative) `counts` over upper `bounds` in the stream unit."""
    weights = np.asarray(counts, dtype=np.float64)
    if weights.shape != (len(bounds),):
        raise ValueError(f"{len(counts)} counts for {len(bounds)} buckets")
    if (weights < 0).any():
        raise ValueError("bucket counts must not be negative")
    shares = spread_matrix(bounds) if matrix is None else matrix
    return largest_remainder(weights @ shares, int(sum(int(c) for c in counts)))
