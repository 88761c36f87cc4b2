"""The (columns x slots) counts and times a diagnosis reads: whole arrays, or a stream's history a chunk at a time.

A day of one-second columns over 64 slots is 44 MB per float64 matrix, and the diagnosis used several (counts,
times, copies of both). Read from a history (`history_columns`), the columns come `chunked.ROWS` at a time (dense
float64 chunks of 512 KiB, decoded from the history's compressed chunks, which is cheap) and every pass over them
keeps only what it needs per column (one number each) or per slot. Every figure is the same, bit for bit, as over
whole arrays: per-column figures are computed row by row, and sums across columns follow NumPy's order
(`latencymap.core.chunked`); tests/analysis/test_columns.py holds the two to each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from latencymap.analysis.bands import estimate_time, nonnegative
from latencymap.core import chunked
from latencymap.core.history import StreamHistory
from latencymap.core.lean import dataclass

#: Rows of (counts, times), float64, negatives clipped where the diagnosis clips them.
Rows = tuple[np.ndarray, np.ndarray]


#: A diagnosis keeps the columns it reads from a history (and their windows), to read them again pass after pass,
#: when they fit in this many bytes (some thousand columns); a longer history is read afresh on each pass.
KEPT_BYTES = 8 << 20


class Columns:
    """`n` columns of `width` slots: counts and times, read a chunk of columns at a time (`read(first, stop)`), or
    whole (`whole`: the arrays themselves, read in one piece as the diagnosis always read them); `kept`: each range
    read is kept, read-only, for the passes after (as long as `KEPT_BYTES` holds them all)."""

    def __init__(self, n: int, width: int, read: Callable[[int, int], Rows], whole: bool = False,
                 kept: bool = False) -> None:
        self.n = n
        self.width = width
        self.kept = kept and not whole and 16 * n * width <= KEPT_BYTES
        self._read = _keeping(read, 16 * n * width) if self.kept else read
        self.whole = whole
        self._profile: _Profile | None = None
        self._totals: tuple[float, float] | None = None

    def chunks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """(rows, counts, times) covering every column in order."""
        for rows in [slice(0, self.n)] if self.whole else chunked.spans(self.n):
            yield (rows, *self._read(rows.start, rows.stop))

    def part(self, first: int, stop: int) -> Columns:
        """Columns `first` to `stop` (half-open)."""
        first, stop = max(0, first), max(max(0, first), min(self.n, stop))
        if first == 0 and stop == self.n:
            return self
        read = self._read
        return Columns(stop - first, self.width, lambda a, b: read(first + a, first + b), self.whole)

    def window(self, slots: slice) -> Columns:
        """The columns over `slots` only, each array read contiguous (whole ones copied once)."""
        read = self._read

        def sliced(a: int, b: int) -> Rows:
            c, t = read(a, b)
            return np.ascontiguousarray(c[:, slots]), np.ascontiguousarray(t[:, slots])

        width = len(range(*slots.indices(self.width)))
        if not self.whole:
            return Columns(self.n, width, sliced, kept=self.kept)
        c, t = sliced(0, self.n)
        return Columns(self.n, width, lambda a, b: (c[a:b], t[a:b]), whole=True)

    def take(self, rows: np.ndarray) -> Rows:
        """(counts, times) of the columns `rows` (indices, ascending), as `counts[rows]` gives them."""
        if self.whole:
            counts, times = self._read(0, self.n)
            return counts[rows], times[rows]
        parts = [(c[picked], t[picked]) for span, c, t in self._spans_of(rows)
                 for picked in [rows[(rows >= span.start) & (rows < span.stop)] - span.start]]
        if not parts:
            empty = np.zeros((0, self.width))
            return empty, empty
        return np.concatenate([c for c, _ in parts]), np.concatenate([t for _, t in parts])

    def _spans_of(self, rows: np.ndarray) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """The chunks holding any of `rows`, read."""
        for chunk in sorted({int(r) // chunked.ROWS for r in rows}):
            span = slice(chunk * chunked.ROWS, min(self.n, (chunk + 1) * chunked.ROWS))
            yield (span, *self._read(span.start, span.stop))

    def profile(self) -> _Profile:
        """What several steps ask of every column, read in one pass (and kept)."""
        if self._profile is None:
            counts, times = chunked.SlotSums(self.width), chunked.SlotSums(self.width)
            events, spent = [], []
            held, used = np.zeros(self.width, dtype=bool), np.zeros(self.width, dtype=bool)
            presence = np.zeros(self.width, dtype=np.int64)
            for _, c, t in self.chunks():
                events.append(c.sum(axis=1))
                spent.append(t.sum(axis=1))
                counts.add(c)
                times.add(t)
                held |= c.any(axis=0)
                used |= t.any(axis=0)
                presence += (c > 0).sum(axis=0)
            self._profile = _Profile(np.concatenate(events) if events else np.zeros(0),
                                     np.concatenate(spent) if spent else np.zeros(0), counts.result(),
                                     times.result(), held, held | used, presence)
        return self._profile

    def column_sums(self) -> Rows:
        """Events and time per column, each summed over its slots."""
        profile = self.profile()
        return profile.events, profile.time

    def slot_sums(self, rows: np.ndarray | None = None) -> Rows:
        """Counts and times per slot, summed over the columns (`rows`: a mask of those to sum)."""
        if rows is None:
            profile = self.profile()
            return profile.counts, profile.times
        counts, times = chunked.SlotSums(self.width), chunked.SlotSums(self.width)
        for span, c, t in self.chunks():
            counts.add(c[rows[span]])
            times.add(t[rows[span]])
        return counts.result(), times.result()

    def totals(self) -> tuple[float, float]:
        """Every count and every time summed (as `float(counts.sum())` and `float(times.sum())`)."""
        if self._totals is None:
            if self.whole:
                counts, times = self._read(0, self.n)
                self._totals = float(counts.sum()), float(times.sum())
            else:
                events, spent = chunked.flat_sums(self._read, self.n, self.width)
                self._totals = events, spent
        return self._totals

    def used(self, times: bool = True) -> np.ndarray:
        """Per slot: does any column hold a count, or (`times`) a time."""
        profile = self.profile()
        return profile.used if times else profile.held

    def presence(self) -> np.ndarray:
        """Per slot: how many columns hold a count there."""
        return self.profile().presence


@dataclass(slots=True)
class _Profile:
    """Per column, events and time; per slot, counts and times summed, whether any count or any count or time is
    there, and in how many columns (`Columns.profile`)."""

    events: np.ndarray
    time: np.ndarray
    counts: np.ndarray
    times: np.ndarray
    held: np.ndarray
    used: np.ndarray
    presence: np.ndarray


def as_columns(counts: np.ndarray | Columns, times: np.ndarray | None = None, low_s: np.ndarray | None = None,
               high_s: np.ndarray | None = None, *, clip: bool = False) -> Columns:
    """`counts` and `times` (None: estimated from `low_s` and `high_s`, or not read) as whole `Columns`; `clip`:
    as float64, negatives clipped (as the diagnosis reads them); Columns are passed through."""
    if isinstance(counts, Columns):
        return counts
    c = nonnegative(counts) if clip else np.asarray(counts)
    if times is not None:
        t = nonnegative(times) if clip else np.asarray(times)
    elif low_s is not None and high_s is not None:
        t = estimate_time(c, low_s, high_s)
    else:  # counts alone are read
        t = np.broadcast_to(np.float64(0.0), c.shape)
    return Columns(len(c), c.shape[1] if c.ndim == 2 else 0, lambda a, b: (c[a:b], t[a:b]), whole=True)


def history_columns(hist: StreamHistory) -> Columns:
    """A stream's kept columns, read from its history a chunk at a time, as the diagnosis reads them (float64,
    negatives clipped), and kept when they fit (`KEPT_BYTES`)."""

    def read(a: int, b: int) -> Rows:
        cols = slice(a, b)
        return nonnegative(hist.counts_in(cols)), nonnegative(hist.time_in(cols))

    return Columns(hist.n, len(hist.low), read, kept=True)


def _keeping(read: Callable[[int, int], Rows], room: int) -> Callable[[int, int], Rows]:
    """`read`, each range it reads kept (read-only: the passes share it) and given again, whole or in part, while
    `room` bytes hold them."""
    kept: dict[tuple[int, int], Rows] = {}
    left = [room]

    def again(a: int, b: int) -> Rows:
        for (first, stop), (c, t) in kept.items():
            if first <= a and b <= stop:
                return (c, t) if (first, stop) == (a, b) else (c[a - first: b - first], t[a - first: b - first])
        rows = read(a, b)
        size = rows[0].nbytes + rows[1].nbytes
        if size <= left[0]:
            left[0] -= size
            for part in rows:
                part.flags.writeable = False
            kept[a, b] = rows
        return rows

    return again
