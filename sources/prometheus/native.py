"""Native (sparse, exponential) histograms as the Prometheus HTTP API returns them, folded onto log2 rows.

The API gives a native histogram as `{"count", "sum", "buckets": [[boundary_rule, left, right, count], ...]}`:
only populated buckets, the zero bucket `[-z, z]` among them. In schema `n` the bucket boundaries are powers of
`2**(2**-n)`, so for schema >= 0 every bucket lies inside one power of two of the metric's unit and the counts
fold exactly into rows when the stream is in that unit (a `_milliseconds` metric); a seconds metric is kept in
microseconds, where those powers of two are not row edges, so its buckets are spread (`latencymap.core.rebin`) and
kept in `source_buckets`. Buckets narrower than a row (schema >= 1) are kept there too even when they fold exactly:
percentiles come from them, as `histogram_quantile` computes them, not from rows 2 to 256 times wider; so are buckets
below 1 unit of the stream, which fold into its `<1` row whatever their octave (a `_milliseconds` metric's
sub-millisecond ones). Each
column lists its buckets contiguously from its first populated one's lower bound (empty buckets between), so
columns of one schema add up exactly on the union of their bounds (`core.source_totals`). The zero bucket goes to
the lowest bucket whole; negative buckets (negative values: no latencies) are left out, with one note per series
(`negative_note`), and so is the sum of a column that holds them. `increase()` gives fractional counts: each bucket's
are made whole with what rounding left in the series' earlier columns carried to its next (`fold_native`'s
`carry`), so that a sparse tail bucket keeps its weight over the columns instead of losing its fraction to the body
at every column.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np

from latencymap.core.model import Notice
from latencymap.core.sanitize import clean_text

from .layout import Layout, carried_counts, integer_counts, one_row_each, slot_matrix, to_unit


class NativeError(ValueError):
    """An API histogram object that is not one."""


def _number(value: Any, what: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise NativeError(f"expected a number as the {what}, got {str(value)[:40]!r}") from None
    if math.isnan(out):
        raise NativeError(f"the {what} is NaN")
    return out


def parse_buckets(raw: Sequence[Any]) -> list[tuple[float, float, float]]:
    """`[[rule, "left", "right", "count"], ...]` -> sorted (left, right, count)."""
    out = []
    for entry in raw:
        if not isinstance(entry, (list, tuple)) or len(entry) != 4:
            raise NativeError(f"expected a bucket [boundary_rule, left, right, count], got {str(entry)[:60]!r}")
        left, right, count = (_number(entry[1], "left bound"), _number(entry[2], "right bound"),
                              _number(entry[3], "bucket count"))
        if right < left or count < 0:
            raise NativeError(f"bucket [{left}, {right}] with count {count} is not a bucket")
        out.append((left, right, count))
    return sorted(out, key=lambda b: (b[1], b[0]))


#: What one series' native buckets carry to its next column: the fractions not yet counted (negative where more was
#: counted), by bucket (lower, upper bound in the metric unit; the zero bucket's lower bound is below 0).
Carry = dict[tuple[float, float], float]


class NativeBuckets(NamedTuple):
    """One native histogram's buckets, contiguous: upper bounds (metric unit), float counts, which buckets are the
    histogram's own (not holes between them), what each carries from the series' columns before, and the count of
    the negative buckets, left out."""

    bounds: list[float]
    counts: list[float]
    real: list[bool]
    carried: list[float]
    negative: float


class Folded(NamedTuple):
    """One native histogram on rows: its layout in the stream unit, whole per-bucket counts, its sum in the metric
    unit (None when it holds negative values: the sum counts them too), the negative values left out, and what its
    buckets carry to the series' next column."""

    layout: Layout
    counts: np.ndarray
    spent: float | None
    negative: float
    carry: Carry


def _place_carry(positive: list[tuple[float, float, float]], zero_top: float,
                 carry: Carry) -> tuple[float, dict[int, float], list[tuple[float, float, float, float]]]:
    """Where what earlier columns carry goes in this one: (to the first bucket, to positive bucket i, buckets of its
    own). A carried bucket inside one of this column's (the same bucket, or one of a coarser schema) joins it; one
    that overlaps none becomes a bucket of its own, empty but for what it carries; one over several (a finer schema
    after a reset) is dropped (less than one event)."""
    first = 0.0
    into: dict[int, float] = {}
    alone: list[tuple[float, float, float, float]] = []
    uppers = [r for _, r, _ in positive]
    for (left, right), rem in carry.items():
        if left < 0 or right <= zero_top:
            first += rem
            continue
        j = bisect_left(uppers, right * (1 - 1e-12))  # the first bucket that ends at or above it
        below_next = j == len(positive) or positive[j][0] >= right * (1 - 1e-12)
        if not below_next and positive[j][0] <= left * (1 + 1e-12):
            into[j] = into.get(j, 0.0) + rem
        elif below_next and (j == 0 or uppers[j - 1] <= left * (1 + 1e-12)):
            alone.append((left, right, 0.0, rem))
    return first, into, alone


def native_buckets(raw: Sequence[Any], carry: Carry | None = None) -> NativeBuckets:
    """The contiguous buckets of an API histogram, with what `carry` (the series' earlier columns) brings to each.

    The first bucket ends at the zero bucket's upper bound (or 0) and holds the zero bucket whole: its values are
    within the zero threshold of 0, negative ones among them, which it cannot tell apart. Negative buckets (values
    below minus the threshold) are no latencies: left out, and counted in `negative`. Holes between populated
    buckets become empty buckets, so that each real bucket keeps its exact range.
    """
    buckets = parse_buckets(raw)
    negative = sum(c for _, r, c in buckets if r < 0)
    zero = [(left, r, c) for left, r, c in buckets if left <= 0 <= r]
    zero_top = max((r for _, r, _ in zero), default=0.0)
    positive = [(left, r, c) for left, r, c in buckets if left > 0]
    first, into, alone = _place_carry(positive, zero_top, carry or {})
    merged = sorted([(left, r, c, into.get(j, 0.0)) for j, (left, r, c) in enumerate(positive)] + alone,
                    key=lambda b: (b[1], b[0]))
    bounds, counts, real = [zero_top], [sum(c for *_, c in zero)], [True]
    carried = [first]
    for left, right, count, rem in merged:
        last = bounds[-1]
        if right <= last:  # inside what the zero bucket already covers
            counts[-1] += count
            carried[-1] += rem
            continue
        if left > last and not math.isclose(left, last, rel_tol=1e-12, abs_tol=0.0):
            bounds.append(left)
            counts.append(0.0)
            real.append(False)
            carried.append(0.0)
        bounds.append(right)
        counts.append(count)
        real.append(True)
        carried.append(rem)
    return NativeBuckets(bounds, counts, real, carried, negative)


def fold_native(histogram: dict[str, Any], factor: float, carry: Carry | None = None) -> Folded:
    """One API histogram in the stream unit (`factor` times the metric unit), its buckets' float counts made whole:
    each rounded alone (the total kept) without `carry`, else with what the series' earlier columns carried
    (`layout.carried_counts`), so that over the columns each bucket's count tracks the sum of its increases."""
    if not isinstance(histogram, dict):
        raise NativeError(f"expected a histogram object, got {str(histogram)[:60]!r}")
    _number(histogram.get("count", 0), "count")
    total = histogram.get("sum")
    spent = _number(total, "sum") if total is not None else None
    got = native_buckets(histogram.get("buckets") or [], carry)
    bounds, real = got.bounds, got.real
    scaled = to_unit(bounds, factor)
    if any(not b > a for a, b in pairwise(scaled)):
        raise NativeError(f"bucket bounds {bounds[:8]} collapse in the stream unit")
    matrix = slot_matrix(scaled)
    # buckets narrower than their rows (schema >= 1), or below 1 unit of the stream, whose `<1` row (slot 0) holds every
    # octave down to 0 (a `_milliseconds` metric's sub-millisecond buckets): kept for percentiles as fine as theirs
    finer = any(own and low > 0 and (high < 2.0 * low * (1 - 1e-9) or high_in <= 1.0)
                for low, high, high_in, own in zip(bounds, bounds[1:], scaled[1:], real[1:], strict=False))
    layout = Layout(scaled, matrix, one_row_each(matrix, np.asarray(real)), finer)
    if got.negative:
        spent = None
    if carry is None:
        return Folded(layout, integer_counts(got.counts), spent, got.negative, {})
    whole, left = carried_counts(np.asarray(got.counts)[None, None, :], np.asarray(got.carried)[None, :])
    lows = [-bounds[0], *bounds[:-1]]
    after = {(low, high): float(rem) for low, high, own, rem in zip(lows, bounds, real, left[0], strict=True)
             if own and abs(rem) > 1e-9}
    return Folded(layout, whole[0, 0], spent, got.negative, after)


def negative_note(source: str, series: str) -> Notice:
    """The one note for a series whose native histogram holds negative values."""
    return Notice(clean_text(f"{source}: {series}: negative values are not latencies: its native histogram's "
                             "negative buckets are left out, and so is the sum of a column that holds them (it counts "
                             "them too): that column's time waited is estimated from its buckets (the zero bucket, "
                             "whose negative values cannot be told from its zeros, is counted whole)", 600), skipped=0)
