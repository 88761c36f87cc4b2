"""The (columns x slots) counts and times a diagnosis reads: whole arrays, or a stream's history a chunk at a time.

A day of one-second columns over 64 slots is 44 MB per float64 matrix, and the diagnosis used several (counts,
times, copies of both). Read from a long history (`history_columns`), the columns come `chunked.ROWS` at a time (dense
float64 chunks of 512 KiB, decoded from the history's compressed chunks, which is cheap) and every pass over them
keeps only what it needs per column (one number each) or per slot. Every figure is the same, bit for bit, as over
whole arrays: per-column figures are computed row by row, and sums across columns follow NumPy's order
(`latencymap.core.chunked`); tests/analysis/test_columns.py holds the two to each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property

import numpy as np

from latencymap.analysis.bands import estimate_time, nonnegative
from latencymap.core import chunked
from latencymap.core.history import StreamHistory
from latencymap.core.lean import dataclass

#: Rows of (counts, times), float64, negatives clipped where the diagnosis clips them.
Rows = tuple[np.ndarray, np.ndarray]


#: A diagnosis reads the columns of a history whole, once, for all its passes, when they fit in this many bytes (some
#: thousand columns); a longer history is read a chunk at a time, afresh on each pass.
KEPT_BYTES = 8 << 20


class Columns:
    """`n` columns of `width` slots: counts and times, read a chunk of columns at a time (`read(first, stop)`), or
    whole (`whole`: the arrays themselves, read in one piece as the diagnosis always read them)."""

    def __init__(self, n: int, width: int, read: Callable[[int, int], Rows], whole: bool = False) -> None:
        self.n = n
        self.width = width
        self._read = read
        self.whole = whole
        self._profile: _Profile | _WholeProfile | None = None
        self._totals: tuple[float, float] | None = None

    def chunks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """(rows, counts, times) covering every column in order."""
        for rows in [slice(0, self.n)] if self.whole else chunked.spans(self.n):
            yield (rows, *self._read(rows.start, rows.stop))

    def blocks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """`chunks`, whole arrays cut in blocks of `chunked.ROWS` columns (views): for a pass whose work makes
        temporaries the size of what it reads, which then stay small and are reused from block to block."""
        for span, c, t in self.chunks():
            for rows in chunked.spans(len(c)):
                yield slice(span.start + rows.start, span.start + rows.stop), c[rows], t[rows]

    def part(self, first: int, stop: int) -> Columns:
        """Columns `first` to `stop` (half-open)."""
        first, stop = max(0, first), max(max(0, first), min(self.n, stop))
        if first == 0 and stop == self.n:
            return self
        read = self._read
        return Columns(stop - first, self.width, lambda a, b: read(first + a, first + b), self.whole)

    def window(self, slots: slice) -> Columns:
        """The columns over `slots` only: each chunk read contiguous, whole arrays as views (no copy of them all; the
        same figures: a column's slots are read in order, and each slot's columns)."""
        read = self._read

        def sliced(a: int, b: int) -> Rows:
            c, t = read(a, b)
            return np.ascontiguousarray(c[:, slots]), np.ascontiguousarray(t[:, slots])

        width = len(range(*slots.indices(self.width)))
        if not self.whole:
            return Columns(self.n, width, sliced)
        c, t = read(0, self.n)
        return Columns(self.n, width, lambda a, b: (c[a:b, slots], t[a:b, slots]), whole=True)

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

    def profile(self) -> _Profile | _WholeProfile:
        """What several steps ask of every column, read in one pass (and kept); of whole arrays, each figure when
        first asked (there is no reading to share)."""
        if self._profile is None:
            if self.whole:
                self._profile = _WholeProfile(*self._read(0, self.n), self.width)
                return self._profile
            counts, times = chunked.SlotSums(self.width), chunked.SlotSums(self.width)
            events = []
            held, used = np.zeros(self.width, dtype=bool), np.zeros(self.width, dtype=bool)
            presence = np.zeros(self.width, dtype=np.int64)
            for _, c, t in self.chunks():
                events.append(c.sum(axis=1))
                counts.add(c)
                times.add(t)
                held |= c.any(axis=0)
                used |= t.any(axis=0)
                presence += (c > 0).sum(axis=0)
            self._profile = _Profile(np.concatenate(events) if events else np.zeros(0), counts.result(),
                                     times.result(), held, held | used, presence)
        return self._profile

    def events(self) -> np.ndarray:
        """Events per column: its counts summed over its slots."""
        return self.profile().events

    def slot_sums(self, rows: np.ndarray | None = None) -> Rows:
        """Counts and times per slot, summed over the columns (`rows`: a mask of those to sum)."""
        if rows is None or rows.all():
            return self.profile().slots
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
    """Per column, its events; per slot, counts and times summed, whether any count or any count or time is there,
    and in how many columns (`Columns.profile`)."""

    events: np.ndarray
    counts: np.ndarray
    times: np.ndarray
    held: np.ndarray
    used: np.ndarray
    presence: np.ndarray

    @property
    def slots(self) -> Rows:
        """Counts and times per slot."""
        return self.counts, self.times


class _WholeProfile:
    """`_Profile`'s figures of whole arrays of counts and times, each computed when first asked, as that pass
    computes it."""

    def __init__(self, counts: np.ndarray, times: np.ndarray, width: int) -> None:
        self._counts, self._times, self._width = counts, times, width

    @cached_property
    def events(self) -> np.ndarray:
        """Per column, its events."""
        return np.asarray(self._counts.sum(axis=1))

    @cached_property
    def slots(self) -> Rows:
        """Per slot, counts and times summed (as `chunked` sums them)."""
        return chunked.slot_sums([self._counts], self._width), chunked.slot_sums([self._times], self._width)

    @cached_property
    def held(self) -> np.ndarray:
        """Per slot, whether any column holds a count."""
        return np.asarray(self._counts.any(axis=0))

    @cached_property
    def used(self) -> np.ndarray:
        """Per slot, whether any column holds a count or a time."""
        return self.held | np.asarray(self._times.any(axis=0))

    @cached_property
    def presence(self) -> np.ndarray:
        """Per slot, in how many columns it holds a count."""
        return np.asarray((self._counts > 0).sum(axis=0))


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
    """A stream's kept columns as the diagnosis reads them (float64, negatives clipped): read whole, once, when they
    fit in `KEPT_BYTES` (the same figures, bit for bit, in fewer and larger steps), else a chunk at a time."""

    def read(a: int, b: int) -> Rows:
        cols = slice(a, b)
        return nonnegative(hist.counts_in(cols)), nonnegative(hist.time_in(cols))

    n, width = hist.n, len(hist.low)
    if 16 * n * width > KEPT_BYTES:
        return Columns(n, width, read)
    counts, times = read(0, n)
    for part in (counts, times):  # shared by every pass, as the history's own dense arrays may be
        part.flags.writeable = False
    return Columns(n, width, lambda a, b: (counts[a:b], times[a:b]), whole=True)
