"""A stream's own source buckets over the columns its history keeps, as `--history` drops the oldest.

`Accumulator.sources` adds up every column a stream's source gave: the views' whole-run figures, which dropped
columns' sums keep. A report covers the columns kept, so a history that drops columns keeps their source buckets the
way it drops them, and `totals` gives those of the columns kept:

- under a column limit (`--history N`), a column at a time: each kept column's buckets are kept (N a stream at most),
  and added up again when asked, as if the columns kept were all that was read;
- otherwise (a memory budget) a chunk of columns at a time (`StreamHistory`'s sealed chunks, `seal`): the totals are
  added up per chunk as its columns come, and those of the chunks kept are merged when asked
  (`SourceTotals.merge`); a sealed chunk's are held as arrays, their bytes counted with the history's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from latencymap.core.lean import dataclass
from latencymap.core.model import SourceBuckets
from latencymap.core.source_totals import SourceTotals, seen_range

#: One column: its source buckets and values seen (stream unit), or None when it had no buckets of its source.
Column = tuple[SourceBuckets, tuple[float, float] | None] | None


@dataclass
class _Chunk:
    """The totals of some columns (None: none had buckets of the source), and how many columns they are."""

    columns: int
    totals: SourceTotals | None = None


class KeptSources:
    """The source buckets of a history's kept columns (module docstring). `unit_s`: seconds per stream unit;
    `rows_inside` and `bounding`: the stream's datasource's (`ROWS_INSIDE_SOURCES`, `SEEN_BOUNDS_SOURCES`);
    `per_column`: keep each column's buckets (a column limit); `before`: columns kept already, without buckets."""

    def __init__(self, unit_s: float, rows_inside: bool, bounding: bool, per_column: bool, before: int = 0) -> None:
        self._unit_s, self._rows_inside, self._bounding = unit_s, rows_inside, bounding
        self._columns: deque[Column] | None = deque([None] * before) if per_column else None
        self._chunks: deque[_Chunk] = deque([_Chunk(before)] if before and not per_column else [])
        self._open = _Chunk(0)
        self._made: SourceTotals | None = None
        self._fresh = False
        #: Whether columns were dropped from inside a chunk (not done by a history: its totals are then not known).
        self.lost = False

    def add(self, count: int, sources: Sequence[SourceBuckets | None] | None = None,
            extremes: Sequence[np.ndarray | None] | None = None) -> None:
        """Columns appended to the history: `count` of them, with their source buckets and values seen (None: none
        has them)."""
        self._fresh = False
        if sources is None:
            if self._columns is not None:
                self._columns.extend([None] * count)
            self._open.columns += count
            return
        for i, source in enumerate(sources):
            values = None if extremes is None or source is None or not self._bounding else extremes[i]
            seen = None if values is None else seen_range(values, self._unit_s)
            if self._columns is not None:
                self._columns.append(None if source is None else (_own(source, self._columns), seen))
                continue
            self._open.columns += 1
            if source is not None:
                if self._open.totals is None:
                    self._open.totals = self._new(source)
                self._open.totals.add(source, seen)

    def seal(self) -> int:
        """The history sealed a chunk of the columns added: later ones start another; the bytes the sealed chunk's
        totals hold."""
        if self._columns is not None or not self._open.columns:
            return 0
        sealed, self._open = self._open, _Chunk(0)
        if sealed.totals is not None:
            sealed.totals.compact()
        self._chunks.append(sealed)
        return _nbytes(sealed)

    def drop(self, count: int) -> int:
        """The history dropped its `count` oldest columns; the bytes freed (those `seal` counted)."""
        self._fresh = False
        if self._columns is not None:
            for _ in range(min(count, len(self._columns))):
                self._columns.popleft()
            return 0
        freed = 0
        while count > 0 and (self._chunks or self._open.columns):
            chunk = self._chunks[0] if self._chunks else self._open
            if count < chunk.columns:
                chunk.columns -= count
                self.lost = self.lost or chunk.totals is not None
                break
            count -= chunk.columns
            if chunk is self._open:
                self._open = _Chunk(0)
            else:
                freed += _nbytes(self._chunks.popleft())
        return freed

    def totals(self) -> SourceTotals | None:
        """The source buckets of the columns kept, added up (module docstring); None when none had any, or when they
        are not known (`lost`). Made once for the columns as they are."""
        if not self._fresh:
            self._made, self._fresh = self._make(), True
        return self._made

    def _make(self) -> SourceTotals | None:
        if self.lost:
            return None
        out: SourceTotals | None = None
        if self._columns is not None:
            for column in self._columns:
                if column is not None:
                    out = out or self._new(column[0])
                    out.add(*column)
            return out
        for chunk in (*self._chunks, self._open):
            if chunk.totals is not None:
                if out is None:
                    out = chunk.totals.copy()
                else:
                    out.merge(chunk.totals)
        return out

    def _new(self, source: SourceBuckets) -> SourceTotals:
        """Empty totals on `source`'s bounds, as `Accumulator.sources` starts a stream's."""
        return SourceTotals(tuple(map(float, source.bounds)), rows_inside=self._rows_inside)


def _own(source: SourceBuckets, before: deque[Column]) -> SourceBuckets:
    """`source` held on its own (a column of a reader's batch may be a view of the whole batch's arrays), its bounds
    those of the column before where they are the same (a fixed layout is held once)."""
    previous = before[-1][0].bounds if before and before[-1] is not None else None
    bounds = source.bounds
    if previous is not None and len(previous) == len(bounds) and np.array_equal(previous, bounds):
        bounds = previous
    elif isinstance(bounds, np.ndarray):
        bounds = bounds.copy()
    return SourceBuckets(bounds, np.array(source.counts, dtype=np.int64), source.total_time)


def _nbytes(chunk: _Chunk) -> int:
    """Bytes a chunk's totals hold: their bounds and counts as arrays, and some for the rest."""
    return 0 if chunk.totals is None else 16 * len(chunk.totals.counts) + 400
