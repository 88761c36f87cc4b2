"""The columns of one stream, stored compactly (`latencymap.core.columns`), read back as dense NumPy arrays.

Readers ask for a range of columns (`counts_in`, `time_in`, `frequency`, `intensity`, `column_stats`,
`totals`): only the chunks covering it are decoded (the last two are kept decoded). The full-array properties
`counts` and `time` build (columns, 64) arrays on every access; `start`, `end`, `durations` and `flags` are
kept decoded once asked for, until `release()`.

Columns dropped (a column limit, a memory budget) leave their sums behind (`dropped_sums`): per-slot counts and
time, observed duration, whether their times were exact; `totals(..., all_seen=True)` adds them, so whole-run
totals cover every column seen, kept or not (`drop_all` keeps none: a stream that ended, under a memory budget).
Per-slot sums of counts are exact: int64, or Python integers where a sum could pass 2**63 (`columns.count_sums`).

A rebinned column's overflow bucket (Prometheus' `+Inf`) goes to the row of its lower bound, where the rows cannot tell
its events from the finite buckets' (`core.rebin`); the history keeps, per column, how many events it held and that
bound (`overflow_in`; stored with the columns, `Block.over`: sealed, compressed and dropped with them), so that a
percentile whose rank passes every other event is that bound, a lower bound only (`percentiles.overflow_bounds`), in
`column_stats` and `totals` as in the whole stream's figures.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from latencymap.core import chunked, columns
from latencymap.core.buckets import NSLOTS, TOP_SLOT, bounds_seconds, midpoints_seconds
from latencymap.core.columns import (
    EXACT,
    GAP,
    RESET,
    TIMED,
    Block,
    Chunk,
    KeptMeta,
    count_sums,
    observed,
    observed_s,
    plus,
)
from latencymap.core.lean import dataclass
from latencymap.core.model import Interval, IntervalRun, SourceBuckets, StreamId
from latencymap.core.percentiles import (
    PERCENTILES,
    open_percentiles,
    overflow_bounds,
    percentile_estimates,
    safe_ratio,
)
from latencymap.core.row_times import fit_to_totals, source_covers
from latencymap.core.source_totals import (
    ROWS_INSIDE_SOURCES,
    SEEN_BOUNDS_SOURCES,
    SourceTotals,
    open_overflow,
    seen_range,
)
from latencymap.core.units import unit_seconds

if TYPE_CHECKING:
    from latencymap.core.kept_sources import KeptSources

_CACHED_CHUNKS = 2
_SEQUENCE = itertools.count()
_META = ("start", "end", "dur", "flags")


class StreamHistory:
    """All kept columns of one stream; the oldest are dropped past `cap` columns (None: no column limit)."""

    def __init__(self, stream: StreamId, cap: int | None = None) -> None:
        self.stream = stream
        self.cap = None if cap is None else max(1, cap)
        self.low, self.high = bounds_seconds(stream.datasource, stream.unit)
        self._mid = midpoints_seconds(stream.datasource, stream.unit)
        self.n = 0
        self.dropped = 0
        self.dates: str = ""
        self.timed = False
        #: What its values measure where its datasource does not say (`Notice.measures`: "jhiccup"), else "".
        self.measures = ""
        self.sealed_bytes = 0
        self.on_seal: Callable[[StreamHistory, Chunk], None] | None = None
        self._size = columns.CHUNK_COLUMNS
        self._chunks: list[Chunk] = []
        #: Where each held chunk ends and where the first one starts, in columns stored since the stream began
        #: (a chunk sealed early, under a memory budget, holds fewer than `_size` columns).
        self._ends: list[int] = []
        self._base = 0
        self._hot = Block(min(64, self._size))
        self._skip = 0
        #: What dropped columns held, past the first `_skip` columns of the oldest block still stored.
        self._gone_counts = np.zeros(NSLOTS, dtype=np.int64)
        self._gone_time = np.zeros(NSLOTS)
        self._gone_dur = 0.0
        self._gone_exact = True
        #: The overflow events of the dropped columns (`overflow_in`) and their smallest bound (inf: none).
        self._gone_over, self._gone_over_at = 0.0, math.inf
        self._cache: list[tuple[Chunk, Block]] = []
        self._meta: KeptMeta | None = None
        self._dense: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None = None
        #: The smallest and largest value (s) seen per slot over the whole run: NaN where none was, -inf and inf
        #: where a column without extremes (`Interval.extremes`) put events in the slot.
        self._least = np.full(NSLOTS, np.nan)
        self._most = np.full(NSLOTS, np.nan)
        self._any_seen = False
        #: End of the first and of the newest column seen, and the newest column's duration (s): how long a stream
        #: has been silent, in its own columns (`idle_columns`).
        self.first_end = self.last_end = self.last_dur = float("nan")
        #: Columns whose exact time (a source's sum) their rows could not hold (`row_times`): their rows at one bound.
        self.unheld = 0
        #: The source buckets of the columns kept, once a column brought some (`kept_source`).
        self._sources: KeptSources | None = None

    # -- appending and dropping

    def extend(self, intervals: list[Interval]) -> None:
        """Append intervals in bulk."""
        k = len(intervals)
        if k == 0:
            return
        counts = np.empty((k, NSLOTS), dtype=np.int64)
        for i, iv in enumerate(intervals):
            counts[i] = iv.counts
        timed = np.fromiter((iv.time is not None for iv in intervals), dtype=bool, count=k)
        summed = [(j, total) for j, iv in enumerate(intervals)
                  if iv.time is None and (total := _exact_sum(iv.source_buckets)) is not None]
        time = None
        if timed.any() or summed:
            time = np.multiply(counts, self._mid)
            for j, iv in enumerate(intervals):
                if iv.time is not None:
                    time[j] = iv.time
            self._fit(time, counts, summed, [iv.source_buckets for iv in intervals])
        bare = np.fromiter((iv.extremes is None for iv in intervals), dtype=bool, count=k)
        for iv in intervals:
            if iv.extremes is not None:
                self._see(iv.extremes)
        self._unseen(counts if bare.all() else counts[bare])
        sources, extremes = [iv.source_buckets for iv in intervals], [iv.extremes for iv in intervals]
        over = self._overflows(sources, extremes)
        marks = np.array([(iv.reset, iv.gap) for iv in intervals], dtype=bool).reshape(k, 2)
        spans = np.array([(iv.start, iv.end, iv.duration) for iv in intervals], dtype=np.float64).T
        self.extend_columns(counts, time, timed, spans[0], spans[1], spans[2], marks[:, 0], marks[:, 1],
                            intervals[-1].date, over, (sources, extremes))

    def extend_run(self, run: IntervalRun, rows: list[int] | None = None) -> None:
        """Append the rows `rows` of `run` (None: all of them) in bulk."""
        pick: slice | list[int] = slice(None) if rows is None else rows
        k = len(run) if rows is None else len(rows)
        if k == 0:
            return
        counts = run.counts[pick]
        if run.extremes is None:
            self._unseen(counts)
        else:
            seen = run.extremes[pick]
            self._see(np.stack([np.fmin.reduce(seen[:, 0], axis=0), np.fmax.reduce(seen[:, 1], axis=0)]))
        over = None
        own: tuple[Sequence[SourceBuckets | None], Sequence[np.ndarray | None]] | None = None
        if run.source_buckets is not None:
            sources = run.source_buckets if rows is None else [run.source_buckets[i] for i in rows]
            own = (sources, [None] * k if run.extremes is None else list(run.extremes[pick]))
            over = self._overflows(*own)
        time = None if run.time is None else run.time[pick]
        timed = None if time is None else np.ones(len(time), dtype=bool)
        if time is None and run.source_buckets is not None:  # as `extend` does for a rebinned source's sums
            sources = run.source_buckets if rows is None else [run.source_buckets[i] for i in rows]
            summed = [(j, total) for j, source in enumerate(sources) if (total := _exact_sum(source)) is not None]
            if summed:
                time, timed = np.multiply(counts, self._mid), np.zeros(k, dtype=bool)
                self._fit(time, counts, summed, sources)
        self.extend_columns(counts, time, timed, run.start[pick], run.end[pick], run.duration[pick],
                            run.reset[pick], run.gap[pick], run.dates[-1] if rows is None else run.dates[rows[-1]],
                            over, own)

    def _fit(self, time: np.ndarray, counts: np.ndarray, summed: list[tuple[int, float]],
             sources: Sequence[SourceBuckets | None]) -> None:
        """Fit the estimated times of the columns `summed` names to their exact times (`row_times`), each row within
        the part of it its column's source buckets (`sources`, per column) cover, counting those with events their
        rows cannot hold (a column of none, such as one whose events rounding carried on, has no time to place)."""
        if not summed:
            return
        cols = [j for j, _ in summed]
        cover = source_covers([sources[j] for j in cols], unit_seconds(self.stream.unit), counts[cols], self.low,
                              self.high)
        missed = ~fit_to_totals(time, counts, self.low, self.high, summed, cover)
        self.unheld += int((missed & counts[cols].any(axis=1)).sum())

    def _overflows(self, sources: Sequence[SourceBuckets | None],
                   extremes: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray] | None:
        """Per column about to be appended (its source's own buckets and values seen): the events of its overflow
        bucket whose values are not known (`open_overflow`; 0: none), and that bucket's lower bound (s; NaN where
        none); None when no column has any."""
        unit_s, bounding = unit_seconds(self.stream.unit), self.stream.datasource in SEEN_BOUNDS_SOURCES
        found = [(j, *over) for j, (source, seen) in enumerate(zip(sources, extremes, strict=True))
                 if source is not None and (over := open_overflow(
                     source, seen_range(seen, unit_s) if bounding and seen is not None else None, unit_s))]
        if not found:
            return None
        rows = np.array(found, dtype=np.float64)
        events, bound = np.zeros(len(sources)), np.full(len(sources), np.nan)
        at = rows[:, 0].astype(np.int64)
        events[at], bound[at] = rows[:, 1], rows[:, 2]
        return events, bound

    def overflow_in(self, cols: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Per column of `cols`: the events of its source's overflow bucket (`+Inf`) whose values are not known, and
        that bucket's lower bound (s; NaN where it has none): the rows hold them in the slot of that bound."""
        first, stop = self._range(cols)
        events, bound = np.zeros(stop - first), np.full(stop - first, np.nan)
        for at, block, rows in self._pieces(first, stop):
            if block.over is not None and block.over_at is not None:
                out = slice(at, at + rows.stop - rows.start)
                events[out], bound[out] = block.over[rows], block.over_at[rows]
        return events, bound

    def overflow(self, cols: slice = slice(None), *, all_seen: bool = False) -> tuple[float, float]:
        """The events of columns `cols` in their sources' overflow buckets whose values are not known
        (`overflow_in`), and the smallest lower bound of those buckets (s; NaN with none); `all_seen`: the dropped
        columns' too (as `totals`)."""
        first, stop = self._range(cols)
        events, bound = 0.0, math.inf
        for i, r, take in self._spans(first, stop):  # whole chunks from their sums, without decoding them
            chunk = self._whole(i, take)
            if chunk is not None:
                events, bound = events + chunk.over_events, min(bound, chunk.over_least)
            else:
                block = self._block(i, True) if i < len(self._chunks) else self._hot
                more, least = _overflow_sums(block, slice(r, r + take))
                events, bound = events + more, min(bound, least)
        if all_seen:
            events, bound = events + self._gone_over, min(bound, self._gone_over_at)
            if self._skip:  # the oldest block still stored starts with dropped columns
                block = self._block(0, True) if self._chunks else self._hot
                more, least = _overflow_sums(block, slice(0, self._skip))
                events, bound = events + more, min(bound, least)
        return events, bound if events > 0 else math.nan

    def _see(self, extremes: np.ndarray) -> None:
        """Widen each slot's range of values seen by a column's (2, NSLOTS) extremes."""
        np.fmin(self._least, extremes[0], out=self._least)
        np.fmax(self._most, extremes[1], out=self._most)
        self._any_seen = True

    def _unseen(self, counts: np.ndarray) -> None:
        """The slots where columns without extremes put events: their values seen are no longer all known."""
        used = counts.any(axis=0)
        self._least[used] = -np.inf
        self._most[used] = np.inf

    @property
    def seen(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(smallest, largest) value seen per slot over the run (s), NaN or infinite where not known; None when the
        stream's source gives no extremes."""
        return (self._least, self._most) if self._any_seen else None

    def kept_source(self) -> SourceTotals | None:
        """The source buckets of the columns kept, added up (`core.kept_sources`): None when none of them had any,
        or when they are not known."""
        return None if self._sources is None else self._sources.totals()

    def extend_columns(self, counts: np.ndarray, time: np.ndarray | None, timed: np.ndarray | None,
                       start: np.ndarray, end: np.ndarray, dur: np.ndarray, reset: np.ndarray, gap: np.ndarray,
                       date: str, over: tuple[np.ndarray, np.ndarray] | None = None,
                       sources: tuple[Sequence[SourceBuckets | None], Sequence[np.ndarray | None]] | None = None,
                       ) -> None:
        """Append columns given as arrays: counts per slot, times per slot (exact in the rows `timed`, estimates
        elsewhere; None: no row has them), spans, reset and gap marks, the last date, their overflow events and
        bounds (`overflow_in`; None: none), and their source buckets and values seen (`kept_source`; None: none).
        Past `cap` columns, only the sums of the oldest are kept (`dropped_sums`)."""
        k = len(counts)
        if sources is not None and self._sources is None and any(s is not None for s in sources[0]):
            from latencymap.core.kept_sources import KeptSources  # only for a stream with source buckets

            datasource = self.stream.datasource
            self._sources = KeptSources(unit_seconds(self.stream.unit), datasource in ROWS_INSIDE_SOURCES,
                                        datasource in SEEN_BOUNDS_SOURCES, self.cap is not None, self.n)
        self._dense = None
        if k and self.first_end != self.first_end:  # NaN: the first columns
            self.first_end = float(end[0])
        if time is not None and (timed is None or timed.any()):
            self.timed = True  # the stream gives times, even where every column that gave them is cut below
        estimated = counts.any(axis=1) if timed is None else counts.any(axis=1) & ~timed
        flags = np.where(estimated, 0, EXACT).astype(np.uint8)
        if timed is not None:
            flags[timed] |= TIMED
        flags |= reset.astype(np.uint8) * RESET | gap.astype(np.uint8) * GAP
        if self.cap is not None and k > self.cap:  # more than the history keeps: the oldest leave only their sums
            cut = slice(0, k - self.cap)
            spent = np.multiply(counts[cut], self._mid) if time is None else time[cut]
            self._gone(0, count_sums(counts[cut]), spent.sum(axis=0),
                       observed_s(dur[cut], flags[cut], counts[cut]), bool(np.all(flags[cut] & EXACT)))
            self.dropped += k - self.cap
            keep = slice(k - self.cap, k)
            if over is not None:
                self._gone_overflow(*_overflow_of(over[0][cut], over[1][cut]))
                over = over[0][keep], over[1][keep]
            counts, start, end, dur, flags = counts[keep], start[keep], end[keep], dur[keep], flags[keep]
            time = None if time is None else time[keep]
            sources = None if sources is None else (sources[0][keep], sources[1][keep])
            k = self.cap
        meta: dict[str, np.ndarray] = {"start": start, "end": end, "dur": dur, "flags": flags}
        done = 0
        while done < k:
            take = min(self._size - self._hot.n, k - done)
            rows = slice(done, done + take)
            if self._sources is not None:
                self._sources.add(take, *((None, None) if sources is None else (sources[0][rows], sources[1][rows])))
            self._hot.append(counts[rows], None if time is None else time[rows], start[rows], end[rows], dur[rows],
                             flags[rows], self._mid, self._size,
                             None if over is None else (over[0][rows], over[1][rows]))
            done += take
            if self._hot.n == self._size:
                self._seal()
        self.n += k
        if k:
            self.last_end, self.last_dur = float(end[-1]), float(dur[-1])
        if self._meta is not None:
            self._meta.append(meta)
        if self.cap is not None and self.n > self.cap:
            self._drop_front(self.n - self.cap)
        self.dates = date

    def _seal(self, capacity: int = 64) -> None:
        chunk = Chunk.seal(self._hot, self._mid)
        chunk.seq = next(_SEQUENCE)
        self._ends.append(self._hot_start + chunk.n)
        self._chunks.append(chunk)
        self.sealed_bytes += chunk.nbytes + (self._sources.seal() if self._sources is not None else 0)
        self._hot = Block(min(capacity, self._size))
        if self.on_seal is not None:
            self.on_seal(self, chunk)

    def seal_open(self) -> bool:
        """Seal the growing block now, however full (a memory budget is short: a sealed chunk is a fraction of
        the block's size, and can be dropped; the next block starts small); False when it holds no column, or is
        as small as a new one (sealing it would free nothing)."""
        if self._hot.n == 0 or len(self._hot.start) <= 16:
            return False
        self._seal(16)
        return True

    @property
    def _hot_start(self) -> int:
        """Where the growing block starts, in the coordinates of `_ends`."""
        return self._ends[-1] if self._ends else self._base

    def _drop_front(self, k: int) -> None:
        """Forget the `k` oldest kept columns (their sums are kept: `dropped_sums`)."""
        k = min(k, self.n)
        self._skip += k
        self.n -= k
        self.dropped += k
        if self._sources is not None:
            self.sealed_bytes -= self._sources.drop(k)
        if self._meta is not None:
            self._meta.drop(k)
        while self._chunks and self._skip >= self._chunks[0].n:
            chunk = self._chunks.pop(0)
            self._base = self._ends.pop(0)
            self._skip -= chunk.n
            self._gone(chunk.lo, chunk.slot_counts, chunk.slot_time, chunk.dur_total,
                       bool(chunk.flags_and & EXACT))
            self._gone_overflow(chunk.over_events, chunk.over_least)
            self._forget(chunk)

    def _gone(self, lo: int, counts: np.ndarray, time: np.ndarray, dur: float, exact: bool) -> None:
        """Add dropped columns' sums (per slot from `lo` on) to what the dropped columns held."""
        self._gone_counts = plus(self._gone_counts, counts, lo)
        self._gone_time[lo: lo + len(time)] += time
        self._gone_dur += dur
        self._gone_exact = self._gone_exact and exact

    def _gone_overflow(self, events: float, least: float) -> None:
        """Add dropped columns' overflow events and smallest bound to the dropped columns'."""
        self._gone_over, self._gone_over_at = self._gone_over + events, min(self._gone_over_at, least)

    def _forget(self, chunk: Chunk) -> None:
        self.sealed_bytes -= chunk.nbytes
        self._cache = [(c, b) for c, b in self._cache if c is not chunk]

    def dropped_sums(self) -> DroppedSums:
        """What every dropped column held: per-slot counts and time, observed duration, and whether every one's
        time was exact (from the summaries of the chunks forgotten, and the dropped columns still stored)."""
        counts, time = self._gone_counts.copy(), self._gone_time.copy()
        dur, exact = self._gone_dur, self._gone_exact
        if self._skip:  # the oldest block still stored starts with dropped columns
            part_counts, part_time, part_dur, part_exact = self._skipped_sums()
            counts = plus(counts, part_counts)
            time += part_time
            dur += part_dur
            exact = exact and part_exact
        return DroppedSums(self.dropped, counts, time, dur, exact)

    def _skipped_sums(self) -> tuple[np.ndarray, np.ndarray, float, bool]:
        """Per-slot counts and time, observed duration and exactness of the dropped columns the oldest block still
        stored starts with (its first `_skip`)."""
        block = self._block(0, True) if self._chunks else self._hot
        rows = slice(0, self._skip)
        window = slice(block.lo, block.lo + block.width)
        part = block.counts[rows]
        counts = plus(np.zeros(NSLOTS, dtype=np.int64), count_sums(part), block.lo)
        dense = np.zeros((self._skip, NSLOTS), dtype=np.int64)
        dense[:, window] = part
        spent = np.zeros((self._skip, NSLOTS))
        block.dense_time(rows, spent, self._mid)
        flags = block.flags[rows]
        return counts, spent.sum(axis=0), observed_s(block.dur[rows], flags, dense), bool(np.all(flags & EXACT))

    def oldest_chunk(self) -> Chunk | None:
        """The oldest sealed chunk still held, if any."""
        return self._chunks[0] if self._chunks else None

    def can_drop_oldest_chunk(self) -> bool:
        """Whether a sealed chunk can be dropped with columns left after it (a history never drops its newest)."""
        return len(self._chunks) > 1 or (len(self._chunks) == 1 and self._hot.n > 0)

    def drop_oldest_chunk(self) -> int:
        """Forget the oldest sealed chunk's columns (a memory budget is full); the columns dropped."""
        if not self._chunks:
            return 0
        k = self._chunks[0].n - self._skip
        self._drop_front(k)
        return k

    def drop_all(self) -> int:
        """Forget every kept column, the newest too (a memory budget is full and the stream has ended: its sums are
        kept, `dropped_sums`), and free what held them; the columns dropped."""
        k = self.n
        self._drop_front(k)  # every sealed chunk forgotten; the growing block's columns skipped
        if self._skip:
            counts, time, dur, exact = self._skipped_sums()
            self._gone(0, counts, time, dur, exact)
            self._gone_overflow(*_overflow_sums(self._hot, slice(0, self._skip)))
        self._base, self._skip = self._hot_start + self._hot.n, 0
        self._hot = Block(0)
        self.release()
        return k

    def idle_columns(self, clock: float) -> float:
        """How many of its own columns (its newest one's duration, or its mean spacing if longer) have passed between
        this stream's newest column's end and `clock` (NaN when not known)."""
        seen = self.n + self.dropped
        spacing = (self.last_end - self.first_end) / (seen - 1) if seen > 1 else 0.0
        span = max(self.last_dur, spacing)
        return (clock - self.last_end) / span if span > 0 else float("inf") if clock > self.last_end else 0.0

    def release(self) -> None:
        """Free what reading kept decoded (the metadata arrays, decoded chunks); it is rebuilt when asked for."""
        self._meta = None
        self._cache = []
        self._dense = None

    @contextmanager
    def dense(self) -> Iterator[StreamHistory]:
        """Within: every read comes from dense (columns, 64) arrays built once, for readers that go over the whole
        history several times (a report); they are freed on leaving."""
        if self._dense is not None:
            yield self
            return
        counts, time = np.zeros((self.n, NSLOTS), dtype=np.int64), np.zeros((self.n, NSLOTS))
        parts: dict[str, list[np.ndarray]] = {name: [] for name in _META}
        for at, block, rows in self._pieces(0, self.n):  # each chunk decoded once, as `counts_in`, `time_in`, `meta_in`
            block.dense_counts(rows, counts[at: at + rows.stop - rows.start])
            block.dense_time(rows, time[at: at + rows.stop - rows.start], self._mid)
            if self._meta is None:
                for name, got in parts.items():
                    got.append(getattr(block, name)[rows])
        if self._meta is not None or not self.n:
            meta = {name: self.meta_in(name) for name in _META}
        else:
            meta = {name: got[0].copy() if len(got) == 1 else np.concatenate(got) for name, got in parts.items()}
        self._dense = (counts, time, meta)
        try:
            yield self
        finally:
            self._dense = None

    def column_sums(self, cols: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Events and time (seconds) per column of `cols`, each the sum of the column's 64 slots (built a chunk at a
        time)."""
        first, stop = self._range(cols)
        events, spent = np.zeros(stop - first, dtype=np.int64), np.zeros(stop - first)
        for at in range(first, stop, self._size):
            part = slice(at, min(stop, at + self._size))
            out = slice(part.start - first, part.stop - first)
            events[out] = self.counts_in(part).sum(axis=1)
            spent[out] = self.time_in(part).sum(axis=1)
        return events, spent

    @property
    def nbytes(self) -> int:
        """Bytes this history holds: sealed chunks, the growing block, what reading kept decoded."""
        extra = self._meta.nbytes if self._meta is not None else 0
        return self.sealed_bytes + self._hot.nbytes + extra + sum(b.nbytes for _, b in self._cache)

    @property
    def open_bytes(self) -> int:
        """Bytes held besides the sealed chunks: the growing block, what reading keeps decoded (`nbytes` less
        `sealed_bytes`, asked on every append under a memory budget: without a call per array)."""
        hot = self._hot
        held = hot.counts.nbytes + 3 * hot.start.nbytes + hot.flags.nbytes  # start, end and dur grow together
        if hot.over is not None:
            held += 2 * hot.over.nbytes  # and the overflow events and bounds
        if hot.time is not None:
            held += hot.time.nbytes
        if self._meta is not None:
            held += self._meta.nbytes
        if self._cache:
            held += sum(b.nbytes for _, b in self._cache)
        return held

    def growth_bound(self, count: int) -> int:
        """At most how many bytes appending `count` columns in one go may add to `nbytes`."""
        # Sealing holds at most the growing block's columns and the new ones, each well under 4 KiB compressed (64
        # int64 counts, 64 float64 times, 25 bytes of metadata, zstd's framing), and a new growing block is no
        # bigger; metadata kept decoded may be reallocated at twice its columns.
        meta = 0 if self._meta is None else (2 * (self._meta.n + count) + 64) * 25
        return (count + self._size) * 4096 + meta

    # -- reading columns

    def _range(self, cols: slice) -> tuple[int, int]:
        first, stop, step = cols.indices(self.n)
        if step != 1:
            raise ValueError("history columns are read in contiguous ranges")
        return first, stop if stop > first else first

    def _block(self, i: int, keep: bool) -> Block:
        chunk = self._chunks[i]
        for c, block in self._cache:
            if c is chunk:
                return block
        block = chunk.decode()
        if keep:
            self._cache = [*self._cache[-(_CACHED_CHUNKS - 1):], (chunk, block)]
        return block

    def _spans(self, first: int, stop: int) -> Iterator[tuple[int, int, int]]:
        """(chunk index, first row, rows) covering kept columns [first, stop); index len(chunks) is the newest block."""
        ends, held = self._ends, len(self._chunks)
        p, end = self._base + first + self._skip, self._base + stop + self._skip
        i = bisect_right(ends, p)
        while p < end:
            if i < held:
                r = p - (ends[i - 1] if i else self._base)
                take = min(ends[i] - p, end - p)
            else:
                i, r, take = held, p - self._hot_start, end - p
            yield i, r, take
            p += take
            i += 1

    def _pieces(self, first: int, stop: int) -> Iterator[tuple[int, Block, slice]] | tuple[tuple[int, Block, slice]]:
        """(offset in the range, block, rows of the block) covering kept columns [first, stop)."""
        newest = self._base + first + self._skip - self._hot_start
        if newest >= 0:  # all in the newest block: what views read, frame after frame
            return ((0, self._hot, slice(newest, newest + stop - first)),)
        return self._chunk_pieces(first, stop)

    def _chunk_pieces(self, first: int, stop: int) -> Iterator[tuple[int, Block, slice]]:
        keep = (stop - first) <= _CACHED_CHUNKS * self._size
        at = 0
        for i, r, take in self._spans(first, stop):
            block = self._block(i, keep) if i < len(self._chunks) else self._hot
            yield at, block, slice(r, r + take)
            at += take

    def _whole(self, i: int, take: int) -> Chunk | None:
        """Chunk `i` when a span covers all of it."""
        return self._chunks[i] if i < len(self._chunks) and take == self._chunks[i].n else None

    def counts_in(self, cols: slice = slice(None)) -> np.ndarray:
        """Counts of columns `cols` as a dense (columns, 64) int64 array."""
        first, stop = self._range(cols)
        if self._dense is not None:
            return self._dense[0][first:stop]
        out = np.zeros((stop - first, NSLOTS), dtype=np.int64)
        for at, block, rows in self._pieces(first, stop):
            block.dense_counts(rows, out[at: at + rows.stop - rows.start])
        return out

    def time_in(self, cols: slice = slice(None)) -> np.ndarray:
        """Seconds spent per (column, slot) of columns `cols`: exact where the source gave it, else estimated."""
        first, stop = self._range(cols)
        if self._dense is not None:
            return self._dense[1][first:stop]
        out = np.zeros((stop - first, NSLOTS))
        for at, block, rows in self._pieces(first, stop):
            block.dense_time(rows, out[at: at + rows.stop - rows.start], self._mid)
        return out

    def meta_in(self, name: str, cols: slice = slice(None)) -> np.ndarray:
        """`start`, `end`, `dur` or `flags` of columns `cols`."""
        if self._dense is not None:
            return self._dense[2][name][cols]
        if self._meta is not None:
            return self._meta.view(name)[cols]
        first, stop = self._range(cols)
        parts = [getattr(block, name)[rows] for _, block, rows in self._pieces(first, stop)]
        if not parts:
            return np.zeros(0, dtype=np.uint8 if name == "flags" else np.float64)
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

    def _kept_meta(self) -> KeptMeta:
        if self._meta is None:
            self._meta = KeptMeta({name: self.meta_in(name) for name in _META})
        return self._meta

    @property
    def counts(self) -> np.ndarray:
        """Every kept column's counts, (columns, 64) int64, built on each access (prefer `counts_in`)."""
        return self.counts_in()

    @property
    def time(self) -> np.ndarray:
        """Every kept column's time per slot in seconds, built on each access (prefer `time_in`)."""
        return self.time_in()

    @property
    def start(self) -> np.ndarray:
        return self._kept_meta().view("start")

    @property
    def end(self) -> np.ndarray:
        return self._kept_meta().view("end")

    @property
    def flags(self) -> np.ndarray:
        return self._kept_meta().view("flags")

    @property
    def durations(self) -> np.ndarray:
        return self._kept_meta().view("dur")

    # -- what the columns say

    @property
    def exact(self) -> bool:
        """True when the time of every kept column with events was given by the source."""
        return self.exact_in()

    def exact_in(self, cols: slice = slice(None)) -> bool:
        """True when the time of every column of `cols` with events was given by the source (and there are some)."""
        first, stop = self._range(cols)
        if stop <= first or not self.timed:
            return False
        if self._meta is not None:
            return bool(np.all(self._meta.view("flags")[first:stop] & EXACT))
        for i, r, take in self._spans(first, stop):
            chunk = self._whole(i, take)
            if chunk is not None:
                if not chunk.flags_and & EXACT:
                    return False
                continue
            block = self._block(i, True) if i < len(self._chunks) else self._hot
            if not np.all(block.flags[r: r + take] & EXACT):
                return False
        return True

    def exact_columns(self, cols: slice = slice(None)) -> np.ndarray:
        """Per column of `cols`: is its time exact (given by the source, or no events in a stream that gives times)."""
        exact: np.ndarray = (self.meta_in("flags", cols) & EXACT) > 0
        return exact & self.timed

    def frequency(self, cols: slice = slice(None), slots: slice = slice(None)) -> np.ndarray:
        """Events per second per (column, slot) of columns `cols` and slots `slots`."""
        return self._per_second(self.counts_in, cols, slots)

    def intensity(self, cols: slice = slice(None), slots: slice = slice(None)) -> np.ndarray:
        """Seconds spent per second per (column, slot) of columns `cols` and slots `slots`."""
        return self._per_second(self.time_in, cols, slots)

    def _per_second(self, read: Callable[[slice], np.ndarray], cols: slice, slots: slice) -> np.ndarray:
        """`read(cols)[:, slots]` divided by each column's duration, read a chunk of columns at a time."""
        first, stop = self._range(cols)
        dur = self.meta_in("dur", cols)
        out = np.empty((stop - first, len(range(*slots.indices(NSLOTS)))))
        for part in chunked.spans(stop - first):
            np.divide(read(slice(first + part.start, first + part.stop))[:, slots], dur[part, None], out=out[part])
        return out

    def column_stats(self, cols: slice = slice(None)) -> ColumnStats:
        """Per-column events/s, time/s, mean and percentiles (a column of exact times: using its buckets' means)."""
        counts, spent, dur = self.counts_in(cols), self.time_in(cols), self.meta_in("dur", cols)
        events = counts.sum(axis=1, dtype=np.float64)  # a rate: no int64 wrap where slots sum past 2**63
        total_time = spent.sum(axis=1)
        means = np.where(self.exact_columns(cols)[:, None], spent, np.nan)
        pct, at_least = overflow_bounds(self.estimates(counts, means), open_percentiles(counts, seen=self.seen),
                                        events, *self.overflow_in(cols))
        return ColumnStats(
            events_per_s=events / dur,
            time_per_s=total_time / dur,
            mean_s=safe_ratio(total_time, events),
            percentiles=pct,
            open=at_least,
        )

    def estimates(self, counts: np.ndarray, times: np.ndarray | None = None,
                  seen: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """`PERCENTILES` (s) of histogram rows of this stream's slots (`counts`) as every view reads them
        (`percentile_estimates`): between the values seen in each slot (`seen`: per slot or per row and slot as
        `percentile_estimates` takes them; None: those seen over the run so far), and with `times` (the rows'
        exact seconds per slot, NaN where not exact; None: none is) where those place the events inside their
        buckets. Slots empty in every row are left out of the computation (they change no percentile) unless the
        open top slot is used."""
        counts = np.asarray(counts)
        used = np.flatnonzero(counts.reshape(-1, counts.shape[-1]).any(axis=0))
        a, b = (int(used[0]), int(used[-1]) + 1) if used.size and counts.min() >= 0 else (0, counts.shape[-1])
        if b > TOP_SLOT:
            a, b = 0, counts.shape[-1]
        if seen is None:
            seen = self.seen
        part = slice(a, b)
        out: np.ndarray = percentile_estimates(
            counts[..., part], self.low[part], self.high[part], times=None if times is None else times[..., part],
            seen=None if seen is None else (seen[0][..., part], seen[1][..., part]))
        return out

    def totals(self, cols: slice = slice(None), *, fast: bool = False, all_seen: bool = False) -> Totals:
        """Aggregate over columns; `fast` takes whole chunks' sums without decoding them (time may then differ
        from the exact sum in the last bits). `all_seen`: the columns dropped too, every one seen before `cols`
        (which must then start at the first kept column): whole-run totals, whatever the history keeps."""
        if fast:
            counts, times, dur = self.slot_sums(cols)
            spent = float(times.sum())
        else:  # a chunk of columns at a time, the same sums as over dense arrays of them all (`chunked`)
            first, stop = self._range(cols)
            counts, slot_times, seen = np.zeros(NSLOTS, dtype=np.int64), chunked.SlotSums(NSLOTS), []
            for span in chunked.spans(stop - first):
                part = slice(first + span.start, first + span.stop)
                columns = self.counts_in(part)
                counts = plus(counts, count_sums(columns))  # integers: exact in any order
                slot_times.add(self.time_in(part))
                seen.append(observed(self.meta_in("dur", part), self.meta_in("flags", part), columns))
            times = slot_times.result()
            spent = chunked.flat_sum(lambda a, b: self.time_in(slice(first + a, first + b)), stop - first, NSLOTS)
            dur = float(np.concatenate(seen).sum()) if seen else 0.0
        exact = self.exact_in(cols)
        if all_seen and self.dropped:
            if self._range(cols)[0] != 0:
                raise ValueError("totals over all columns seen start at the first kept column")
            gone = self.dropped_sums()
            counts, times = plus(counts, gone.counts), times + gone.time
            spent += float(gone.time.sum())
            dur += gone.duration_s
            exact = (exact or self._range(cols)[1] == 0) and gone.exact and self.timed
        events = sum(counts.tolist())  # Python integers: a stream's total may pass 2**63 where no slot's does
        # exact times say where inside each bucket its events lie (estimated ones would say the midpoint)
        pct = self.estimates(counts, times if exact else None)
        at_least = open_percentiles(counts, seen=self.seen)
        over, bound = self.overflow(cols, all_seen=all_seen)
        if over:
            pct, at_least = (a[0] for a in overflow_bounds(pct[None], at_least[None], np.array([float(events)]),
                                                            np.array([over]), np.array([bound])))
        return Totals(events, spent, float(safe_ratio(spent, events)), dur, counts,
                      dict(zip(PERCENTILES, (float(p) for p in pct), strict=True)),
                      tuple(q for q, bound in zip(PERCENTILES, at_least.tolist(), strict=True) if bound), times, exact)

    def slot_sums(self, cols: slice = slice(None), *, all_seen: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
        """Per-slot counts and time, and duration (s, gap columns left out) of columns `cols`: whole chunks from
        their summaries, without decoding them (time may differ from the exact sum in the last bits). `all_seen`:
        with the dropped columns' (`cols` must then start at the first kept column)."""
        if all_seen and self.dropped:
            if self._range(cols)[0] != 0:
                raise ValueError("sums over all columns seen start at the first kept column")
            counts, times, dur = self.slot_sums(cols)
            gone = self.dropped_sums()
            return plus(counts, gone.counts), times + gone.time, dur + gone.duration_s
        first, stop = self._range(cols)
        counts = np.zeros(NSLOTS, dtype=np.int64)
        times = np.zeros(NSLOTS)
        dur = 0.0
        at = first
        for i, _, take in self._spans(first, stop):
            chunk = self._whole(i, take)
            if chunk is not None:
                counts = plus(counts, chunk.slot_counts, chunk.lo)
                times[chunk.lo: chunk.lo + chunk.width] += chunk.slot_time
                dur += chunk.dur_total
            else:
                part = slice(at, at + take)
                columns = self.counts_in(part)
                counts = plus(counts, count_sums(columns))
                times += self.time_in(part).sum(axis=0)
                dur += observed_s(self.meta_in("dur", part), self.meta_in("flags", part), columns)
            at += take
        return counts, times, dur

    def used_slots(self) -> tuple[int, int] | None:
        """(first, last) slot that ever held an event in the kept columns, or None."""
        used = np.zeros(NSLOTS, dtype=bool)
        for i, r, take in self._spans(0, self.n):
            chunk = self._whole(i, take)
            if chunk is not None:
                used[chunk.lo: chunk.lo + chunk.width] |= chunk.used
                continue
            block = self._block(i, True) if i < len(self._chunks) else self._hot
            used[block.lo: block.lo + block.width] |= (block.counts[r: r + take] != 0).any(axis=0)
        slots = np.flatnonzero(used)
        if slots.size == 0:
            return None
        return int(slots[0]), int(slots[-1])


def _overflow_of(events: np.ndarray, bound: np.ndarray) -> tuple[float, float]:
    """Columns' overflow events (`StreamHistory.overflow_in`) summed, and the smallest bound of those holding some."""
    return float(events.sum()), float(bound[events > 0].min(initial=math.inf))


def _overflow_sums(block: Block, rows: slice) -> tuple[float, float]:
    """`_overflow_of` the rows `rows` of a block."""
    if block.over is None or block.over_at is None:
        return 0.0, math.inf
    return _overflow_of(block.over[rows], block.over_at[rows])


def _exact_sum(source: SourceBuckets | None) -> float | None:
    """The exact seconds of a column whose source gave only their sum (a rebinned stream's), or None."""
    if source is None or source.total_time is None or not 0 <= source.total_time < float("inf"):
        return None
    return float(source.total_time)


def interval_time(iv: Interval) -> np.ndarray:
    """One interval's seconds per slot as a history keeps them: the source's own, else the midpoints' estimate fitted
    to the source's exact sum where it gave one (`row_times`)."""
    if iv.time is not None:
        return np.asarray(iv.time, dtype=np.float64)
    time: np.ndarray = np.multiply(iv.counts, midpoints_seconds(iv.stream.datasource, iv.stream.unit),
                                   dtype=np.float64)
    total = _exact_sum(iv.source_buckets)
    if total is not None:
        low, high = bounds_seconds(iv.stream.datasource, iv.stream.unit)
        counts = np.asarray(iv.counts)[None]
        cover = source_covers([iv.source_buckets], unit_seconds(iv.stream.unit), counts, low, high)
        fit_to_totals(time[None], counts, low, high, [(0, total)], cover)
    return time


@dataclass(slots=True)
class ColumnStats:
    events_per_s: np.ndarray
    time_per_s: np.ndarray
    mean_s: np.ndarray
    percentiles: np.ndarray  # (cols, len(PERCENTILES)) seconds
    open: np.ndarray  # (cols, len(PERCENTILES)) bool: a lower bound only (`open_percentiles`, as `Totals.open`)


@dataclass(slots=True)
class DroppedSums:
    """What a history's dropped columns held (`StreamHistory.dropped_sums`): their number, per-slot counts and time
    (s), the seconds they cover with data, and whether every one's time was given by the source."""

    columns: int
    counts: np.ndarray
    time: np.ndarray
    duration_s: float
    exact: bool


@dataclass(slots=True)
class Totals:
    """Sums over columns; `duration_s` is the time the columns with data cover (a gap column's data is missing:
    rates are per second observed)."""

    events: int
    time_s: float
    mean_s: float
    duration_s: float
    counts: np.ndarray
    percentiles: dict[float, float]
    #: The percentiles that are a lower bound only (`open_percentiles`): in the open top slot, its values not known.
    open: tuple[float, ...] = ()
    #: The seconds per slot, exact where `exact` (every column's time given by the source), else estimated.
    times: np.ndarray | None = None
    exact: bool = False
