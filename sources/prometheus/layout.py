"""Units and bucket layouts of Prometheus histograms, and how their counts land on latencymap's log2 rows.

Units: Prometheus histograms are in seconds by convention. The metric's unit is taken from `--unit`, else from
an OpenMetrics `# UNIT` line, else from the name (`..._milliseconds`, `..._ms`, `..._microseconds`, `..._us`,
`..._nanoseconds`, `..._ns`; anything else, `_seconds` included, is seconds). Streams are kept in microseconds
(`microsec`), or nanoseconds for a nanosecond metric, unless every bucket is exactly one power of two wide in
milliseconds, microseconds or nanoseconds: then that unit is the stream's and the counts fold exactly.

Rows: a bucket that lies within one row (a power of two) goes there whole: an exact fold. Any other layout (the
default `.005 .01 .025 ...`) is spread by `latencymap.core.rebin` (log-uniform within a bucket, the first bucket
`(0, le]` taken as one octave below `le`, `+Inf` whole in the row of its lower bound: the overflow row), and the
interval keeps its own buckets in `source_buckets`; so does one whose buckets fold exactly but are narrower than
their rows (`Layout.finer`: native schemas >= 1), for percentiles as fine as the source's, and one that folds exactly
with a `+Inf` bucket (powers of two), whose events only the kept buckets tell from those of the row they land in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import SourceBuckets
from latencymap.core.rebin import rebin_columns, spread_matrix, whole_rows
from latencymap.core.units import normalize_unit, unit_seconds

STREAM_UNITS = ("millisec", "microsec", "nanosec")
_NAME_UNITS = {
    "seconds": "sec", "second": "sec", "milliseconds": "millisec", "millisecond": "millisec", "ms": "millisec",
    "microseconds": "microsec", "microsecond": "microsec", "us": "microsec",
    "nanoseconds": "nanosec", "nanosecond": "nanosec", "ns": "nanosec",
}
_SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")


def family_name(metric: str) -> str:
    """`x_seconds_bucket` -> `x_seconds`: the histogram's name whichever series the user named."""
    for suffix in ("_bucket", "_sum", "_count"):
        if metric.endswith(suffix):
            return metric[: -len(suffix)]
    return metric


def metric_unit(name: str, declared: str | None = None, override: str | None = None) -> str:
    """The unit of a metric's values: `--unit`, else the OpenMetrics UNIT, else the name; seconds by default."""
    for given in (override, declared):
        if given:
            try:
                return normalize_unit(given)
            except ValueError:
                if given is override:
                    raise
    stem = name
    for suffix in _SUFFIXES:
        stem = stem.removesuffix(suffix)
    return _NAME_UNITS.get(stem.rsplit("_", 1)[-1].lower(), "sec")


def _snap(value: float) -> float:
    """`value` rounded to an integer when it is one up to float noise (0.001 s * 1000 = 1.0000000000000002)."""
    if math.isfinite(value) and value != 0:
        near = round(value)
        if near and abs(value - near) <= 1e-9 * abs(value):
            return float(near)
    return value


def to_unit(bounds: Sequence[float], factor: float) -> tuple[float, ...]:
    """Bounds multiplied by `factor` (metric unit -> stream unit), snapped to integers where they are ones."""
    return tuple(_snap(b * factor) for b in bounds)


def slot_matrix(bounds: Sequence[float]) -> np.ndarray:
    """Slot shares per bucket for ascending upper bounds in the stream unit; buckets at or below 0 go to row 0."""
    uppers = [float(b) for b in bounds]
    if any(not b > a for a, b in pairwise(uppers)) or any(math.isnan(b) for b in uppers):
        raise ValueError(f"bucket bounds are not strictly ascending: {uppers}")
    positive = [b for b in uppers if b > 0]
    rows = np.zeros((len(uppers) - len(positive), NSLOTS))
    rows[:, 0] = 1.0
    if not positive:
        return rows
    return np.vstack([rows, spread_matrix(positive)])


def one_row_each(matrix: np.ndarray, mask: np.ndarray | None = None) -> bool:
    """True when every bucket (every one selected by `mask`) lands whole in a single row."""
    rows = matrix if mask is None else matrix[mask]
    return bool(((rows > 0).sum(axis=1) == 1).all())


def _row_per_bucket(bounds: Sequence[float]) -> bool:
    """True when each bucket above 0 is exactly one row, a different row each: powers of two, doubling, from 1."""
    if any(0 < b < 1 for b in bounds):
        return False
    matrix = slot_matrix(bounds)
    positive = np.asarray(bounds, dtype=np.float64) > 0
    if not one_row_each(matrix):
        return False
    rows = matrix[positive].argmax(axis=1)
    return bool((np.diff(rows) > 0).all())


def stream_unit(bounds_s: Sequence[float], unit: str) -> str:
    """The stream unit for bucket bounds given in seconds: one where each bucket is its own row, else the default."""
    if any(math.isfinite(b) and b > 0 for b in bounds_s):
        for candidate in STREAM_UNITS:
            if _row_per_bucket(to_unit(bounds_s, 1.0 / unit_seconds(candidate))):
                return candidate
    return "nanosec" if unit == "nanosec" else "microsec"


@dataclass(frozen=True)
class Layout:
    """One histogram's buckets in a stream unit: how per-bucket counts become row counts."""

    bounds: tuple[float, ...]
    matrix: np.ndarray
    exact: bool
    finer: bool = False  # buckets narrower than their rows: kept for percentiles though they fold exactly

    @property
    def kept(self) -> bool:
        """True when intervals keep these buckets (`source_buckets`): they were spread, are finer than rows, or end
        in `+Inf`, whose events the rows hold as if they were below the next power of two (kept, so that what
        reads them knows those events' values are only at least the largest finite bound)."""
        return self.finer or not self.exact or (len(self.bounds) > 1 and math.isinf(self.bounds[-1]))

    def fold(self, counts: np.ndarray, total_time: float | None = None, time: float | None = None,
             measured: np.ndarray | None = None) -> tuple[np.ndarray, SourceBuckets | None]:
        """Row counts for per-bucket integer counts, and the source's own buckets (with `total_time`, seconds) when
        they are kept; `time` (the same in the stream unit) places the first bucket (`core.rebin`'s rule), read with
        `measured` (the fractional counts it is the time of) where `counts` carry remainders (`carried_counts`)."""
        counts = np.asarray(counts, dtype=np.int64)
        own = None if measured is None else np.asarray(measured, dtype=np.float64)[None, :]
        slots = self.fold_many(counts[None, :], None if time is None else np.array([time]), own)[0]
        if not self.kept:
            return slots, None
        return slots, SourceBuckets(self.bounds, counts, total_time)

    def fold_many(self, counts: np.ndarray, times: np.ndarray | None = None,
                  measured: np.ndarray | None = None) -> np.ndarray:
        """Row counts for a (columns x buckets) array of integer counts, each column's total kept; `times` (the
        columns' exact times in the stream unit, NaN where unknown) place the first bucket (`core.rebin`'s rule).

        `measured` are the columns' own fractional counts (the increases `times` go with) where `counts` carry
        rounding remainders between columns (`carried_counts`): the rule reads each time with them, so a carried
        event whose time is in another column's `_sum` does not push this column's first bucket down."""
        if self.exact:
            return np.rint(counts.astype(np.float64) @ self.matrix).astype(np.int64)
        return rebin_columns(self.matrix, counts, self.bounds, times, measured)


@lru_cache(maxsize=256)
def layout_of(bounds: tuple[float, ...], factor: float) -> Layout:
    """The Layout of bounds in the metric unit, scaled by `factor` into the stream unit (cached)."""
    scaled = to_unit(bounds, factor)
    matrix = slot_matrix(scaled)
    return Layout(scaled, matrix, one_row_each(matrix))


def integer_counts(values: Sequence[float], total: float | None = None) -> np.ndarray:
    """Whole per-bucket counts for float ones (server-side `increase()` extrapolates): rounded, total kept.

    One column alone, nothing carried: a series' columns are rounded together by `carried_counts`."""
    floats = np.clip(np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0), 0.0, None)
    return whole_rows(floats[None, :], np.array([floats.sum() if total is None else total]))[0]


def carried_counts(values: np.ndarray, left: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Whole per-bucket counts for fractional increases over time, rounded so that their sums track the fractions'.

    `values` is (steps, series, buckets) of non-cumulative increases (negatives count as 0; a series whose row at a
    step has a NaN gets zeros there and carries on as if the step were not there); `left` (series, buckets) is what
    earlier steps carried (the fractions not yet counted: negative where more was counted). Returns the counts and
    what is carried after the last step.

    Step by step (vectorised over series and buckets), each bucket wants its increase plus what it carries; the
    column's total is the series' running total rounded (half up) less what was counted before, and goes to the
    buckets by largest remainder of what they want, so each bucket gets what it wants rounded down or up: for every
    prefix of steps each bucket's count stays within 1 of the sum of its increases (the carry stays in (-1, 1)),
    and the series' count within 0.5 of the sum of its increases, but for the case below. Where the running total
    and a column's own rounded increase disagree, the running total wins: a column counts its increase rounded down
    or up (2 or 3 for 2.4), so that a tail bucket of 0.4 a step is not dropped at every step. Counts are never
    negative: a bucket that owes (it was rounded up and has not caught up yet) takes 0, not -1, and the others at
    least their want rounded down; when that is more than the running total asks, the column counts it, each bucket
    the least it may (later columns give it back; the series is never behind by half an event or more). No rounding
    keeps both the buckets and the total within 1 then: buckets rounded up ahead of their events (1.2 ahead after
    0.4 in each of 6 buckets, 2 counted) while the others reach a whole event (0.625 more in the other 4: 6 counted
    for 5.3); how far over the total goes is what the owing buckets are ahead, less than 1 each.

    A column's counts are then not its own increases (a bucket may hold an event carried in from steps whose `_sum`
    holds its time): what reads a column's `_sum` against its buckets reads it with the increases
    (`Layout.fold_many`'s `measured`).
    """
    floats = np.asarray(values, dtype=np.float64)
    steps, rows, width = floats.shape
    carry = np.zeros((rows, width)) if left is None else np.array(left, dtype=np.float64, copy=True)
    out = np.zeros(floats.shape, dtype=np.int64)
    ranks = np.broadcast_to(np.arange(width), (rows, width))
    for k in range(steps):
        here = ~np.isnan(floats[k]).any(axis=1)
        if not here.any():
            continue
        want = np.clip(floats[k][here], 0.0, None) + carry[here]
        floors = np.floor(want)
        owes = floors < 0  # want in (-1, 0): 0, never -1
        total = np.floor(want.sum(axis=1) + 0.5)
        missing = np.clip(total - floors.sum(axis=1), owes.sum(axis=1), width)
        order = np.argsort(-np.where(owes, 2.0, want - floors), axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, ranks[: len(order)], axis=1)
        counts = floors + (rank < missing[:, None])
        out[k][here] = counts.astype(np.int64)
        carry[here] = want - counts
    return out, carry
