"""OpenTelemetry explicit-bucket histograms on latencymap's log2 slots (`latencymap.core.rebin`'s rule).

Bucket `j` is `(bounds[j-1], bounds[j]]`, the first `(-inf, bounds[0]]`, the last `(bounds[-1], +inf)`.
A bucket that ends at or below 0 goes to slot 0; one that starts below 0 is read as starting at 0 (so the
first bucket of bounds `5, 10, ...` is taken as the octave `[2.5, 5)`, like Prometheus' first bucket, or lower when
the point's `sum` proves its events faster); the
overflow bucket goes whole into the slot of its lower bound, or above it where the point's `sum` proves its events
slower. A point without buckets (count and sum only)
puts its count in the slot of its mean, or in slot 0 without a sum.

A point's `min` and `max` (`least`, `most`) narrow its lowest bucket holding events to start at its smallest value
and its highest to end at its largest (both ends in one bucket: the bucket is `[min, max]`): those are spread by the
same rule over what is left of them (the overflow bucket too), the first bucket's octave no longer assumed; the
point's `sum` still places the lowest and the highest of them where it proves their events faster or slower (a
cumulative point's min and max are since its start: loose bounds on one column, which its own sum places, over no
more octaves than `octaves` where both are loose: `points.PointStreams._width`).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from itertools import pairwise

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.rebin import rebin_columns, slot_of_value, spread_fractions

_CACHE_SIZE = 512
_matrices: OrderedDict[tuple[tuple[float, ...], float], np.ndarray] = OrderedDict()


def _row(low: float, high: float) -> np.ndarray:
    if high <= 0.0:
        row = np.zeros(NSLOTS, dtype=np.float64)
        row[0] = 1.0
        return row
    return spread_fractions(max(low, 0.0), high)


def range_row(low: float, high: float) -> np.ndarray:
    """Slot shares of values from `low` to `high` (stream unit, finite): `spread_fractions`, and the slot of `high`
    when the range is a single value (or none above 0)."""
    low = max(low, 0.0)
    if high > low:
        return spread_fractions(low, high)
    row = np.zeros(NSLOTS, dtype=np.float64)
    row[slot_of_value(high)] = 1.0
    return row


def narrowed(matrix: np.ndarray, lows: np.ndarray, highs: np.ndarray, counts: np.ndarray, least: float,
             most: float, held_ends: tuple[bool, bool] = (True, True)) -> tuple[np.ndarray, np.ndarray]:
    """(rows, counts) for `rebin_columns`: `matrix` (slot shares of the buckets `[lows[j], highs[j]]` holding
    `counts`) with the lowest bucket holding events narrowed to start at `least` and the highest to end at `most`,
    one of their events at each of those ends that the interval holds (`held_ends`: the value itself, not a bound
    only) and lies in that bucket (its own row), the others spread over what is left of them."""
    rows, counts, _ = narrowed_ranges(matrix, lows, highs, counts, least, most, held_ends)
    return rows, counts


def narrowed_ranges(matrix: np.ndarray, lows: np.ndarray, highs: np.ndarray, counts: np.ndarray, least: float,
                    most: float, held_ends: tuple[bool, bool] = (True, True)
                    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """`narrowed`, and the range `[low, high]` of each of its rows (a held end's, its value)."""
    ranges = (np.maximum(np.asarray(lows, dtype=np.float64), 0.0), np.asarray(highs, dtype=np.float64))
    held = np.flatnonzero(counts)
    if not held.size:
        return matrix, counts, ranges
    first, last = int(held[0]), int(held[-1])
    rows, counts = matrix.copy(), np.asarray(counts, dtype=np.int64).copy()
    row_lows, row_highs = ranges[0].copy(), ranges[1].copy()
    ends = [max(float(lows[first]), least), min(float(highs[last]), most)]
    for j in dict.fromkeys((first, last)):
        low, high = max(float(lows[j]), least), min(float(highs[j]), most)
        rows[j] = range_row(low, high)
        row_lows[j], row_highs[j] = max(low, 0.0), max(high, low, 0.0)
    extra = []
    inside = (held_ends[0] and least >= lows[first], held_ends[1] and most <= highs[last])
    for j, end, held_end in ((first, ends[0], inside[0]), (last, ends[1], inside[1])):
        if held_end and counts[j] > 0:
            counts[j] -= 1
            extra.append(end)
    values = np.array(extra, dtype=np.float64)
    return (np.vstack([rows, *(range_row(end, end) for end in extra)]),
            np.concatenate([counts, np.ones(len(extra), dtype=np.int64)]),
            (np.concatenate([row_lows, values]), np.concatenate([row_highs, values])))


def spread_matrix(bounds: tuple[float, ...], factor: float) -> np.ndarray:
    """Slot shares per bucket for OTel `explicit_bounds` (metric unit) scaled by `factor`; cached."""
    key = (bounds, factor)
    matrix = _matrices.get(key)
    if matrix is not None:
        _matrices.move_to_end(key)
        return matrix
    edges = [-math.inf, *(b * factor for b in bounds), math.inf]
    matrix = np.vstack([_row(low, high) for low, high in pairwise(edges)])
    matrix.flags.writeable = False
    _matrices[key] = matrix
    if len(_matrices) > _CACHE_SIZE:
        _matrices.popitem(last=False)
    return matrix


def spread_explicit(bounds: tuple[float, ...], counts: np.ndarray, factor: float, total_sum: float | None,
                    least: float | None = None, most: float | None = None,
                    held_ends: tuple[bool, bool] = (True, True), octaves: float | None = None) -> np.ndarray:
    """Per-slot integer counts (totals exact) for one interval's per-bucket `counts`; `least` and `most` (stream unit,
    both or neither) are the smallest and the largest value (`held_ends`: which of them the interval holds), else
    bounds on them; `octaves`: how wide a range the sum places a bucket's events over, at most."""
    held = np.asarray(counts, dtype=np.int64)[None, :]
    if not bounds:
        slots = np.zeros(NSLOTS, dtype=np.int64)
        total = int(counts.sum())
        mean = total_sum / total * factor if total and total_sum is not None else 0.0
        if least is not None and most is not None:
            mean = min(max(mean, least), most)
        slots[slot_of_value(mean) if math.isfinite(mean) else 0] = total
        return slots
    uppers = [*(b * factor for b in bounds), math.inf]
    matrix = spread_matrix(bounds, factor)
    times = np.array([math.nan if total_sum is None else total_sum * factor])
    if least is not None and most is not None:
        rows, parts, (lows, highs) = narrowed_ranges(matrix, np.array([-math.inf, *uppers[:-1]]), np.array(uppers),
                                                     held[0], least, most, held_ends)
        return rebin_columns(rows, parts[None, :], highs, times, lows=lows,
                             octaves=None if octaves is None else np.array([octaves]))[0]
    return rebin_columns(matrix, held, uppers, times)[0]
