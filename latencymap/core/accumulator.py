"""Histories of every stream (compact, `latencymap.core.history`), under a memory budget or a column limit.

Under a memory budget the accumulator counts what every history holds as it grows: sealed chunks, and the open
part of each stream (the growing block, what reading keeps decoded), each stream's share recounted when columns are
appended to it. Over the budget, the growing blocks of the largest holders are sealed early once they take more
than half of it (a sealed chunk is a fraction of its block, nothing is lost), then the oldest sealed chunks of all
streams are dropped, and the newest columns too of streams that have ended (silent for `ENDED_COLUMNS` of their own
columns while others go on): a stream never gives up its newest columns while it goes on. Dropped columns leave
their sums (`StreamHistory.dropped_sums`), so whole-run totals still cover every column seen, a stream with none
kept included.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import field

import numpy as np

from latencymap.core import columns
from latencymap.core.columns import EXACT, GAP, RESET, TIMED, Chunk
from latencymap.core.history import ColumnStats, DroppedSums, StreamHistory, Totals
from latencymap.core.lean import dataclass
from latencymap.core.model import Interval, IntervalRun, Notice, SourceBuckets, Status, StreamId, rows_by_stream
from latencymap.core.patterns import lazy_pattern
from latencymap.core.row_times import unheld_note
from latencymap.core.source_totals import ROWS_INSIDE_SOURCES, SEEN_BOUNDS_SOURCES, SourceTotals, seen_range
from latencymap.core.units import format_bytes, plural, unit_seconds

__all__ = ["BATCH", "DEFAULT_HISTORY", "EXACT", "GAP", "MAX_MESSAGES", "MIN_STREAM_BYTES", "RESET", "TIMED",
           "Accumulator", "ColumnStats", "DroppedSums", "HistoryLimit", "StreamHistory", "Totals", "accumulate",
           "default_budget", "parse_history", "set_chunk_columns"]

MAX_MESSAGES = 100
#: The least of a memory budget a stream is worth: with 6 buckets it keeps at least some 1,200 newest columns.
#: Below it a stream keeps fewer (8 KiB: about 540, 4 KiB: 210, 1 KiB: a few dozen), and the accumulator says so
#: once; a budget that cannot hold even each stream's newest columns is said too.
MIN_STREAM_BYTES = 16 << 10
#: A stream silent for this many of its own columns while others go on has ended: under a memory budget that the
#: other streams' older columns cannot make room in, it gives up its newest columns too (its sums stay).
ENDED_COLUMNS = 10


def default_budget() -> int:
    """The default history budget: a quarter of physical memory (1 GiB when it cannot be read)."""
    try:
        return max(256 << 20, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4)
    except (ValueError, OSError, AttributeError):
        return 1 << 30


@dataclass(frozen=True, slots=True)
class HistoryLimit:
    """How much history is kept: a memory budget over all streams (bytes), or a number of columns per stream."""

    budget: int | None = None
    columns: int | None = None

    def __str__(self) -> str:
        return f"{plural(self.columns, 'column')} per stream" if self.columns is not None else \
            format_bytes(self.budget) if self.budget is not None else "unlimited"


#: The default: a memory budget (see `default_budget`).
DEFAULT_HISTORY = HistoryLimit(budget=default_budget())
#: A number, then a unit: K, M, G or T (with `B` or `iB` after it, or not), or `B` alone (bytes); none: columns.
_SIZE = lazy_pattern(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgt])(i?b)?|(b))?\s*", re.IGNORECASE)


def parse_history(text: str) -> HistoryLimit:
    """`--history`: a memory budget with a unit (`512M`, `2GB`, `1.5GiB`; K/M/G/T are powers of 1024), or a plain
    number of columns kept per stream (`5000`, the old form). Raises ValueError with what was expected."""
    m = _SIZE().fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is neither a memory size (512M, 2GB) nor a number of columns")
    number, unit = m.group(1), (m.group(2) or "").lower()
    if not unit and not m.group(4):
        if not number.isdigit() or int(number) < 1:
            raise ValueError(f"{text!r}: a number of columns is a whole number >= 1 (or give a size: 512M)")
        return HistoryLimit(columns=int(number))
    size = int(float(number) * (1 << (10 * " kmgt".index(unit or " "))))
    if size < 1 << 20:
        raise ValueError(f"{text!r}: a history budget under 1 MiB holds almost nothing")
    return HistoryLimit(budget=size)


def set_chunk_columns(n: int) -> None:
    """Seal history chunks every `n` columns from now on (tests and benches: small inputs through cold chunks)."""
    columns.CHUNK_COLUMNS = max(1, n)


@dataclass
class Accumulator:
    """Histories of every stream seen, in arrival order, plus what readers skipped.

    `cap` is a `HistoryLimit`, or a number of columns per stream (the old form). Under a memory budget the
    oldest sealed chunk of all streams is dropped first (growing blocks that take more than half of the budget are
    sealed early, the largest first; then every column of the streams that ended), and a message says so once; when
    the live streams' newest columns alone take more than the budget, a message says so, and again, with the figure
    of the moment, each time it has doubled. Under a column limit, a message says so once when the first columns
    are dropped.
    """

    cap: HistoryLimit | int | None = DEFAULT_HISTORY
    streams: dict[StreamId, StreamHistory] = field(default_factory=dict)
    skipped: int = 0
    messages: list[str] = field(default_factory=list)
    #: Every message said, those past the first MAX_MESSAGES (the ones `messages` keeps) too.
    messages_said: int = 0
    intervals_seen: int = 0
    #: Rebinned streams' own buckets (Prometheus, OpenTelemetry explicit bounds), summed over every column seen, kept
    #: or dropped, as the views' whole-run figures; a report's over the columns kept are `kept_source`'s.
    sources: dict[StreamId, SourceTotals] = field(default_factory=dict)
    dropped_for_budget: int = 0
    #: Columns dropped past the column limit (`--history N`), all streams together.
    dropped_for_columns: int = 0
    #: Told what the accumulator itself has to say (the budget is full), as a view shows a reader's notices.
    on_notice: Callable[[Notice], None] | None = field(default=None, repr=False)
    _oldest: list[tuple[int, StreamHistory]] = field(default_factory=list, repr=False)
    #: Bytes of every sealed chunk; of every stream's open part as last counted (per stream in `_open`), summed.
    _sealed: int = 0
    _other: int = 0
    _open: dict[StreamId, int] = field(default_factory=dict, repr=False)
    #: Each stream's only chunk, kept out of `_oldest` while dropping it would leave the stream no column.
    _last: dict[StreamId, tuple[int, StreamHistory]] = field(default_factory=dict, repr=False)
    #: `_other` past which growing blocks are sealed early (set after each such pass).
    _reseal_at: int = 0
    _said_small: bool = False
    _said_unheld: bool = False  # whether a column's exact time its rows cannot hold was said (once, for every stream)
    #: The streams whose every column `_empty` dropped, until columns come again: they hold none.
    _emptied: set[StreamId] = field(default_factory=set, repr=False)
    #: What the values of streams measure, as notices said it (`Notice.measures`), for histories made after them.
    _measures: dict[StreamId, str] = field(default_factory=dict, repr=False)
    #: What the newest columns took when the budget was last said to be unable to hold them (0: never said).
    _said_over: int = 0
    #: The end of the newest column appended by the last `add` that appended any (s): what ended streams are
    #: silent against (`ENDED_COLUMNS`); the newest of the `add` under way; the clock when ended streams were last
    #: looked for.
    _clock: float = float("-inf")
    _new_clock: float = float("-inf")
    _looked_at: float = float("nan")

    def __post_init__(self) -> None:
        if isinstance(self.cap, int):
            self.cap = HistoryLimit(columns=self.cap)
        elif self.cap is None:
            self.cap = HistoryLimit()

    @property
    def limit(self) -> HistoryLimit:
        assert isinstance(self.cap, HistoryLimit)
        return self.cap

    def add(self, items: Iterable[Interval | IntervalRun | Notice]) -> int:
        """Append a batch of items; returns the number of intervals added."""
        batches: dict[StreamId, list[Interval]] = {}
        added = 0
        for item in items:
            if isinstance(item, Notice):
                if self.limit.columns is not None and not self.dropped_for_columns:
                    self._flush(batches)  # what the column limit says comes where one interval at a time says it
                self.note(item)
            elif isinstance(item, IntervalRun):
                self._add_run(item, batches)
                added += len(item)
            else:
                batches.setdefault(item.stream, []).append(item)
                added += 1
                if item.source_buckets is not None:
                    self._add_source(item.stream, item.source_buckets, item.extremes)
        self._flush(batches)
        self.intervals_seen += added
        if self._new_clock > float("-inf"):
            self._clock, self._new_clock = self._new_clock, float("-inf")
        budget = self.limit.budget
        if budget is not None and self._sealed + self._other > budget:
            self._enforce(budget)
        return added

    def _add_source(self, stream: StreamId, source: SourceBuckets, extremes: np.ndarray | None) -> None:
        """Add one column's own buckets of its source to the stream's totals of them (and the range of its values
        seen, from a source whose values seen bound them)."""
        totals = self.sources.get(stream)
        if totals is None:
            totals = self.sources[stream] = SourceTotals(tuple(map(float, source.bounds)),
                                                         rows_inside=stream.datasource in ROWS_INSIDE_SOURCES)
        seen = None
        if extremes is not None and stream.datasource in SEEN_BOUNDS_SOURCES:
            seen = seen_range(extremes, unit_seconds(stream.unit))
        totals.add(source, seen)

    def kept_source(self, hist: StreamHistory) -> SourceTotals | None:
        """A stream's own source buckets over the columns its history keeps, which a report's figures cover: its
        `sources` (the whole run) while it dropped none, else those of its columns kept (`StreamHistory.kept_source`;
        None where those are not known)."""
        whole = self.sources.get(hist.stream)
        return whole if whole is None or not hist.dropped else hist.kept_source()

    def _add_run(self, run: IntervalRun, batches: dict[StreamId, list[Interval]]) -> None:
        """Append a run's rows stream by stream, after the intervals of this batch that came before it."""
        self._flush(batches)
        if run.source_buckets is not None:
            for i, (stream, source) in enumerate(zip(run.streams, run.source_buckets, strict=True)):
                if source is not None:
                    self._add_source(stream, source, None if run.extremes is None else run.extremes[i])
        for stream, rows in rows_by_stream(run.streams).items():
            self._append(stream, run, None if len(rows) == len(run) else rows)

    def _flush(self, batches: dict[StreamId, list[Interval]]) -> None:
        """Append the intervals gathered per stream, and forget them."""
        for stream, batch in batches.items():
            self._append(stream, batch)
        batches.clear()

    def _append(self, stream: StreamId, columns: list[Interval] | IntervalRun, rows: list[int] | None = None) -> None:
        """Append intervals (or the rows `rows` of a run) to the stream's history, counting what it holds now."""
        hist = self.history(stream)
        self._emptied.discard(stream)
        before, dropped, unheld = hist.sealed_bytes, hist.dropped, hist.unheld
        if isinstance(columns, IntervalRun):
            hist.extend_run(columns, rows)
        else:
            hist.extend(columns)
        if hist.unheld and not unheld and not self._said_unheld:
            self._said_unheld = True
            self._tell(unheld_note(stream.label))
        self._sealed += hist.sealed_bytes - before
        self._recount(hist)
        if hist.last_end > self._new_clock:
            self._new_clock = hist.last_end
        if self._last and stream in self._last and hist.can_drop_oldest_chunk():
            heapq.heappush(self._oldest, self._last.pop(stream))
        if hist.dropped != dropped and self.limit.columns is not None:
            if not self.dropped_for_columns:
                self._tell(f"history: each stream keeps its newest {plural(self.limit.columns, 'column')} (--history "
                           f"{self.limit.columns}); older ones are dropped from now on")
            self.dropped_for_columns += hist.dropped - dropped

    def _recount(self, hist: StreamHistory) -> None:
        """Count what the open part of `hist` holds now (its growing block, what reading keeps decoded)."""
        held = hist.open_bytes
        self._other += held - self._open.get(hist.stream, 0)
        self._open[hist.stream] = held

    @property
    def held_bytes(self) -> int:
        """Bytes the histories hold as the budget counts them (each stream's open part as of its last append)."""
        return self._sealed + self._other

    def room_for(self, count: int, stream: StreamId | None = None) -> bool:
        """Whether appending `count` columns to `stream` (None: the only stream, or any) in one `add` surely drops
        none for the memory budget."""
        budget = self.limit.budget
        if budget is None:
            return True
        hist = self.streams.get(stream) if stream is not None else \
            next(iter(self.streams.values())) if len(self.streams) == 1 else None
        if hist is None:
            return self._sealed + self._other + (count + columns.CHUNK_COLUMNS) * 4096 <= budget
        self._recount(hist)  # what reading decoded since its last append: counted at the next one
        return self._sealed + self._other + hist.growth_bound(count) <= budget

    def _on_seal(self, hist: StreamHistory, chunk: Chunk) -> None:
        heapq.heappush(self._oldest, (chunk.seq, hist))

    def _enforce(self, budget: int) -> None:
        """Bring the histories within `budget`: seal the largest growing blocks early while they take more than
        half of it, then drop the oldest sealed chunks of all streams (with every column of a stream that has ended,
        `ENDED_COLUMNS`, when its newest chunk comes), then every column of the streams that ended longest ago."""
        if self._other > max(self._reseal_at, budget // 2):
            self._seal_open(budget // 4)
            # what sealing could not free (metadata kept decoded, blocks just sealed): not again until it grows
            self._reseal_at = self._other + budget // 4 if self._other > budget // 2 else 0
        dropped = 0
        while self._sealed + self._other > budget and self._oldest:
            seq, hist = heapq.heappop(self._oldest)
            chunk = hist.oldest_chunk()
            if chunk is None or chunk.seq != seq:
                continue  # already gone (a column limit dropped it)
            if not hist.can_drop_oldest_chunk():  # the stream's newest columns: back in line once newer ones come
                if self._ended(hist):
                    dropped += self._empty(hist)
                else:
                    self._last[hist.stream] = (seq, hist)
                continue
            before = hist.sealed_bytes
            dropped += hist.drop_oldest_chunk()
            self._sealed += hist.sealed_bytes - before
        if self._sealed + self._other > budget and self._clock != self._looked_at:
            self._looked_at = self._clock  # no stream ends before the clock moves on
            ended = [h for h in self.streams.values() if self._ended(h)]
            for hist in sorted(ended, key=lambda h: h.last_end):
                if self._sealed + self._other <= budget:
                    break
                dropped += self._empty(hist)
        if dropped and not self.dropped_for_budget:
            self._tell(f"history: the memory budget ({format_bytes(budget)}, --history) is full; the oldest "
                       "columns are dropped from now on")
        self.dropped_for_budget += dropped
        held = self._sealed + self._other
        if held > budget and held >= 2 * self._said_over:  # said again as it grows: the figure is the current one
            self._said_over = held
            holding = sum(1 for h in self.streams.values() if h.n)
            self._tell(f"history: the memory budget ({format_bytes(budget)}, --history) cannot hold "
                       f"{holding:,} streams: their newest columns alone take "
                       f"{format_bytes(held)} (give at least {format_bytes(MIN_STREAM_BYTES)} "
                       "a stream)")

    def _ended(self, hist: StreamHistory) -> bool:
        """Whether a stream holding columns has ended: silent for `ENDED_COLUMNS` of its own columns while others
        went on (the newest column of the last `add`)."""
        return hist.n > 0 and hist.idle_columns(self._clock) > ENDED_COLUMNS

    def _empty(self, hist: StreamHistory) -> int:
        """Drop every column of an ended stream (its sums stay); the columns dropped."""
        before = hist.sealed_bytes
        k = hist.drop_all()
        self._emptied.add(hist.stream)
        self._sealed += hist.sealed_bytes - before
        self._recount(hist)
        self._last.pop(hist.stream, None)
        return k

    def _seal_open(self, target: int) -> None:
        """Seal the growing blocks of the streams that hold the most until the open parts take `target` or less."""
        for hist in self.streams.values():
            self._recount(hist)
        for hist in sorted(self.streams.values(), key=lambda h: self._open[h.stream], reverse=True):
            if self._other <= target:
                break
            before = hist.sealed_bytes
            if hist.seal_open():
                self._sealed += hist.sealed_bytes - before
                self._recount(hist)

    def _tell(self, message: str) -> None:
        """Say what the accumulator itself has to say: in its messages, and to `on_notice`."""
        notice = Notice(message, skipped=0)
        self.note(notice)
        if self.on_notice is not None:
            self.on_notice(notice)

    def note(self, notice: Notice) -> None:
        if isinstance(notice, Status):
            return
        if notice.measures is not None:  # what a stream's values measure: its history, now or when it comes
            stream, what = notice.measures
            self._measures[stream] = what
            if stream in self.streams:
                self.streams[stream].measures = what
        self.skipped += notice.skipped
        self.messages_said += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(notice.message)

    def history(self, stream: StreamId) -> StreamHistory:
        hist = self.streams.get(stream)
        if hist is None:
            hist = self.streams[stream] = StreamHistory(stream, self.limit.columns)
            hist.on_seal = self._on_seal
            hist.measures = self._measures.get(stream, "")
            budget = self.limit.budget
            n = len(self.streams) - len(self._emptied)  # the streams holding columns, this one's to come
            if budget is not None and n * MIN_STREAM_BYTES > budget and not self._said_small:
                self._said_small = True
                self._tell(f"history: the memory budget ({format_bytes(budget)}, --history) is under "
                           f"{format_bytes(MIN_STREAM_BYTES)} a stream now that {n:,} streams share it "
                           f"({format_bytes(budget // n)} each, less as more come): each keeps fewer of its newest "
                           "columns, how many depending on their width (a report says each stream's count; give at "
                           f"least {format_bytes(MIN_STREAM_BYTES)} a stream)")
        return hist

    @property
    def nbytes(self) -> int:
        """Bytes held by every history."""
        return sum(h.nbytes for h in self.streams.values())


#: Items appended to an accumulator at a time when a whole flow is read without a view.
BATCH = 4096


def accumulate(items: Iterable[Interval | IntervalRun | Notice], acc: Accumulator | None = None,
               on_notice: Callable[[Notice], None] | None = None) -> Accumulator:
    """Every item of `items` in `acc` (a new one under the default budget by default), appended in batches; notices
    to `on_notice`."""
    acc = Accumulator() if acc is None else acc
    batch: list[Interval | IntervalRun | Notice] = []
    size = BATCH
    held = 0  # intervals in `batch`: a run counts its rows, so a batch never holds more columns than `size`
    try:
        for item in items:
            if on_notice is not None and isinstance(item, Notice):
                on_notice(item)
            batch.append(item)
            held += len(item) if isinstance(item, IntervalRun) else 1
            if held >= size:
                acc.add(batch)
                batch.clear()
                held = 0
                size = min(16 * BATCH, max(BATCH, 16 * len(acc.streams)))  # many streams: a few columns each per add
    finally:  # a flow that fails keeps what it gave
        acc.add(batch)
    return acc
