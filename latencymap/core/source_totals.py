"""A rebinned stream's own buckets, summed over its intervals: exact totals and percentiles in the source's terms.

Percentiles follow Prometheus' `histogram_quantile`: linear interpolation inside the bucket that holds the rank (a
first bucket starts at 0), and the largest finite bound when the rank falls in the overflow (`+Inf`) bucket, so the
figures agree with what Grafana shows for the same histogram.

Intervals whose bounds differ (a native histogram lists only the buckets a column filled) are added on the union of
their bounds when that is exact: no bound of the union falls strictly inside a bucket that holds events (an interval
without events fits any bounds). When it is not, they are added on the union less the bounds that would split a
bucket holding events, provided every bucket left holding events is one of the two layouts' own (a coarser
exponential scale or native schema: the finer buckets merge into the coarser ones, exactly). Otherwise (bounds that
do not nest, such as a redeploy with new explicit bounds, an overflow bucket in some intervals only) the totals are
marked mixed: from then on the buckets hold only the intervals on their bounds, and `events` is less than the
stream's.

Where the source says the smallest and the largest value of every interval (`seen`: OpenTelemetry points' min and
max, from the intervals' values seen), a percentile stays within them: the bucket holding its rank is narrowed to
the part of it between them, and inside a bucket so narrowed the value is interpolated log-uniformly, as the rows are
(a straight line from 0 in a first bucket would say nothing of the smallest value known); an overflow bucket so
narrowed ends at the largest value instead of giving the largest finite bound.

Where the rows place each interval's events by its exact sum (`rows_inside`: OpenTelemetry), a percentile whose
bucket is wider than the rows there comes from the rows, bounded to that bucket (`rows_within`, `estimate`):
a histogram in seconds with the SDK's default bounds holds every request in (0, 5 s].

The exact time does not depend on the layout: `time_s` adds every interval's sum, mixed or not (`timed` says
whether every interval had one); `buckets_time_s` is the time of the intervals whose events the buckets hold.
"""

from __future__ import annotations

import math
from dataclasses import field

import numpy as np

from latencymap.core.lean import dataclass
from latencymap.core.model import SourceBuckets
from latencymap.core.rebin import bucket_ranges, slot_edges, slot_of_value, time_bounds

#: Datasources whose values seen (`Interval.extremes`) bound the percentiles of their own buckets: OpenTelemetry's
#: points carry their min and max. (HdrHistogram's are its own fine buckets' ranges, which those already say.)
SEEN_BOUNDS_SOURCES = frozenset({"otlp"})
#: Datasources whose percentiles in a bucket wider than the rows come from the rows (`SourceTotals.rows_within`):
#: OpenTelemetry's, whose rows place each point's events by its exact sum, min and max (a histogram in seconds
#: with the SDK's default bounds has every request in (0, 5 s]). Prometheus' stay `histogram_quantile`'s, the figures
#: its users see in Grafana, with the report's line on a first bucket the sum proves faster (`first_bucket_faster`).
ROWS_INSIDE_SOURCES = frozenset({"otlp"})
_ROW_EDGES = slot_edges()


def seen_range(extremes: np.ndarray, unit_s: float) -> tuple[float, float] | None:
    """(smallest, largest) of an interval's values seen ((2, NSLOTS) seconds, NaN where none) in the stream unit
    (`unit_s` seconds); None when no slot has them."""
    least, most = extremes[0][np.isfinite(extremes[0])], extremes[1][np.isfinite(extremes[1])]
    if not least.size or not most.size:
        return None
    return float(least.min()) / unit_s, float(most.max()) / unit_s


def bound_seconds(bound: float, unit_s: float) -> float:
    """A bucket bound in the stream unit (`unit_s` seconds) in seconds as the source wrote it: the product rounded to
    15 significant digits (0.025, not 0.024999999999999998 from 25000 µs)."""
    return float(f"{bound * unit_s:.15g}")


def open_overflow(source: SourceBuckets | None, seen: tuple[float, float] | None,
                  unit_s: float) -> tuple[float, float] | None:
    """(events, lower bound in seconds) of one interval's overflow bucket (`+Inf`, past the largest finite bound) when
    it holds events whose values are not known: no largest value seen past that bound (`seen`, stream unit, as
    `outputs.report.source_open` reads the totals); None otherwise. `unit_s`: seconds per stream unit."""
    if source is None or len(source.bounds) < 2 or not len(source.counts):
        return None
    top, bound, events = float(source.bounds[-1]), float(source.bounds[-2]), float(source.counts[-1])
    if not math.isinf(top) or math.isinf(bound) or not events > 0:
        return None
    if seen is not None and max(bound, seen[0]) <= seen[1]:
        return None  # the largest value seen ends it (OpenTelemetry's max)
    return events, bound_seconds(bound, unit_s)


@dataclass
class SourceTotals:
    """Per-bucket counts of one stream's source buckets over all its intervals (bounds in the stream unit)."""

    bounds: tuple[float, ...]
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Exact seconds of every interval added (`timed`: every one had a sum), whatever its bounds.
    time_s: float = 0.0
    timed: bool = True
    #: Intervals added, mixed or not.
    intervals: int = 0
    mixed: bool = False
    #: Exact seconds of the intervals whose events `counts` hold; None when one of them had no sum.
    buckets_time_s: float | None = 0.0
    #: The smallest and the largest value of the intervals added (stream unit), when every one holding events said
    #: them (`add`'s `seen`); None: not known.
    least: float | None = None
    most: float | None = None
    bounded: bool = True
    #: Whether the rows (`rows_within`) estimate a percentile in a bucket wider than themselves better than the
    #: bucket does: a source that places each interval's events on the rows by its exact sum and values seen.
    rows_inside: bool = False
    #: `bounds` (the tuple itself), as an array of upper bounds and one of lower bounds (`_within`).
    _arrays: tuple[tuple[float, ...], np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not len(self.counts):
            self.counts = np.zeros(len(self.bounds), dtype=np.int64)

    def add(self, source: SourceBuckets, seen: tuple[float, float] | None = None) -> None:
        """One interval: its sum to the time; its buckets on the union of the bounds, or on a coarser layout of the
        two, when that is exact; otherwise the totals are mixed and its buckets left out. `seen`: its smallest and
        largest value (stream unit), when the source says them."""
        self.intervals += 1
        if source.total_time is None:
            self.timed = False
        else:
            self.time_s += float(source.total_time)
        if not len(source.bounds):
            return  # only a sum: the source's buckets were the rows
        counts = np.asarray(source.counts, dtype=np.int64)
        if counts.any():
            self._see(seen)
        at = None if self.mixed else self._within(np.asarray(source.bounds, dtype=np.float64), counts)
        if at is not None:
            np.add.at(self.counts, at, counts)
        else:
            bounds = tuple(map(float, source.bounds))
            if self.mixed and bounds != self.bounds:
                return
            combined = combine_buckets(self.bounds, self.counts, bounds, counts)
            if combined is None:
                combined = coarsen_buckets(self.bounds, self.counts, bounds, counts)
            if combined is None:
                self.mixed = True
                return
            self.bounds, self.counts = combined
        if self.buckets_time_s is not None:
            self.buckets_time_s = None if source.total_time is None else self.buckets_time_s + float(
                source.total_time)

    def _see(self, seen: tuple[float, float] | None) -> None:
        """Widen the smallest and largest value known by an interval's holding events (None: it did not say them)."""
        if seen is None or not self.bounded:
            self.bounded, self.least, self.most = False, None, None
            return
        self.least = seen[0] if self.least is None else min(self.least, seen[0])
        self.most = seen[1] if self.most is None else max(self.most, seen[1])

    def _within(self, highs: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """For each of the buckets `highs` (upper bounds) and `counts` describe, the totals' bucket its events go to,
        when every one that holds events is one of the totals' buckets or lies inside one that holds events (exact: a
        coarser bucket of a nested layout); None otherwise (the layouts are then merged). A source whose columns list
        only their occupied buckets, finer or coarser from column to column (HdrHistogram logs), adds most so."""
        if not self.bounds or math.isinf(highs[-1]) != math.isinf(self.bounds[-1]):
            return None
        if self._arrays is None or self._arrays[0] is not self.bounds:
            array = np.asarray(self.bounds, dtype=np.float64)
            self._arrays = (self.bounds, array, _lowers(array))
        _, ours, our_lows = self._arrays
        at = np.searchsorted(ours, highs)
        held = counts > 0
        if int(at[held].max(initial=0)) >= len(ours):
            return None
        at = np.minimum(at, len(ours) - 1)
        low, our_low = _lowers(highs), our_lows[at]
        same = (ours[at] == highs) & (our_low == low)
        inside = (our_low <= low) & (self.counts[at] > 0)
        return at if (same | inside | ~held).all() else None

    def bounds_seconds(self, unit_s: float) -> list[float | None]:
        """The bounds in seconds (None for +Inf) as the source wrote them: `unit_s` seconds per stream unit, the
        product rounded to 15 significant digits (0.025, not 0.024999999999999998 from 25000 µs)."""
        return [None if math.isinf(b) else bound_seconds(b, unit_s) for b in self.bounds]

    @property
    def events(self) -> int:
        """Events counted in the source's buckets."""
        return int(self.counts.sum())

    def first_bucket_faster(self, unit_s: float) -> tuple[int, float, float] | None:
        """(events, upper bound, the most their mean can be) of the first bucket above 0, when the exact time proves
        them faster than its rows' octave `[upper/2, upper)` (`core.rebin.time_bounds`; bounds and mean in
        the stream unit, `unit_s` seconds): there `histogram_quantile`'s straight line from 0 overstates them. None
        otherwise."""
        if self.buckets_time_s is None or self.mixed or not self.bounds or (self.least or 0.0) > 0:
            return None  # (a smallest value known above 0 starts the first bucket's percentiles there, not at 0)
        if self.rows_inside:
            return None  # its percentiles come from the rows, which place it by the exact sum (`rows_within`)
        lows, highs = bucket_ranges(self.bounds)
        at, most = time_bounds(lows, highs, self.counts[None, :], np.array([self.buckets_time_s / unit_s]))[0]
        first = int(at[0])
        if first < 0 or lows[first] > 0:
            return None  # (a faster lowest bucket above the first: the rows place it; histogram_quantile's line too)
        return int(self.counts[first]), float(self.bounds[first]), float(most[0])

    def rank_bucket(self, q: float) -> int:
        """The index of the bucket holding the q-quantile's rank (the bounds' last with no events)."""
        cumulative = np.cumsum(self.counts)
        return min(int(np.searchsorted(cumulative, q * self.events, side="left")), len(self.bounds) - 1)

    def known_range(self, i: int) -> tuple[float, float]:
        """(low, high) of bucket `i` narrowed to the values seen (`least`, `most`) where they overlap it, as its
        percentiles are; the bucket itself where they are not known (stream unit; a first bucket starts at 0)."""
        lower, upper = self.bounds[i - 1] if i else 0.0, self.bounds[i]
        if self.least is not None and self.most is not None and max(lower, self.least) <= min(upper, self.most):
            return max(lower, self.least), min(upper, self.most)
        return lower, upper

    def rows_within(self, q: float, rows: float) -> tuple[float, float] | None:
        """(low, high), stream unit, of the bucket holding the q-quantile's rank (narrowed to the values seen) when
        the rows' q-quantile (`rows`, stream unit), bounded to it, is the better estimate: a source whose rows place
        each interval's events by its exact sum (`rows_inside`, every interval with a sum), and a bucket wider than
        the rows there (the row holding `rows` lies inside it); None where the source's bucket is as fine."""
        if not self.rows_inside or self.buckets_time_s is None or self.mixed or not self.events:
            return None
        if not math.isfinite(rows) or rows < 0:
            return None
        i = self.rank_bucket(q)
        slot = slot_of_value(rows)
        if not (self.bounds[i - 1] if i else 0.0) <= _ROW_EDGES[slot] < _ROW_EDGES[slot + 1] <= self.bounds[i]:
            return None
        low, high = self.known_range(i)
        return (low, high) if math.isfinite(high) else None

    def estimate(self, q: float, rows: float) -> float:
        """The q-quantile in the stream unit as a report gives it: the rows' (`rows`, stream unit) bounded to the
        bucket holding its rank where `rows_within` says they are the better estimate, else `percentile`."""
        within = self.rows_within(q, rows)
        return self.percentile(q) if within is None else min(max(rows, within[0]), within[1])

    def percentile(self, q: float) -> float:
        """The q-quantile in the stream unit (NaN with no events), as `histogram_quantile` computes it."""
        total = self.events
        if total == 0:
            return math.nan
        rank = q * total
        cumulative = np.cumsum(self.counts)
        i = self.rank_bucket(q)
        upper = self.bounds[i]
        lower = self.bounds[i - 1] if i else 0.0
        low, high = self.known_range(i)
        if math.isinf(high):
            finite = [b for b in self.bounds if not math.isinf(b)]
            return finite[-1] if finite else math.nan
        before = int(cumulative[i - 1]) if i else 0
        inside = int(self.counts[i])
        frac = (rank - before) / inside if inside else 1.0
        if (low, high) != (lower, upper) and low > 0:
            return float(min(max(low * (high / low) ** frac, low), high))
        return low + (high - low) * frac


def source_use(source: SourceTotals | None, events: int, columns: int) -> tuple[bool, bool]:
    """Whether a stream's percentiles, and its time, come from its source's own buckets and sum: its percentiles
    when the buckets hold every event (bounds that changed beyond adding up exactly do not); its time when they do
    and had sums, or when every column had a sum, whatever the bounds."""
    if source is None:
        return False, False
    own = bool(source.bounds) and not source.mixed and source.events == events
    return own, source.timed and source.intervals > 0 and (own or source.intervals == columns)


def _lowers(bounds: np.ndarray) -> np.ndarray:
    """The lower bound of each bucket, as `_holds` bounds them."""
    return np.concatenate(([0.0 if bounds[0] > 0 else -math.inf], bounds[:-1]))


def _holds(bounds: tuple[float, ...], counts: np.ndarray) -> list[tuple[float, float]]:
    """(lower, upper) of each bucket holding events; a first bucket above 0 starts at 0, one at or below 0 at -inf."""
    lowers = [0.0 if bounds[0] > 0 else -math.inf, *bounds[:-1]]
    return [(low, high) for low, high, n in zip(lowers, bounds, counts.tolist(), strict=True) if n]


def merge_buckets(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                  counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray, np.ndarray] | None:
    """(the union of two bucket layouts, `counts_a` and `counts_b` on it) when no bound of the union falls strictly
    inside a bucket holding events; None when one would, or when only one of them has an overflow (+Inf) bucket."""
    if not bounds_a or not bounds_b or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    union = np.array(sorted(set(bounds_a) | set(bounds_b)), dtype=np.float64)
    out = []
    for bounds, counts in ((bounds_a, counts_a), (bounds_b, counts_b)):
        if _split(union, bounds, counts).any():
            return None
        moved = np.zeros(len(union), dtype=np.int64)
        moved[np.searchsorted(union, np.asarray(bounds, dtype=np.float64))] = counts
        out.append(moved)
    return tuple(union.tolist()), out[0], out[1]


def combine_buckets(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                    counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray] | None:
    """Two buckets' counts added up: on the same bounds, on the union (`merge_buckets`), or on either one's bounds
    when the other holds no events; None when they cannot be added exactly."""
    if bounds_a == bounds_b:
        return bounds_a, counts_a + counts_b
    if not counts_b.any():
        return bounds_a, counts_a.copy()
    if not counts_a.any():
        return bounds_b, counts_b.copy()
    merged = merge_buckets(bounds_a, counts_a, bounds_b, counts_b)
    return None if merged is None else (merged[0], merged[1] + merged[2])


def _every_bucket(bounds: tuple[float, ...]) -> set[tuple[float, float]]:
    """(lower, upper) of every bucket, as `_holds` bounds them."""
    return set(zip([0.0 if bounds[0] > 0 else -math.inf, *bounds[:-1]], bounds, strict=True))


def _split(union: np.ndarray, bounds: tuple[float, ...], counts: np.ndarray) -> np.ndarray:
    """Which bounds of `union` fall strictly inside a bucket of `bounds` that holds events."""
    held = _holds(bounds, counts)
    if not held:
        return np.zeros(len(union), dtype=bool)
    lows = np.array([low for low, _ in held])
    highs = np.array([high for _, high in held])
    i = np.minimum(np.searchsorted(highs, union, side="left"), len(highs) - 1)
    return (lows[i] < union) & (union < highs[i])


def coarsen_buckets(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                    counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray] | None:
    """Two buckets' counts added up on the union of their bounds less those that would split a bucket holding
    events, when every bucket that then holds events is a bucket of one layout or the other (nested layouts: a
    coarser exponential scale, a coarser native schema); None otherwise, or when only one has an overflow bucket."""
    if not bounds_a or not bounds_b or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    union = np.array(sorted(set(bounds_a) | set(bounds_b)), dtype=np.float64)
    kept = union[~(_split(union, bounds_a, counts_a) | _split(union, bounds_b, counts_b))]
    out = np.zeros(len(kept), dtype=np.int64)
    for bounds, counts in ((bounds_a, counts_a), (bounds_b, counts_b)):
        np.add.at(out, np.searchsorted(kept, np.asarray(bounds, dtype=np.float64), side="left"), counts)
    layout = tuple(kept.tolist())
    own = _every_bucket(bounds_a) | _every_bucket(bounds_b)
    if any(bucket not in own for bucket in _holds(layout, out)):
        return None
    return layout, out
