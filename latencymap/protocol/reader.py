"""The line-by-line protocol reader: a state machine over records, with the bulk path in front of it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

from latencymap.core.model import Interval, IntervalRun, Item, Notice, Snapshot, SnapshotRun, StreamId, one_by_one
from latencymap.protocol.bulk import FastPath
from latencymap.protocol.grammar import (
    BEGIN,
    DEFAULT_DATASOURCE,
    DEFAULT_UNIT,
    END,
    Record,
    RecordError,
    StreamCache,
    end_record,
    make_item,
    parse_record_line,
    record_items,
)

_T = TypeVar("_T", Snapshot | Interval | Notice, Item)
#: Markers run together on one line (a writer that lost a newline): each is read in turn.
_RUN_TOGETHER = re.compile(r"(?:<begin record>|<end record>)(?:\s*(?:<begin record>|<end record>))+")
_MARKER = re.compile(r"<begin record>|<end record>")
#: Labels of Oracle wait-event histograms (PyLatencyMap's, OraLatencyMap's and AWR scripts).
_ORACLE_LABEL = re.compile(r"event_histogram|\bawr\b", re.IGNORECASE)
#: The least time between two records without a timestamp line of one stream (`--interval`'s default; PyLatencyMap
#: takes 1 s between such records).
DEFAULT_UNTIMED_INTERVAL = 1.0


class ProtocolReader:
    """Incremental reader: feed lines, get Snapshots, Intervals (per-interval records) and Notices.

    A malformed record is skipped whole with a Notice naming the line; reading goes on at the
    next `<begin record>`. Repeated bucket values in one record add up. Records without a
    `datasource` line take `datasource` (default `bpf`). A record without a `latencyunit` line takes the unit the
    last record before it gave (`unit`: PyLatencyMap keeps it as a global), else millisec; one note says so.
    Records without a timestamp line are timed by `clock` as they are read, each at least `interval` seconds
    after its stream's previous one (PyLatencyMap takes 1 s between them); one note says so.
    """

    def __init__(self, name: str = "<stdin>", datasource: str | None = None, *,
                 interval: float = DEFAULT_UNTIMED_INTERVAL, clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.line_no = 0
        self.datasource = datasource
        #: The unit of the last `latencyunit` line read in this input (None: none yet).
        self.unit: str | None = None
        #: Whether the note that a record took an earlier record's unit was given.
        self.said_unit = False
        self.interval = interval
        self._clock = clock
        self._untimed: dict[StreamId, float] = {}  # the time given to each stream's last record without a timestamp
        self._said_untimed = False
        self._record: Record | None = None
        self._bad_record = False
        self._streams = StreamCache()
        self._fast = FastPath(self)
        self._guessed: set[StreamId] = set()  # Oracle-looking streams read with the default datasource
        self._told = False

    def read(self, lines: Iterable[str]) -> Iterator[Snapshot | Interval | Notice]:
        """Read all lines, then report a record left open at end of input."""
        yield from self._noted(self.feed(lines))
        yield from self.close()

    def read_chunks(self, chunks: Iterable[str], runs: bool = False) -> Iterator[Item]:
        """Read text in pieces of any size (the fast path for files and pipes), then close.

        With `runs`, consecutive cumulative records come as SnapshotRuns for the differ to take in bulk, and
        consecutive interval records as IntervalRuns.
        """
        for chunk in chunks:
            yield from self._noted(self.feed_text(chunk, runs))
        yield from self._noted(self._fast.finish())

    def _noted(self, items: Iterable[_T]) -> Iterator[_T | Notice]:
        """`items`, with the one notice that Oracle-looking records were read with the default datasource; records
        without a timestamp are timed here (see `_timed`), as they come out."""
        for item in items:
            if isinstance(item, Snapshot) and item.timestamp is None:
                said = self._timed(item)
                if said is not None:
                    yield said
            if self._guessed and not self._told:
                streams = item.streams if isinstance(item, SnapshotRun | IntervalRun) \
                    else (getattr(item, "stream", None),)
                guessed = next((s for s in streams if s in self._guessed), None)
                if guessed is not None:
                    self._told = True
                    yield self._datasource_notice(guessed)
            yield item

    def _timed(self, snap: Snapshot) -> Notice | None:
        """Time a snapshot of a record without a timestamp line: now, but at least `interval` seconds after its
        stream's previous such record, so that a file read at once gets one column per `interval` (PyLatencyMap's
        1 s) and a live pipe its real spacing when slower; the note that says so, at the first such column."""
        now = self._clock()
        last = self._untimed.get(snap.stream)
        snap.timestamp = now if last is None else max(now, last + self.interval)
        self._untimed[snap.stream] = snap.timestamp
        if last is None or self._said_untimed:
            return None
        self._said_untimed = True
        where = f"line {snap.line}: " if snap.line else ""
        return Notice(f"{self.name}: {where}records without a 'timestamp' line are timed as they are read, at least "
                      f"{self.interval:g} s apart (--interval; PyLatencyMap takes 1 s between records): rates are "
                      "per that time", skipped=0)

    def unit_notice(self, first_line: int, unit: str) -> Notice:
        """The one note that a record without a `latencyunit` line took the unit an earlier record gave."""
        return Notice(f"{self.name}: line {first_line}: record without a 'latencyunit' line: read in {unit}, the unit "
                      "of the last record before it that gave one (as PyLatencyMap does); so are later such "
                      "records", skipped=0)

    def _datasource_notice(self, stream: StreamId) -> Notice:
        return Notice(f"{self.name}: '{stream.label}' has no 'datasource' line: read as {DEFAULT_DATASOURCE} "
                      "(a bucket value is the bucket's lower bound, [v, 2v)). Oracle's event histograms give upper "
                      "bounds ([v/2, v)): if these are Oracle's, add 'datasource, oracle' to the records or pass "
                      "--datasource oracle, which puts every row one octave lower", skipped=0)

    def feed_text(self, text: str, runs: bool = False) -> Iterator[Item]:
        """Items of the records completed by `text`; an unfinished record waits for the next call."""
        items = self._fast.feed(text)
        yield from items if runs else one_by_one(items)

    def in_record(self) -> bool:
        """True between a `<begin record>` line and its end."""
        return self._record is not None

    def reread(self, first_line: int, text: str, unit: str | None) -> list[Snapshot | Interval | Notice]:
        """Read one whole record line by line, numbering its lines from `first_line`, with `unit` the last unit
        given before it (the records read in bulk since have moved `self.unit` on: it is kept)."""
        saved, self.line_no = self.line_no, first_line - 1
        saved_unit, self.unit = self.unit, unit
        try:
            return list(self.feed(text.splitlines(True)))
        finally:
            self.line_no = saved
            self.unit = saved_unit

    def feed(self, lines: Iterable[str]) -> Iterator[Snapshot | Interval | Notice]:
        for raw in lines:
            self.line_no += 1
            line = raw.strip()
            if not line:
                continue
            low = line.lower()
            if low[0] == "<":
                if low in (BEGIN, END):
                    yield from self._marker(low)
                    continue
                if _RUN_TOGETHER.fullmatch(low):
                    for marker in _MARKER.findall(low):
                        yield from self._marker(marker)
                    continue
            if self._record is None or self._bad_record:
                continue  # noise between records, or the rest of a bad record
            try:
                parse_record_line(self._record, line, low, self.line_no)
            except RecordError as err:
                self._bad_record = True
                yield Notice(f"{self.name}: {err}; record skipped")

    def _marker(self, marker: str) -> Iterator[Snapshot | Interval | Notice]:
        if marker == BEGIN:
            if self._record is not None:
                self._given(self._record)
                if not self._bad_record:
                    yield self._notice(self._record.first_line,
                                       f"record has no {END} before the next {BEGIN} (line {self.line_no})")
            self._record = Record(first_line=self.line_no)
            self._bad_record = False
        elif self._record is not None:
            record, bad = self._record, self._bad_record
            self._record = None
            self._given(record)
            if not bad:
                yield from self.finish_record(record)

    def _given(self, record: Record) -> None:
        """A record ended (read or skipped): a `latencyunit` line it had holds for later records, as PyLatencyMap's
        global does (set when the line is read)."""
        if record.unit is not None:
            self.unit = record.unit

    def close(self) -> Iterator[Notice]:
        """Report an unterminated record at end of input."""
        if self._record is not None and not self._bad_record:
            yield self._notice(self._record.first_line, f"record has no {END} (input ended)")
        self._record = None

    def _notice(self, line: int, message: str) -> Notice:
        return Notice(f"{self.name}: line {line}: {message}; record skipped")

    def stream(self, label: str, datasource: str | None, unit: str) -> StreamId:
        """The one StreamId of this identity in this input; datasource None: the record had no datasource line."""
        if datasource is not None:
            return self._streams.get(label, datasource, unit)
        stream = self._streams.get(label, self.datasource or DEFAULT_DATASOURCE, unit)
        if self.datasource is None and not self._told and _ORACLE_LABEL.search(label):
            self._guessed.add(stream)
        return stream

    def finish_record(self, rec: Record) -> list[Snapshot | Interval | Notice]:
        """What a complete record becomes (an item per histogram key), or the Notice that skips it; before it, the
        note that it took an earlier record's unit, the first time one does."""
        out: list[Snapshot | Interval | Notice] = []
        try:
            end_record(rec)
            if rec.unit is None:
                rec.unit = self.unit or DEFAULT_UNIT
                if self.unit is not None and not self.said_unit:
                    self.said_unit = True
                    out.append(self.unit_notice(rec.first_line, self.unit))
            out += record_items(rec, self.stream)
        except RecordError as err:
            out.append(Notice(f"{self.name}: {err}; record skipped"))
        return out

    def item(self, stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
             start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
             sums: np.ndarray | None) -> Snapshot | Interval | Notice:
        """A record's item from parts parsed in bulk, or the Notice that skips it."""
        try:
            return make_item(stream, first_line, micros, date, per_interval, start_micros, flags, counts, present,
                             sums)
        except RecordError as err:
            return Notice(f"{self.name}: {err}; record skipped")
