"""HdrHistogram interval logs (`.hlog`: jHiccup, cassandra-stress, HdrHistogram's HistogramLogWriter).

Layout: `#[StartTime: <epoch s> ...]` and `#[BaseTime: <epoch s> ...]` comment lines, an optional legend
`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`, then one line per
interval: `[Tag=NAME,]<start s>,<length s>,<max>,<base64 compressed histogram>`. Each line becomes one column
(start = base time + start, end = start + length); each tag is a stream (untagged lines: the file's name).
Times follow Java's HistogramLogReader: without a StartTime line the first timestamp is the start time;
without a BaseTime line, timestamps more than a year before the start time are relative to it, others absolute.
A header line after interval lines starts another log (logs joined with `cat`), with its own times: a stream's
intervals in it that go back into time already read are another run, shown apart (`HlogReader._run`).

Counts fold exactly into the log2 slots (HdrHistogram sub-buckets nest inside powers of two) and time spent is
Σ count x the sub-bucket's median equivalent value, exact to the histogram's significant digits. Each column also
keeps its occupied sub-buckets (`Interval.source_buckets`, `hdrhistogram_buckets`): the stream's overall percentiles
come from them, as the library's `getValueAtPercentile` within a sub-bucket, not from the rows.
Values carry no unit in the file: `--unit`, default ns, the unit jHiccup, cassandra-stress and HdrHistogram's
own HistogramLogProcessor (which prints values / 1e6 as ms) record; YCSB and Pulsar's perf tools record µs.
A tag whose first histogram is a DoubleHistogram (fractions of the unit: 0.4 for 0.4 ms) becomes a nanosecond
stream, its values scaled from `--unit`, so that fractions keep their own rows; read without `--unit`, a note says
that nanoseconds are only the default (fractions of one are no time a clock takes: 0.4 was likely 0.4 ms).
A bad line or payload is reported with its line number; a payload that cannot be decoded still gives its
column, empty and marked as a gap, so the time line stays true.
An interval shorter than the log's resolution (Java writes `2.000,0.000,...` for one that starts and ends in one
millisecond; Java's reader keeps its events) has no length to be a column of its own: its histogram joins its
stream's next interval (which then starts where it did), or, when none follows, it gets half the resolution (the
smallest length float precision allows, if that is too short); a note names its line(s) and says which.
A log whose header says `#[Logged with jHiccup version ...]` holds the platform's hiccups (how late a thread that
only sleeps woke): a note at each stream's first line says so, and tells what its values measure (`Notice.measures`),
which words its findings; its streams keep their names and datasource.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, ClassVar

import click
import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.deltas import MAX_RUNS, apart_label, apart_notice
from latencymap.core.lean import dataclass
from latencymap.core.lines import text_lines
from latencymap.core.model import Interval, Notice, SourceBuckets, StreamId, empty_counts
from latencymap.core.patterns import lazy_pattern
from latencymap.core.sanitize import StreamNames, clean_label, clean_text, cut_label, excerpt
from latencymap.core.source_totals import coarsen_buckets, combine_buckets
from latencymap.core.units import normalize_unit, unit_seconds
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import unit_option

if TYPE_CHECKING:
    from latencymap.sources.hdrhistogram_codec import Folded, Settings

DEFAULT_UNIT = "nanosec"
DATASOURCE = "hdrhistogram"
#: Java's rule: a first timestamp more than a year before StartTime means timestamps are relative.
YEAR = 365 * 24 * 3600.0
#: Seconds two columns of one stream may overlap silently: Java writes times rounded to the millisecond.
OVERLAP = 0.002
#: The unit of a DoubleHistogram's stream, and the start of its base64 payloads (cookie 0x0c72124f).
DOUBLE_UNIT = "nanosec"
DOUBLE_PREFIX = "DHIST"
#: A stream's columns further apart than this (and than the new column is long) have a gap column between them.
HOLE_S = 1.0
#: Lines read together when they come one by one (`read`); `read_text` takes each chunk as it arrives.
BATCH_LINES = 1024
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_START = lazy_pattern(rf"^#\[StartTime:\s*({_NUMBER})")
_BASE = lazy_pattern(rf"^#\[BaseTime:\s*({_NUMBER})")
_JHICCUP = lazy_pattern(r"^#\[Logged with jHiccup version\s*([^\]]*)")
#: A log's header lines (the writer's `outputLogFormatVersion`, `outputStartTime`, `outputBaseTime`, `outputLegend`):
#: after interval lines, another log starts.
_HEADER = lazy_pattern(r'^(?:#\[(?:StartTime:|BaseTime:|Histogram log format version)|"StartTimestamp")')
#: What a jHiccup log's values measure (`Notice.measures`): the `WHY` entry of `latencymap.analysis.findings` that
#: words its findings (the platform's pauses, not requests').
JHICCUP = "jhiccup"
_DATA = lazy_pattern(r"^(?:Tag=([^,]*),)?([^,]*),([^,]*),([^,]*),(\S*)$")
#: A log's own lines; not StartTime/BaseTime, which HistogramLogProcessor's percentile printouts carry too.
_SNIFF = re.compile(r'^(?:#\[Histogram log format version|"StartTimestamp",'
                    r'|(?:Tag=[^,]*,)?[\d.]+,[\d.]+,[\d.]+,D?HIST)')
_EXPECTED = "expected '[Tag=NAME,]<start s>,<length s>,<max>,<base64 histogram>'"
#: Longer lines are cut (and their columns left empty, said): a histogram of 4 or 5 significant digits over a
#: wide range of values encodes to 100-300 KB.
MAX_HLOG_LINE = 16 * 1024 * 1024


class HdrHistogramFormat(TextFormat):
    """HdrHistogram interval logs, one column per interval line, one stream per tag."""

    name = "hdrhistogram"
    summary = ("HdrHistogram interval logs (.hlog: jHiccup, cassandra-stress, HistogramLogWriter; integer or Double "
               "histograms), --unit (ns)")
    priority = 10
    max_line: ClassVar[int] = MAX_HLOG_LINE

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any(_SNIFF.match(line) for line in head)

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [unit_option()]

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        batch: list[str] = []
        reader = self._reader(name)
        for line in lines:
            batch.append(line)
            if len(batch) >= BATCH_LINES:
                yield from reader.batch(batch)
                batch = []
        yield from reader.batch(batch)
        yield from reader.finish()

    def read_text(self, chunks: Iterable[str], name: str) -> Iterator[Item]:
        reader = self._reader(name)
        for chunk in chunks:  # whole lines, as they arrive: a live log's columns show at once
            yield from reader.batch(text_lines(chunk))
        yield from reader.finish()

    def _reader(self, name: str) -> HlogReader:
        given = self.options.get("unit")
        return HlogReader(name, normalize_unit(given or DEFAULT_UNIT), unit_given=bool(given))


@dataclass(slots=True)
class _Pending:
    """A data line whose payload waits for its batch to be decoded."""

    line: int
    stream: StreamId
    start: float
    end: float
    payload: str
    hint: str  # why a payload may not decode: the line was cut (at MAX_HLOG_LINE, or the input ended in it)
    scale: int  # stream units per value unit (1, or 1000**k for a DoubleHistogram's nanosecond stream)
    double: bool  # a DoubleHistogram's payload
    #: Intervals too short to be columns (`HlogReader.held`) whose histograms this column's adds up.
    joined: tuple[_Pending, ...] = ()
    written: str = ""  # the length as the line writes it
    resolution: float = 0.0  # the smallest length the line's length field can say (`resolution`)


class HlogReader:
    """State of one log being read: start and base times, streams by tag, the line count."""

    def __init__(self, name: str, unit: str, unit_given: bool = True) -> None:
        self.name = name
        self.unit = unit
        #: Whether `unit` was asked for (`--unit`), not only the default: DoubleHistogram values then need no doubt.
        self.unit_given = unit_given
        self.label = clean_label("stdin" if name == "<stdin>" else PurePath(name).name) or "hdrhistogram"
        self.streams: dict[str | None, StreamId] = {}
        self.names = StreamNames()  # per tag (untagged lines: the file's name), so two tags never share a stream
        self.data_seen = False
        self.start_time: float | None = None
        self.base_time: float | None = None
        self.base_ahead = False  # a BaseTime line after data lines: the next log's, whose StartTime may follow it
        self.said_below = False
        self.said_straddling = False
        self.said_double = False
        self.said_backwards = False
        self.said_renamed: dict[StreamId, str] = {}
        #: The jHiccup version its header names (`#[Logged with jHiccup version ...]`): its streams' values are
        #: hiccups, said once per stream as it comes; None: logged by another tool.
        self.jhiccup: str | None = None
        self.ends: dict[StreamId, float] = {}
        #: Per stream, its intervals shorter than the log's resolution, in line order, waiting for its next one.
        self.held: dict[StreamId, list[_Pending]] = {}
        self.lines = 0
        self.intervals_read = False
        self.after_data: int | None = None  # the first comment or legend line after the last interval line
        self.next_log: int | None = None  # the first line of a log whose header came after interval lines
        self.log_line: int | None = None  # the first line of the log being read, when it is not the input's first
        #: Per stream, its runs (itself first, then those shown apart), and the one each tag's intervals go in in
        #: the log being read (`_run`).
        self.runs: dict[StreamId, list[StreamId]] = {}
        self.shown: dict[StreamId, StreamId] = {}
        self.measures: dict[StreamId, str] = {}  # what notes said streams measure (`Notice.measures`)

    def batch(self, lines: list[str]) -> Iterator[Item]:
        """Items of some consecutive lines, in line order; their payloads are decoded together."""
        out: list[Notice | Interval | _Pending] = []
        for raw in lines:
            self.lines += 1
            line = raw.strip()
            if not line:
                continue
            if line.startswith(("#", '"StartTimestamp"')):
                out.extend(self._header(line, self.lines))
                out.extend(self._comment(line, self.lines))
                continue
            hint = (f" (the line was cut at {MAX_HLOG_LINE} characters)" if len(raw.rstrip("\r\n")) >= MAX_HLOG_LINE
                    else "" if raw.endswith("\n") else " (the input ends in this line, without a line end: cut short?)")
            out.extend(self._data(line, self.lines, hint))
        yield from self._decoded(out)

    def finish(self) -> Iterator[Item]:
        """Items of the intervals still held at the end of the input (no later interval of their stream came)."""
        yield from self._decoded(list(self._release()))

    def _decoded(self, out: list[Notice | Interval | _Pending]) -> Iterator[Item]:
        """`out` with its pending columns decoded (all payloads together), in order."""
        from latencymap.sources.hdrhistogram_codec import fold_payloads  # the decoder, not needed to sniff

        pending = [q for p in out if isinstance(p, _Pending) for q in (p, *p.joined)]
        folded = fold_payloads([p.payload for p in pending], [p.scale for p in pending])
        row = 0
        for item in out:
            if not isinstance(item, _Pending):
                yield item
                continue
            yield from self._column(item, folded, range(row, row + 1 + len(item.joined)))
            row += 1 + len(item.joined)

    def _header(self, line: str, n: int) -> Iterator[Notice | Interval | _Pending]:
        """Note where a log starts whose header comes after interval lines (another log joined to this one)."""
        if self.intervals_read and self.after_data is None:
            self.after_data = n
        if self.after_data is not None and self.next_log is None and _HEADER().match(line):
            self.next_log = self.after_data
            yield from self._release()  # held intervals do not join the next log's

    def _comment(self, line: str, n: int) -> Iterator[Notice | Interval | _Pending]:
        if (m := _START().match(line)) and (value := finite_number(m.group(1))) is not None:
            if self.data_seen:  # logs written one after another into one file: the next one's times are its own
                self.base_time = self.base_time if self.base_ahead else None
                self.data_seen = self.base_ahead = False
                origin = f"its BaseTime {self.base_time:.3f}" if self.base_time is not None else "it"
                yield Notice(f"{self.name}: line {n}: a new log starts here (StartTime {value:.3f}); its times "
                             f"count from {origin}", skipped=0)
            self.start_time = value
        elif (m := _BASE().match(line)) and (value := finite_number(m.group(1))) is not None:
            self.base_time, self.base_ahead = value, self.data_seen
        elif m := _JHICCUP().match(line):
            self.jhiccup = clean_text(m.group(1).strip(), 40)

    def _data(self, line: str, n: int, hint: str) -> Iterator[Notice | Interval | _Pending]:
        m = _DATA().match(line)
        stamp, length, peak = (finite_number(m.group(i)) for i in (2, 3, 4)) if m else (None, None, None)
        if m is None or stamp is None or length is None or peak is None:
            yield Notice(f"{self.name}: line {n}: {_EXPECTED}, got {excerpt(line)}; line skipped")
            return
        if length < 0:
            yield Notice(f"{self.name}: line {n}: expected an interval length of 0 or more, got {length:g}; "
                         "line skipped")
            return
        double = m.group(5).startswith(DOUBLE_PREFIX)
        if double and not self.said_double and self.unit != DOUBLE_UNIT:
            self.said_double = True
            yield Notice(f"{self.name}: line {n}: DoubleHistogram values, in {self.unit} (--unit), are shown in "
                         f"{DOUBLE_UNIT} so that fractions of a {self.unit[:-3]}second keep their own rows", skipped=0)
        known = len(self.streams)
        stream = self._stream(m.group(1), double)
        if (renamed := self.said_renamed.pop(stream, None)) is not None:
            yield Notice(f"{self.name}: line {n}: {renamed}", skipped=0)
        if self.jhiccup is not None and len(self.streams) > known:  # a new stream of a jHiccup log
            version = f" {self.jhiccup}" if self.jhiccup else ""
            self.measures[stream] = JHICCUP
            yield Notice(f"{self.name}: {self._who(stream)}logged by jHiccup{version}: its values are the "
                         "platform's hiccups (how late a thread that only sleeps woke), not requests' latencies",
                         skipped=0, measures=(stream, JHICCUP))
        self.data_seen, self.base_ahead = True, False
        self.intervals_read, self.after_data = True, None
        if self.next_log is not None:  # the first interval of a log joined to the one before
            self.log_line, self.next_log = self.next_log, None
            self.shown.clear()
        stamped = self._absolute(stamp)
        if self.log_line is not None:
            run, notices = self._run(stream, stamped, n)
            yield from notices
            if run is None:
                return
            stream = run
        scale = round(unit_seconds(self.unit) / unit_seconds(stream.unit))
        pending = _Pending(n, stream, stamped, stamped, m.group(5), hint, scale, double,
                           written=m.group(3).strip(), resolution=resolution(m.group(3)))
        short = not stamped + length > stamped
        start, end, notice = (stamped, stamped, None) if short else self._placed(stream, stamped, length, n)
        if notice is not None:
            yield notice
        if not math.isfinite(end):
            yield Notice(f"{self.name}: line {n}: expected an interval that ends at a finite time, got start "
                         f"{start:g} s and length {length:g}; line skipped")
            return
        if not end > start:  # no length to be a column: its histogram waits for its stream's next interval
            self.held.setdefault(stream, []).append(pending)
            return
        held = self.held.pop(stream, [])
        previous = self.ends.get(stream)
        if held:
            start = max(min(held[0].start, start), -math.inf if previous is None else previous)
            whose = "its" if len(held) == 1 else "their"
            yield Notice(f"{self.name}: {_lines(held)}: {self._who(stream)}{_too_short(held)}: {whose} events join "
                         f"the stream's next interval (line {n}), whose column starts at {self._logged(start)}",
                         skipped=0)
        if previous is not None and start - previous > max(HOLE_S, length):
            yield Interval(stream, previous, start, empty_counts(), np.zeros(NSLOTS), gap=True)
        self.ends[stream] = end
        pending.start, pending.end, pending.joined = start, end, tuple(held)
        yield pending

    def _release(self) -> Iterator[Notice | Interval | _Pending]:
        """The held intervals of every stream as columns of their own, half the log's resolution long each."""
        for stream, held in self.held.items():
            first = held[0]
            previous = self.ends.get(stream)
            start = first.start if previous is None else max(first.start, previous)
            end, how = start + min(p.resolution for p in held) / 2, "half the log's resolution"
            if not end > start:
                end, how = math.nextafter(start, math.inf), "the least length float precision allows there"
            if not math.isfinite(end):  # the largest float: the column ends there instead
                start, end = math.nextafter(start, -math.inf), start
            yield Notice(f"{self.name}: {_lines(held)}: {self._who(stream)}{_too_short(held)}, and no later interval "
                         f"of its stream follows: its column starts at {self._logged(start)} and lasts "
                         f"{end - start:.3g} s ({how})", skipped=0)
            if previous is not None and start - previous > HOLE_S:
                yield Interval(stream, previous, start, empty_counts(), np.zeros(NSLOTS), gap=True)
            self.ends[stream] = end
            first.start, first.end, first.joined = start, end, tuple(held[1:])
            yield first
        self.held.clear()

    def _column(self, p: _Pending, folded: Folded, rows: range) -> Iterator[Item]:
        """The column of `p` from its rows of `folded`: its own payload's, then those of the intervals it joins."""
        good = []
        for row, q in zip(rows, (p, *p.joined), strict=True):
            error = folded.errors[row]
            if error is None:
                good.append(row)
                continue
            where = "the column is left empty (gap)" if q is p and not p.joined else (
                f"its events are missing from the column of line {p.line}")
            yield Notice(f"{self.name}: line {q.line}: {self._who(q.stream)}{error}{q.hint}; {where}")
        if not good:
            yield Interval(p.stream, p.start, p.end, empty_counts(), np.zeros(NSLOTS), gap=True)
            return
        if p.double and not self.said_double and not self.unit_given:  # decoded: its values are read as the default's
            self.said_double = True
            yield Notice(f"{self.name}: line {p.line}: DoubleHistogram values read as {self.unit}, --unit's default "
                         "(the log does not say its unit): a DoubleHistogram holds fractions of its unit (0.4 for 0.4 "
                         "ms), and fractions of a nanosecond are shorter than any clock times; if these are ms or µs, "
                         "say --unit ms or --unit us", skipped=0)
        for row in good:
            settings = folded.settings[row]
            assert settings is not None
            yield from self._approximations(settings, int(folded.below_lowest[row]), int(folded.straddling[row]), p)
        per = unit_seconds(p.stream.unit)
        yield Interval(p.stream, p.start, p.end, folded.counts[good].sum(axis=0), folded.values[good].sum(axis=0) * per,
                       extremes=np.stack((np.fmin.reduce(folded.extremes[good, 0], axis=0),
                                          np.fmax.reduce(folded.extremes[good, 1], axis=0))) * per,
                       source_buckets=_own_buckets(folded, good))

    def _logged(self, start: float) -> str:
        """A time as the log writes it (relative to its base time, if any), for messages."""
        return f"{start - (self.base_time or 0.0):.3f}"

    def _absolute(self, stamp: float) -> float:
        """Epoch seconds of a logged timestamp, by Java's HistogramLogReader rules."""
        if self.start_time is None:
            self.start_time = stamp
        if self.base_time is None:
            self.base_time = self.start_time if stamp < self.start_time - YEAR else 0.0
        return stamp + self.base_time

    def _placed(self, stream: StreamId, start: float, length: float, n: int) -> tuple[float, float, Notice | None]:
        """(start, end) of a column: not before the stream's previous column ends.

        Java writes times rounded to the millisecond, so neighbours may overlap by that much: the start moves up.
        A log that goes back in time further has such columns placed after the previous one, length kept.
        """
        previous = self.ends.get(stream)
        if previous is None or start >= previous:
            return start, start + length, None
        if previous - start <= OVERLAP and start + length > previous:
            return previous, start + length, None
        notice = None
        if not self.said_backwards:
            self.said_backwards = True
            notice = Notice(f"{self.name}: line {n}: {self._who(stream)}the interval starts at {start:.3f}, before the "
                            f"previous one ends ({previous:.3f}); it and any later such interval are placed after "
                            "the previous one", skipped=0)
        return previous, previous + length, notice

    def _run(self, stream: StreamId, start: float, n: int) -> tuple[StreamId | None, list[Notice]]:
        """The run of `stream` that an interval of a log joined to an earlier one (at `start`, line `n`) goes in.

        A log whose intervals come after the stream's last column (the recorder restarted) goes on in it; one that
        goes back into time already read (two hosts' logs joined with `cat`, a log twice) is another run, shown apart
        as `LABEL [INPUT, from line N]` (N: the log's first line), as a recording's `counts, interval` records are;
        a later log goes on in the first run it follows. Past `MAX_RUNS` runs, None: the line is skipped.
        """
        if (shown := self.shown.get(stream)) is not None:
            return shown, []
        runs = self.runs.setdefault(stream, [stream])
        for run in runs:
            end = self.ends.get(run)
            if end is None or start >= end - OVERLAP:
                self.shown[stream] = run
                return run, []
        last = self.ends[stream]
        if len(runs) >= MAX_RUNS:
            return None, [Notice(f"{self.name}: line {n}: '{stream.label}' goes back in time again (its interval "
                                 f"starts at {start:.3f}, before its last one ends, {last:.3f}), and {MAX_RUNS} runs "
                                 "of it are shown apart already; line skipped")]
        assert self.log_line is not None
        label = self.names.name(clean_label(apart_label(stream.label, self.name, self.log_line)), stream.unit,
                                key=(stream.label, self.log_line))
        shown = self.shown[stream] = StreamId(label, DATASOURCE, stream.unit)
        runs.append(shown)
        return shown, [apart_notice(
            f"{self.name}: line {n}: '{stream.label}' goes back into the time of its earlier intervals (the log that "
            f"starts at line {self.log_line} has it start at {start:.3f}, before its last one ends, {last:.3f}): "
            f"another run (logs joined with cat?), shown apart, as '{label}'", stream, shown, self.measures)]

    def _who(self, stream: StreamId) -> str:
        """`LABEL: ` naming a tag's stream in a message; nothing for the untagged lines' (the file, named already)."""
        return "" if stream is self.streams.get(None) and stream.label == self.label else f"{stream.label}: "

    def _stream(self, tag: str | None, double: bool) -> StreamId:
        """The stream of `tag`, made at its first line: in nanoseconds when that line holds a DoubleHistogram."""
        stream = self.streams.get(tag)
        if stream is None:
            wanted = self.label if tag is None else clean_label(tag) or "(empty tag)"
            unit = DOUBLE_UNIT if double else self.unit
            label = self.names.name(wanted, unit, key=(tag,))  # (None,) for the untagged lines: a key too
            stream = self.streams[tag] = StreamId(label, DATASOURCE, unit)
            if label != cut_label(wanted, self.names.limit):  # another tag's stream has its name: NAME (2)
                what = "untagged lines" if tag is None else f"tag {excerpt(tag)}"
                self.said_renamed[stream] = (f"{what} shown as {label!r}: as a stream name it is the same as an "
                                             "earlier tag's or the untagged lines' (control characters replaced, "
                                             "long names cut)")
        return stream

    def _approximations(self, hist: Settings, below: int, straddling: int, p: _Pending) -> Iterator[Notice]:
        """Say once per log where a count cannot sit in one slot exactly."""
        n = p.line
        if below and not self.said_below:
            self.said_below = True
            top = 1 << hist.unit_magnitude
            yield Notice(f"{self.name}: line {n}: {below} value(s) here (and any on later lines) below the "
                         f"histogram's lowest discernible value {hist.lowest} (HdrHistogram keeps [0, {top}) as one "
                         f"count) are shown at {top // 2}", skipped=0)
        if straddling and not self.said_straddling:
            self.said_straddling = True
            why = (f"the conversion ratio {hist.ratio!r} is not a power of two" if p.scale == 1 else
                   f"{self.unit} values shown in {p.stream.unit} ({p.scale:,} to one) do not keep powers of two")
            yield Notice(f"{self.name}: line {n}: {why}: {straddling} count(s) whose range crosses a power of two are "
                         "placed by their median", skipped=0)


def _own_buckets(folded: Folded, rows: list[int]) -> SourceBuckets | None:
    """The occupied sub-buckets of `rows` of `folded` added up; None when none holds a value, or when two cannot be
    added exactly (histograms of different settings: the column's percentiles then come from its rows)."""
    bounds, counts = folded.own.of(rows[0])
    for row in rows[1:]:
        more, more_counts = folded.own.of(row)
        if not len(more):
            continue
        if not len(bounds):
            bounds, counts = more, more_counts
            continue
        pair = (tuple(map(float, bounds)), counts, tuple(map(float, more)), more_counts)
        combined = combine_buckets(*pair) or coarsen_buckets(*pair)
        if combined is None:
            return None
        bounds, counts = np.array(combined[0]), combined[1]
    return SourceBuckets(bounds, counts, None) if len(bounds) else None


def _lines(held: Sequence[_Pending]) -> str:
    """`line 7` or `lines 7, 9`: the lines of some held intervals."""
    return f"line {held[0].line}" if len(held) == 1 else "lines " + ", ".join(str(p.line) for p in held)


def _too_short(held: Sequence[_Pending]) -> str:
    """What is wrong with some held intervals: no length to be a column of their own."""
    what = "an interval" if len(held) == 1 else "intervals"
    lengths = "/".join(dict.fromkeys(p.written for p in held))
    if any(float(p.written) for p in held):
        return f"{what} of length {lengths} s, too short for float precision at {held[0].start:g} s"
    return f"{what} of length {lengths} s (shorter than the log's resolution, {min(p.resolution for p in held):g} s)"


def resolution(text: str) -> float:
    """The smallest length a logged number's digits can say: 0.001 s for `0.000` (Java's `%.3f`), 1 s for `0`."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    power = int(exponent) if exponent.lstrip("+-").isdigit() and len(exponent) < 6 else 0
    return 10.0 ** max(-300, min(300, power - len(mantissa.partition(".")[2])))


#: Longest number read: Java prints an empty DoubleHistogram's max (6.5e237 / 1e6) with "%.3f", 235 characters.
MAX_NUMBER = 400


def finite_number(text: str | None) -> float | None:
    """The finite number a text spells (at most MAX_NUMBER characters), else None."""
    try:
        value = float(text) if text is not None and len(text) <= MAX_NUMBER else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None
