"""One printed histogram being read row by row: the rule bpftrace and bcc text share for lines that are no row.

Both tools print one row per bucket, from the lowest non-empty bucket to the highest (empty ones between included),
and end a print with a blank line, the next header, a time line or the end of the output. A line inside a print
that is none of these is reported and skipped, and the print goes on:

- a row whose bucket is known but whose count cannot be read (or would pass 2**62) leaves that bucket unknown;
- a line whose bucket cannot be told (a stray line, a row with a mangled label) leaves unknown the buckets between
  the rows around it: the row it replaced, or none when it came between two rows;
- a row cut short (no bar: the output may end there) leaves its bucket unknown, and those after it up to the next
  row (all of them when no row follows).

An unknown bucket counts nothing in a per-interval print and is absent from a cumulative one (its last known
count holds), so a row missing from one print is no reset, and the next print's delta for it is not inflated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Notice, empty_counts
from latencymap.core.sanitize import excerpt
from latencymap.sources.printed_histograms import add_count, decimal, parse_time_line

if TYPE_CHECKING:
    from latencymap.sources.printed_histograms import PrintReader

#: The bucket a row's label names: a slot, "negative" (bpftrace's `(..., 0)`), or None when it is no log2 bucket.
Bucket = int | str | None


@dataclass(frozen=True, slots=True)
class RowSyntax:
    """How a format prints histogram rows.

    `row` matches a whole row (label groups, then the count group last), `cut` a row cut short (no bar), `label` the
    label a line starts with (the same label groups); `bucket` tells the bucket of a `row` or `label` match; `ends`
    says whether a line (not blank, no time line) ends a print; `expected` says what a row looks like.
    """

    row: re.Pattern[str]
    cut: re.Pattern[str]
    label: re.Pattern[str]
    bucket: Callable[[re.Match[str]], Bucket]
    ends: Callable[[str], object]
    expected: str


class PrintedRows:
    """The rows of one printed histogram of `label` (its header at line `line`) read so far."""

    __slots__ = ("_gap", "_last", "counts", "label", "line", "negative", "rows", "syntax", "unknown")

    def __init__(self, syntax: RowSyntax, label: str, line: int) -> None:
        self.syntax = syntax
        self.label = label
        self.line = line
        self.counts = empty_counts()
        self.negative = 0  # events in the negative row: only reported, never counted
        self.rows = 0  # rows read
        self.unknown: np.ndarray | None = None  # buckets whose count was not read
        self._last = -1  # the highest bucket a row named so far
        self._gap: int | None = None  # a line of no bucket was skipped: buckets from here to the next row unknown

    def read(self, text: str, n: int, reader: PrintReader) -> list[Notice] | None:
        """Read line `n` (stripped) of the print: the notices it gives (a skipped line), or None when it ends the
        print (it is not the print's: read it as any other line)."""
        if not text:
            return None
        syntax = self.syntax
        row = syntax.row.match(text)
        if row is not None:
            bucket, count = syntax.bucket(row), decimal(row.group(row.lastindex or 0))
            if count is not None and count <= MAX_COUNT and self._add(bucket, count):
                return []
        else:
            label = syntax.label.match(text)
            bucket = None if label is None else syntax.bucket(label)
            if syntax.cut.match(text):
                self._lose(bucket, cut=True)
                return [Notice(f"{self._where(reader, n)}: a row cut short (no '|' bar: was the output cut mid-line?), "
                               f"got {excerpt(text)}; row skipped, its bucket's count unknown")]
            if parse_time_line(text) is not None or syntax.ends(text):
                return None
        self._lose(bucket)
        if row is None and not isinstance(bucket, int):
            return [Notice(f"{self._where(reader, n)}: {syntax.expected} (a blank line ends the print), got "
                           f"{excerpt(text)}; line skipped")]
        unknown = ", its bucket's count unknown" if isinstance(bucket, int) else ""
        return [Notice(f"{self._where(reader, n)}: {syntax.expected} with log2 bounds and a count < 2**62, got "
                       f"{excerpt(text)}; row skipped{unknown}")]

    def finish(self) -> np.ndarray | None:
        """The buckets left unknown, once the print has ended (None: every bucket read)."""
        if self._gap is not None:
            self._mark(self._gap, NSLOTS)
            self._gap = None
        return self.unknown

    def _where(self, reader: PrintReader, n: int) -> str:
        return f"{reader.name}: line {n}: {reader.shown(self.label)}"

    def _add(self, bucket: Bucket, count: int) -> bool:
        """Add a row's count to its bucket; False when it is no log2 bucket or the bucket would pass 2**62."""
        if not isinstance(bucket, int):
            if bucket != "negative":
                return False
            self.negative = min(self.negative + count, MAX_COUNT)
            return True
        if self._gap is not None:
            self._reach(bucket)
        elif bucket > self._last:
            self._last = bucket
        if not add_count(self.counts, bucket, count):
            return False
        self.rows += 1
        return True

    def _lose(self, bucket: Bucket, cut: bool = False) -> None:
        """A row not read: its bucket unknown (None: the buckets up to the next row, which it may stand for; the
        negative row: none); `cut`: the print may end there, so the buckets after it are unknown up to the next row."""
        if isinstance(bucket, int):
            self._reach(bucket)
            self._mark(bucket, bucket + 1)
            if cut:
                self._gap = bucket + 1
        elif (bucket is None or cut) and self._gap is None:
            self._gap = self._last + 1

    def _reach(self, slot: int) -> None:
        """A row names bucket `slot`: the buckets a skipped line stood for end before it."""
        if self._gap is not None:
            self._mark(self._gap, slot)
            self._gap = None
        self._last = max(self._last, slot)

    def _mark(self, first: int, stop: int) -> None:
        if first >= stop:
            return
        if self.unknown is None:
            self.unknown = np.zeros(NSLOTS, dtype=bool)
        self.unknown[first:stop] = True
