"""Oracle 10046 (SQL trace) files: `WAIT #...: nam='<event>' ela= <µs> ... tim=<µs>` lines → histograms.

Waits of the chosen events (`--event`, repeatable, default `db file sequential read`; `all` for
every event) are grouped into columns of `--interval` seconds of trace time by `tim` (the end of
the wait), binned on the log2 scale by `ela` (µs), with exact time per bucket. Each event is a
stream; columns without waits are empty columns, so rates stay true (with `all`, an event first
seen later gets the trace's columns before its first wait, empty, as a named one has them). `tim` is epoch µs on
current releases; when it is not (older releases count from an arbitrary origin), the trace's
first `*** YYYY-MM-DD HH:MM:SS` line anchors it: the first `tim` after that line (on any line) is that time. The
stamp is the server's local time with no zone: it is taken as written, labelled UTC, whatever the reading machine's
zone. A wait past the top bucket's nominal end is counted in that open bucket, and said once per event.
"""

from __future__ import annotations

import itertools
import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

import click
import numpy as np

from latencymap.core.buckets import TOP_BOUND, bin_extremes, bin_values, past_top_note
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import StreamNames, clean_label, clean_text, excerpt
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import DEFAULT_EVENT, DEFAULT_INTERVAL, event_option, interval_option
from latencymap.sources.printed_histograms import column_spans, decimal

DATASOURCE = "oracle10046"
_WAIT = re.compile(r"^WAIT #\d*:\s*nam='([^']*)'\s+ela=\s*(\d+)")
_TIM = re.compile(r"\btim=(\d+)")
_STAMP = re.compile(r"^\*\*\* (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)")
_SNIFF = re.compile(r"^(WAIT #\d*: nam='|PARSING IN CURSOR #|\*\*\* SESSION ID:\(|EXEC #\d+:c=)")
_EXPECTED = "expected \"WAIT #<cursor>: nam='<event>' ela= <µs> ... tim=<µs>\""
_EPOCH_FLOOR = 1e8  # seconds: a tim below this is not an epoch time


class Trace10046Format(TextFormat):
    """Oracle 10046 trace files read into one stream per wait event."""

    name = "oracle10046"
    summary = "Oracle 10046 trace files (WAIT #..: nam='<event>' ela= .. tim=..), --event, --interval"
    priority = 5

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any(_SNIFF.match(line) for line in head)

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            event_option(),
            interval_option(),
        ]

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        return _Reader(name, tuple(self.options.get("event") or (DEFAULT_EVENT,)),
                       float(self.options.get("interval") or DEFAULT_INTERVAL)).read(lines)


class _Reader:
    """State of one trace being read."""

    def __init__(self, name: str, events: tuple[str, ...], interval: float) -> None:
        self.name = name
        self.interval = interval
        self.every = any(e.lower() == "all" for e in events)
        self.wanted = {e.lower(): e for e in events if e.lower() != "all"}
        self.streams: dict[str, StreamId] = {}
        self.names = StreamNames()  # a long event name is cut in the middle; a cut another event has gets (2)
        if not self.every:
            self.streams = {key: self._stream(e) for key, e in self.wanted.items()}
        self.pending: dict[str, list[int]] = {}
        self.seen: Counter[str] = Counter()
        self.column: int | None = None
        self.offset: float | None = None
        self.anchor: float | None = None
        self.anchor_tim: float | None = None  # seconds: the first tim after the anchor's line, the anchor's instant
        self.late = 0
        self.past_top: set[str] = set()  # the events told a wait past the top slot
        self.starts = array("q")  # the first column of each span given so far (`_flush`), for `_backfill`

    def read(self, lines: Iterable[str]) -> Iterator[Item]:
        for n, line in enumerate(lines, 1):
            if not line.startswith("WAIT"):
                if self.anchor is None:
                    if line.startswith("*** "):
                        self.anchor = _stamp(line)
                elif self.anchor_tim is None:
                    self._pair(_TIM.search(line))
                continue
            m = _WAIT.match(line)
            tim = _TIM.search(line, m.end()) if m else None
            ela = decimal(m.group(2)) if m else None
            if m is None or tim is None or len(tim.group(1)) > 17 or ela is None:
                yield Notice(f"{self.name}: line {n}: {_EXPECTED}, got {excerpt(line)}; line skipped")
                continue
            if self.anchor is not None and self.anchor_tim is None:
                self._pair(tim)
            event = m.group(1)
            self.seen[event] += 1
            key = event.lower()
            if not self.every and key not in self.wanted:
                continue
            if key not in self.streams:
                self.streams[key] = self._stream(event)
                yield from self._backfill(self.streams[key])
            if ela >= TOP_BOUND and key not in self.past_top:
                self.past_top.add(key)
                yield Notice(f"{self.name}: line {n}: {self.streams[key].label}: "
                             f"{past_top_note(ela, 'microsec')}", skipped=0)
            unplaced = self.offset is None and int(tim.group(1)) / 1e6 < _EPOCH_FLOOR and self.anchor_tim is None
            column = self._column(int(tim.group(1)))
            if unplaced:
                yield Notice(f"{self.name}: line {n}: tim {tim.group(1)} is not epoch microseconds (an older release "
                             "counts it from an arbitrary origin) and no '*** YYYY-MM-DD HH:MM:SS' line came before "
                             "this first wait to date it: the waits' times are counted from 1970-01-01 (lengths and "
                             "counts are right)", skipped=0)
            if self.column is None:
                self.column = column
            elif column > self.column:
                yield from self._flush(column)
            elif column < self.column:
                self.late += 1
                if self.late == 1:
                    yield Notice(f"{self.name}: line {n}: tim goes backwards; earlier waits are counted in the "
                                 "current column", skipped=0)
            self.pending.setdefault(key, []).append(ela)
        if self.column is not None:
            yield from self._flush(self.column + 1)
        yield from self._missing()

    def _stream(self, event: str) -> StreamId:
        return StreamId(self.names.name(clean_label(event)), DATASOURCE, "microsec")

    def _pair(self, tim: re.Match[str] | None) -> None:
        """Take `tim` (of the first line with one after the anchor's) as the anchor's instant on the trace's clock."""
        if tim is not None and len(tim.group(1)) <= 17:
            self.anchor_tim = int(tim.group(1)) / 1e6

    def _column(self, tim: int) -> int:
        seconds = tim / 1e6
        if self.offset is None:
            self.offset = 0.0
            if seconds < _EPOCH_FLOOR and self.anchor is not None and self.anchor_tim is not None:
                self.offset = self.anchor - self.anchor_tim
        return math.floor((seconds + self.offset) / self.interval)

    def _flush(self, upto: int) -> Iterator[Interval]:
        """Columns from the current one to just before `upto` (empty ones included)."""
        assert self.column is not None
        for first, stop in column_spans(self.column, upto):
            yield from self._columns(first, stop)
            self.pending = {}
            self.starts.append(first)
        self.column = upto

    def _backfill(self, stream: StreamId) -> Iterator[Interval]:
        """The columns given so far, empty, for a stream first seen now (`all`): it did not wait in them, and its
        rate and timeline cover the whole trace, as a named event's do."""
        if self.column is None:
            return
        for first, stop in itertools.pairwise([*self.starts, self.column]):
            yield _interval(stream, first * self.interval, stop * self.interval, ())

    def _columns(self, first: int, stop: int) -> Iterator[Interval]:
        for key, stream in self.streams.items():
            yield _interval(stream, first * self.interval, stop * self.interval, self.pending.get(key, ()))

    def _missing(self) -> Iterator[Notice]:
        found = {e.lower() for e in self.seen}
        absent = [e for key, e in self.wanted.items() if key not in found]
        if absent:
            common = ", ".join(f"{clean_text(e)!r} ({c})" for e, c in self.seen.most_common(8)) or "none"
            yield Notice(f"{self.name}: no WAIT lines for {', '.join(repr(clean_text(e)) for e in absent)}; "
                         f"events in this trace: {common}", skipped=0)


def _interval(stream: StreamId, start: float, end: float, ela: Sequence[int]) -> Interval:
    """The column of one event's waits (`ela`, µs) from `start` to `end` (s)."""
    values = np.asarray(ela, dtype=np.float64)
    counts, sums = bin_values(values)
    return Interval(stream, start, end, counts, sums * 1e-6, extremes=bin_extremes(values) * 1e-6)


def _stamp(line: str) -> float | None:
    """The epoch seconds of a `*** YYYY-MM-DD HH:MM:SS` line: the server's local time, with no zone, read as UTC (the
    same on every machine)."""
    m = _STAMP.match(line)
    if m is None:
        return None
    try:
        return datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
