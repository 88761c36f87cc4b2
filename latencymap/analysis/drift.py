"""Drift: the median latency trending over the columns (a slow leak, a growing queue, a filling disk).

Each column with at least `episode_min_column_events` events gets its median in octaves (log2), read as the
report reads its columns' percentiles (`percentile_estimates`: with the exact time per bucket where the source gave
it, within the values seen per bucket where they are known). A least-squares line over the columns' mid times is a
drift when it moves the median by at least `drift_min_octaves` (1: the median doubles or halves) from the
first tested column to the last, and explains at least `drift_min_r2` (50%) of the variance of the column
medians (so two steady halves with a jump are a trend only when the jump dominates, and noise never is).
At least `drift_min_columns` (10) columns must be tested.

A level *shift* is told apart: when the best single change point (two flat levels) leaves at most
`drift_step_ratio` (half) of the line's residual, the medians jumped once rather than trended, and the
finding is a `shift` at that column (a deploy, a failover, a cache turned on), kept only when its two
levels differ by at least `drift_min_octaves` and no episode already starts there.
"""

from __future__ import annotations

import numpy as np

from latencymap.analysis.columns import Columns, as_columns
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.lean import dataclass
from latencymap.core.percentiles import percentile_estimates


@dataclass
class Drift:
    """A trend of the median over columns `first_col..last_col` (absolute numbers)."""

    first_col: int
    last_col: int
    start: float
    end: float
    octaves: float
    r2: float
    first_median_s: float
    last_median_s: float
    #: "drift" (a trend) or "shift" (one jump at column `at_col`, time `at`).
    kind: str = "drift"
    at_col: int | None = None
    at: float | None = None


def column_medians_log2(counts: np.ndarray, low_s: np.ndarray, high_s: np.ndarray, times: np.ndarray | None = None,
                        seen: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """log2 of each column's median latency (seconds) as `percentile_estimates` reads it (`times`: exact seconds per
    slot, or None; `seen`: smallest and largest value seen per slot), at least half the first slot's high (a
    bucket from 0 has no log); NaN for empty columns."""
    p50 = percentile_estimates(counts, low_s, high_s, (0.5,), times=times, seen=seen)[:, 0]
    return np.log2(np.maximum(p50, 0.5 * high_s[0]))


def find_drift(counts: np.ndarray | Columns, low_s: np.ndarray, high_s: np.ndarray, starts: np.ndarray,
               ends: np.ndarray, *, th: Thresholds = DEFAULT_THRESHOLDS, col_offset: int = 0, exact: bool = False,
               seen: tuple[np.ndarray, np.ndarray] | None = None) -> Drift | None:
    """The drift of the median over the columns (of (columns x slots) counts, or of `Columns` that read their times
    too), or None (see the module docstring); `exact`: the times are the source's, not estimated; `seen`: the smallest
    and largest value seen per slot (s, NaN where not known)."""
    cols = as_columns(counts)
    used = np.flatnonzero(cols.used(times=False))
    slots = slice(None)
    if used.size:  # the medians read only the slots some column uses
        slots = slice(int(used[0]), int(used[-1]) + 1)
        low_s, high_s = low_s[slots], high_s[slots]
        if seen is not None:
            seen = (np.asarray(seen[0])[slots], np.asarray(seen[1])[slots])
    found, medians = [], []
    for span, c, t in cols.blocks():  # each column's median, a block of columns at a time
        c = c[:, slots]
        rows = np.flatnonzero(c.sum(axis=1) >= th.episode_min_column_events)
        found.append(rows + span.start)
        medians.append(column_medians_log2(c[rows], low_s, high_s, t[rows][:, slots] if exact else None, seen))
    tested = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    if tested.size < max(th.drift_min_columns, 3):
        return None
    y = np.concatenate(medians)
    x = (np.asarray(starts, dtype=np.float64)[tested] + np.asarray(ends, dtype=np.float64)[tested]) / 2.0
    x = x - x[0]
    if np.ptp(x) <= 0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    fit = slope * x + intercept
    total = float(((y - y.mean()) ** 2).sum())
    sse_line = float(((y - fit) ** 2).sum())
    r2 = 1.0 - sse_line / total if total > 0 else 0.0
    octaves = float(slope * (x[-1] - x[0]))
    if abs(octaves) < th.drift_min_octaves or r2 < th.drift_min_r2:
        return None
    a, b = int(tested[0]), int(tested[-1])
    k, sse_step, left, right = best_step(y)
    if sse_step <= th.drift_step_ratio * sse_line:
        if abs(right - left) < th.drift_min_octaves:
            return None
        at = int(tested[k])
        return Drift(a + col_offset, b + col_offset, float(starts[a]), float(ends[b]), right - left,
                     1.0 - sse_step / total, float(2.0 ** left), float(2.0 ** right), "shift", at + col_offset,
                     float(starts[at]))
    return Drift(a + col_offset, b + col_offset, float(starts[a]), float(ends[b]), octaves, r2,
                 float(2.0 ** fit[0]), float(2.0 ** fit[-1]))


def best_step(y: np.ndarray) -> tuple[int, float, float, float]:
    """(first index of the second level, residual sum of squares, left mean, right mean) of the best split."""
    n = len(y)
    c1, c2 = np.cumsum(y), np.cumsum(y * y)
    k = np.arange(1, n)  # the second level starts at index k
    left_sse = c2[k - 1] - c1[k - 1] ** 2 / k
    right_sum, right_sq = c1[-1] - c1[k - 1], c2[-1] - c2[k - 1]
    right_sse = right_sq - right_sum ** 2 / (n - k)
    best = int(np.argmin(left_sse + right_sse))
    kk = int(k[best])
    return kk, float(left_sse[best] + right_sse[best]), float(c1[kk - 1] / kk), float(right_sum[best] / (n - kk))
