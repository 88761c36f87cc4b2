"""Chunked reading of the record protocol: canonical records are parsed in bulk with NumPy.

A chunk of text is cut at exact `<begin record>` / `<end record>` lines. A record whose lines are
all in the canonical form (the keys the protocol knows, `<value>, <count>` rows) joins a batch
whose rows are parsed by one `np.fromstring` call; anything else — noise holding a marker in
another spelling, histogram blocks, a third column, a bad value — goes line by line through the
reader's own state machine, so both paths give the same items and the same messages.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Any, Protocol

import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS, UPPER_BOUND_SOURCES, bounds_seconds
from latencymap.core.lines import text_lines
from latencymap.core.model import (
    Interval,
    IntervalRun,
    Item,
    Notice,
    Snapshot,
    SnapshotRun,
    SourceBuckets,
    StreamId,
)
from latencymap.core.sanitize import clean_text
from latencymap.core.units import unit_seconds
from latencymap.protocol.grammar import (
    BEGIN,
    DEFAULT_UNIT,
    END,
    MICROSECONDS,
    NOTE_PREFIX,
    RECORDING_HEADER,
    Record,
    RecordError,
    extremes_faults,
    interval_start,
    parse_record_line,
)

BEGIN_LINE = "<begin record>\n"
END_LINE = "\n<end record>\n"
#: An unfinished record longer than this is read line by line instead of waiting for its end.
MAX_PENDING = 4 * 1024 * 1024
#: Bucket values and counts at or above this go through the line reader (which checks their range).
_BIG = 1 << 62
#: What latencymap's own interval records (recordings) say after the timestamp.
_INTERVAL_PREFIX = "counts, interval\nstart, microsec, "
#: Rows of three columns: two of digits, then a sum in plain decimals (what `float` and NumPy read alike). This
#: pattern and those of the lines below are compiled when first used (re's cache): most inputs have none of them.
_THREE_COLUMNS = r"(?: *[0-9]+ *, *[0-9]+ *,[0-9.eE\- ]*\n)*"
#: Integers below this are exact in a float64.
_EXACT = float(1 << 53)
#: How latencymap's recordings write the values seen per bucket: the line before the rows.
_EXTREMES_PREFIX = "extremes,"
#: A plain decimal (`repr` of a finite float >= 0), matched without going back.
_DECIMAL = r"[0-9]++(?:\.[0-9]++)?+(?:e[-+]?+[0-9]++)?+"
#: An `extremes` line's values as its writer gives them (bucket values, then two plain decimals each), which `int`,
#: `float` and NumPy read alike; any other spelling goes through the line reader.
_EXTREMES_TEXT = rf"(?: [0-9]{{1,15}}, {_DECIMAL}, {_DECIMAL},)*+ [0-9]{{1,15}}, {_DECIMAL}, {_DECIMAL}"
#: The keys of the lines a rebinned source's records carry before their rows (`sourcebuckets` then `sourcecounts`,
#: then `sourcetime`, as recordings write them).
_SOURCE_KEYS = ("sourcebuckets,", "sourcecounts,", "sourcetime,")
#: Those lines' values as latencymap writes them (`repr` of floats, `inf` last; counts below 10**18), which `float`,
#: `int` and NumPy read alike; any other spelling goes through the line reader.
_BOUNDS_TEXT = rf"(?:{_DECIMAL}|inf)(?:, (?:{_DECIMAL}|inf))*+"
_COUNTS_TEXT = r"[0-9]{1,18}(?:, [0-9]{1,18})*+"
_SECONDS_TEXT = _DECIMAL
#: A record as `_canonical` reads it most often: a timestamp in microseconds (an optional date after it), an optional
#: interval start, header lines (none starting with a digit), then rows up to the end line (no `<` among them).
_PLAIN_RECORD = re.compile(r"<begin record>\ntimestamp, (?:microsec|musec), ([0-9]{1,18})(?:,([^\n]*+))?\n"
                           r"(?:counts, interval\nstart, microsec, ([0-9]{1,18})\n)?"
                           r"((?:[^0-9<\n][^\n]*+\n)*+)([0-9][^<]*+)(?<=\n)<end record>\n")


class LineReader(Protocol):
    """What the bulk path needs of the line reader it hands everything unusual to."""

    name: str
    line_no: int
    #: The unit of the last `latencyunit` line read (None: none yet): records without one take it.
    unit: str | None
    #: Whether the note that a record took an earlier record's unit was given.
    said_unit: bool

    def feed(self, lines: Iterable[str]) -> Iterator[Snapshot | Interval | Notice]: ...

    def close(self) -> Iterator[Notice]: ...

    def in_record(self) -> bool: ...

    def reread(self, first_line: int, text: str, unit: str | None) -> list[Snapshot | Interval | Notice]: ...

    def unit_notice(self, first_line: int, unit: str) -> Notice: ...

    def comment(self, line: str, number: int) -> list[Notice]: ...

    def stream(self, label: str, datasource: str | None, unit: str) -> StreamId: ...

    def may_note(self, stream: StreamId, guessed: bool) -> bool: ...

    def record_notes(self, stream: StreamId, guessed: bool) -> list[Notice]: ...

    def item(self, stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
             start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
             sums: np.ndarray | None, guessed: bool | None) -> list[Snapshot | Interval | Notice]: ...

    def placed_run(self, run: IntervalRun, lines: list[int]) -> list[IntervalRun | Interval | Notice]: ...


class _Batch:
    """Canonical records of one chunk waiting for their rows to be parsed together."""

    __slots__ = ("data", "extremes", "headers", "rows", "sources", "texts")

    def __init__(self) -> None:
        self.headers: list[tuple[Any, ...]] = []
        #: (first line, begin, end, the unit the record would take without a latencyunit line of its own)
        self.texts: list[tuple[int, int, int, str | None]] = []
        self.rows: list[int] = []
        self.data: list[str] = []
        #: By record: the text of its `extremes` line after the key, for the interval records that have one.
        self.extremes: dict[int, str] = {}
        #: By record: its `sourcebuckets`, `sourcecounts` and `sourcetime` values (None: no such line).
        self.sources: dict[int, tuple[str | None, str | None, str | None]] = {}


class _Rows:
    """What the rows of a batch's records say: counts, presence, sums (when a record had them), which parsed."""

    __slots__ = ("counts", "extremes", "good", "present", "seen", "source", "sums", "three", "unit_line")

    def __init__(self, counts: np.ndarray, present: np.ndarray, good: np.ndarray) -> None:
        self.counts, self.present, self.good = counts, present, good
        self.sums: np.ndarray | None = None
        self.three = np.zeros(len(good), dtype=bool)
        #: The values seen per slot (records, 2, NSLOTS) of the records in `seen`, from their `extremes` lines.
        self.extremes: np.ndarray | None = None
        self.seen = np.zeros(len(good), dtype=bool)
        #: The source's own buckets of each record that has them (from its `source...` lines).
        self.source: dict[int, SourceBuckets] = {}
        #: The first record whose rows may hold a `latencyunit` line (an `n`), after which the units the records
        #: were queued with may be wrong: it and the records after it are read again line by line. None: none.
        self.unit_line: int | None = None


def _numbers(text: str, dtype: type) -> np.ndarray:
    """The comma-separated numbers of `text`; empty when one does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a text number parse that stops early only warns
            return np.fromstring(text, dtype=dtype, sep=",")
    except (ValueError, DeprecationWarning):
        return np.empty(0, dtype=dtype)


class FastPath:
    """The bulk reader behind `ProtocolReader.feed_text`."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.pending = ""
        self._headers: dict[tuple[str, str | None], tuple[Any, ...]] = {}
        self._block: str | None = None  # the previous record's constant header lines, and what they say
        self._last_header: tuple[Any, ...] = ()
        self._carried: str | None = None  # the earlier records' unit `_last_header` was made with

    def feed(self, text: str) -> list[Item]:
        """Items of the complete records in `pending + text`; the unfinished tail waits for more."""
        buf = self.pending + text if self.pending else text
        self.pending = ""
        reader = self.reader
        done: list[Item] = []
        out: list[Item | int] = []
        batch = _Batch()

        def slow(lines: list[str] | tuple[str, ...]) -> None:
            nonlocal out, batch
            if batch.headers:  # queued records first: a bad one is read again, in its place, by the line reader
                done.extend(self._emit(out, batch, buf))
                out, batch = [], _Batch()
            out.extend(reader.feed(lines))

        pos, n = 0, len(buf)
        while pos < n:
            if reader.in_record():
                nl = buf.find("\n", pos)
                if nl < 0:
                    break
                slow((buf[pos:nl + 1],))
                pos = nl + 1
                continue
            if buf.startswith(BEGIN_LINE, pos) and (pos == 0 or buf[pos - 1] == "\n"):
                after = self._plain_records(buf, pos, batch, out)
                if after > pos:
                    pos = after
                    continue
            begin = buf.find(BEGIN_LINE, pos)
            while begin > 0 and buf[begin - 1] != "\n":
                begin = buf.find(BEGIN_LINE, begin + 1)
            noise_end = begin if begin >= 0 else buf.rfind("\n", pos) + 1
            if noise_end > pos:
                noise = buf[pos:noise_end]
                if "<" in noise and "<begin record>" in noise.lower():
                    slow(text_lines(noise))
                else:
                    if NOTE_PREFIX in noise or RECORDING_HEADER in noise:  # a recording's header, a recorded note
                        for k, line in enumerate(noise.split("\n"), reader.line_no + 1):
                            if line.startswith("# latencymap-"):
                                out.extend(reader.comment(line.strip(), k))
                    reader.line_no += noise.count("\n")
                pos = noise_end
            if begin < 0 or reader.in_record():
                if begin < 0:
                    break
                continue
            end = buf.find(END_LINE, begin)
            if end < 0:
                break
            body_start = begin + len(BEGIN_LINE)
            stop = end + len(END_LINE)
            if end + 1 == body_start or not self._canonical(buf, body_start, end + 1, reader.line_no + 1, batch, out):
                slow(text_lines(buf[begin:stop]))
            else:
                reader.line_no += buf.count("\n", begin, stop)
            pos = stop
        rest = buf[pos:]
        if len(rest) > MAX_PENDING:
            cut = rest.rfind("\n") + 1
            slow(text_lines(rest[:cut]))
            rest = rest[cut:]
        self.pending = rest
        done.extend(self._emit(out, batch, buf))
        return done

    def finish(self) -> Iterator[Item]:
        """The unfinished tail, line by line, then the reader's end-of-input notice."""
        rest, self.pending = self.pending, ""
        yield from self.reader.feed(text_lines(rest))
        yield from self.reader.close()

    def _canonical(self, buf: str, start: int, stop: int, first_line: int, batch: _Batch,
                   out: list[Item | int]) -> bool:
        """Queue the record `buf[start:stop]` (its lines, each ending in a newline) when it is canonical."""
        micros: int | None = None
        date = ""
        i = start
        if buf.startswith("timestamp,", i):
            j = buf.index("\n", i)
            parts = buf[i + 10:j].split(",", 2)
            if len(parts) < 2 or parts[0].strip() not in MICROSECONDS:
                return False
            try:
                micros = int(parts[1])
            except ValueError:
                return False
            if not -MAX_COUNT < micros < MAX_COUNT:
                return False
            if len(parts) > 2:
                date = parts[2].strip()
                if "<" in date and _cut(date):
                    return False
                if not date.isprintable() or len(date) > 200:
                    date = clean_text(date)
            i = j + 1
        start_micros = None
        if buf.startswith(_INTERVAL_PREFIX, i):
            j = buf.index("\n", i + len(_INTERVAL_PREFIX))
            try:
                start_micros = int(buf[i + len(_INTERVAL_PREFIX):j])
            except ValueError:
                return False
            if not -MAX_COUNT < start_micros < MAX_COUNT:
                return False
            i = j + 1
        block = self._block
        carried = self.reader.unit
        k = i + len(block or "")
        if block is None or carried != self._carried or not (
                buf.startswith(block, i) and k < stop
                and (buf[k].isdigit() or buf.startswith(_EXTREMES_PREFIX, k) or buf.startswith(_SOURCE_KEYS, k))):
            k = i  # a new header
            while k < stop and not buf[k].isdigit() and not buf.startswith(_EXTREMES_PREFIX, k) \
                    and not buf.startswith(_SOURCE_KEYS, k):
                if buf[k] == "\n":
                    return False
                k = buf.index("\n", k) + 1
            block = buf[i:k]
            header = self._headers.get((block, carried))
            if header is None:
                header = self._header(block, carried)
                if header is None:
                    return False
                if len(self._headers) > 4096:
                    self._headers.clear()
                self._headers[block, carried] = header
            self._block, self._last_header, self._carried = block, header, carried
        header = self._last_header
        stream, per_interval, flags, oracle, own_unit, carries, guessed = header
        if start_micros is not None:
            if per_interval is not None:
                return False  # a second counts line: the line reader decides
            per_interval = True
        source = None
        if buf.startswith(_SOURCE_KEYS, k):
            if not per_interval:
                return False  # the line reader says what is wrong with it
            source, k = self._source_lines(buf, k, stop)
            if source is None:
                return False
        seen = None
        if buf.startswith(_EXTREMES_PREFIX, k):
            j = buf.index("\n", k)
            if not per_interval or j + 1 >= stop or not buf[j + 1].isdigit():
                return False  # the line reader says what is wrong with it
            seen, k = buf[k + len(_EXTREMES_PREFIX):j], j + 1
        i = k
        rows = buf.count("\n", i, stop)
        if own_unit is not None:
            self.reader.unit = own_unit  # later records without a latencyunit line take it (the line reader's rule)
        if seen is not None:
            batch.extremes[len(batch.headers)] = seen
        if source is not None:
            batch.sources[len(batch.headers)] = source
        out.append(len(batch.headers))
        batch.headers.append((stream, first_line, micros, date, bool(per_interval), start_micros, flags, oracle,
                              carries, guessed))
        batch.texts.append((first_line, start - len(BEGIN_LINE), stop + len(END_LINE) - 1, carried))
        batch.rows.append(rows)
        batch.data.append(buf[i:stop])
        return True

    def _plain_records(self, buf: str, pos: int, batch: _Batch, out: list[Item | int]) -> int:
        """Queue the records from `pos` on as `_canonical` queues them, one regex match each, while they are plain
        (`_PLAIN_RECORD`) and their header lines are known (read before, after the same unit); where the first record
        that is not starts."""
        reader, headers, match = self.reader, self._headers, _PLAIN_RECORD.match
        queued, texts, counted, data = batch.headers, batch.texts, batch.rows, batch.data
        line_no = reader.line_no
        block = carried = said = date = stream = per_interval = flags = oracle = own_unit = carries = guessed = None
        lines = 0
        m = match(buf, pos)
        while m is not None:
            micros, given, start, now, rows = m.groups()
            if now != block or reader.unit != carried:
                carried = reader.unit
                header = headers.get((now, carried))
                if header is None:
                    break  # `_canonical` reads it, and knows its header lines from then on
                block, lines = now, now.count("\n") + 3
                self._block, self._last_header, self._carried = block, header, carried
                stream, per_interval, flags, oracle, own_unit, carries, guessed = header
            if start is not None and per_interval is not None:
                break  # a second counts line: the line reader decides
            if date is None or given != said:
                if given is not None and "<" in given and _cut(given):
                    break
                said, date = given, "" if given is None else given.strip()
                if not date.isprintable() or len(date) > 200:
                    date = clean_text(date)
            record: tuple[Any, ...]
            if start is None:
                record = (stream, line_no + 1, int(micros), date, bool(per_interval), None, flags, oracle, carries,
                          guessed)
            else:
                record = (stream, line_no + 1, int(micros), date, True, int(start), flags, oracle, carries, guessed)
            if own_unit is not None:
                reader.unit = own_unit  # later records without a latencyunit line take it (the line reader's rule)
            out.append(len(queued))
            queued.append(record)
            end = m.end()
            texts.append((line_no + 1, pos, end, carried))
            pos = end
            newlines = rows.count("\n")
            counted.append(newlines)
            data.append(rows)
            line_no += newlines + lines + (0 if start is None else 2)
            m = match(buf, pos)
        reader.line_no = line_no
        return pos

    @staticmethod
    def _source_lines(buf: str, k: int, stop: int) -> tuple[tuple[str | None, str | None, str | None] | None, int]:
        """The values of the `sourcebuckets` and `sourcecounts` lines (both or neither) and of a `sourcetime` line at
        `k`, as recordings write them, and where the record goes on; None: other lines, for the line reader."""
        found: list[str | None] = [None, None, None]
        for at, key in enumerate(_SOURCE_KEYS):
            if buf.startswith(key, k):
                j = buf.find("\n", k, stop)
                if j < 0:
                    return None, k
                found[at], k = buf[k + len(key):j].strip(" "), j + 1
        if (found[0] is None) != (found[1] is None) or buf.startswith(_SOURCE_KEYS, k):
            return None, k
        return (found[0], found[1], found[2]), k

    def _header(self, block: str, carried: str | None) -> tuple[Any, ...] | None:
        """(stream, per_interval, flags, oracle, own unit, carries, guessed) of the constant header lines, after
        records whose last unit given was `carried`; None: not canonical.

        The lines go through the line reader's own parser. `per_interval` is None when no counts
        line was given. Lines that change per record (timestamp, start) or data rows starting
        with `-` send the record to the line reader instead. `own unit` is the block's latencyunit (None: none, and
        the record takes `carried`, else millisec); `carries` says that it takes `carried`. `guessed` is None when
        the records give no note of their stream (`record_notes`), else whether they have no datasource line.
        """
        if "<" in block and _cut(block):
            return None
        rec = Record(first_line=0)
        lines = block.split("\n")[:-1]
        try:
            for line in map(str.strip, lines):
                if line:  # the line reader skips blank lines
                    parse_record_line(rec, line, line.lower(), 0)
        except RecordError:
            return None
        if rec.micros is not None or rec.start_micros is not None or rec.values or rec.keys or rec.pending \
                or rec.source_bounds is not None or rec.source_counts is not None or rec.source_time is not None \
                or rec.extremes is not None or rec.extremes_dropped:
            return None  # keyed histogram tables (and lines that may be keys) go to the line reader
        has_counts = any(line.lower().partition(",")[0].strip() == "counts" for line in lines)
        stream = self.reader.stream(rec.label, rec.datasource, rec.unit or carried or DEFAULT_UNIT)
        guessed = rec.datasource is None
        return (stream, rec.per_interval if has_counts else None, tuple(sorted(rec.flags)),
                stream.datasource in UPPER_BOUND_SOURCES, rec.unit, rec.unit is None and carried is not None,
                guessed if self.reader.may_note(stream, guessed) else None)

    def _emit(self, out: list[Item | int], batch: _Batch, buf: str) -> list[Item]:
        """`out` with each queued record resolved; runs of cumulative snapshots stay together as SnapshotRuns."""
        if not batch.headers:
            return out  # type: ignore[return-value]
        rows = self._parse_rows(batch)
        counts, present, good, three = rows.counts, rows.present, rows.good, rows.three
        reader = self.reader
        items: list[Item] = []
        run: list[int] = []
        spans: list[int] = []  # interval records whose times hold, of one kind (exact sums or none), in a row

        def flush() -> None:
            """The interval records and the snapshot run pending, as items (in that order)."""
            nonlocal spans, run
            if spans:
                items.extend(self._placed(spans, batch, rows))
                spans = []
            if run:
                items.append(self._run(run, batch, counts, present))
                run = []

        def noted(header: tuple[Any, ...]) -> None:
            """The notes a record read gives of its stream (`record_notes`), before its items."""
            if header[9] is not None:
                notes = reader.record_notes(header[0], header[9])
                if notes:
                    flush()
                    items.extend(notes)

        headers, unit_line = batch.headers, rows.unit_line
        parsed, summed, seen = good.tolist(), three.tolist(), rows.seen.tolist()  # Python lists: read per record
        for at, entry in enumerate(out):
            if isinstance(entry, int) and entry == unit_line:
                flush()
                items.extend(self._reread_from(out[at:], batch, buf))
                return items
            if isinstance(entry, int) and parsed[entry] and headers[entry][8] and not reader.said_unit:
                # the first record that takes an earlier record's unit: its note goes before it, as line by line
                flush()
                reader.said_unit = True
                items.append(reader.unit_notice(headers[entry][1], headers[entry][0].unit))
            if isinstance(entry, int) and parsed[entry]:
                header = headers[entry]
                micros = header[2]
                if not header[4] and micros is not None and not summed[entry]:
                    noted(header)
                    if spans:
                        items.extend(self._placed(spans, batch, rows))
                        spans = []
                    run.append(entry)
                    continue
                if header[4] and micros is not None and -_EXACT < interval_start(micros, header[5]) < micros < _EXACT \
                        and "overlap" not in header[6]:  # one that goes back into its run's time: one by one
                    noted(header)
                    if run:
                        items.append(self._run(run, batch, counts, present))
                        run = []
                    if spans and (summed[spans[0]] != summed[entry] or seen[spans[0]] != seen[entry]):
                        items.extend(self._placed(spans, batch, rows))
                        spans = []
                    spans.append(entry)
                    continue
            flush()
            if not isinstance(entry, int):
                items.append(entry)
            elif parsed[entry] and not seen[entry] and entry not in rows.source:
                stream, first_line, micros, date, per_interval, start_micros, flags, _, _, guessed = headers[entry]
                sums = rows.sums[entry] if summed[entry] and rows.sums is not None else None
                items.extend(reader.item(stream, first_line, micros, date, per_interval, start_micros, flags,
                                         counts[entry], present[entry], sums, guessed))
            else:
                first_line, begin, stop, carried = batch.texts[entry]
                items.extend(reader.reread(first_line, buf[begin:stop], carried))
        if spans:
            items.extend(self._placed(spans, batch, rows))
        if run:
            items.append(self._run(run, batch, counts, present))
        return items

    def _reread_from(self, rest: list[Item | int], batch: _Batch, buf: str) -> list[Item]:
        """The records `rest` (the batch's last ones, the first of which may hold a `latencyunit` line among its rows)
        read line by line, the unit that records without a latencyunit line take going on from record to record
        as the line reader has it; it is the unit later records start from."""
        reader, items = self.reader, []
        first = True
        for entry in rest:
            if not isinstance(entry, int):
                items.append(entry)
                continue
            first_line, begin, stop, carried = batch.texts[entry]
            if first:
                reader.unit, first = carried, False
            saved, reader.line_no = reader.line_no, first_line - 1
            try:
                items.extend(reader.feed(text_lines(buf[begin:stop])))
            finally:
                reader.line_no = saved
        return items

    def _placed(self, picks: list[int], batch: _Batch, rows: _Rows) -> list[IntervalRun | Interval | Notice]:
        """The interval records `picks` in columns, each in its run (the reader's rule for records that go back in
        time)."""
        return self.reader.placed_run(self._intervals(picks, batch, rows), [batch.headers[i][1] for i in picks])

    @staticmethod
    def _intervals(picks: list[int], batch: _Batch, rows: _Rows) -> IntervalRun:
        """Interval records `picks` (each with a timestamp after its start, both below 2**53 µs) in columns."""
        headers = [batch.headers[i] for i in picks]
        end = np.array([h[2] for h in headers], dtype=np.int64)
        start = np.array([interval_start(h[2], h[5]) for h in headers], dtype=np.int64)
        pick = slice(picks[0], picks[-1] + 1) if len(picks) == picks[-1] - picks[0] + 1 else picks
        sums = rows.sums[pick] if rows.three[picks[0]] and rows.sums is not None else None
        seen = rows.extremes[pick] if rows.seen[picks[0]] and rows.extremes is not None else None
        sources = [rows.source.get(i) for i in picks] if rows.source else None
        return IntervalRun([h[0] for h in headers], start / 1e6, end / 1e6, (end - start) / 1e6, rows.counts[pick],
                           sums, np.array(["reset" in h[6] for h in headers], dtype=bool),
                           np.array(["gap" in h[6] for h in headers], dtype=bool), [h[3] for h in headers],
                           extremes=seen, source_buckets=sources if sources and any(sources) else None)

    @staticmethod
    def _run(rows: list[int], batch: _Batch, counts: np.ndarray, present: np.ndarray) -> SnapshotRun:
        pick: slice | list[int] = rows
        if len(rows) == rows[-1] - rows[0] + 1:
            pick = slice(rows[0], rows[-1] + 1)
            headers = batch.headers[rows[0]: rows[-1] + 1]
        else:
            headers = [batch.headers[i] for i in rows]
        return SnapshotRun(list(map(itemgetter(0), headers)),
                           np.fromiter(map(itemgetter(2), headers), dtype=np.int64, count=len(headers)),
                           counts[pick], present[pick], list(map(itemgetter(3), headers)),
                           list(map(itemgetter(1), headers)))

    def _parse_rows(self, batch: _Batch) -> _Rows:
        """Per-record counts, presence and sums over the 64 slots, and which records parsed cleanly.

        A record's rows are all `<value>, <count>` or all `<value>, <count>, <sum>` (recordings of exact
        sums); anything else goes back to the line reader.
        """
        nrec = len(batch.headers)
        rows = _Rows(np.zeros((nrec, NSLOTS), dtype=np.int64), np.zeros((nrec, NSLOTS), dtype=bool),
                     np.zeros(nrec, dtype=bool))
        data, nrows = batch.data, batch.rows
        text = "".join(data)
        if "n" in text or "N" in text:  # a `latencyunit` line among a record's rows? (digits have no n)
            rows.unit_line = next(k for k in range(nrec) if "n" in data[k] or "N" in data[k])
        commas, one_each = _commas(text, nrows)
        two = np.flatnonzero(one_each).tolist()
        three = np.flatnonzero((commas == 2 * np.asarray(nrows)) & (commas > 0)).tolist() if len(two) < nrec else []
        if two:
            self._fill(rows, batch, two, text if len(two) == nrec else "".join(data[k] for k in two), three=False)
        if three:
            rows.sums = np.zeros((nrec, NSLOTS), dtype=np.float64)
            self._fill(rows, batch, three, "".join(data[k] for k in three), three=True)
        if batch.extremes:
            _seen(rows, batch)
        if batch.sources:
            _sources(rows, batch)
        return rows

    @staticmethod
    def _fill(rows: _Rows, batch: _Batch, picks: list[int], text: str, three: bool) -> None:
        """Parse the rows of records `picks` (their text, in order) into `rows`; a record with a bad row stays bad."""
        if "+" in text:  # '+1' is a key line to the reader
            return
        nrow = np.asarray(batch.rows if len(picks) == len(batch.rows) else [batch.rows[k] for k in picks],
                          dtype=np.int64)
        total = int(nrow.sum())
        row_sums = unsure = None
        if three:
            # digits only in the first two columns, so one float parse reads them exactly below 2**53
            if not re.fullmatch(_THREE_COLUMNS, text):
                return
            floats = _numbers(text.replace("\n", ","), np.float64)
            if floats.size != 3 * total:
                return
            head = np.minimum(floats.reshape(-1, 3)[:, :2], _EXACT)
            values, amounts = head[:, 0].astype(np.int64), head[:, 1].astype(np.int64)
            row_sums = floats[2::3] + 0.0  # -0.0 becomes 0.0, as the line reader's running sum makes it
            # inexact integers and bad sums: the line reader decides such rows
            unsure = (head.max(axis=1) >= _EXACT) | ~(np.isfinite(row_sums) & (row_sums >= 0))
        else:
            numbers = _numbers(text.replace("\n", ","), np.int64)
            if numbers.size != 2 * total:
                return
            values, amounts = numbers[0::2], numbers[1::2]
        record = np.repeat(np.asarray(picks), nrow)
        oracle_rec = np.fromiter(map(itemgetter(7), batch.headers if len(picks) == len(batch.headers)
                                     else [batch.headers[k] for k in picks]), dtype=bool, count=len(picks))
        oracle = np.repeat(oracle_rec, nrow) if oracle_rec.any() else None
        # negative numbers show as huge when seen unsigned
        bad = (values.view(np.uint64) >= _BIG) | ((values & (values - 1)) != 0)
        if oracle is not None:
            bad |= oracle & (values == 0)
        # Oracle's overflow row (4294967295, not a power of 2) is bad too: the line reader says what it held
        bad |= amounts.view(np.uint64) >= _BIG
        if unsure is not None:
            bad |= unsure
        rows.good[picks] = True
        if bad.any():
            rows.good[record[bad]] = False
            use = ~bad
            values, amounts, record = values[use], amounts[use], record[use]
            oracle = None if oracle is None else oracle[use]
            row_sums = None if row_sums is None else row_sums[use]
        slots = _slots(values, oracle)
        flat = record * NSLOTS + slots
        unique = flat.size < 2 or bool((flat[1:] > flat[:-1]).all())
        if unique:
            rows.counts.ravel()[flat] = amounts
        else:  # a record that repeats a bucket value: the counts add up
            np.add.at(rows.counts.ravel(), flat, amounts)
        rows.present.ravel()[flat] = True
        if row_sums is not None and rows.sums is not None:
            if unique:
                rows.sums.ravel()[flat] = row_sums
            else:
                np.add.at(rows.sums.ravel(), flat, row_sums)
            seconds = np.fromiter((unit_seconds(batch.headers[k][0].unit) for k in picks), dtype=np.float64,
                                  count=len(picks))
            rows.sums[picks] *= seconds[:, None]
            rows.three[record] = True  # not a record of only Oracle overflow rows: the line reader skips those


def _cut(text: str) -> bool:
    """Whether `text` holds a record marker (in any case) after other text on its line: a line cut short, which the
    line reader ends there."""
    low = text.lower()
    return BEGIN in low or END in low


def _commas(text: str, nrows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The commas of each record's rows (`nrows` of them, in turn, in `text`, each ending in a newline), and whether
    each of its rows holds exactly one (as many commas as rows can also be a row without one beside a row of three)."""
    chars = np.frombuffer(text.encode(errors="replace"), dtype=np.uint8)  # in UTF-8 no other byte is "," or "\n"
    ends, at = np.flatnonzero(chars == ord("\n")), np.flatnonzero(chars == ord(","))
    last = np.cumsum(nrows) - 1  # each record's last row (-1: none yet)
    upto = np.searchsorted(at, ends[np.maximum(last, 0)]) if len(ends) else np.zeros(len(nrows), dtype=np.int64)
    commas = np.diff(np.where(last >= 0, upto, 0), prepend=0)
    two = commas == np.asarray(nrows)
    if two.all() and (at < ends).all() and (at[1:] > ends[:-1]).all():
        return commas, two  # commas and row ends take turns: one comma a row
    per_row = np.diff(np.searchsorted(at, ends), prepend=0)
    odd = np.bincount(np.repeat(np.arange(len(nrows)), nrows)[per_row != 1], minlength=len(nrows))
    return commas, two & (odd == 0)


def _slots(values: np.ndarray, oracle: np.ndarray | None = None) -> np.ndarray:
    """The slot of each bucket value (0 or a power of two, below 2**62), as `slot_of_bucket_value` gives it: its bit
    length (0 for the value 0), one less where `oracle` (upper bounds), the top slot for any larger."""
    slots = np.frexp(values.astype(np.float64))[1]
    if oracle is not None:
        slots -= oracle
    return np.minimum(slots, NSLOTS - 1)

def _seen(rows: _Rows, batch: _Batch) -> None:
    """The values seen of the batch's records with an `extremes` line, parsed and checked in bulk (as the line
    reader's `extremes_faults` checks them); a record whose line is spelled otherwise, names a bucket it may not, or
    contradicts its record is read again line by line, which says why its line is dropped."""
    picks = [k for k, text in batch.extremes.items()
             if rows.good[k] and not batch.headers[k][7] and re.fullmatch(_EXTREMES_TEXT, text)]
    for k in batch.extremes:
        rows.good[k] = False  # until its line is read and found right
    if not picks:
        return
    texts = [batch.extremes[k] for k in picks]
    triples = np.fromiter((t.count(",") for t in texts), dtype=np.int64, count=len(texts)) // 3 + 1
    numbers = _numbers(",".join(texts), np.float64).reshape(-1, 3)
    if len(numbers) != int(triples.sum()):
        return
    owner = np.repeat(np.arange(len(picks)), triples)
    values = numbers[:, 0].astype(np.int64)
    per = np.fromiter((unit_seconds(batch.headers[k][0].unit) for k in picks), dtype=np.float64, count=len(picks))
    least, most = numbers[:, 1] * per[owner], numbers[:, 2] * per[owner]
    power = (values & (values - 1)) == 0  # 0 or a power of two: `slot_of_bucket_value`'s rule outside Oracle
    order = (numbers[:, 1] <= numbers[:, 2]) & np.isfinite(numbers[:, 2])  # `0 <= smallest <= largest < inf`
    slots = _slots(values)
    lows, highs_seen = np.full(len(picks) * NSLOTS, np.nan), np.full(len(picks) * NSLOTS, np.nan)
    np.fmin.at(lows, owner * NSLOTS + slots, least)  # a bucket named twice: its widest range
    np.fmax.at(highs_seen, owner * NSLOTS + slots, most)
    seen = np.stack([lows.reshape(-1, NSLOTS), highs_seen.reshape(-1, NSLOTS)], axis=1)
    at = np.asarray(picks)
    kinds = [(batch.headers[k][0].datasource, batch.headers[k][0].unit) for k in picks]
    highs = {kind: bounds_seconds(*kind)[1] for kind in set(kinds)}
    high = np.stack([highs[kind] for kind in kinds])
    sums = None if rows.sums is None else np.where(rows.three[at][:, None], rows.sums[at], np.nan)
    faults = extremes_faults(seen, high, rows.counts[at], sums)
    wrong = np.zeros(len(picks), dtype=bool)
    np.logical_or.at(wrong, owner, ~(power & order))
    for fault in faults:
        wrong |= fault.any(axis=1)
    fine = at[~wrong]
    rows.good[fine] = True
    rows.seen[fine] = True
    rows.extremes = np.full((len(rows.good), 2, NSLOTS), np.nan)
    rows.extremes[fine] = seen[~wrong]


def _sources(rows: _Rows, batch: _Batch) -> None:
    """The source's own buckets of the batch's records with `source...` lines, parsed in bulk and checked as the line
    reader checks them; a record whose lines are spelled otherwise or do not hold is read again line by line, which
    says why."""
    picks = []
    listed: list[tuple[int, str, str]] = []  # the records with buckets: (record, bounds, counts)
    for k, (bounds_text, counts_text, seconds_text) in batch.sources.items():
        if rows.good[k] and (seconds_text is None or re.fullmatch(_SECONDS_TEXT, seconds_text)):
            if bounds_text is None:
                picks.append(k)
            elif counts_text is not None and re.fullmatch(_BOUNDS_TEXT, bounds_text) \
                    and re.fullmatch(_COUNTS_TEXT, counts_text) and bounds_text.count(",") == counts_text.count(","):
                picks.append(k)
                listed.append((k, bounds_text, counts_text))
        rows.good[k] = False  # until its lines are read and found right
    sizes = [b.count(",") + 1 for _, b, _ in listed]
    bounds = _numbers(",".join(b for _, b, _ in listed), np.float64)
    counts = _numbers(",".join(c for _, _, c in listed), np.int64)
    if len(bounds) != sum(sizes) or len(counts) != sum(sizes):
        return
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    rising = np.ones(len(bounds), dtype=bool)
    rising[1:] = bounds[1:] > bounds[:-1]
    rising[ends[:-1]] = True  # each record's first bound starts afresh
    ascending = np.logical_and.reduceat(rising, ends - np.asarray(sizes, dtype=np.int64)) if listed \
        else np.zeros(0, dtype=bool)
    of = {k: at for at, (k, _, _) in enumerate(listed)}
    for k in picks:
        text = batch.sources[k][2]
        seconds = None if text is None else float(text)
        if seconds is not None and not seconds < np.inf:
            continue
        at = of.get(k)
        if at is None:
            rows.source[k] = SourceBuckets.sum_only(seconds)  # type: ignore[arg-type]
        elif ascending[at]:
            first = int(ends[at] - sizes[at])
            rows.source[k] = SourceBuckets(tuple(bounds[first:ends[at]].tolist()), counts[first:ends[at]].copy(),
                                           seconds)
        else:
            continue
        rows.good[k] = True
