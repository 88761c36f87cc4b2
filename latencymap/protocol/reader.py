"""The line-by-line protocol reader: a state machine over records, with the bulk path in front of it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from latencymap import __version__
from latencymap.core.buckets import ORACLE_OVERFLOW, UPPER_BOUND_SOURCES
from latencymap.core.deltas import MAX_RUNS, apart_label, apart_notice
from latencymap.core.json_input import json_input
from latencymap.core.lean import dataclass
from latencymap.core.lines import text_lines
from latencymap.core.model import (
    Interval,
    IntervalRun,
    Item,
    Notice,
    Snapshot,
    SnapshotRun,
    StreamId,
    one_by_one,
    rows_by_stream,
)
from latencymap.core.patterns import lazy_pattern
from latencymap.core.sanitize import clean_label, clean_text, excerpt
from latencymap.protocol.bulk import FastPath
from latencymap.protocol.grammar import (
    BEGIN,
    DEFAULT_DATASOURCE,
    DEFAULT_UNIT,
    END,
    NOTE_PREFIX,
    RECORDING_HEADER,
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
_RUN_TOGETHER = lazy_pattern(r"(?:<begin record>|<end record>)(?:\s*(?:<begin record>|<end record>))+")
_MARKER = lazy_pattern(r"<begin record>|<end record>")
#: Labels of Oracle wait-event histograms (PyLatencyMap's, OraLatencyMap's and AWR scripts).
_ORACLE_LABEL = re.compile(r"event_histogram|\bawr\b", re.IGNORECASE)
#: The least time between two records without a timestamp line of one stream (`--interval`'s default; PyLatencyMap
#: takes 1 s between such records).
DEFAULT_UNTIMED_INTERVAL = 1.0
#: What a recording cannot carry of a source that analyses more than histograms (a recording holds intervals only).
_NOT_RECORDED = {"spark": "Spark's per-task analysis (the stragglers and the per-stage summaries)"}


class ProtocolReader:
    """Incremental reader: feed lines, get Snapshots, Intervals (per-interval records) and Notices.

    A malformed record is skipped whole with a Notice naming the line; reading goes on at the
    next `<begin record>`. Repeated bucket values in one record add up. Records without a
    `datasource` line take `datasource` (default `bpf`). A record without a `latencyunit` line takes the unit the
    last record before it gave (`unit`: PyLatencyMap keeps it as a global), else millisec; one note says so.
    Records without a timestamp line are timed by `clock` as they are read, each at least `interval` seconds
    after its stream's previous one (PyLatencyMap takes 1 s between them); one note says so. A stream's first record
    decides how its records are timed: one without a timestamp line among records with one has no time of its own
    and makes no column (its events come in the next record's, the counters being cumulative), and a timestamp
    in a stream timed as read is not used; one note each says so.
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
        self._dated: set[StreamId] = set()  # streams whose cumulative records carry their own timestamps
        self._said_mixed: set[str] = set()  # the notes given on a stream of records with and without timestamps
        self._record: Record | None = None
        self._bad_record = False
        self._streams = StreamCache()
        self._fast = FastPath(self)
        self.timeline = Timeline(name, self._streams)  # interval records that go back in time: shown apart
        self._told = False  # whether the note that Oracle-looking records were read as bpf was given
        #: The header of a latencymap recording (`# latencymap-recording {...}`), once read; None: none (yet).
        self.recording: dict[str, Any] | None = None
        self._newer: str | None = None  # the version of a newer latencymap that made the recording
        self._said: set[str] = set()  # the one-time notes given: "newer", and the datasources of _NOT_RECORDED
        self._overflow: dict[StreamId, _Overflow] = {}  # what each stream's overflow rows held, said at the end
        self._first_record: dict[StreamId, int] = {}  # the first line of each stream's first cumulative record

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
        """`items`, with the note that the recording is a newer latencymap's at the first record skipped; records
        without a timestamp are timed here (see `_timed`), as they come out."""
        for item in items:
            if isinstance(item, SnapshotRun):
                if self._untimed and not self._untimed.keys().isdisjoint(item.streams):
                    yield from self._noted(item.snapshots())  # some of its streams are timed as read
                    continue
                self._dated.update(item.streams[:1] if _one_stream(item.streams) else item.streams)
            if (isinstance(item, Notice) and item.skipped and not isinstance(item, RecordedNotice)
                    and self._newer is not None and "newer" not in self._said):
                self._said.add("newer")
                yield self._newer_notice(self._newer)
            if isinstance(item, Snapshot):
                kept, said = self._timed(item)
                yield from said
                if not kept:
                    continue
            yield item

    def _timed(self, snap: Snapshot) -> tuple[bool, list[Notice]]:
        """Whether to keep a snapshot, and the notes to give before it. A snapshot of a stream that its
        first record timed by a timestamp line keeps its own; one without a timestamp in such a stream is dropped
        (see `_mixed`). Any other is timed as read: now, but at least `interval` seconds after its stream's
        previous one, so that a file read at once gets one column per `interval` (PyLatencyMap's 1 s) and a live
        pipe its real spacing when slower; a note says so at the first such column."""
        stream = snap.stream
        notes: list[Notice] = []
        if snap.timestamp is not None:
            if stream not in self._untimed:
                self._dated.add(stream)
                return True, notes
            notes = self._mixed(snap, "dated")
            snap.timestamp = snap.micros = None
        elif stream in self._dated:
            return False, self._mixed(snap, "undated")
        now = self._clock()
        last = self._untimed.get(snap.stream)
        snap.timestamp = now if last is None else max(now, last + self.interval)
        self._untimed[snap.stream] = snap.timestamp
        if last is None or self._said_untimed:
            return True, notes
        self._said_untimed = True
        where = f"line {snap.line}: " if snap.line else ""
        return True, [*notes, Notice(
            f"{self.name}: {where}records without a 'timestamp' line are timed as they are read, at least "
            f"{self.interval:g} s apart (--interval; PyLatencyMap takes 1 s between records): rates are per that time",
            skipped=0)]

    def _mixed(self, snap: Snapshot, kind: str) -> list[Notice]:
        """The note, once per input for each `kind`, that a record of a stream timed otherwise by its first record
        takes no time of its own: `undated` (no timestamp line, among records with one) or `dated` (a timestamp,
        among records timed as read)."""
        if kind in self._said_mixed:
            return []
        self._said_mixed.add(kind)
        where = f"line {snap.line}: " if snap.line else ""
        label = clean_text(snap.stream.label, 200) or "(no label)"
        if kind == "undated":
            return [Notice(f"{self.name}: {where}'{label}': record without a 'timestamp' line among records with one: "
                          "it has no time of its own and makes no column; its events are counted in the next "
                          "timestamped record's column (the counters are cumulative); so are later such records",
                          skipped=0)]
        return [Notice(f"{self.name}: {where}'{label}': record with a 'timestamp' line after records without one, "
                      "which were timed as read: its timestamp is not used, it is timed as read too, as are later "
                      "such records (a stream's first record decides how its records are timed)", skipped=0)]

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

    def comment(self, line: str, number: int) -> list[Notice]:
        """A `# latencymap-...` line between records (line `number`): a recording's header (kept in `recording`; a
        newer latencymap's version is said at the first record skipped), or a note of the recorded run (said again,
        as a note). One whose JSON does not decode to an object is skipped and said."""
        for prefix in (RECORDING_HEADER, NOTE_PREFIX):
            if not line.startswith(prefix):
                continue
            try:
                value = json_input(line[len(prefix):])
            except ValueError as err:
                import json  # json_input has imported it

                value = None
                why = f"invalid JSON: {err.msg}" if isinstance(err, json.JSONDecodeError) else f"JSON {err}"
            else:
                why = "JSON, not an object"
            if not isinstance(value, dict):
                return [Notice(f"{self.name}: line {number}: '{prefix.strip()}' line not read ({why}); expected a "
                               "JSON object after it; line skipped", skipped=0)]
            if prefix == RECORDING_HEADER:
                self.recording = value
                version = value.get("version")
                if isinstance(version, str) and _release(version) > _release(__version__):
                    self._newer = clean_text(version, 40)
                return []
            message = value.get("message")
            if isinstance(message, str) and message:
                skipped = value.get("skipped")
                count = skipped if type(skipped) is int and 0 <= skipped <= MAX_RECORDED_SKIPS else 0
                measures = _measures(value, self.stream)
                if measures is not None:  # for the runs of its stream shown apart
                    self.timeline.measures[measures[0]] = measures[1]
                return [RecordedNotice(f"{self.name}: as recorded: {clean_text(message, 2000)}", skipped=count,
                                       measures=measures)]
        return []

    def _newer_notice(self, version: str) -> Notice:
        return Notice(f"{self.name}: recorded by latencymap {version}, newer than this {__version__}: records in a "
                      f"form this version does not know are skipped (read it with latencymap {version} or later)",
                      skipped=0)

    @staticmethod
    def may_note(stream: StreamId, guessed: bool) -> bool:
        """Whether a record of `stream` (`guessed`: it has no datasource line) can give a note (`record_notes`)."""
        if guessed:
            return _ORACLE_LABEL.search(stream.label) is not None
        return stream.datasource in _NOT_RECORDED or misspelt_upper_bound(stream.datasource) is not None

    def record_notes(self, stream: StreamId, guessed: bool) -> list[Notice]:
        """The notes to give before the items of a record of `stream` that is read (`guessed`: it has no datasource
        line), the first time one has them to give: that Oracle-looking records were read with the default datasource
        (once per input), or that a recording keeps this stream's intervals but not its source's own analysis, and
        where to get it (once per datasource). Both readers give them in the same place: before that record's items."""
        if guessed:
            if self._told or self.datasource is not None or not _ORACLE_LABEL.search(stream.label):
                return []
            self._told = True
            return [self._datasource_notice(stream)]
        meant = misspelt_upper_bound(stream.datasource)
        if meant is not None:
            if stream.datasource in self._said:
                return []
            self._said.add(stream.datasource)
            return [Notice(
                f"{self.name}: '{clean_text(stream.label, 200)}': datasource '{clean_text(stream.datasource, 40)}' is "
                f"not '{meant}': read as lower bounds ([v, 2v)), as any datasource but {meant}; if these are "
                f"{meant}'s (upper bounds, [v/2, v)), correct the records' datasource line or pass --datasource "
                f"{meant}, which puts every row one octave lower", skipped=0)]
        lost = _NOT_RECORDED.get(stream.datasource)
        if lost is None or self.recording is None or stream.datasource in self._said:
            return []
        self._said.add(stream.datasource)
        return [Notice(
            f"{self.name}: '{clean_text(stream.label, 200)}': a recording keeps the histograms, not {lost}; for "
            f"them, report what was recorded: latencymap report {_recorded_from(self.recording)}", skipped=0)]

    def feed_text(self, text: str, runs: bool = False) -> Iterator[Item]:
        """Items of the records completed by `text`; an unfinished record waits for the next call."""
        items = self._fast.feed(text)
        self._saw(items)
        yield from items if runs else one_by_one(items)

    def _saw(self, items: Iterable[object]) -> None:
        """Keep the first line of each stream's first cumulative record (`_overflow_notice`): by line, as records
        read in bulk and records read again line by line come in no one order."""
        first = self._first_record
        for item in items:
            if isinstance(item, SnapshotRun):
                streams = item.streams
                lines: Iterable[tuple[StreamId, int]] = (
                    ((streams[-1], item.lines[0]),) if _one_stream(streams)
                    else dict(zip(reversed(streams), reversed(item.lines), strict=True)).items())
            elif isinstance(item, Snapshot):
                lines = ((item.stream, item.line),)
            else:
                continue
            for stream, line in lines:
                if first.setdefault(stream, line) > line:
                    first[stream] = line

    def in_record(self) -> bool:
        """True between a `<begin record>` line and its end."""
        return self._record is not None

    def reread(self, first_line: int, text: str, unit: str | None) -> list[Snapshot | Interval | Notice]:
        """Read one whole record line by line, numbering its lines from `first_line`, with `unit` the last unit
        given before it (the records read in bulk since have moved `self.unit` on: it is kept)."""
        saved, self.line_no = self.line_no, first_line - 1
        saved_unit, self.unit = self.unit, unit
        try:
            return list(self.feed(text_lines(text)))
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
            if low[-1] == ">":
                if low in (BEGIN, END):
                    yield from self._marker(low)
                    continue
                if _RUN_TOGETHER().fullmatch(low):
                    for marker in _MARKER().findall(low):
                        yield from self._marker(marker)
                    continue
                # a marker after other text: the line was cut short (what came after it is lost)
                marker = BEGIN if low.endswith(BEGIN) else END if low.endswith(END) else ""
                if marker:
                    yield from self._cut(line[:-len(marker)], marker)
                    continue
            if self._record is None or self._bad_record:  # noise between records, or the rest of a bad record
                if self._record is None and low.startswith("# latencymap-"):
                    yield from self.comment(line, self.line_no)
                continue
            try:
                parse_record_line(self._record, line, low, self.line_no)
            except RecordError as err:
                self._bad_record = True
                yield Notice(f"{self.name}: {err}; record skipped")

    def _cut(self, text: str, marker: str) -> Iterator[Notice]:
        """A line of `text` then `marker` (a writer cut off mid-line): the record open, if any, ends cut in `text`
        and is skipped; after `<begin record>`, the next one starts on this line."""
        if self._record is not None:
            self._given(self._record)
            if not self._bad_record:
                whose = "the next record's" if marker == BEGIN else "its"
                yield Notice(f"{self.name}: line {self.line_no}: record cut off mid-line: the line ends in "
                             f"{excerpt(text.rstrip())}, then {whose} {marker}; record skipped")
        self._record = Record(first_line=self.line_no) if marker == BEGIN else None
        self._bad_record = False

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
        for stream, held in self._overflow.items():
            yield self._overflow_notice(stream, held)
        self._overflow.clear()
        self._first_record.clear()

    def _overflow_notice(self, stream: StreamId, held: _Overflow) -> Notice:
        """The note that a stream's rows of bucket value 4294967295 were left out, and what they held."""
        label = clean_text(stream.label, 200) or "(no label)"
        if stream.datasource in UPPER_BOUND_SOURCES:
            what = (f"'{label}': Oracle's overflow bucket {ORACLE_OVERFLOW} (waits past its largest bucket: no finite "
                    "range) is left out of the map and totals")
        else:
            what = (f"'{label}': bucket value {ORACLE_OVERFLOW} is not a power of 2 (it is Oracle's overflow bucket; "
                    f"the stream is read as {stream.datasource}: if it is Oracle's, add 'datasource, oracle' or pass "
                    "--datasource oracle); its rows are left out")
        before = self._first_record.get(stream, held.first_record)
        if held.per_interval:
            held_text = f"{held.total:,} events in them (lines {held.first_line} to {held.last_line})"
        elif before < held.first_record:  # Oracle lists no row for an empty bucket: it held none there
            held_text = (f"its cumulative count went from 0 (line {before}: no row of it) to {held.last:,} "
                         f"(line {held.last_line})")
        elif held.first_line == held.last_line:
            held_text = f"its cumulative count is {held.first:,} (line {held.first_line})"
        else:
            held_text = (f"its cumulative count went from {held.first:,} (line {held.first_line}) to {held.last:,} "
                         f"(line {held.last_line})")
        return Notice(f"{self.name}: {what}: {held_text}", skipped=0)

    def _notice(self, line: int, message: str) -> Notice:
        return Notice(f"{self.name}: line {line}: {message}; record skipped")

    def stream(self, label: str, datasource: str | None, unit: str) -> StreamId:
        """The one StreamId of this identity in this input; datasource None: the record had no datasource line (it
        takes `--datasource`, else bpf)."""
        if datasource is None:
            datasource = self.datasource or DEFAULT_DATASOURCE
        return self._streams.get(label, datasource, unit)

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
            items = record_items(rec, self.stream)
            self._saw(items)
            if rec.overflow_line and items:
                self._overflow_row(items[0].stream, rec)
            if rec.extremes_dropped:
                out.append(self._extremes_notice(rec))
            guessed = rec.datasource is None
            for item in items:
                out += self.record_notes(item.stream, guessed)
                out += self.timeline.placed(item, rec.first_line, "overlap" in rec.flags) \
                    if isinstance(item, Interval) else [item]
        except RecordError as err:
            out.append(Notice(f"{self.name}: {err}; record skipped"))
        return out

    def _overflow_row(self, stream: StreamId, rec: Record) -> None:
        """Keep what a record's overflow rows held, for the note at the end of input."""
        held = self._overflow.get(stream)
        if held is None:
            held = self._overflow[stream] = _Overflow(rec.per_interval, rec.overflow, rec.overflow_line,
                                                      first_record=rec.first_line)
        held.last, held.last_line = rec.overflow, rec.overflow_line
        held.total += rec.overflow

    def _extremes_notice(self, rec: Record) -> Notice:
        """The note that a record's `extremes` line was dropped, and why; its counts and sums are read (nothing is
        skipped: `--strict` goes on, as for a recording's unreadable note line)."""
        return Notice(f"{self.name}: line {rec.extremes_line}: 'extremes' line dropped ({rec.extremes_dropped}); the "
                      "record's counts and sums are read, its percentiles are not narrowed to values seen", skipped=0)

    def item(self, stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
             start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
             sums: np.ndarray | None, guessed: bool | None) -> list[Snapshot | Interval | Notice]:
        """A record's item from parts parsed in bulk (after the notes of its stream, `record_notes`, unless `guessed`
        is None, and the note that it goes back in time, if it does), or the Notice that skips it."""
        try:
            item = make_item(stream, first_line, micros, date, per_interval, start_micros, flags, counts, present,
                             sums)
        except RecordError as err:
            return [Notice(f"{self.name}: {err}; record skipped")]
        out: list[Snapshot | Interval | Notice] = []
        if guessed is not None:
            out += self.record_notes(stream, guessed)
        out += self.timeline.placed(item, first_line, "overlap" in flags) if isinstance(item, Interval) else [item]
        return out

    def placed_run(self, run: IntervalRun, lines: list[int]) -> list[IntervalRun | Interval | Notice]:
        """The interval records parsed in bulk (`lines`: where each starts) in their runs (see `Timeline`)."""
        return self.timeline.placed_run(run, lines)


@dataclass(slots=True)
class _Overflow:
    """What a stream's rows of bucket value 4294967295 held: the first and last record's counts and lines, and the
    sum (the events of `counts, interval` records); a cumulative record of the stream before the first (no such row)
    means 0 there."""

    per_interval: bool
    first: int
    first_line: int
    last: int = 0
    last_line: int = 0
    total: int = 0
    first_record: int = 0  # the first line of the first record with such a row


#: The most records one recorded note may say its run skipped (a larger count is read as none).
MAX_RECORDED_SKIPS = 2**62


@dataclass(slots=True)
class RecordedNotice(Notice):
    """A note of a recorded run, said again when the recording is read. Its `skipped` is what that run skipped, so
    views count it as the live session did; nothing of the recording itself was skipped (`--strict` goes on, and it
    never makes the recording unreadable)."""


#: What a recorded note may say a stream measures (`Notice.measures`): a lowercase word.
_MEASURE = lazy_pattern(r"[a-z][a-z0-9]{0,39}")  # read only from recordings' notes: compiled at first use


def _measures(note: dict[str, Any], named: Callable[[str, str | None, str], StreamId]) -> tuple[StreamId, str] | None:
    """What a recorded note says a stream measures (`measures`, of its `stream`: label, datasource and unit), the
    stream `named` as its records' lines name it (`ProtocolReader.stream`: stripped, cleaned, cut to a name); None
    where it says none, or not in that form."""
    what, stream = note.get("measures"), note.get("stream")
    if not isinstance(what, str) or not _MEASURE().fullmatch(what) or not isinstance(stream, dict):
        return None
    label, datasource, unit = (stream.get(k) for k in ("label", "datasource", "unit"))
    if not (isinstance(label, str) and isinstance(datasource, str) and isinstance(unit, str)):
        return None
    return named(clean_label(label.strip()), clean_text(datasource.strip().lower()) or None, unit), what


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of a version (`0.1.0` -> (0, 1, 0)), for comparing releases."""
    m = re.match(r"\s*(\d+(?:\.\d+)*)", version)
    return tuple(int(part) for part in m.group(1).split(".")) if m else ()


class Timeline:
    """Where the intervals of `counts, interval` records go, in one input: a record whose timestamp does not increase
    over its stream's last one (the rule for cumulative records) goes back into time already read, as a second
    recording of another run joined to the first does (`cat a.zst b.zst`): mixing the two would lay their columns
    over each other. It starts a run of its own, shown apart as `LABEL [INPUT, from line N]` with a note, and the
    records after it go on in the first run whose last interval they come after (the stream's own first): a
    record repeated costs a one-column run, a later part of the first run goes on in it. Past `MAX_RUNS` runs of a
    stream, such a record is skipped and counted. A record flagged `overlap` (its recording had it in the stream
    it had come back into, as the delta points of processes that share an OpenTelemetry series are) goes on in the
    run of its stream's record before it, whatever its time."""

    def __init__(self, name: str, streams: StreamCache) -> None:
        self._name, self._streams = name, streams
        self._runs: dict[StreamId, list[tuple[float, StreamId]]] = {}  # a stream's runs: (last end, shown as)
        self._latest: dict[StreamId, int] = {}  # the run of each stream's last record, where it is not the first
        #: What the recording's notes said streams measure (`Notice.measures`), so far: their runs apart do too.
        self.measures: dict[StreamId, str] = {}

    def placed(self, interval: Interval, line: int, overlap: bool = False) -> list[Interval | Notice]:
        """`interval` (of the record at `line`; `overlap`: flagged so) in its run, after the note that it starts one;
        or the Notice that skips it."""
        stream, end = interval.stream, interval.end
        runs = self._runs.get(stream)
        if runs is None:
            self._runs[stream] = [(end, stream)]
            return [interval]
        if overlap:
            k = self._latest.get(stream, 0)
            last, shown = runs[k]
            runs[k] = (max(last, end), shown)
            interval.stream = shown
            return [interval]
        for k, (last, shown) in enumerate(runs):
            if end > last:
                runs[k] = (end, shown)
                self._remember(stream, k)
                interval.stream = shown
                return [interval]
        if len(runs) >= MAX_RUNS:
            return [Notice(f"{self._name}: line {line}: '{stream.label}' goes back in time again (its interval ends "
                           f"at {end:.6f}, not after its last one, {runs[0][0]:.6f}), and {MAX_RUNS} runs of it are "
                           "shown apart already; record skipped")]
        shown = self._streams.get(apart_label(stream.label, self._name, line), stream.datasource, stream.unit)
        runs.append((end, shown))
        self._remember(stream, len(runs) - 1)
        interval.stream = shown
        return [apart_notice(f"{self._name}: line {line}: '{stream.label}' goes back into the time of its earlier "
                             f"records (its interval ends at {end:.6f}, not after its last one, {runs[0][0]:.6f}): "
                             f"another run, shown apart, as '{shown.label}'", stream, shown, self.measures), interval]

    def placed_run(self, run: IntervalRun, lines: list[int]) -> list[IntervalRun | Interval | Notice]:
        """`run` (of the records at `lines`) as it is when every stream's intervals come after its last one (the
        common case, checked in bulk); else row by row."""
        streams, end = run.streams, run.end
        groups = {streams[0]: slice(None)} if streams.count(streams[0]) == len(streams) else rows_by_stream(streams)
        for stream, rows in groups.items():
            ends = end[rows]
            runs = self._runs.get(stream)
            back = runs is not None and (len(runs) > 1 or ends[0] <= runs[0][0])
            if back or bool((ends[1:] <= ends[:-1]).any()):
                out: list[IntervalRun | Interval | Notice] = []
                for interval, line in zip(run.intervals(), lines, strict=True):
                    out += self.placed(interval, line)
                return out
        for stream, rows in groups.items():
            self._runs[stream] = [(float(end[rows][-1]), stream)]
        return [run]

    def _remember(self, stream: StreamId, k: int) -> None:
        """The run `k` took the stream's last record."""
        if k:
            self._latest[stream] = k
        else:
            self._latest.pop(stream, None)


def _one_stream(streams: list[StreamId]) -> bool:
    """True when a run's records are all of one stream: the list is compared in C (the same object, as the bulk
    reader gives it, is not even compared), instead of hashing each record's stream in Python."""
    return bool(streams) and streams.count(streams[0]) == len(streams)


def _recorded_from(header: dict[str, Any]) -> str:
    """The `report` arguments that read again what a recording was made from (`LOG` when the header does not say)."""
    options = header.get("options")
    options = options if isinstance(options, dict) else {}
    source, inputs, target = header.get("source"), options.get("inputs"), options.get("target")
    if source == "replay":  # made from another recording: what that one was made from is not known here
        return "LOG"
    import shlex

    if isinstance(inputs, list) and inputs:
        return shlex.join(clean_text(str(i), 200) for i in inputs)
    if isinstance(source, str) and isinstance(target, str) and target:  # a source subcommand: `spark LOG`
        return shlex.join([clean_text(source, 40), clean_text(target, 200)])
    return "LOG"


def misspelt_upper_bound(datasource: str) -> str | None:
    """The datasource whose buckets are upper bounds (`oracle`) that `datasource`, not one, is a letter from (`orcale`,
    `oracel`, `orace`) or a longer name of (`oracle19c`): it is read as lower bounds, one octave off if it meant that;
    None otherwise (`trace`, two letters from it, is no misspelling)."""
    if datasource in UPPER_BOUND_SOURCES:
        return None
    return next((name for name in sorted(UPPER_BOUND_SOURCES)
                 if _edits(datasource, name) <= 1 or datasource.startswith(name)), None)


def _edits(a: str, b: str) -> int:
    """The Damerau-Levenshtein distance of two short words (a swap of neighbours is one edit)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]
