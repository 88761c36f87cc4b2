"""One side's buckets on the other side's rows, for `diff` of two streams in different units.

A stream's rows are powers of two of its own unit: a millisecond stream's `[1 ms, 2 ms)` and a microsecond one's
`[1.024 ms, 2.048 ms)` never line up (1000 is no power of two), so the same values read as two histograms with no
bucket in common. `onto_rows` puts the candidate's events on the baseline's rows, each of its buckets cut at the rows'
edges inside it; where within a bucket its events lie the bucket does not say, so each cut is given twice:

- as estimated (the table): log-uniform within the bucket, as `core.rebin`'s rule spreads a rebinned stream's (one
  from 0 over the octave under its top), kept within what the bucket's exact mean allows where every column holding
  it has exact times (a mean of 1.01 ms in `[512 µs, 1.024 ms)` puts 42% or more of its events at 1 ms or more);
- as near the baseline's share below that edge as the bucket allows (the test): a bucket cut by one row edge may
  hold up to twice what log-uniform values put on its smaller side of the edge, or none there (its density near the
  edge within twice its mean), and again within what its exact mean allows; one cut by several edges (a coarser
  unit's bucket from 0) anywhere within its mean's bounds. What the sides differ by beyond that is beyond the
  resolution of the buckets, and only that is tested: the same values in two units read alike.

Each part of a bucket takes the time of its events at the log-uniform mean of its own range (from 0, at its middle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.rebin import log_uniform_means


@dataclass(frozen=True)
class OnRows:
    """A side's events and time per row of the other side's: as estimated (`events`, whole; `time`), and as near the
    other side's shares as its buckets allow (`closest_events`, `closest_time`)."""

    events: list[int]
    time: np.ndarray
    closest_events: np.ndarray
    closest_time: np.ndarray


def same_rows(a: StreamHistory, b: StreamHistory) -> bool:
    """Whether two streams' rows are the same ranges in seconds (the same unit)."""
    return bool(np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high))


def onto_rows(hist: StreamHistory, rows: StreamHistory) -> OnRows:
    """`hist`'s whole history on the rows of `rows` (see the module docstring); its events' total kept exactly."""
    counts, times = hist.counts, hist.time
    events, time = counts.sum(axis=0), times.sum(axis=0).astype(np.float64)
    known = counts[hist.exact_columns()].sum(axis=0) == events  # every event of the bucket in a column of exact times
    other = rows.counts.sum(axis=0)
    below_share = np.cumsum(other)[:-1] / other.sum() if other.sum() else np.zeros(len(other) - 1)
    total, total_time = int(events.sum()), float(time.sum())
    held = [int(s) for s in np.flatnonzero(events)]
    edges = rows.low[1:]
    # per edge of the rows: events and time below it, as estimated and as near the other side's as they may be
    whole, est_time, close, close_time = [0], [0.0], [0.0], [0.0]
    for x in edges.tolist():
        n0 = sum(int(events[s]) for s in held if hist.high[s] <= x)
        t0 = float(sum(time[s] for s in held if hist.high[s] <= x))
        cut = [s for s in held if hist.low[s] < x < hist.high[s]]
        if not cut:
            whole.append(n0)
            est_time.append(t0)
            close.append(float(n0))
            close_time.append(t0)
            continue
        s = cut[0]
        a, b, n = float(hist.low[s]), float(hist.high[s]), int(events[s])
        mean = float(time[s]) / n if known[s] else math.nan
        single = a > 0 and int(((edges > a) & (edges < b)).sum()) == 1
        q, lo, hi = _cut(a, b, x, mean, single)
        want = min(max((float(below_share[len(close) - 1]) * total - n0) / n, lo), hi)
        whole.append(max(whole[-1], n0 + round(n * q)))
        est_time.append(t0 + float(time[s]) * _time_below(a, b, x, q))
        close.append(n0 + n * want)
        close_time.append(t0 + float(time[s]) * _time_below(a, b, x, want))
    whole.append(total)
    est_time.append(total_time)
    close.append(float(total))
    close_time.append(total_time)
    near, near_time = np.diff(close), np.diff(close_time)
    tiny = (near < 1e-9 * max(total, 1)) | (near_time < 0)  # float leftovers of a row the cuts leave empty
    return OnRows([whole[r + 1] - whole[r] for r in range(len(edges) + 1)], np.diff(est_time),
                  np.where(tiny, 0.0, near), np.where(tiny, 0.0, near_time))


def _cut(a: float, b: float, x: float, mean: float, single: bool) -> tuple[float, float, float]:
    """(estimate, least, most) of the share of a bucket `[a, b)`'s events below `x` (inside it): log-uniform (from 0,
    over `[b/2, b)`), and how far it may be from that: up to twice the smaller side's or none of it where `single`
    (one row edge in the bucket), anywhere otherwise; all within what the events' exact `mean` allows (NaN: not
    known)."""
    start = a if a > 0 else b / 2
    k = math.log(x / start) / math.log(b / start) if x > start else 0.0
    lo, hi = (k - min(k, 1 - k), k + min(k, 1 - k)) if single else (0.0, 1.0)
    if not math.isnan(mean):
        # values below x lie in [a, x), the others in [x, b): their mean bounds how many lie below
        least, most = max(0.0, (x - mean) / (x - a)), min(1.0, (b - mean) / (b - x))
        lo, hi = (max(lo, least), min(hi, most)) if max(lo, least) <= min(hi, most) else (least, most)
        k = min(max(k, least), most)
    return k, lo, hi


def _time_below(a: float, b: float, x: float, share: float) -> float:
    """The share of a bucket `[a, b)`'s time below `x` when `share` of its events are: each part's events at the
    log-uniform mean of its own range (from 0, at its middle)."""
    low, high = (float(m) for m in log_uniform_means(np.array([a, x]), np.array([x, b])))
    part = share * low
    whole = part + (1 - share) * high
    return part / whole if whole > 0 else share
