"""Shared pieces of the text-format readers: options, time lines, bucket ranges, columns, print groups.

bpftrace and bcc print a histogram per map every interval, each group of prints after a time line
(or, without time lines, until a map is printed again).
Whether the printed counts are per interval (the map is cleared after each print) or cumulative (never
cleared) is declared (`--cumulative` / `--per-interval`) or detected per map (see `print_modes`):
`PrintReader` tells it which streams each closed group printed and which it did not.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from datetime import date, datetime, timedelta, tzinfo
from functools import partial
from typing import Any, TypeGuard
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Interval, Notice, Snapshot, StreamId
from latencymap.core.sanitize import StreamNames
from latencymap.core.units import normalize_unit, unit_seconds
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import DEFAULT_INTERVAL, cumulative_option, interval_option, unit_option
from latencymap.sources.print_modes import DETECT_PRINTS, MAX_EMPTY_COLUMNS, PrintedHistograms

__all__ = ["DETECT_PRINTS", "MAX_EMPTY_COLUMNS", "PrintClock", "PrintReader", "PrintedHistograms", "column_spans",
           "lhist_layout", "log2_layout", "parse_time_line"]

FALLBACK_UNIT = "microsec"
DAY = 86400.0
#: Printed times outside these epoch seconds (1970-01-02 to 9999-12-30) are not real, and `datetime` cannot show them.
EARLIEST, LATEST = DAY, 253_402_128_000.0

_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_EPOCH = re.compile(r"^1\d{9}(?:\.\d{1,9})?$")
#: argdist (and bcc's dbstat, dbslower) print their time line in brackets: `print("[%s]" % strftime("%H:%M:%S"))`.
_BRACKETED = re.compile(r"^\[([^\[\]]+)\]$")
_UNIT_WORD = re.compile(r"[a-zµ]+")
_WALL_EPOCH = datetime(1970, 1, 1)


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
    """Slot holding the integer range `[low, high)`: a log2 bucket or an aligned power-of-two part of one (a row of
    bpftrace's `hist(n, k)`, which splits each power of two into 2**k); None for any other range (an `lhist()` row)."""
    width = high - low
    if low < 0 or width <= 0 or width & (width - 1) or low % width:
        return None
    if low == 0:
        return 0 if high == 1 else None
    slot = low.bit_length()
    if high > (1 << slot):
        return None
    return min(slot, NSLOTS - 1)


def log2_layout(rows: Iterable[tuple[int, int]]) -> bool:
    """Whether integer ranges `[low, high)` are rows of one bpftrace `hist(n, k)`: each in one slot, and each power of
    two `[2^j, 2^(j+1))` split into the same 2**k rows (single values below 2**k): not `lhist()`'s equal steps."""
    split: int | None = None  # k, once a row wider than one value says it
    least = 0  # k is at least this (a single value in [2^j, 2^(j+1)) says k >= j)
    for low, high in rows:
        if slot_of_range(low, high) is None:
            return False
        if low == 0:
            continue
        octave, step = low.bit_length() - 1, (high - low).bit_length() - 1
        if step:
            if split is not None and split != octave - step:
                return False
            split = octave - step
        else:
            least = max(least, octave)
    return split is None or split >= least


def lhist_layout(rows: Sequence[tuple[int, int]]) -> bool:
    """Whether integer ranges `[low, high)` (one print's rows) are an `lhist()`'s: no log2 layout (`log2_layout`), and
    two rows or more of one width on one grid. A hist() print with one row mangled (`[8, 17)`) is none, nor is one row
    alone: that row alone is skipped."""
    if len(rows) < 2 or log2_layout(rows):
        return False
    start, step = rows[0][0], rows[0][1] - rows[0][0]
    return step > 0 and all(high - low == step and (low - start) % step == 0 for low, high in rows)


def local_zone() -> tzinfo | None:
    """The local time zone from zoneinfo (`TZ`, else /etc/localtime); None (the C library's) when it names none."""
    name = os.environ.get("TZ")
    try:
        if name is None:
            with open("/etc/localtime", "rb") as file:
                return ZoneInfo.from_file(file)
        name = name.removeprefix(":")
        if name.startswith("/"):
            with open(name, "rb") as file:
                return ZoneInfo.from_file(file)
        return ZoneInfo(name)
    except (OSError, ValueError, ZoneInfoNotFoundError):  # no such file or key; a POSIX rule (`EST5EDT,M3...`)
        return None


def parse_time_line(text: str) -> tuple[str, float] | None:
    """`("tod", seconds after midnight)`, `("date", local wall-clock seconds since 1970-01-01)` or `("abs", epoch
    seconds)` for a printed timestamp line: local times become instants in the clock, which knows what came before.
    A time of day or a date and time may stand in brackets (`[14:03:21]`, as argdist prints it); epoch seconds not
    (`[1700000000]` is a bpftrace row label); a time of day may end in a colon (`14:03:21:`, as bcc's ext4dist,
    xfsdist, nfsdist... print it)."""
    text = text.strip()
    if text.endswith(":") and _TIME_OF_DAY.match(text[:-1]):
        text = text[:-1]
    bracketed = _BRACKETED.match(text)
    if bracketed is not None:
        stamp = parse_time_line(bracketed.group(1))
        return stamp if stamp is not None and stamp[0] != "abs" else None
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
            wall = datetime(year, month, day, hour, minute, second) - _WALL_EPOCH
        except ValueError:
            return None
        when = wall.total_seconds() + float(f"0.{m.group(7) or 0}")
        return ("date", when) if EARLIEST <= when <= LATEST else None
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

    A time line opens a group. Without time lines, a map printed again opens the next group, at its
    arrival time (that of its first line: `begins`) but at least `interval` seconds after the previous
    group (so a file read at once gets one group per `interval`, and a live pipe its real times); the
    first group is when reading starts, and covers back to the program's banner when that arrived
    earlier (`attached`). Arrival opens no group by itself: a pipe stage that buffers (`| grep`, a bcc
    tool without `-u`) hands a print on in blocks seconds apart, and a cumulative map read as cleared
    then counts 50x its events.
    After a time line, a map printed twice (`again`) is at the same time when a time line follows
    (`stamp(same=True)`), else bpftrace's print at exit: `interval` seconds later (see `PrintReader`).
    A time line that repeats the group's (`repeated`, of whole seconds: printed more often) before anything
    was printed since is a later print in that second: what it prints is `again` too.
    Times of day (`14:03:21`) take the date on which reading started (the day before if that puts them in
    the future) and roll over at midnight.
    Local times go through the local zone: one skipped when clocks go forward is moved on as the zone
    moves it, and one that clocks go back to twice is its second occurrence when the first would put
    the clock back by more than half the shift (a time line that goes backwards otherwise is one).
    A print covers the time since the previous group; the first one, opened by a time line, as long
    as the next group (once the next time line says it: `settled`), else `interval` seconds.
    """

    def __init__(self, interval: float = DEFAULT_INTERVAL, clock: Callable[[], float] = time.time) -> None:
        self.interval = interval
        self._clock = clock
        self._began: float | None = None  # when the print being read started to arrive (`begins`)
        self.repeated = False  # whether a time line of whole seconds repeated the current group's
        self._later = False  # whether it repeated it before anything was printed since
        self.zone = local_zone()
        self.current: float | None = None
        self.previous: float | None = None
        self._seen: set[Hashable] = set()
        self._tod = False
        self._timed = False
        self._lead: float | None = None  # the first group's length, once a second time line has told it
        self._attached: float | None = None  # when the program's banner arrived, before any group
        self.group = 0  # print groups opened so far

    @property
    def lead(self) -> float:
        """Seconds the first group covers: up to the next time line's spacing when known, else `interval`."""
        return self.interval if self._lead is None else self._lead

    @property
    def timed(self) -> bool:
        """Whether time lines open the groups (else a map printed again does)."""
        return self._timed

    @property
    def settled(self) -> bool:
        """False while the first group, opened by a time line, does not know its start (no second time line yet)."""
        return not (self.group == 1 and self._timed)

    def span(self) -> tuple[float, float] | None:
        """(start, end) of the current group: what a print in it covers; None before the first group."""
        if self.current is None:
            return None
        return self._start(), self.current

    def attached(self) -> None:
        """The program started (its banner arrived) before any group: an untimed first group starts then, if earlier
        than `interval` before it (read live; a file read at once arrives all in one moment)."""
        if self.current is None:
            self._attached = self._clock()

    def goes_back(self, kind: str, value: float) -> bool:
        """Whether a time line at this time goes backwards (`time_line` ignores it)."""
        return self.current is not None and self._instant(kind, value) < self.current

    def time_line(self, kind: str, value: float) -> str | None:
        """Open a group at a printed time; a complaint when the time goes backwards (line ignored)."""
        when = self._instant(kind, value)
        if not EARLIEST <= when <= LATEST:
            return "timestamp out of range (before 1970 or after 9999)"
        if self.current is not None and not self._seen and self._tod and kind != "tod" \
                and (self.previous is None or when > self.previous) \
                and abs(self._seconds_of_day(when) - self._seconds_of_day(self.current)) < 1.0:
            self.current, self._tod = when, False  # a dated stamp of the same instant: re-date it (still forward)
            return None
        if self.current is not None and when <= self.current:
            if when == self.current:
                self.repeated, self._later = when.is_integer(), not self._seen
                return None
            return f"timestamp goes backwards ({self._fmt(when)} after {self._fmt(self.current)})"
        if self.current is not None and self.previous is None and self._timed:
            self._lead = when - self.current
        self.previous, self.current = self.current, when
        self._seen = set()
        self.repeated = self._later = False
        self._tod = kind == "tod"
        self._timed = True
        self.group += 1
        return None

    def again(self, key: Hashable) -> bool:
        """Whether `key` was printed in the current group, which a time line opened, or is printed after that time
        line repeated with nothing printed in between."""
        return self._timed and (key in self._seen or self._later)

    def begins(self) -> None:
        """A print starts (its header arrived): it arrived now, not when the line that ends it does (bcc's next
        print, an interval later)."""
        self._began = self._clock()

    def stamp(self, key: Hashable, same: bool = False) -> tuple[float, float]:
        """(start, end) of the print of `key` (a stream) in the current group; printed again, in the next one unless it
        is at the `same` time."""
        now = self._clock() if self._began is None else self._began
        self._began = None
        if self.current is None:
            self.current = now
            self.group += 1
        elif (key in self._seen or self._later) and not same:
            after = self.current + self.interval
            self.previous, self.current = self.current, after if self._timed else max(after, now)
            self._seen = set()
            self._later = False
            self.group += 1
        self._seen.add(key)
        return self._start(), self.current

    def _start(self) -> float:
        assert self.current is not None
        if self.previous is not None:
            return self.previous
        if self._attached is not None and not self._timed:
            return min(self._attached, self.current - self.lead)
        return self.current - self.lead

    def _instant(self, kind: str, value: float) -> float:
        """Epoch seconds of a time line's value (see `parse_time_line`)."""
        if kind == "abs":
            return value
        if kind == "date":
            days, seconds = divmod(value, DAY)
            return self._local(_WALL_EPOCH.date() + timedelta(days=days), seconds)
        reference = self.current if self.current is not None else self._clock()
        moment = datetime.fromtimestamp(reference, self.zone)
        day = moment.date()
        if self.current is not None and value < self._seconds_of_day(reference) - DAY / 2:
            day += timedelta(days=1)
        when = self._local(day, value)
        if self.current is None and when > reference + 3600:
            when = self._local(day - timedelta(days=1), value)
        return when

    def _local(self, day: date, seconds: float) -> float:
        """Epoch seconds of the local time `seconds` after midnight on `day`, going forward from the current group.

        A time the zone skips is moved on as the zone moves it (02:30 becomes 03:30); one it repeats is its first
        occurrence unless that would put the clock back by more than half the shift and the second would not."""
        whole = int(seconds)
        try:
            wall = datetime(day.year, day.month, day.day, tzinfo=self.zone) + timedelta(seconds=whole)
        except OverflowError:  # past 9999-12-31: out of range
            return LATEST + DAY
        first, second = (wall.replace(fold=fold).timestamp() + (seconds - whole) for fold in (0, 1))
        after = self.current
        if second > first and after is not None and first < after <= second and after - first > (second - first) / 2:
            return second
        return first  # in a gap, fold 0 is the zone's own reading (the offset before the change)

    def _seconds_of_day(self, when: float) -> float:
        moment = datetime.fromtimestamp(when, self.zone)
        return moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6

    def _fmt(self, when: float) -> str:
        return datetime.fromtimestamp(when, self.zone).strftime("%Y-%m-%d %H:%M:%S")


class PrintReader:
    """One input of printed histograms: its clock, cumulative detection, per-map units and notes."""

    def __init__(self, name: str, options: dict[str, Any], datasource: str = "bpf",
                 clock: Callable[[], float] = time.time, hint: str = "") -> None:
        self.name = name
        self.datasource = datasource
        self.unit = options.get("unit")
        self.clock = PrintClock(float(options.get("interval") or DEFAULT_INTERVAL), clock)
        self._finer = False  # whether the note that time lines repeat their second was given
        self.prints = PrintedHistograms(options.get("cumulative"), name, hint=hint)
        self._units: dict[str, str] = {}
        self._negative: set[str] = set()
        self._left_out: set[str] = set()
        self._linear: set[str] = set()  # maps found to be lhist() (`linear`)
        self._group = 0  # the print group being read (the clock's count when it was synced)
        self._span: tuple[float, float] | None = None
        self._printed: set[str] = set()  # labels of the streams printed (or printed unreadably) in the group being read
        self._lacked: set[str] = set()  # labels the group before lacked, when it may have been cut (no evidence)
        self._whole: set[Hashable] = set()  # maps printed whole in the group being read (a `-f json` hist line)
        self._by_time_line = False  # whether a time line opened the group being read
        self._streams: dict[str, tuple[StreamId, Hashable]] = {}  # every label printed so far: its stream, its map
        self._names = StreamNames()  # labels are whole (a long map key): cut in the middle, a cut taken gets (2)
        self._held: list[partial[list[Interval | Snapshot | Notice]]] = []  # the first timed group's, till its start
        self._again: list[tuple[Hashable, Callable[..., list[Item]]]] = []  # maps printed again after a time line
        self._holding = False  # the `-f json` hist line being read is held (printed again)

    def time_line(self, kind: str, value: float, line_no: int) -> list[Item]:
        """A printed timestamp; a Notice when it goes backwards."""
        out = self._printed_again(line_no, ended=False, back=self.clock.goes_back(kind, value))
        complaint = self.clock.time_line(kind, value)
        if complaint:
            return [*out, Notice(f"{self.name}: line {line_no}: {complaint}; line ignored")]
        return out + self._sync(line_no, whole=True)

    def _printed_again(self, line_no: int, ended: bool, back: bool = False) -> list[Item]:
        """The prints held for printing a map again after a time line: at the time of their group when a time line
        follows (two probes print it at one time, or time lines apart by less than their second); where the program
        ended, its last prints of one map each are its print at exit (`interval` later). Before a time line that goes
        `back` (ignored), each opens a group `interval` later, as without time lines."""
        held, self._again, self._holding = self._again, [], False
        same, keys = 0 if back else len(held), set()
        while ended and same and held[same - 1][0] not in keys:
            same -= 1
            keys.add(held[same][0])
        return [item for k, (_, replay) in enumerate(held) for item in replay(same=k < same)]

    def _sync(self, line_no: int, whole: bool = False) -> list[Item]:
        """Follow the clock: when it opened a group, close the one read so far (`whole`: a time line closes it)."""
        out: list[Item] = []
        if self.clock.group != self._group:
            out += self._release()
            out += self._close(line_no, whole or not self.clock.timed)
            self._group, self._printed, self._whole, self._by_time_line = self.clock.group, set(), set(), whole
        self._span = self.clock.span()
        return out

    def _close(self, line_no: int, whole: bool, lacked_before: Collection[str] = ()) -> list[Item]:
        """The streams printed before that the group read so far did not print (its span, closed at `line_no`).

        Where time lines open the groups, one that no time line closes (the print at exit follows, or the input ends)
        may have been cut (Ctrl-C): what it lacks is no sign of a cleared map (`whole` False), unless its map was
        printed whole there (a `-f json` hist line). The print at exit itself is whole, but keys it prints first may
        have been taken into the cut group: a key that both lack (`lacked_before`, what the cut group lacked) is no
        longer in the map, which was cleared."""
        if self._span is None:
            return []
        out: list[Item] = []
        start, end = self._span
        lacked = [label for label in self._streams if label not in self._printed]
        for label in lacked:
            stream, family = self._streams[label]
            out += self.prints.absent(stream, start, end, line_no, family=family,
                                      evidence=whole or label in lacked_before or family in self._whole)
        self._lacked = set() if whole else set(lacked)
        return out

    def attached(self, line_no: int) -> list[Item]:
        """bpftrace's banner (`Attaching N probes...`, `attached_probes` in JSON): the program started, its maps
        empty; every key's next print counts from zero. After a print group, the program started again (two runs
        joined): the run before ended there (see `finish`), and a key it printed is no longer expected."""
        self.prints.started = True
        if self.clock.group == 0:
            self.clock.attached()
            return []
        out = self._ended(line_no)
        self.prints.restart()
        self._streams, self._printed, self._lacked = {}, set(), set()
        return [*out, Notice(f"{self.name}: line {line_no}: bpftrace's banner again: the program restarted, its maps "
                             "empty; their prints count from zero again", skipped=0)]

    def produced_by(self, cumulative: bool | None, why: str = "") -> None:
        """The input shows the program printing it (its banner): the mode it prints its maps in when known (None:
        not known), and why; each map not decided yet is read so (`--cumulative` / `--per-interval` still rule)."""
        self.prints.known = None if cumulative is None else (cumulative, why)

    def whole_print(self, family: str, line_no: int, same: bool | None = None) -> list[Item]:
        """Start one print of every key of map `family` (a `-f json` hist line): a map printed again opens the next
        group, so that a key new in this print belongs to it, wherever the print puts it among the others. Printed
        again after a time line, the line is held (see `_printed_again`; `same`: its time, once known)."""
        key = ("print", family)
        if same is None:
            self._holding = self.clock.again(key)
            if self._holding:
                self._again.append((key, partial(self.whole_print, family, line_no)))
                return []
        self.clock.stamp(key, same=bool(same))
        out = self._sync(line_no)
        self._whole.add(family)
        return out

    def histogram(self, label: str, counts: np.ndarray, line_no: int, unit: str | None = None,
                  negative: int = 0, named: str | None = None, family: Hashable | None = None,
                  unknown: np.ndarray | None = None, same: bool | None = None,
                  total: float | None = None, placed: np.ndarray | None = None) -> list[Item]:
        """Items for one printed histogram of `label` (whole, cleaned; first line `line_no`); `unit` when the input
        says it, `named` the word it gives its values (bcc's header), when not the label; `family` the map it is a
        key of (default: the label before `[`); `unknown` the slots whose row was cut short; `total` the exact sum of
        its values, in the unit its rows are printed in (bcc's summary line), when known, and `placed` its counts as
        that places them, read per-interval (see `print_modes`). A histogram of sizes is
        left out, with a notice, unless `--unit` says to read it as latencies. A map printed again after a time
        line is held (see `_printed_again`; `same`: its time, once known)."""
        out: list[Item] = []
        if label in self._left_out:
            return out
        shown = self.shown(label)
        if label not in self._units:
            other = None if unit or self.unit else not_time(named or label)
            if other is not None:
                self._left_out.add(label)
                return [Notice(f"{self.name}: line {line_no}: {shown}: a histogram of {other}, not of latencies: left "
                               "out (--unit reads it as latencies)", skipped=0)]
            chosen = unit or self.unit or unit_from_name(label)
            if chosen is None:
                chosen = FALLBACK_UNIT
                out.append(Notice(f"{self.name}: line {line_no}: {shown}: the unit is not evident from the name; "
                                  f"read as {chosen} (set --unit)", skipped=0))
            self._units[label] = chosen
        if negative and label not in self._negative:
            self._negative.add(label)
            out.append(Notice(f"{self.name}: line {line_no}: {shown}: {negative} negative value(s) in the "
                              "(..., 0) row dropped, not latencies (and in later prints of this map)", skipped=0))
        stream = StreamId(shown, self.datasource, self._units[label])
        if same is None and (self._holding or self.clock.again(stream)):
            self._again.append((stream, partial(self.histogram, label, counts, line_no, unit, negative, named, family,
                                                unknown, total=total, placed=placed)))
            return out + self._finer_than_time_lines(shown, line_no)
        start, end = self.clock.stamp(stream, same=bool(same))
        out += self._sync(line_no)
        family = label.split("[", 1)[0] if family is None else family
        # the key's map started empty: a print group before this one did not print it, or the program started
        from_zero = label not in self._streams and (self._group > 1 or self.prints.started)
        self._streams.setdefault(label, (stream, family))
        self._printed.add(label)
        seconds = None if total is None else total * unit_seconds(stream.unit)
        add = partial(self.prints.add, stream, end=end, counts=counts, line=line_no, family=family, group=self._group,
                      from_zero=from_zero, unknown=unknown, again=bool(same), total=seconds, placed=placed)
        if self.clock.settled:
            return out + add(start=start)
        self._held.append(add)
        return out

    def _finer_than_time_lines(self, shown: str, line_no: int) -> list[Item]:
        """The note, once, that a map is printed again under a time line that repeated its second: the program prints
        more often than its time lines can tell apart."""
        if self._finer or not self.clock.repeated:
            return []
        self._finer = True
        return [Notice(f"{self.name}: line {line_no}: {shown}: printed more often than once a second, but the time "
                       "lines show whole seconds (the same second repeated): prints within one second cannot be told "
                       "apart, and are added together in 1 s columns", skipped=0)]

    def _release(self) -> list[Item]:
        """The held prints of the first timed group, now that its start is known (`interval` if the input ends)."""
        held, self._held = self._held, []
        return [item for add in held for item in add(start=add.keywords["end"] - self.clock.lead)]

    def shown(self, label: str) -> str:
        """The stream name of `label` (whole, cleaned), as streams and notices show it: the same for the same label."""
        return self._names.name(label)

    def begins(self) -> None:
        """A print's first line (its header) was read: read live, the print arrived then (see `PrintClock.begins`)."""
        self.clock.begins()

    def unreadable(self, label: str) -> None:
        """A print of `label` that could not be read (skipped with a notice): it was printed, not missing."""
        self._printed.add(label)

    def left_out(self, label: str) -> bool:
        """Whether `label`'s histograms are left out (of sizes, not latencies: see `histogram`)."""
        return label in self._left_out

    def is_linear(self, family: str) -> bool:
        """Whether map `family` was found to be an `lhist()` (see `linear`): every print of it is left out."""
        return family in self._linear

    def linear(self, label: str, family: str, line_no: int) -> list[Item]:
        """A print of `label`, a key of map `family`, whose rows are an `lhist()`'s (`lhist_layout`): left out whole,
        this print and every later one of the map (see `is_linear`), with one notice per map."""
        self.unreadable(label)
        if family in self._linear:
            return []
        self._linear.add(family)
        return [Notice(f"{self.name}: line {line_no}: {self.shown(family)}: a linear histogram (lhist): its rows are "
                       "not log2 buckets; left out", skipped=0)]

    def finish(self, line_no: int = 0) -> list[Item]:
        """Items held back for detection, at the end of the input. The last group counts as closed when it printed
        something (one that ends right after its time line may have been cut). Opened by a time line, it holds the
        print at exit whole (after a periodic print cut or empty, whose keys it then took): what it lacks is evidence,
        as without time lines. Opened by the print at exit, it is whole but may have lost its first keys to the group
        before (see `_close`)."""
        return self._ended(line_no) + list(self.prints.finish())

    def _ended(self, line_no: int) -> list[Item]:
        """The program's last print group closed (see `finish`), the prints held till then given."""
        out = self._printed_again(line_no, ended=True) + self._release()
        if self._printed:
            out += self._close(line_no, not self.clock.timed or self._by_time_line, self._lacked)
        return out


def is_int(value: Any) -> TypeGuard[int]:
    """True for a JSON integer (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)
