"""Native (sparse, exponential) histograms as the Prometheus HTTP API returns them, folded onto log2 rows.

The API gives a native histogram as `{"count", "sum", "buckets": [[boundary_rule, left, right, count], ...]}`:
only populated buckets, the zero bucket `[-z, z]` among them. In schema `n` the bucket boundaries are powers of
`2**(2**-n)`, so for schema >= 0 every bucket lies inside one power of two of the metric's unit and the counts
fold exactly into rows when the stream is in that unit (a `_milliseconds` metric); a seconds metric is kept in
microseconds, where those powers of two are not row edges, so its buckets are spread (`latencymap.core.rebin`) and
kept in `source_buckets`. Buckets narrower than a row (schema >= 1) are kept there too even when they fold exactly:
percentiles come from them, as `histogram_quantile` computes them, not from rows 2 to 256 times wider. Each
column lists its buckets contiguously from its first populated one's lower bound (empty buckets between), so
columns of one schema add up exactly on the union of their bounds (`core.source_totals`). Negative buckets and the
zero bucket go to the lowest row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from .layout import Layout, integer_counts, one_row_each, slot_matrix, to_unit


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


def native_buckets(raw: Sequence[Any]) -> tuple[list[float], list[float], list[bool]]:
    """Contiguous upper bounds (metric unit), float counts, and which buckets are the histogram's own.

    The first bucket ends at the zero bucket's upper bound (or 0) and holds it and every negative bucket; holes
    between populated buckets become empty buckets, so that each real bucket keeps its exact range.
    """
    buckets = parse_buckets(raw)
    low = sum(c for _, r, c in buckets if r <= 0)
    zero = [(left, r, c) for left, r, c in buckets if left < 0 < r]
    bounds, counts, real = [max((r for _, r, _ in zero), default=0.0)], [low + sum(c for *_, c in zero)], [True]
    for left, right, count in buckets:
        if left < 0 or right <= 0:
            continue
        last = bounds[-1]
        if right <= last:  # inside what the zero bucket already covers
            counts[-1] += count
            continue
        if left > last and not math.isclose(left, last, rel_tol=1e-12, abs_tol=0.0):
            bounds.append(left)
            counts.append(0.0)
            real.append(False)
        bounds.append(right)
        counts.append(count)
        real.append(True)
    return bounds, counts, real


def fold_native(histogram: dict[str, Any], factor: float) -> tuple[Layout, np.ndarray, float | None]:
    """(layout in the stream unit, whole per-bucket counts, sum in the metric unit) of one API histogram."""
    if not isinstance(histogram, dict):
        raise NativeError(f"expected a histogram object, got {str(histogram)[:60]!r}")
    count = _number(histogram.get("count", 0), "count")
    total = histogram.get("sum")
    spent = _number(total, "sum") if total is not None else None
    bounds, counts, real = native_buckets(histogram.get("buckets") or [])
    scaled = to_unit(bounds, factor)
    if any(not b > a for a, b in pairwise(scaled)):
        raise NativeError(f"bucket bounds {bounds[:8]} collapse in the stream unit")
    matrix = slot_matrix(scaled)
    finer = any(own and low > 0 and high < 2.0 * low * (1 - 1e-9)
                for low, high, own in zip(bounds, bounds[1:], real[1:], strict=False))
    layout = Layout(scaled, matrix, one_row_each(matrix, np.asarray(real)), finer)
    return layout, integer_counts(counts, count), spent

