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

Merging an interval's buckets costs Python work in proportion to its own buckets, and array operations over the
totals' (a busy HdrHistogram log's stream holds thousands of sub-buckets, of which each column lists a few): only
the bounds the totals lack are placed and checked, the totals' arrays copied around them (`_placed_rising`), and the
tuple of `bounds` is made again only when read.

The exact time does not depend on the layout: `time_s` adds every interval's sum, mixed or not (`timed` says
whether every interval had one); `buckets_time_s` is the time of the intervals whose events the buckets hold.
"""

from __future__ import annotations

import math
from dataclasses import field, replace

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

    #: The upper bounds (`bounds`); None once a merge changed them, until `bounds` makes them again from `_arrays`.
    _bounds: tuple[float, ...] | None
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
    #: The bounds as an array, and whether they rise strictly, made with them: merging columns (`_put`) changes
    #: these alone, the Python work of a column growing with its own buckets, not the stream's.
    _arrays: tuple[np.ndarray, bool] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not len(self.counts):
            self.counts = np.zeros(len(self.bounds), dtype=np.int64)

    @property
    def bounds(self) -> tuple[float, ...]:
        """The upper bounds of the buckets, ascending, in the stream unit (the last may be +Inf)."""
        if self._bounds is None:
            assert self._arrays is not None
            self._bounds = tuple(self._arrays[0].tolist())
        return self._bounds

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
        if self._put(_floats(source.bounds), counts) and self.buckets_time_s is not None:
            self.buckets_time_s = None if source.total_time is None else self.buckets_time_s + float(
                source.total_time)

    def merge(self, other: SourceTotals) -> None:
        """Add the totals of later intervals of the same stream (`core.kept_sources`' chunks), as `add` adds each: on
        a layout of the two when that is exact, else the totals are mixed; mixed when `other` is."""
        self.intervals += other.intervals
        self.time_s += other.time_s
        self.timed = self.timed and other.timed
        if not other.bounded:
            self._see(None)
        elif other.least is not None and other.most is not None:
            self._see((other.least, other.most))
        theirs = other._bounds_array()
        held = bool(len(theirs)) and self._put(theirs, other.counts)
        self.mixed = self.mixed or other.mixed
        if held and self.buckets_time_s is not None:
            self.buckets_time_s = None if other.buckets_time_s is None else self.buckets_time_s + other.buckets_time_s

    def copy(self) -> SourceTotals:
        """A copy whose counts are its own."""
        return replace(self, counts=self.counts.copy())

    def compact(self) -> None:
        """Hold the bounds as arrays alone (totals kept a while unread: `core.kept_sources`); `bounds` makes the tuple
        again when read."""
        if len(self._bounds_array()):
            self._bounds = None

    def _put(self, bounds: np.ndarray, counts: np.ndarray) -> bool:
        """Add one interval's `counts` on `bounds`: on the totals' own buckets, on the union of the bounds, or on a
        coarser layout of the two, when that is exact; False when they are left out (the totals are mixed)."""
        at = None if self.mixed else self._within(bounds, counts)
        if at is not None:
            np.add.at(self.counts, at, counts)
            return True
        ours = self._bounds_array()
        if self.mixed and not np.array_equal(bounds, ours):
            return False
        assert self._arrays is not None or not len(ours)
        rising = self._arrays is not None and self._arrays[1]
        combined = _combined(ours, self.counts, bounds, counts, rising) or \
            _coarsened(ours, self.counts, bounds, counts)
        if combined is None:
            self.mixed = True
            return False
        layout, self.counts = combined
        if layout is not None and len(layout):
            self._bounds, self._arrays = None, (layout, _ascending(layout))
        elif layout is not None:
            self._bounds, self._arrays = (), None
        return True

    def _bounds_array(self) -> np.ndarray:
        """`bounds` as a float array (made once for a layout)."""
        if self._arrays is None:
            if not self.bounds:
                return np.zeros(0)
            array = np.asarray(self.bounds, dtype=np.float64)
            self._arrays = (array, _ascending(array))
        return self._arrays[0]

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
        ours = self._bounds_array()
        if not len(ours) or math.isinf(highs[-1]) != math.isinf(ours[-1]):
            return None
        at = np.searchsorted(ours, highs)
        held = counts > 0
        if int(at[held].max(initial=0)) >= len(ours):
            return None
        at = np.minimum(at, len(ours) - 1)
        low, our_low = _lowers(highs), np.where(at > 0, ours[at - 1], 0.0 if ours[0] > 0 else -math.inf)
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


def _floats(bounds: tuple[float, ...] | np.ndarray) -> np.ndarray:
    """Bounds as a float array (the array itself when it is one)."""
    return np.asarray(bounds, dtype=np.float64)


def _holds(bounds: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowers, uppers) of the buckets holding events; a first bucket above 0 starts at 0, one at or below 0 at -inf."""
    held = np.asarray(counts) != 0
    return _lowers(bounds)[held], bounds[held]


def _merged(bounds_a: np.ndarray, counts_a: np.ndarray, bounds_b: np.ndarray,
            counts_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`merge_buckets` on float arrays, the union as an array."""
    placed = _placed(bounds_a, counts_a, bounds_b, counts_b)
    if placed is None:
        return None
    union, moved_a, at = placed
    moved_b = np.zeros(len(union), dtype=np.int64)
    moved_b[at] = counts_b
    return union, moved_a, moved_b


def _placed(bounds_a: np.ndarray, counts_a: np.ndarray, bounds_b: np.ndarray, counts_b: np.ndarray,
            rising: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(the union of two layouts, `counts_a` on it, where each of `bounds_b` is in it), as `merge_buckets` makes
    them, or None; `rising`: `bounds_a` are known to rise strictly."""
    if not len(bounds_a) or not len(bounds_b) or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    if (rising or _ascending(bounds_a)) and _ascending(bounds_b):
        return _placed_rising(bounds_a, np.asarray(counts_a, dtype=np.int64), bounds_b, counts_b)
    union = np.union1d(bounds_a, bounds_b)
    if _split(union, bounds_a, counts_a).any() or _split(union, bounds_b, counts_b).any():
        return None
    moved_a = np.zeros(len(union), dtype=np.int64)
    moved_a[np.searchsorted(union, bounds_a)] = counts_a
    return union, moved_a, np.searchsorted(union, bounds_b)


def _ascending(bounds: np.ndarray) -> bool:
    """Whether bounds rise strictly (a layout of buckets, as sources give them)."""
    return bool((bounds[1:] > bounds[:-1]).all())


def _placed_rising(bounds_a: np.ndarray, counts_a: np.ndarray, bounds_b: np.ndarray,
                   counts_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`_placed` of two rising layouts, its checks in time proportional to the second's bounds (a column's, the
    first being a stream's totals): only the bounds the first lacks are placed and checked, the first's arrays copied
    around them."""
    n = len(bounds_a)
    at = np.searchsorted(bounds_a, bounds_b)
    new = ~((at < n) & (bounds_a[np.minimum(at, n - 1)] == bounds_b))
    added, where = bounds_b[new], at[new]
    i = where[where < n]  # the bucket of the first each added bound falls in: strictly, as it is none of its bounds
    lows = np.where(i > 0, bounds_a[i - 1], 0.0 if bounds_a[0] > 0 else -math.inf)
    if ((counts_a[i] != 0) & (lows < added[: len(i)])).any():
        return None
    held = counts_b != 0
    if (np.searchsorted(bounds_a, _lowers(bounds_b)[held], side="right") <
            np.searchsorted(bounds_a, bounds_b[held], side="left")).any():
        return None  # a bound of the first strictly inside a bucket of the second that holds events
    if not len(added):
        return bounds_a, counts_a.copy(), at
    slots = where + np.arange(len(added))  # where each added bound lands in the union
    union = np.empty(n + len(added))
    moved = np.zeros(n + len(added), dtype=np.int64)
    keep = np.ones(n + len(added), dtype=bool)
    keep[slots] = False
    union[keep], union[slots], moved[keep] = bounds_a, added, counts_a
    at += np.searchsorted(where, at, side="right")  # each of the second's bounds past the added ones before it
    at[new] = slots
    return union, moved, at


def merge_buckets(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                  counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray, np.ndarray] | None:
    """(the union of two bucket layouts, `counts_a` and `counts_b` on it) when no bound of the union falls strictly
    inside a bucket holding events; None when one would, or when only one of them has an overflow (+Inf) bucket."""
    merged = _merged(_floats(bounds_a), counts_a, _floats(bounds_b), counts_b)
    return None if merged is None else (tuple(merged[0].tolist()), merged[1], merged[2])


def _combined(bounds_a: np.ndarray, counts_a: np.ndarray, bounds_b: np.ndarray, counts_b: np.ndarray,
              rising: bool = False) -> tuple[np.ndarray | None, np.ndarray] | None:
    """`combine_buckets` on float arrays, None for the layout when it is `bounds_a` as it was; `rising`: `bounds_a`
    are known to rise strictly."""
    if len(bounds_a) == len(bounds_b) and np.array_equal(bounds_a, bounds_b):
        return None, counts_a + counts_b
    if not counts_b.any():
        return None, counts_a.copy()
    if not counts_a.any():
        return bounds_b, counts_b.copy()
    placed = _placed(bounds_a, counts_a, bounds_b, counts_b, rising)
    if placed is None:
        return None
    union, moved, at = placed
    moved[at] += counts_b
    return (None if union is bounds_a else union), moved


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


def _pairs(lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
    """Buckets as complex numbers (lower + upper j): compared whole, -inf and inf included."""
    out = np.empty(len(highs), dtype=np.complex128)
    out.real, out.imag = lows, highs
    return out


def _split(union: np.ndarray, bounds: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Which bounds of `union` fall strictly inside a bucket of `bounds` that holds events."""
    lows, highs = _holds(bounds, counts)
    if not len(highs):
        return np.zeros(len(union), dtype=bool)
    i = np.minimum(np.searchsorted(highs, union, side="left"), len(highs) - 1)
    return (lows[i] < union) & (union < highs[i])


def _coarsened(bounds_a: np.ndarray, counts_a: np.ndarray, bounds_b: np.ndarray,
               counts_b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`coarsen_buckets` on float arrays, the layout as an array."""
    if not len(bounds_a) or not len(bounds_b) or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    union = np.union1d(bounds_a, bounds_b)
    kept = union[~(_split(union, bounds_a, counts_a) | _split(union, bounds_b, counts_b))]
    out = np.zeros(len(kept), dtype=np.int64)
    for bounds, counts in ((bounds_a, counts_a), (bounds_b, counts_b)):
        np.add.at(out, np.searchsorted(kept, bounds, side="left"), counts)
    held = _pairs(*_holds(kept, out))
    own = np.concatenate((_pairs(_lowers(bounds_a), bounds_a), _pairs(_lowers(bounds_b), bounds_b)))
    return (kept, out) if np.isin(held, own).all() else None


def coarsen_buckets(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                    counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray] | None:
    """Two buckets' counts added up on the union of their bounds less those that would split a bucket holding
    events, when every bucket that then holds events is a bucket of one layout or the other (nested layouts: a
    coarser exponential scale, a coarser native schema); None otherwise, or when only one has an overflow bucket."""
    coarse = _coarsened(_floats(bounds_a), counts_a, _floats(bounds_b), counts_b)
    return None if coarse is None else (tuple(coarse[0].tolist()), coarse[1])
