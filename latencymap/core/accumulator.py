"""Histories of every stream (compact, `latencymap.core.history`), under a memory budget or a column limit."""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from latencymap.core import columns
from latencymap.core.columns import EXACT, GAP, RESET, TIMED, Chunk
from latencymap.core.history import ColumnStats, StreamHistory, Totals
from latencymap.core.model import Interval, IntervalRun, Notice, StreamId, rows_by_stream
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_bytes

__all__ = ["BATCH", "DEFAULT_HISTORY", "EXACT", "GAP", "MAX_MESSAGES", "RESET", "TIMED", "Accumulator", "ColumnStats",
           "HistoryLimit", "StreamHistory", "Totals", "accumulate", "default_budget", "parse_history",
           "set_chunk_columns"]

MAX_MESSAGES = 100


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
        return f"{self.columns} columns per stream" if self.columns is not None else \
            format_bytes(self.budget) if self.budget is not None else "unlimited"


#: The default: a memory budget (see `default_budget`).
DEFAULT_HISTORY = HistoryLimit(budget=default_budget())
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)


def parse_history(text: str) -> HistoryLimit:
    """`--history`: a memory budget with a unit (`512M`, `2GB`, `1.5GiB`; K/M/G/T are powers of 1024), or a plain
    number of columns kept per stream (`5000`, the old form). Raises ValueError with what was expected."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is neither a memory size (512M, 2GB) nor a number of columns")
    number, unit = m.group(1), m.group(2).lower()
    if not unit and not m.group(3):
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
    oldest sealed chunk of all streams is dropped first, and a message says so once.
    """

    cap: HistoryLimit | int | None = DEFAULT_HISTORY
    streams: dict[StreamId, StreamHistory] = field(default_factory=dict)
    skipped: int = 0
    messages: list[str] = field(default_factory=list)
    intervals_seen: int = 0
    #: Rebinned streams' own buckets (Prometheus, OpenTelemetry explicit bounds), summed.
    sources: dict[StreamId, SourceTotals] = field(default_factory=dict)
    dropped_for_budget: int = 0
    #: Told what the accumulator itself has to say (the budget is full), as a view shows a reader's notices.
    on_notice: Callable[[Notice], None] | None = field(default=None, repr=False)
    _oldest: list[tuple[int, StreamHistory]] = field(default_factory=list, repr=False)
    _sealed: int = 0
    _other: int = 0

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
                self.note(item)
            elif isinstance(item, IntervalRun):
                self._add_run(item, batches)
                added += len(item)
            else:
                batches.setdefault(item.stream, []).append(item)
                added += 1
                if item.source_buckets is not None:
                    totals = self.sources.get(item.stream)
                    if totals is None:
                        totals = self.sources[item.stream] = SourceTotals(tuple(item.source_buckets.bounds))
                    totals.add(item.source_buckets)
        self._flush(batches)
        self.intervals_seen += added
        budget = self.limit.budget
        if budget is not None and self._sealed + self._other > budget:
            self._enforce(budget)
        return added

    def _add_run(self, run: IntervalRun, batches: dict[StreamId, list[Interval]]) -> None:
        """Append a run's rows stream by stream, after the intervals of this batch that came before it."""
        self._flush(batches)
        for stream, rows in rows_by_stream(run.streams).items():
            self._append(stream, run, None if len(rows) == len(run) else rows)

    def _flush(self, batches: dict[StreamId, list[Interval]]) -> None:
        """Append the intervals gathered per stream, and forget them."""
        for stream, batch in batches.items():
            self._append(stream, batch)
        batches.clear()

    def _append(self, stream: StreamId, columns: list[Interval] | IntervalRun, rows: list[int] | None = None) -> None:
        """Append intervals (or the rows `rows` of a run) to the stream's history, counting what that sealed."""
        hist = self.history(stream)
        before = hist.sealed_bytes
        if isinstance(columns, IntervalRun):
            hist.extend_run(columns, rows)
        else:
            hist.extend(columns)
        self._sealed += hist.sealed_bytes - before

    def room_for(self, count: int) -> bool:
        """Whether appending `count` columns to one stream in one `add` surely drops none for the memory budget."""
        budget = self.limit.budget
        # Sealing holds at most the growing block's columns and the new ones, each well under 4 KiB compressed
        # (64 int64 counts, 64 float64 times, 25 bytes of metadata, zstd's framing).
        return budget is None or self._sealed + self._other + (count + columns.CHUNK_COLUMNS) * 4096 <= budget

    def _on_seal(self, hist: StreamHistory, chunk: Chunk) -> None:
        heapq.heappush(self._oldest, (chunk.seq, hist))

    def _enforce(self, budget: int) -> None:
        """Drop the oldest sealed chunks of all streams until the histories fit `budget`."""
        self._other = sum(h.nbytes - h.sealed_bytes for h in self.streams.values())
        dropped = 0
        while self._sealed + self._other > budget and self._oldest:
            seq, hist = heapq.heappop(self._oldest)
            chunk = hist.oldest_chunk()
            if chunk is None or chunk.seq != seq:
                continue  # already gone (a column limit dropped it)
            before = hist.sealed_bytes
            dropped += hist.drop_oldest_chunk()
            self._sealed += hist.sealed_bytes - before
        if dropped and not self.dropped_for_budget:
            notice = Notice(f"history: the memory budget ({format_bytes(budget)}, --history) is full; the oldest "
                            "columns are dropped from now on", skipped=0)
            self.note(notice)
            if self.on_notice is not None:
                self.on_notice(notice)
        self.dropped_for_budget += dropped

    def note(self, notice: Notice) -> None:
        self.skipped += notice.skipped
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(notice.message)

    def history(self, stream: StreamId) -> StreamHistory:
        hist = self.streams.get(stream)
        if hist is None:
            hist = self.streams[stream] = StreamHistory(stream, self.limit.columns)
            hist.on_seal = self._on_seal
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
