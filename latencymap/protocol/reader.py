"""The line-by-line protocol reader: a state machine over records, with the bulk path in front of it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from latencymap.core.model import Interval, Item, Notice, Snapshot, SnapshotRun, StreamId
from latencymap.protocol.bulk import FastPath
from latencymap.protocol.grammar import (
    BEGIN,
    END,
    Record,
    RecordError,
    StreamCache,
    make_item,
    parse_record_line,
    record_item,
)


class ProtocolReader:
    """Incremental reader: feed lines, get Snapshots, Intervals (per-interval records) and Notices.

    A malformed record is skipped whole with a Notice naming the line; reading goes on at the
    next `<begin record>`. Repeated bucket values in one record add up.
    """

    def __init__(self, name: str = "<stdin>") -> None:
        self.name = name
        self.line_no = 0
        self._record: Record | None = None
        self._bad_record = False
        self._streams = StreamCache()
        self._fast = FastPath(self)

    def read(self, lines: Iterable[str]) -> Iterator[Snapshot | Interval | Notice]:
        """Read all lines, then report a record left open at end of input."""
        yield from self.feed(lines)
        yield from self.close()

    def read_chunks(self, chunks: Iterable[str], runs: bool = False) -> Iterator[Item]:
        """Read text in pieces of any size (the fast path for files and pipes), then close.

        With `runs`, consecutive cumulative records come as SnapshotRuns for the differ to take in bulk.
        """
        for chunk in chunks:
            yield from self.feed_text(chunk, runs)
        yield from self._fast.finish()

    def feed_text(self, text: str, runs: bool = False) -> Iterator[Item]:
        """Items of the records completed by `text`; an unfinished record waits for the next call."""
        for item in self._fast.feed(text):
            if not runs and isinstance(item, SnapshotRun):
                yield from item.snapshots()
            else:
                yield item

    def in_record(self) -> bool:
        """True between a `<begin record>` line and its end."""
        return self._record is not None

    def reread(self, first_line: int, text: str) -> list[Snapshot | Interval | Notice]:
        """Read one whole record line by line, numbering its lines from `first_line`."""
        saved, self.line_no = self.line_no, first_line - 1
        try:
            return list(self.feed(text.splitlines(True)))
        finally:
            self.line_no = saved

    def feed(self, lines: Iterable[str]) -> Iterator[Snapshot | Interval | Notice]:
        for raw in lines:
            self.line_no += 1
            line = raw.strip()
            if not line:
                continue
            low = line.lower()
            if low == BEGIN:
                if self._record is not None and not self._bad_record:
                    yield self._notice(self._record.first_line,
                                       f"record has no {END} before the next {BEGIN} (line {self.line_no})")
                self._record = Record(first_line=self.line_no)
                self._bad_record = False
                continue
            if self._record is None:
                continue  # noise between records
            if low == END:
                record, bad = self._record, self._bad_record
                self._record = None
                if not bad:
                    yield self.finish_record(record)
                continue
            if self._bad_record:
                continue
            try:
                parse_record_line(self._record, line, low, self.line_no)
            except RecordError as err:
                self._bad_record = True
                yield Notice(f"{self.name}: {err}; record skipped")

    def close(self) -> Iterator[Notice]:
        """Report an unterminated record at end of input."""
        if self._record is not None and not self._bad_record:
            yield self._notice(self._record.first_line, f"record has no {END} (input ended)")
        self._record = None

    def _notice(self, line: int, message: str) -> Notice:
        return Notice(f"{self.name}: line {line}: {message}; record skipped")

    def stream(self, label: str, datasource: str, unit: str) -> StreamId:
        """The one StreamId of this identity in this input."""
        return self._streams.get(label, datasource, unit)

    def finish_record(self, rec: Record) -> Snapshot | Interval | Notice:
        """What a complete record becomes, or the Notice that skips it."""
        try:
            return record_item(rec, self.stream(rec.label, rec.datasource, rec.unit))
        except RecordError as err:
            return Notice(f"{self.name}: {err}; record skipped")

    def item(self, stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
             start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
             sums: np.ndarray | None) -> Snapshot | Interval | Notice:
        """A record's item from parts parsed in bulk, or the Notice that skips it."""
        try:
            return make_item(stream, first_line, micros, date, per_interval, start_micros, flags, counts, present,
                             sums)
        except RecordError as err:
            return Notice(f"{self.name}: {err}; record skipped")
