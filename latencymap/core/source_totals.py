"""A rebinned stream's own buckets, summed over its intervals: exact totals and percentiles in the source's terms.

Percentiles follow Prometheus' `histogram_quantile`: linear interpolation inside the bucket that holds the rank (a
first bucket starts at 0), and the largest finite bound when the rank falls in the overflow (`+Inf`) bucket, so the
figures agree with what Grafana shows for the same histogram.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.model import SourceBuckets
from latencymap.core.rebin import faster_first_bucket


@dataclass
class SourceTotals:
    """Per-bucket counts of one stream's source buckets over all its intervals (bounds in the stream unit)."""

    bounds: tuple[float, ...]
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    time_s: float = 0.0
    timed: bool = True
    intervals: int = 0
    mixed: bool = False

    def __post_init__(self) -> None:
        if not len(self.counts):
            self.counts = np.zeros(len(self.bounds), dtype=np.int64)

    def add(self, source: SourceBuckets) -> None:
        """One interval's buckets; bounds that differ from the first interval's mark the totals mixed."""
        if tuple(source.bounds) != self.bounds:
            self.mixed = True
            return
        self.counts += np.asarray(source.counts, dtype=np.int64)
        self.intervals += 1
        if source.total_time is None:
            self.timed = False
        else:
            self.time_s += float(source.total_time)

    @property
    def events(self) -> int:
        """Events counted in the source's buckets."""
        return int(self.counts.sum())

    def first_bucket_faster(self, unit_s: float) -> tuple[int, float, float] | None:
        """(events, upper bound, the most their mean can be) of the first bucket above 0, when the exact time proves
        them faster than its rows' octave `[upper/2, upper)` (`core.rebin.faster_first_bucket`; bounds and mean in
        the stream unit, `unit_s` seconds): there `histogram_quantile`'s straight line from 0 overstates them. None
        otherwise."""
        if not self.timed or self.mixed:
            return None
        faster = faster_first_bucket(self.bounds, self.counts[None, :].astype(np.float64),
                                     np.array([self.time_s / unit_s]))
        if faster is None or math.isnan(faster[1][0]):
            return None
        first, most = faster
        return int(self.counts[first]), float(self.bounds[first]), float(most[0])

    def percentile(self, q: float) -> float:
        """The q-quantile in the stream unit (NaN with no events), as `histogram_quantile` computes it."""
        total = self.events
        if total == 0:
            return math.nan
        rank = q * total
        cumulative = np.cumsum(self.counts)
        i = int(np.searchsorted(cumulative, rank, side="left"))
        i = min(i, len(self.bounds) - 1)
        upper = self.bounds[i]
        if math.isinf(upper):
            finite = [b for b in self.bounds if not math.isinf(b)]
            return finite[-1] if finite else math.nan
        lower = self.bounds[i - 1] if i else 0.0
        before = int(cumulative[i - 1]) if i else 0
        inside = int(self.counts[i])
        return lower + (upper - lower) * ((rank - before) / inside if inside else 1.0)
