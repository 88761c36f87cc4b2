"""NumPy history of intervals per stream: counts and time per (column, slot), plus column metadata."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import NSLOTS, bounds_seconds, midpoints_seconds
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.percentiles import PERCENTILES, percentile_estimates, safe_ratio
from latencymap.core.source_totals import SourceTotals

RESET, GAP, EXACT = 1, 2, 4
DEFAULT_HISTORY = 200_000
MAX_MESSAGES = 100


class StreamHistory:
    """All columns of one stream; the oldest are dropped past `cap`."""

    def __init__(self, stream: StreamId, cap: int = DEFAULT_HISTORY) -> None:
        self.stream = stream
        self.cap = max(1, cap)
        self.low, self.high = bounds_seconds(stream.datasource, stream.unit)
        self._mid = midpoints_seconds(stream.datasource, stream.unit)
        size = min(64, self.cap)
        self._counts = np.zeros((size, NSLOTS), dtype=np.int64)
        self._time = np.zeros((size, NSLOTS), dtype=np.float64)
        self._start = np.zeros(size)
        self._end = np.zeros(size)
        self._dur = np.zeros(size)
        self._flags = np.zeros(size, dtype=np.uint8)
        self.n = 0
        self.dropped = 0
        self.dates: str = ""

    def extend(self, intervals: list[Interval]) -> None:
        """Append intervals in bulk."""
        k = len(intervals)
        if k == 0:
            return
        if k > self.cap:
            self.dropped += k - self.cap
            intervals = intervals[-self.cap:]
            k = self.cap
        self._make_room(k)
        rows = slice(self.n, self.n + k)
        counts = self._counts[rows]
        for i, iv in enumerate(intervals):
            counts[i] = iv.counts
        exact = np.fromiter((iv.time is not None for iv in intervals), dtype=bool, count=k)
        np.multiply(counts, self._mid, out=self._time[rows])
        if exact.any():
            for j in np.flatnonzero(exact).tolist():
                self._time[self.n + j] = intervals[j].time
        self._start[rows] = [iv.start for iv in intervals]
        self._end[rows] = [iv.end for iv in intervals]
        self._dur[rows] = [iv.duration for iv in intervals]
        flags = exact * np.uint8(EXACT)
        if any(iv.reset or iv.gap for iv in intervals):
            flags |= np.fromiter((iv.reset * RESET | iv.gap * GAP for iv in intervals), dtype=np.uint8, count=k)
        self._flags[rows] = flags
        self.n += k
        self.dates = intervals[-1].date

    def _make_room(self, k: int) -> None:
        need = self.n + k
        if need > self.cap:
            drop = need - self.cap
            keep = slice(drop, self.n)
            for name in ("_counts", "_time", "_start", "_end", "_dur", "_flags"):
                arr = getattr(self, name)
                arr[: self.n - drop] = arr[keep]
            self.n -= drop
            self.dropped += drop
            need = self.cap
        size = len(self._start)
        if need <= size:
            return
        new = min(self.cap, max(need, int(size * 1.5) + 64))
        for name in ("_counts", "_time", "_start", "_end", "_dur", "_flags"):
            arr = getattr(self, name)
            grown = np.zeros((new, *arr.shape[1:]), dtype=arr.dtype)
            grown[: self.n] = arr[: self.n]
            setattr(self, name, grown)

    @property
    def counts(self) -> np.ndarray:
        return self._counts[: self.n]

    @property
    def time(self) -> np.ndarray:
        """Seconds spent per (column, slot): exact where the source gave it, else estimated."""
        return self._time[: self.n]

    @property
    def start(self) -> np.ndarray:
        return self._start[: self.n]

    @property
    def end(self) -> np.ndarray:
        return self._end[: self.n]

    @property
    def flags(self) -> np.ndarray:
        return self._flags[: self.n]

    @property
    def durations(self) -> np.ndarray:
        return self._dur[: self.n]

    @property
    def exact(self) -> bool:
        """True when every column's time is exact."""
        return bool(self.n) and bool(np.all(self.flags & EXACT))

    def frequency(self, cols: slice = slice(None)) -> np.ndarray:
        """Events per second per (column, slot)."""
        freq: np.ndarray = self.counts[cols] / self.durations[cols][:, None]
        return freq

    def intensity(self, cols: slice = slice(None)) -> np.ndarray:
        """Seconds spent per second per (column, slot)."""
        intensity: np.ndarray = self.time[cols] / self.durations[cols][:, None]
        return intensity

    def column_stats(self, cols: slice = slice(None)) -> ColumnStats:
        """Per-column events/s, time/s, mean and percentiles."""
        counts, spent, dur = self.counts[cols], self.time[cols], self.durations[cols]
        events = counts.sum(axis=1)
        total_time = spent.sum(axis=1)
        return ColumnStats(
            events_per_s=events / dur,
            time_per_s=total_time / dur,
            mean_s=safe_ratio(total_time, events),
            percentiles=percentile_estimates(counts, self.low, self.high),
        )

    def totals(self, cols: slice = slice(None)) -> Totals:
        """Aggregate over columns."""
        counts = self.counts[cols].sum(axis=0)
        spent = float(self.time[cols].sum())
        events = int(counts.sum())
        dur = float(self.durations[cols].sum())
        pct = percentile_estimates(counts, self.low, self.high)
        return Totals(events, spent, float(safe_ratio(spent, events)), dur, counts,
                      dict(zip(PERCENTILES, (float(p) for p in pct), strict=True)))

    def used_slots(self) -> tuple[int, int] | None:
        """(first, last) slot that ever held an event, or None."""
        if self.n == 0:
            return None
        used = np.flatnonzero(self.counts.any(axis=0))
        if used.size == 0:
            return None
        return int(used[0]), int(used[-1])


@dataclass(slots=True)
class ColumnStats:
    events_per_s: np.ndarray
    time_per_s: np.ndarray
    mean_s: np.ndarray
    percentiles: np.ndarray  # (cols, len(PERCENTILES)) seconds


@dataclass(slots=True)
class Totals:
    events: int
    time_s: float
    mean_s: float
    duration_s: float
    counts: np.ndarray
    percentiles: dict[float, float]


@dataclass
class Accumulator:
    """Histories of every stream seen, in arrival order, plus what readers skipped."""

    cap: int = DEFAULT_HISTORY
    streams: dict[StreamId, StreamHistory] = field(default_factory=dict)
    skipped: int = 0
    messages: list[str] = field(default_factory=list)
    intervals_seen: int = 0
    #: Rebinned streams' own buckets (Prometheus, OpenTelemetry explicit bounds), summed.
    sources: dict[StreamId, SourceTotals] = field(default_factory=dict)

    def add(self, items: Iterable[Interval | Notice]) -> int:
        """Append a batch of items; returns the number of intervals added."""
        batches: dict[StreamId, list[Interval]] = {}
        added = 0
        for item in items:
            if isinstance(item, Notice):
                self.note(item)
            else:
                batches.setdefault(item.stream, []).append(item)
                added += 1
                if item.source_buckets is not None:
                    totals = self.sources.get(item.stream)
                    if totals is None:
                        totals = self.sources[item.stream] = SourceTotals(tuple(item.source_buckets.bounds))
                    totals.add(item.source_buckets)
        for stream, batch in batches.items():
            self.history(stream).extend(batch)
        self.intervals_seen += added
        return added

    def note(self, notice: Notice) -> None:
        self.skipped += notice.skipped
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(notice.message)

    def history(self, stream: StreamId) -> StreamHistory:
        hist = self.streams.get(stream)
        if hist is None:
            hist = self.streams[stream] = StreamHistory(stream, self.cap)
        return hist


#: Items appended to an accumulator at a time when a whole flow is read without a view.
BATCH = 4096


def accumulate(items: Iterable[Interval | Notice], acc: Accumulator | None = None,
               on_notice: Callable[[Notice], None] | None = None) -> Accumulator:
    """Every item of `items` in `acc` (a new unbounded one by default), appended in batches; notices to `on_notice`."""
    acc = Accumulator() if acc is None else acc
    batch: list[Interval | Notice] = []
    try:
        for item in items:
            if on_notice is not None and isinstance(item, Notice):
                on_notice(item)
            batch.append(item)
            if len(batch) >= BATCH:
                acc.add(batch)
                batch.clear()
    finally:  # a flow that fails keeps what it gave
        acc.add(batch)
    return acc
