"""The data that flows from sources to views: stream identity, snapshots, intervals, notices."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import TypeVar

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.lean import dataclass

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StreamId:
    """Who a histogram belongs to; one heat map per stream."""

    label: str
    datasource: str = "bpf"
    unit: str = "millisec"


@dataclass(frozen=True, slots=True)
class SourceBuckets:
    """A source's own bucket boundaries and one interval's counts in them, when they are not powers of two.

    The Interval's `counts` are these spread onto the log2 slots (`latencymap.core.rebin`); only totals are exact.
    No bounds (and no counts): the source's buckets folded exactly onto the slots, and this keeps only its sum.
    Bounds finer than the slots that fold exactly onto them may be kept too (HdrHistogram's sub-buckets), as a float
    array: a column lists hundreds, compact while columns wait to be added; and powers of two that end in `+Inf`,
    whose events only these tell from those of the slot they fold into (`history`'s overflow).
    """

    bounds: tuple[float, ...] | np.ndarray
    counts: np.ndarray
    total_time: float | None = None

    @classmethod
    def sum_only(cls, seconds: float) -> SourceBuckets:
        """The sum of a source whose buckets folded exactly onto the slots (no bounds, no counts)."""
        return cls((), np.zeros(0, dtype=np.int64), seconds)


@dataclass(slots=True)
class Interval:
    """One time column: events per slot between `start` and `end` (epoch seconds).

    `time`, when given, is the exact time spent per slot in seconds; otherwise views estimate it.
    `reset` marks a column where a counter went down; `gap` a column with missing data.
    `source_buckets`, for rebinned sources (Prometheus, OpenTelemetry explicit bounds), keeps the source's own
    buckets: `bounds` are ascending upper bounds in the stream unit (the last may be inf), `counts` per bucket
    for this interval, `total_time` the exact seconds spent when the source reports a sum.
    `date` is the date text of the record at its end; `start_date`, on a stream's first interval diffed from
    cumulative records, that of the baseline record at its start (which gives no interval of its own).
    `extremes`, from sources that see each value, is (2, NSLOTS) seconds: the smallest and the largest value counted
    in each slot (NaN in a slot with no events); None: the source does not know them.
    """

    stream: StreamId
    start: float
    end: float
    counts: np.ndarray
    time: np.ndarray | None = None
    reset: bool = False
    gap: bool = False
    date: str = ""
    duration: float = 0.0
    source_buckets: SourceBuckets | None = None
    start_date: str = ""
    extremes: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not self.duration:
            self.duration = self.end - self.start


@dataclass(slots=True)
class Snapshot:
    """Cumulative counters as read from a source at one instant (`timestamp` None: unknown).

    `micros`, when the source gave integer microseconds, keeps durations exact. `restart`: the source says its
    counters started again from 0 since the snapshot before (a program's banner again): the column counts these
    values, a reset, whatever they are against the ones before.
    """

    stream: StreamId
    timestamp: float | None
    counts: np.ndarray
    sums: np.ndarray | None = None
    date: str = ""
    line: int = 0
    present: np.ndarray | None = None
    micros: int | None = None
    restart: bool = False


@dataclass(slots=True)
class SnapshotRun:
    """Consecutive cumulative snapshots read in one go (row `i` is one record); the differ takes them in bulk."""

    streams: list[StreamId]
    micros: np.ndarray
    counts: np.ndarray
    present: np.ndarray
    dates: list[str]
    lines: list[int]

    def __len__(self) -> int:
        return len(self.streams)

    def snapshot(self, i: int) -> Snapshot:
        """Row `i` as a Snapshot."""
        micros = int(self.micros[i])
        return Snapshot(self.streams[i], micros / 1e6, self.counts[i], None, self.dates[i], self.lines[i],
                        self.present[i], micros)

    def snapshots(self) -> list[Snapshot]:
        """Every row as a Snapshot."""
        return [self.snapshot(i) for i in range(len(self.streams))]


@dataclass(slots=True)
class IntervalRun:
    """Consecutive Intervals in columns (row `i` is one interval, of stream `streams[i]`), for consumers that take
    them in bulk (the accumulator); `time` is None when no row has exact times, else every row has them.
    `start_dates`: the `Interval.start_date` of the rows that have one, by row. `extremes`, (rows, 2, NSLOTS):
    every row's `Interval.extremes` (None: no row has them; a run's rows all have them or none do).
    `source_buckets`: every row's `Interval.source_buckets` (None: no row has them)."""

    streams: list[StreamId]
    start: np.ndarray
    end: np.ndarray
    duration: np.ndarray
    counts: np.ndarray
    time: np.ndarray | None
    reset: np.ndarray
    gap: np.ndarray
    dates: list[str]
    start_dates: dict[int, str] = field(default_factory=dict)
    extremes: np.ndarray | None = None
    source_buckets: list[SourceBuckets | None] | None = None

    def __len__(self) -> int:
        return len(self.streams)

    def head(self, k: int) -> IntervalRun:
        """The first `k` rows."""
        return IntervalRun(self.streams[:k], self.start[:k], self.end[:k], self.duration[:k], self.counts[:k],
                           None if self.time is None else self.time[:k], self.reset[:k], self.gap[:k], self.dates[:k],
                           {i: d for i, d in self.start_dates.items() if i < k},
                           None if self.extremes is None else self.extremes[:k],
                           None if self.source_buckets is None else self.source_buckets[:k])

    def intervals(self) -> list[Interval]:
        """Every row as an Interval."""
        times = [None] * len(self.streams) if self.time is None else list(self.time)
        out = [Interval(*row) for row in zip(self.streams, self.start.tolist(), self.end.tolist(), self.counts,
                                             times, self.reset.tolist(), self.gap.tolist(), self.dates,
                                             self.duration.tolist(), strict=True)]
        for i, date in self.start_dates.items():
            out[i].start_date = date
        if self.extremes is not None:
            for interval, seen in zip(out, self.extremes, strict=True):
                interval.extremes = seen
        if self.source_buckets is not None:
            for interval, source in zip(out, self.source_buckets, strict=True):
                interval.source_buckets = source
        return out


@dataclass(slots=True)
class Notice:
    """Something a reader skipped or wants said, in order with the data."""

    message: str
    skipped: int = 1
    #: A stream whose values measure something other than its datasource's usual events, and what (a `WHY` entry of
    #: `latencymap.analysis.findings`: "jhiccup", an HdrHistogram log of jHiccup's hiccups): its findings are worded
    #: so (`StreamHistory.measures`), and a recording keeps it in the note.
    measures: tuple[StreamId, str] | None = None


@dataclass(slots=True)
class Status(Notice):
    """What a source says of itself as it starts (where it listens): said as it comes, but no note of what reading
    found, so neither a report's notes (`errors.messages`) nor a recording keep it."""


#: What readers and sources yield: cumulative snapshots (diffed into intervals downstream), intervals, notices.
Item = Interval | IntervalRun | Snapshot | SnapshotRun | Notice
#: What views, recorders and outputs take: intervals and notices, in order.
Flow = Iterator[Interval | Notice]
#: A flow whose intervals may come in columns (`column_flow`), for the accumulator.
ColumnFlow = Iterator[Interval | IntervalRun | Notice]
#: What a stage that takes either kind of flow passes on: the kind it was given.
FlowItem = TypeVar("FlowItem", Interval | Notice, Interval | IntervalRun | Notice)


def one_by_one(items: Iterable[Item]) -> Iterator[Item]:
    """`items` with each SnapshotRun and IntervalRun given row by row."""
    for item in items:
        if isinstance(item, SnapshotRun):
            yield from item.snapshots()
        elif isinstance(item, IntervalRun):
            yield from item.intervals()
        else:
            yield item


def rows_by_stream(streams: list[StreamId]) -> dict[StreamId, list[int]]:
    """The rows of a run (SnapshotRun, IntervalRun) of each stream, in order."""
    groups: dict[StreamId, list[int]] = {}
    last: StreamId | None = None
    rows: list[int] = []
    for i, stream in enumerate(streams):
        if stream is not last:  # rows of one stream come in stretches: hash (a tuple built each time) once per stretch
            rows = groups.setdefault(stream, [])
            last = stream
        rows.append(i)
    return groups


def unrolled(items: Iterable[_T | IntervalRun]) -> Iterator[_T | Interval]:
    """`items` with each IntervalRun given as its Intervals, one by one."""
    for item in items:
        if isinstance(item, IntervalRun):
            yield from item.intervals()
        else:
            yield item


def empty_counts() -> np.ndarray:
    """A zeroed per-slot count vector."""
    return np.zeros(NSLOTS, dtype=np.int64)
