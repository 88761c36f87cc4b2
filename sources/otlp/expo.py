"""OpenTelemetry exponential histogram buckets on latencymap's log2 slots.

Bucket `i` at scale `s` covers `(base**i, base**(i+1)]` with `base = 2**(2**-s)`; the zero bucket holds the
values within `zero_threshold` of 0 and goes to slot 0.

- `s >= 0`: the `2**s` buckets with `i >> s == k` tile the octave `(2**k, 2**(k+1)]`, which folds exactly into
  slot `k + 1`, drawn as `[2**k, 2**(k+1))` (octaves below 1 fold into slot 0). A value exactly on a power of
  two, the closed upper end of an OTel bucket, therefore lands one slot lower than `buckets.bin_values` puts
  it: folding a point equals binning `nextafter(v, 0)` of every value it holds.
- `s < 0`: bucket `i` spans the `2**-s` octaves `i << -s ... ((i+1) << -s) - 1`; its count is spread evenly over
  them (the log-uniform rule of `latencymap.core.rebin`).
- a stream unit other than the metric's (`s` and `ms` are read as microseconds) breaks the nesting at every scale:
  buckets are scaled and spread the same way.

A point's `min` and `max` narrow the spread of its lowest and highest positive buckets holding events to the part of
them within `[min, max]` (`explicit.narrowed`).

Every interval keeps the point's own buckets (`own_buckets`) too: the rows are as wide as a power of two (all the
octaves below 1 unit in one), the buckets as fine as the scale, so percentiles come from them.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.rebin import rebin_columns, spread_fractions
from latencymap.sources.otlp.explicit import narrowed

#: Row of slot shares that puts a whole bucket in slot 0.
_SLOT0 = np.zeros(NSLOTS, dtype=np.float64)
_SLOT0[0] = 1.0
_SLOT0.flags.writeable = False


def octave_slots(octaves: np.ndarray) -> np.ndarray:
    """The slot of each octave `k` (values in `(2**k, 2**(k+1)]`): `k + 1`, clipped to the slot range."""
    return np.clip(octaves + 1, 0, NSLOTS - 1)


def fold_exact(scale: int, offset: int, counts: np.ndarray) -> np.ndarray:
    """Per-slot counts of the positive buckets of a point at `scale >= 0`: exact, no spreading."""
    if scale < 0:
        raise ValueError(f"scale {scale} < 0 does not nest in powers of two")
    out = np.zeros(NSLOTS, dtype=np.int64)
    if len(counts):
        index = offset + np.arange(len(counts), dtype=np.int64)
        np.add.at(out, octave_slots(index >> scale), counts)
    return out


def downscale(offset: int, counts: np.ndarray, by: int) -> tuple[int, np.ndarray]:
    """The same buckets `by` scales coarser: index `i` becomes `i >> by` (exact, counts merge)."""
    if by <= 0 or not len(counts):
        return offset, counts
    index = (offset + np.arange(len(counts), dtype=np.int64)) >> by
    start = offset >> by
    out = np.zeros(int(index[-1]) - start + 1, dtype=np.int64)
    np.add.at(out, index - start, counts)
    return start, out


def subtract(offset: int, counts: np.ndarray, base_offset: int,
             base: np.ndarray) -> tuple[int, np.ndarray] | None:
    """`counts - base` over `counts`' index range (same scale), negative where a bucket went down; None when `base`
    holds counts outside that range (buckets that went down to 0: the union of two ranges up to 2**32 apart is not
    built)."""
    held = np.flatnonzero(base)
    out = np.asarray(counts, dtype=np.int64).copy()
    if not held.size:
        return offset, out
    low, high = base_offset + int(held[0]), base_offset + int(held[-1]) + 1
    if low < offset or high > offset + len(out):
        return None
    out[low - offset: high - offset] -= base[held[0]: held[-1] + 1]
    return offset, out


def _power_of_two(exponent: float) -> float:
    try:
        return math.pow(2.0, exponent)
    except OverflowError:
        return math.inf


def lower_edge(scale: int, index: int) -> float:
    """`base**index` in the metric's unit (0 or inf where a float cannot hold it)."""
    return _power_of_two(index * 2.0 ** -scale)


@lru_cache(maxsize=8192)
def _bucket_row(scale: int, index: int, factor: float) -> np.ndarray:
    """Slot shares of bucket `index`, its edges multiplied by `factor` (metric unit to stream unit)."""
    if factor == 1.0 and scale <= 0:
        width = -scale
        octaves = np.arange(index << width, (index + 1) << width, dtype=np.int64)
        row = np.bincount(octave_slots(octaves), minlength=NSLOTS).astype(np.float64) / len(octaves)
    else:
        low, high = lower_edge(scale, index) * factor, lower_edge(scale, index + 1) * factor
        if math.isinf(low):
            row = np.zeros(NSLOTS, dtype=np.float64)
            row[-1] = 1.0
        elif high <= 0.0 or not high > low:
            row = _SLOT0.copy()
        else:
            row = spread_fractions(low, high)
    row.flags.writeable = False
    return row


def edges(scale: int, index: np.ndarray) -> np.ndarray:
    """`base**index` for each index, in the metric's unit (0 or inf where a float cannot hold it)."""
    with np.errstate(over="ignore"):
        if scale <= 0:
            return np.ldexp(1.0, np.clip(index << -scale, -1100, 1100).astype(np.int32))
        return np.exp2(index / float(1 << scale))


def own_buckets(scale: int, offset: int, counts: np.ndarray, zero_count: int, zero_threshold: float,
                factor: float) -> tuple[tuple[float, ...], np.ndarray]:
    """A point's own buckets as (upper bounds, counts) in the stream unit.

    They are the zero bucket (upper bound `zero_threshold`), an empty bucket up to the first positive bucket's lower
    edge when there is a gap, then the positive buckets; buckets whose edges a float cannot tell apart are merged.
    """
    n = len(counts)
    with np.errstate(over="ignore"):  # edges past a float's range in the stream unit: inf, the open top bucket
        bucket_edges = edges(scale, offset + np.arange(n + 1, dtype=np.int64)) * factor
    zero_upper = zero_threshold * factor
    gap = [bucket_edges[0]] if n and bucket_edges[0] > zero_upper else []
    uppers = np.concatenate([[zero_upper], gap, bucket_edges[1:]])
    held = np.concatenate([[int(zero_count)], [0] * len(gap), counts]).astype(np.int64)
    if (uppers[1:] > uppers[:-1]).all():
        return tuple(uppers.tolist()), held
    bounds, group = np.unique(np.maximum.accumulate(uppers), return_inverse=True)
    merged = np.zeros(len(bounds), dtype=np.int64)
    np.add.at(merged, group, held)
    return tuple(bounds.tolist()), merged


def spread_expo(scale: int, offset: int, counts: np.ndarray, zero_count: int, zero_threshold: float,
                factor: float, least: float | None = None, most: float | None = None,
                held_ends: tuple[bool, bool] = (True, True)) -> tuple[np.ndarray, tuple[float, ...], np.ndarray]:
    """Spread a point's buckets (the zero bucket in slot 0) onto the slots, totals exact; also its `own_buckets`.
    `least` and `most` (stream unit, both or neither): the smallest and the largest value (`held_ends`: which of them
    the point holds), else bounds on them."""
    index = offset + np.arange(len(counts), dtype=np.int64)
    held_at = np.flatnonzero(counts)
    rows = np.array([_bucket_row(scale, i, factor) for i in index[held_at].tolist()]).reshape(-1, NSLOTS)
    held = np.asarray(counts, dtype=np.int64)[held_at]
    if least is not None and most is not None and held_at.size:
        at = index[held_at]
        with np.errstate(over="ignore"):
            rows, held = narrowed(rows, edges(scale, at) * factor, edges(scale, at + 1) * factor, held, least, most,
                                  held_ends)
    slots = rebin_columns(rows, held[None, :])[0]
    slots[0] += int(zero_count)
    return (slots, *own_buckets(scale, offset, counts, zero_count, zero_threshold, factor))
