"""Histograms whose buckets are not latencymap's powers of two, mapped onto the 64 log2 slots.

Prometheus classic histograms (`le` bounds such as .005 .01 .025 ... 10) and OpenTelemetry explicit bounds
keep their own boundaries. Their counts are placed on the display rows by one documented rule:

- a bucket `[low, high)` is spread over the slots it overlaps in proportion to the log-width of each overlap
  (log-uniform density inside the bucket);
- a first bucket whose lower bound is 0 (Prometheus' `(0, le]`) is taken as one octave, `[high/2, high)`, unless
  the column's exact time (`_sum`) proves its events faster: the mean that time leaves them once every other event
  is put at its bucket's lower bound is the most they can average. So is the lowest bucket holding events wherever
  it is (its placed mean the log-uniform one) and the highest, and either, at the least mean the time leaves them
  (every other event at its bucket's upper bound), when that is more than placed (`time_bounds`). Such a bucket
  `[low, high]`
  (narrowed to a min and a max where known) is placed over the widest part of it whose mean is the one the time
  proves (`widest_ranges`): log-uniform over `[low, b]` when that mean is below `[low, high]`'s own, over
  `[a, high]` when above; a range from 0 uniform (`[0, 2 mean]`, as percentiles read a bucket from 0); a mean
  outside the range, its nearest end (a service whose requests all take 0.7 ms, under a first bucket of 100 ms,
  shows at 0-1.4 ms, not at 50-100 ms; requests of 3, 20 and 300 ms averaging 67 ms between a min of 3 ms and a max
  of 300 ms spread over about all of it, not one octave around 67 ms) (`timed_rows`).
  The time is read
  with the counts it is the time of: where whole counts carry rounding remainders from other columns (Prometheus'
  fractional `increase()`), the column's own fractional counts, so that an event carried into a column whose time
  does not hold it cannot push the first bucket's events down; a bucket whose upper bound is 0 (OpenTelemetry's
  default first bucket, `(-inf, 0]`) goes to slot 0;
- an overflow bucket (`high` infinite, Prometheus' `+Inf`) goes whole into the slot holding its lower bound, unless
  the column's time proves its events slower on average (every other event at its bucket's upper bound): then over
  the widest range from that bound up whose mean is the one proven, log-uniform (with no top, the widest keeps the
  bound), so that their time is not spread into the fast rows when the rows' times are scaled to the exact sum;
- each bucket's fractional counts are rounded to integers by largest remainder among the slots that bucket
  overlaps, so every event stays in its own bucket's range and the total of events is exact;
- where the rows so rounded cannot hold the column's exact time (of its own whole counts), each event in its row
  and its bucket, a few events are moved a row at a time within their bucket until they can
  (`core.rebin_hold`): none is left where the time rules it out.

Streams built this way are *rebinned*: views and reports must say so, and only the totals are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from latencymap.core.bucket_cells import cells
from latencymap.core.buckets import NSLOTS
from latencymap.core.rebin_hold import hold_time, time_range


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
    if width <= 0.0:  # a range narrower than floats tell apart in log2 (a bucket a sum placed at one value)
        shares[slot_of_value(low)] = 1.0
        return shares
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


def bucket_ranges(uppers: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lows, highs) of the buckets of ascending upper bounds `uppers` as the rule reads them: a first bucket (and
    one starting below 0) from 0, each other from the bound below it."""
    highs = np.asarray(uppers, dtype=np.float64)
    return np.maximum(np.concatenate([[0.0], highs[:-1]]), 0.0), highs


def placed_means(lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """The mean of each bucket `[low, high)` as the rule places it: log-uniform, over the octave `[high/2, high)`
    from 0; the overflow's lower bound, and a bucket of one value, that value; 0 at or below 0."""
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    low = np.where(lows > 0, lows, highs / 2.0)
    means = np.where(np.isinf(highs), low, log_uniform_means(low, highs))
    return np.where(highs > 0, means, 0.0)


def time_bounds(lows: np.ndarray, highs: np.ndarray, counts: np.ndarray,
                times: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per column, where its exact time proves events placed too slow or too fast by the rule: (bucket, mean) for
    the lowest and for the highest bucket holding events, the most their mean can be (every other event at its
    bucket's lower bound) where that is less than their placed mean, and the least (every other at its upper bound)
    where that is more; bucket -1 and NaN where the time proves nothing (unknown, or within what the rule places).
    Four entries: the lowest bucket faster, the highest slower, the lowest slower, the highest faster (the last two
    only where the lowest is not the highest: the first two say it).

    `lows` and `highs` are each bucket's range (a bucket of one value, `low == high`, is itself: never moved),
    `counts` per-bucket counts (columns x buckets, fractional where they are a step's own `increase()`: the counts
    `times` is the time of), `times` each column's time (NaN: unknown), all in the same unit. Only a bucket above 0
    and wider than one value is moved: a finite one either way, an overflow bucket (`+Inf`, from a bound above 0,
    placed at that bound) only up, where the time proves its events slower than that bound on average; an overflow
    holding events leaves no least mean to the others.
    """
    counts = np.asarray(counts, dtype=np.float64)
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    finite = np.isfinite(highs)
    movable = (highs > 0) & (highs > lows) & (finite | (lows > 0))
    held = counts > 0
    spread = held & (highs > lows)
    any_spread = spread.any(axis=1)
    lowest = np.where(any_spread, spread.argmax(axis=1), -1)
    highest = np.where(any_spread, counts.shape[1] - 1 - spread[:, ::-1].argmax(axis=1), -1)
    means = placed_means(lows, highs)
    times = np.asarray(times, dtype=np.float64)
    cols = np.arange(len(counts))
    tops = np.where(finite, highs, 0.0)
    floor = np.where(held, counts * lows, 0.0).sum(axis=1)  # every event at its bucket's lower bound
    ceiling = np.where(held, counts * tops, 0.0).sum(axis=1)  # ... at its upper bound, but an overflow's
    open_top = (held & ~finite).sum(axis=1)  # overflow buckets holding events: no upper bound to their time
    out = []
    for at, faster, alone in ((lowest, True, True), (highest, False, True), (lowest, False, False),
                              (highest, True, False)):
        j = np.maximum(at, 0)
        n = counts[cols, j]
        if faster:
            rest = floor - n * lows[j]
        else:
            others_open = open_top - (held[cols, j] & ~finite[j]) > 0
            rest = np.where(others_open, math.inf, ceiling - n * tops[j])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mean = (times - rest) / n
        proves = (at >= 0) & movable[j] & (n > 0) & (mean > 0) & (finite[j] | (not faster))
        proves &= (mean < means[j]) if faster else (mean > means[j])
        if not alone:
            proves &= lowest != highest
        out.append((np.where(proves, at, -1), np.where(proves, mean, np.nan)))
    return out


def log_uniform_means(lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """The mean of values log-uniform over each `[low, high]` (above 0; uniform from 0; a range of one value, it)."""
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        means = np.where(lows > 0, (highs - lows) / (np.log(highs) - np.log(lows)), (lows + highs) / 2.0)
    return np.where(highs > lows, means, lows)


#: Halvings of the bisection in `widest_ranges`: past float precision for any range of floats.
_BISECTIONS = 80


def widest_ranges(lows: np.ndarray, highs: np.ndarray, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, stops): per range `[low, high]` (`low >= 0`; finite, or from `low > 0` up), the widest part of it
    over which values spread as `core.rebin`'s rule spreads them (log-uniform above 0, uniform from 0) average
    `mean`: its top lowered when `mean` is below the whole range's mean (always, for a range without a top), its
    bottom raised when above; a `mean` outside `(low, high)`, its nearest end (`start == stop`)."""
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    means = np.clip(np.asarray(means, dtype=np.float64), lows, highs)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = means / lows  # a top past which [low, top] averages more than `mean`, for a range without one
        highs = np.where(np.isinf(highs) & (lows > 0) & np.isfinite(means),
                         lows * (2.0 * ratio * (1.0 + np.log(ratio)) + 1.0), highs)
    below = means < log_uniform_means(lows, highs)
    # Above 0, a log-uniform [low, low e^u] averages low (e^u - 1)/u, increasing in u, and [high e^-u, high] averages
    # high (1 - e^-u)/u, decreasing: bisect u within [0, ln(high/low)].
    scale = np.where(below, lows, highs)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        target = means / scale
        lo_u, hi_u = np.zeros_like(lows), np.where(lows > 0, np.log(highs) - np.log(lows), 0.0)
        for _ in range(_BISECTIONS):
            u = (lo_u + hi_u) / 2.0
            ratio = np.where(below, np.expm1(u) / u, -np.expm1(-u) / u)
            short = (ratio < target) == below  # the mean of [.., e^±u] is still short of the target: widen
            lo_u, hi_u = np.where(short, u, lo_u), np.where(short, hi_u, u)
        u = (lo_u + hi_u) / 2.0
        starts = np.where(below, lows, highs * np.exp(-u))
        stops = np.where(below, lows * np.exp(u), highs)
    uniform = lows <= 0  # from 0, [0, 2 mean] below the range's mean (high/2), [2 mean - high, high] above
    starts = np.where(uniform, np.where(below, 0.0, 2.0 * means - highs), starts)
    stops = np.where(uniform, np.where(below, 2.0 * means, highs), stops)
    point = (means <= lows) | (means >= highs)
    return np.where(point, means, np.clip(starts, lows, highs)), np.where(point, means, np.clip(stops, lows, highs))


def uniform_fractions(low: float, high: float) -> np.ndarray:
    """The share of values uniform over `[low, high)` (`high > low >= 0`, finite) that falls in each slot."""
    shares = np.zeros(NSLOTS, dtype=np.float64)
    first, last = slot_of_value(low), slot_of_value(math.nextafter(high, 0.0))
    for slot in range(first, last + 1):
        shares[slot] = max(min(high, _EDGES[slot + 1]) - max(low, _EDGES[slot]), 0.0)
    normalized: np.ndarray = shares / shares.sum()
    return normalized


def range_shares(start: float, stop: float, uniform: bool) -> np.ndarray:
    """Slot shares of values over `[start, stop]`: uniform or log-uniform; a single value's slot."""
    if not stop > start:
        shares = np.zeros(NSLOTS, dtype=np.float64)
        shares[slot_of_value(stop)] = 1.0
        return shares
    return uniform_fractions(start, stop) if uniform else spread_fractions(start, stop)


def within_octaves(starts: np.ndarray, stops: np.ndarray, means: np.ndarray,
                   octaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranges `[start, stop]` (above 0, log-uniform, averaging `mean`) wider than `octaves` (NaN: any width) narrowed
    to that many octaves with the same mean: `[a, a 2**octaves]`, where `a = mean w / (e**w - 1)`, `w = octaves ln 2`
    (inside the range: a narrower log-uniform range of the same mean lies within a wider one)."""
    starts, stops = np.asarray(starts, dtype=np.float64), np.asarray(stops, dtype=np.float64)
    octaves = np.asarray(octaves, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        wider = (starts > 0) & (octaves >= 0) & (np.log2(stops / starts) > octaves)
        w = octaves * math.log(2.0)
        low = np.where(w > 0, means * w / np.expm1(w), means)
        high = low * np.exp2(octaves)
    return (np.where(wider, np.clip(low, starts, stops), starts),
            np.where(wider, np.clip(high, starts, stops), stops))


def timed_rows(lows: np.ndarray, highs: np.ndarray, counts: np.ndarray, times: np.ndarray,
               octaves: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(columns, buckets, rows of slot shares): the buckets whose events the columns' exact times place (see
    `time_bounds`), each over the widest part of the bucket whose mean is the one the time leaves them
    (`widest_ranges`), at most `octaves` (per column; NaN: no limit) wide (`within_octaves`)."""
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    found = [(np.flatnonzero(at >= 0), at, mean) for at, mean in time_bounds(lows, highs, counts, times)]
    cols = np.concatenate([col for col, _, _ in found]).astype(np.int64)
    buckets = np.concatenate([at[col] for col, at, _ in found]).astype(np.int64)
    means = np.concatenate([mean[col] for col, _, mean in found])
    starts, stops = widest_ranges(lows[buckets], highs[buckets], means)
    if octaves is not None:
        starts, stops = within_octaves(starts, stops, means, np.asarray(octaves, dtype=np.float64)[cols])
    rows = [range_shares(start, stop, low <= 0)
            for start, stop, low in zip(starts.tolist(), stops.tolist(), lows[buckets].tolist(), strict=True)]
    return cols, buckets, np.array(rows, dtype=np.float64).reshape(-1, NSLOTS)


def largest_remainder(values: np.ndarray, total: int) -> np.ndarray:
    """Non-negative integers close to `values` that add up to `total` exactly; a 0 gets nothing while another value
    can take what is missing."""
    floors: np.ndarray = np.floor(values).astype(np.int64)
    missing = int(total - floors.sum())
    positive = values > 0
    room = int(positive.sum()) or len(floors)
    if missing > room:  # float rounding of totals past 2**53: the surplus joins the fullest slot
        floors[int(np.argmax(values))] += missing - room
        missing = room
    if missing > 0:
        order = np.argsort(-np.where(positive, values - floors, -1.0), kind="stable")
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


def whole_rows(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Row by row, non-negative integers near `values` (NaN and negatives as 0) adding up to `totals` (integers
    exactly, floats rounded): `largest_remainder` for many rows at once, a 0 rounded up only in a row of 0s."""
    floats = np.clip(np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0), 0.0, None)
    totals = np.asarray(totals)
    if np.issubdtype(totals.dtype, np.integer):
        want = np.maximum(totals.astype(np.int64), 0)
    else:
        want = np.rint(np.maximum(np.nan_to_num(totals.astype(np.float64)), 0.0)).astype(np.int64)
    floors = np.floor(floats).astype(np.int64)
    missing = want - floors.sum(axis=1)
    width = floats.shape[1]
    positive = floats > 0
    room = np.where(positive.any(axis=1), positive.sum(axis=1), width)
    simple = (missing >= 0) & (missing <= room)
    if simple.any():
        order = np.argsort(np.where(positive, floors - floats, 1.0), axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.broadcast_to(np.arange(width), order.shape), axis=1)
        floors += (rank < missing[:, None]) & simple[:, None]
    for i in np.flatnonzero(~simple):
        floors[i] = largest_remainder(floats[i], int(want[i]))
    return floors


#: Buckets rounded at once by `rebin_columns` (each a row of NSLOTS floats): bounds the memory of many columns.
_ROWS_AT_ONCE = 8192


def rebin_columns(matrix: np.ndarray, counts: np.ndarray, uppers: Sequence[float] | np.ndarray | None = None,
                  times: np.ndarray | None = None, measured: np.ndarray | None = None,
                  lows: np.ndarray | None = None, octaves: np.ndarray | None = None) -> np.ndarray:
    """Whole slot counts (columns x slots) of integer per-bucket `counts` (columns x buckets) spread by `matrix`.

    Each bucket's events are rounded among the slots its own row overlaps (largest remainder within the bucket),
    so none leaves its bucket's range and every column's total is exact. With `uppers` (the buckets' upper bounds;
    `lows` their lower ones where they are not the bound below, `bucket_ranges`) and `times` (the columns' exact
    times, NaN: unknown), the buckets those times prove placed too slow or too fast go where `timed_rows` says (with
    `measured`, the counts those times are of, when `counts` carry remainders between columns; with `octaves`, per
    column, at most that wide), and rows that still cannot hold their column's time are moved until they can
    (`held_rows`).
    """
    counts = np.asarray(counts, dtype=np.int64)
    columns, buckets = counts.shape
    out = np.zeros((columns, NSLOTS), dtype=np.int64)
    placed, held = None, None
    if uppers is not None and times is not None:
        ranges = bucket_ranges(uppers)
        low = ranges[0] if lows is None else np.asarray(lows, dtype=np.float64)
        placed = timed_rows(low, ranges[1], counts if measured is None else measured, times, octaves)
        held = (low, ranges[1], np.asarray(times, dtype=np.float64))
    overlapped = matrix.any(axis=0) if placed is None else matrix.any(axis=0) | placed[2].any(axis=0)
    used = np.flatnonzero(overlapped)  # the slots any bucket overlaps
    if not used.size:
        return out
    step = max(1, _ROWS_AT_ONCE // max(buckets, 1))
    for start in range(0, columns, step):
        n = counts[start:start + step]
        rows = np.repeat(matrix[None, :, used], len(n), axis=0)
        if placed is not None:
            cols, at, shares = placed
            here = (cols >= start) & (cols < start + len(n))
            rows[cols[here] - start, at[here]] = shares[here][:, used]
        whole = whole_rows((n[:, :, None] * rows).reshape(-1, len(used)), n.reshape(-1)).reshape(len(n), buckets, -1)
        out[start:start + step, used] = whole.sum(axis=1)
        if held is not None:
            own = None if measured is None else measured[start:start + step]
            held_rows(out[start:start + step], whole, used, held[0], held[1], held[2][start:start + step], own)
    return out


def held_rows(out: np.ndarray, whole: np.ndarray, used: np.ndarray, lows: np.ndarray, highs: np.ndarray,
              times: np.ndarray, measured: np.ndarray | None) -> None:
    """Replace in `out` (columns x slots) the rows of the columns whose whole events per bucket (`whole`: columns x
    buckets x the slots `used`) cannot hold their time (`core.rebin_hold`) by rows that can; only the columns whose
    time is of their whole counts (`measured`, where given, the same)."""
    low, high, _ = cells(lows, highs, _EDGES)
    least, most = time_range(whole, low[:, used], high[:, used])
    with np.errstate(invalid="ignore"):
        outside = np.isfinite(times) & ((times < least) | (times > most))
    if measured is not None:
        outside &= (np.asarray(measured, dtype=np.float64) == whole.sum(axis=2)).all(axis=1)
    for col in np.flatnonzero(outside):
        full = np.zeros((whole.shape[1], NSLOTS), dtype=np.int64)
        full[:, used] = whole[col]
        out[col] = hold_time(full, lows, highs, _EDGES, float(times[col])).sum(axis=0)


def rebin_counts(bounds: Sequence[float], counts: Sequence[int] | np.ndarray,
                 matrix: np.ndarray | None = None) -> np.ndarray:
    """Per-slot integer counts for per-bucket (not cumulative) integer `counts` over upper `bounds` in the stream
    unit, each bucket's events kept within its own slots (`rebin_columns`)."""
    whole = np.asarray([int(c) for c in counts], dtype=np.int64)
    if whole.shape != (len(bounds),):
        raise ValueError(f"{len(counts)} counts for {len(bounds)} buckets")
    if (whole < 0).any():
        raise ValueError("bucket counts must not be negative")
    shares = spread_matrix(bounds) if matrix is None else matrix
    slots: np.ndarray = rebin_columns(shares, whole[None, :])[0]
    return slots
