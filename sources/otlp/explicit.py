"""OpenTelemetry explicit-bucket histograms on latencymap's log2 slots (`latencymap.core.rebin`'s rule).

Bucket `j` is `(bounds[j-1], bounds[j]]`, the first `(-inf, bounds[0]]`, the last `(bounds[-1], +inf)`.
A bucket that ends at or below 0 goes to slot 0; one that starts below 0 is read as starting at 0 (so the
first bucket of bounds `5, 10, ...` is taken as the octave `[2.5, 5)`, like Prometheus' first bucket, or lower when
the point's `sum` proves its events faster); the
overflow bucket goes whole into the slot of its lower bound. A point without buckets (count and sum only)
puts its count in the slot of its mean, or in slot 0 without a sum.
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


def spread_explicit(bounds: tuple[float, ...], counts: np.ndarray, factor: float,
                    total_sum: float | None) -> np.ndarray:
    """Per-slot integer counts (totals exact) for one interval's per-bucket `counts`."""
    if not bounds:
        slots = np.zeros(NSLOTS, dtype=np.int64)
        total = int(counts.sum())
        mean = total_sum / total * factor if total and total_sum is not None else 0.0
        slots[slot_of_value(mean) if math.isfinite(mean) else 0] = total
        return slots
    uppers = [*(b * factor for b in bounds), math.inf]
    matrix = spread_matrix(bounds, factor)
    times = np.array([math.nan if total_sum is None else total_sum * factor])
    return rebin_columns(matrix, np.asarray(counts, dtype=np.int64)[None, :], uppers, times)[0]
