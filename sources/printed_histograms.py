"""Shared pieces of the text-format readers: options, time lines, bucket ranges, columns, cumulative detection.

bpftrace and bcc print a histogram per map every interval. Whether the printed counts are
per interval (the map is cleared after each print) or cumulative (never cleared) is either
declared (`--cumulative` / `--per-interval`) or detected per stream from its first prints:
a count that goes down means per-interval; counts that never go down over the first
`DETECT_PRINTS` prints (or all of them, if fewer) mean cumulative, unless every print is empty.
Per-interval prints become Intervals; cumulative ones Snapshots for the shared differ.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any, TypeGuard

import click
import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Interval, Notice, Snapshot, StreamId
from latencymap.core.units import normalize_unit
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import DEFAULT_INTERVAL, cumulative_option, interval_option, unit_option

#: Prints per stream looked at before deciding between cumulative and per-interval counts.
DETECT_PRINTS = 3
#: Longest run of empty columns written one by one; a longer idle stretch becomes one empty column.
MAX_EMPTY_COLUMNS = 1000
FALLBACK_UNIT = "microsec"
DAY = 86400.0
#: Printed times outside these epoch seconds (1970-01-02 to 9999-12-30) are not real, and `datetime` cannot show them.
EARLIEST, LATEST = DAY, 253_402_128_000.0

_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_EPOCH = re.compile(r"^1\d{9}(?:\.\d{1,9})?$")
_UNIT_WORD = re.compile(r"[a-zµ]+")


def column_spans(current: int, upto: int) -> list[tuple[int, int]]:
    """`[first, stop)` column spans: `current`, then the empty ones before `upto` (a long idle run as one)."""
    spans = [(current, current + 1)]
    empty = upto - current - 1
    if 0 < empty <= MAX_EMPTY_COLUMNS:
        spans += [(k, k + 1) for k in range(current + 1, upto)]
    elif empty > MAX_EMPTY_COLUMNS:
        spans.append((current + 1, upto))
    return spans


#: Words that name a quantity other than time (`@bytes`, `@req_size`, bcc's `kbytes` header): sizes, not latencies.
NOT_TIME = frozenset({"bytes", "byte", "kbytes", "mbytes", "kb", "mb", "size", "sizes", "len", "length", "pages",
                      "sectors"})


def not_time(name: str) -> str | None:
    """The word of a map name or histogram header that says its values are no times, if one does."""
    return next((w for w in _UNIT_WORD.findall(name.split("[", 1)[0].lower()) if w in NOT_TIME), None)


def unit_from_name(name: str) -> str | None:
    """The time unit a map name announces (`@usecs`, `@lat_ns`, `@ms[comm]`), if any."""
    found = None
    for word in _UNIT_WORD.findall(name.split("[", 1)[0].lower()):
        if len(word) < 2:
            continue
        try:
            found = normalize_unit(word)
        except ValueError:
            continue
    return found


def decimal(digits: str, max_digits: int = 20) -> int | None:
    """The value of a string of decimal digits; None when it has more than `max_digits` significant digits.

    Such a number is no bucket bound or counter, and `int()` refuses strings of more than 4300 digits.
    """
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= max_digits else None


def add_count(counts: np.ndarray, slot: int, count: int) -> bool:
    """Add `count` to `counts[slot]` unless the bucket would pass MAX_COUNT (int64 would wrap); True when added."""
    if not 0 <= count <= MAX_COUNT - int(counts[slot]):
        return False
    counts[slot] += count
    return True


def slot_of_range(low: int, high: int) -> int | None:
    """Slot holding the integer range `[low, high)`; None when it is not inside one log2 bucket."""
    if low < 0 or high <= low:
        return None
    if low == 0:
        return 0 if high <= 1 else None
    slot = low.bit_length()
    if high > (1 << slot):
        return None
    return min(slot, NSLOTS - 1)


def parse_time_line(text: str) -> tuple[str, float] | None:
    """`("tod", seconds after midnight)` or `("abs", epoch seconds)` for a printed timestamp line."""
    text = text.strip()
    m = _TIME_OF_DAY.match(text)
    if m:
        hours, minutes, seconds = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if hours > 23 or minutes > 59 or seconds > 60:
            return None
        return "tod", hours * 3600 + minutes * 60 + seconds + float(f"0.{m.group(4) or 0}")
    m = _DATE_TIME.match(text)
    if m:
        try:
            year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
            when = datetime(year, month, day, hour, minute, second).timestamp() + float(f"0.{m.group(7) or 0}")
        except (ValueError, OverflowError, OSError):
            return None
        return ("abs", when) if EARLIEST <= when <= LATEST else None
    if _EPOCH.match(text):
        return "abs", float(text)
    return None


class PrintedHistogramFormat(TextFormat):
    """Base of the formats that print log2 histograms over time (bpftrace, bcc): their shared options."""

    priority = 5

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [interval_option(), unit_option(), cumulative_option()]


class PrintClock:
    """Start and end times of successive print groups: from printed time lines, else arrival order.

    A time line opens a group. Without time lines, a map printed again opens the next group, at
    its arrival time but at least `interval` seconds after the previous group (so a file read at
    once gets one group per `interval`, and a live pipe its real times); the first group is when
    reading starts. After a time line, a map printed twice (bpftrace's print at exit) puts the
    second print `interval` seconds later. Times of day (`14:03:21`) take the date on which
    reading started (the day before if that puts them in the future) and roll over at midnight.
    A print covers the time since the previous group; the first one covers `interval` seconds.
    """

    def __init__(self, interval: float = DEFAULT_INTERVAL, clock: Callable[[], float] = time.time) -> None:
        self.interval = interval
        self._clock = clock
        self.current: float | None = None
        self.previous: float | None = None
        self._seen: set[Hashable] = set()
        self._tod = False
        self._timed = False

    def time_line(self, kind: str, value: float) -> str | None:
        """Open a group at a printed time; a complaint when the time goes backwards (line ignored)."""
        when = self._time_of_day(value) if kind == "tod" else value
        if not EARLIEST <= when <= LATEST:
            return "timestamp out of range (before 1970 or after 9999)"
        if self.current is not None and not self._seen and self._tod and kind == "abs" \
                and (self.previous is None or when > self.previous) \
                and abs(self._time_of_day_of(when) - self._time_of_day_of(self.current)) < 1.0:
            self.current, self._tod = when, False  # a dated stamp of the same instant: re-date it (still forward)
            return None
        if self.current is not None and when <= self.current:
            if when == self.current:
                return None
            return f"timestamp goes backwards ({self._fmt(when)} after {self._fmt(self.current)})"
        self.previous, self.current = self.current, when
        self._seen = set()
        self._tod = kind == "tod"
        self._timed = True
        return None

    def stamp(self, key: Hashable) -> tuple[float, float]:
        """(start, end) of the print of `key` (a stream) in the current group."""
        if self.current is None:
            self.current = self._clock()
        elif key in self._seen:
            after = self.current + self.interval
            self.previous, self.current = self.current, after if self._timed else max(after, self._clock())
            self._seen = set()
        self._seen.add(key)
        start = self.previous if self.previous is not None else self.current - self.interval
        return start, self.current

    def _time_of_day(self, seconds: float) -> float:
        reference = self.current if self.current is not None else self._clock()
        midnight = datetime.fromtimestamp(reference).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        when = midnight + seconds
        if self.current is None and when > reference + 3600:
            when -= DAY
        elif self.current is not None and when < reference - DAY / 2:
            when += DAY
        return when

    @staticmethod
    def _time_of_day_of(when: float) -> float:
        moment = datetime.fromtimestamp(when)
        return moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6

    @staticmethod
    def _fmt(when: float) -> str:
        return datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


@dataclass(slots=True)
class _Print:
    stream: StreamId
    start: float
    end: float
    counts: np.ndarray
    line: int


class PrintedHistograms:
    """Printed histograms → Intervals (per-interval counts) or Snapshots (cumulative counts)."""

    def __init__(self, cumulative: bool | None, name: str, window: int = DETECT_PRINTS) -> None:
        self.declared = cumulative
        self.name = name
        self.window = max(2, window)
        self._mode: dict[StreamId, bool] = {}
        self._pending: dict[StreamId, list[_Print]] = {}
        self._told: set[bool] = set()

    def add(self, stream: StreamId, start: float, end: float, counts: np.ndarray,
            line: int = 0) -> list[Interval | Snapshot | Notice]:
        """Items for one printed histogram (none while its stream's mode is still being detected)."""
        item = _Print(stream, start, end, counts, line)
        mode = self.declared if self.declared is not None else self._mode.get(stream)
        if mode is not None:
            return [self._item(item, mode)]
        pending = self._pending.setdefault(stream, [])
        pending.append(item)
        decided = self._decide(pending, final=False)
        return [] if decided is None else self._release(stream, *decided)

    def finish(self) -> list[Interval | Snapshot | Notice]:
        """Items still held for detection at the end of the input."""
        out: list[Interval | Snapshot | Notice] = []
        for stream, pending in list(self._pending.items()):
            decided = self._decide(pending, final=True)
            assert decided is not None
            out += self._release(stream, *decided)
        return out

    def _decide(self, pending: list[_Print], final: bool) -> tuple[bool, str] | None:
        for before, after in pairwise(pending):
            if (after.counts < before.counts).any():
                return False, "per-interval: counts go down between prints"
        if len(pending) < self.window and not final:
            return None
        if len(pending) == 1:
            return False, "per-interval: a single print"
        if not pending[-1].counts.any():
            return False, "per-interval: every print is empty"
        return True, "cumulative: counts never go down"

    def _release(self, stream: StreamId, cumulative: bool, how: str) -> list[Interval | Snapshot | Notice]:
        self._mode[stream] = cumulative
        out: list[Interval | Snapshot | Notice] = []
        if cumulative not in self._told:
            self._told.add(cumulative)
            out.append(Notice(f"{self.name}: {stream.label}: counts read as {how} (declare with --cumulative or "
                              "--per-interval)", skipped=0))
        out += [self._item(p, cumulative) for p in self._pending.pop(stream)]
        return out

    @staticmethod
    def _item(p: _Print, cumulative: bool) -> Interval | Snapshot:
        if cumulative:
            return Snapshot(p.stream, p.end, p.counts, line=p.line)
        return Interval(p.stream, p.start, p.end, p.counts)


class PrintReader:
    """One input of printed histograms: its clock, cumulative detection, per-map units and notes."""

    def __init__(self, name: str, options: dict[str, Any], datasource: str = "bpf",
                 clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self.datasource = datasource
        self.unit = options.get("unit")
        self.clock = PrintClock(float(options.get("interval") or DEFAULT_INTERVAL), clock)
        self.prints = PrintedHistograms(options.get("cumulative"), name)
        self._units: dict[str, str] = {}
        self._negative: set[str] = set()
        self._left_out: set[str] = set()

    def time_line(self, kind: str, value: float, line_no: int) -> list[Item]:
        """A printed timestamp; a Notice when it goes backwards."""
        complaint = self.clock.time_line(kind, value)
        return [Notice(f"{self.name}: line {line_no}: {complaint}; line ignored")] if complaint else []

    def histogram(self, label: str, counts: np.ndarray, line_no: int, unit: str | None = None,
                  negative: int = 0, named: str | None = None) -> list[Item]:
        """Items for one printed histogram of `label` (first line `line_no`); `unit` when the input says it, `named`
        the word it gives its values (bcc's header), when not the label. A histogram of sizes is left out, with a
        notice, unless `--unit` says to read it as latencies."""
        out: list[Item] = []
        if label in self._left_out:
            return out
        if label not in self._units:
            other = None if unit or self.unit else not_time(named or label)
            if other is not None:
                self._left_out.add(label)
                return [Notice(f"{self.name}: line {line_no}: {label}: a histogram of {other}, not of latencies: left "
                               "out (--unit reads it as latencies)", skipped=0)]
            chosen = unit or self.unit or unit_from_name(label)
            if chosen is None:
                chosen = FALLBACK_UNIT
                out.append(Notice(f"{self.name}: line {line_no}: {label}: the unit is not evident from the name; "
                                  f"read as {chosen} (set --unit)", skipped=0))
            self._units[label] = chosen
        if negative and label not in self._negative:
            self._negative.add(label)
            out.append(Notice(f"{self.name}: line {line_no}: {label}: {negative} negative value(s) in the "
                              "(..., 0) row dropped, not latencies (and in later prints of this map)", skipped=0))
        stream = StreamId(label, self.datasource, self._units[label])
        start, end = self.clock.stamp(stream)
        out += self.prints.add(stream, start, end, counts, line_no)
        return out

    def finish(self) -> list[Item]:
        """Items held back for detection, at the end of the input."""
        return list(self.prints.finish())


def is_int(value: Any) -> TypeGuard[int]:
    """True for a JSON integer (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)
