"""Raw latency values: one number per line, or `<time> <latency>` pairs (trace2heatmap's input).

Values are in `--unit` (default µs; seconds are read as µs so sub-second values keep their
resolution), times in `--time-unit` (default s). Pairs are grouped into columns of
`--interval` seconds of their own time, aligned to multiples of the interval (times before
1973 are relative and stay so); values without times are grouped by when they arrive, which is
no time of theirs (a file arrives at once): `untimed_streams` says so, and a report gives them no
rate. Fields may be separated by spaces, tabs or a comma; `#` lines and a first header line are
skipped. A header that names a column's unit (`latency_ms`, `time (us)`, `durationNanos`) sets it unless `--unit` /
`--time-unit` give one, with a note either way. Values are parsed and binned with NumPy in bulk, with exact time per
bucket; negative and non-numeric values are reported.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePath

import click
import numpy as np

from latencymap.core.buckets import bin_extremes, bin_values, past_top, past_top_note
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.core.sanitize import clean_text, excerpt
from latencymap.core.units import UNIT_SECONDS, normalize_unit, unit_seconds
from latencymap.plugins import Item, TextFormat
from latencymap.sources.format_options import DEFAULT_INTERVAL, interval_option, time_unit_option, unit_option
from latencymap.sources.printed_histograms import column_spans

DEFAULT_UNIT = "microsec"
DATASOURCE = "raw"
#: Lines parsed together; a batch is also cut after BATCH_SECONDS so live input flows.
BATCH_LINES = 65536
BATCH_SECONDS = 0.2
#: Larger values (in the stream's unit) are no latencies, and their sums would overflow to infinity.
MAX_VALUE = 1e30


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


#: A field: what lies between blanks (a space, a tab, a no-break or other Unicode space, `\f`, `\v`) and commas. Not
#: `str.split()`, which also cuts at the separators `\x1c`-`\x1f`, `\x85`, U+2028 and U+2029: `1\x1f2` would be
#: read as the pair 1, 2.
_FIELD = re.compile(r"(?:[^\s,]|[\x1c-\x1f\x85\u2028\u2029])+")


def _fields(line: str) -> list[str]:
    return _FIELD.findall(line)


#: Unit words a header may end a column's name with, besides the spellings `normalize_unit` takes.
_HEADER_UNITS = {"millis": "millisec", "micros": "microsec", "nanos": "nanosec", "millisecs": "millisec",
                 "microsecs": "microsec", "nanosecs": "nanosec"}
_UNIT_NAMES = {"sec": ("seconds", "s"), "millisec": ("milliseconds", "ms"), "microsec": ("microseconds", "µs"),
               "nanosec": ("nanoseconds", "ns")}
_CAMEL = re.compile(r"(?<=[a-z0-9µμ])(?=[A-Z])")
_WORDS = re.compile(r"[^\W_]+")
_BRACKETED = re.compile(r"[(\[]\s*([^\W_]+)\s*[)\]]")


def _unit_word(word: str) -> str | None:
    word = word.lower()
    if word in _HEADER_UNITS:
        return _HEADER_UNITS[word]
    try:
        return normalize_unit(word)
    except ValueError:
        return None


def header_unit(name: str) -> str | None:
    """The unit a header's column name ends with (`latency_ms`, `time (us)`, `durationNanos`), or None."""
    if "/" in name:
        return None  # a rate (`req/s`)
    words = _WORDS.findall(_CAMEL.sub(" ", name))
    if not words or (len(words) > 1 and words[-2].lower() == "per"):
        return None
    bracketed = {u for w in _BRACKETED.findall(name) if (u := _unit_word(w))}
    unit = _unit_word(words[-1])
    units = bracketed | ({unit} if unit else set())
    return units.pop() if len(units) == 1 else None


def header_names(line: str, width: int) -> list[str] | None:
    """The names a header line gives `width` columns (a bracketed unit joins the name before it), or None."""
    text = line.strip(" \t\r\n")
    if "," in text or "\t" in text:
        names = [n.strip(" ") for n in re.split(r"[,\t]", text) if n.strip(" ")]
    else:
        names = []
        for word in _fields(text):
            if names and word[:1] in "([":
                names[-1] += " " + word
            else:
                names.append(word)
        if width == 1 and len(names) > 1:
            names = [text]  # `latency in ms`
    return names if len(names) == width else None


class RawValuesFormat(TextFormat):
    """Plain latency values, optionally with a time column."""

    name = "raw"
    summary = "raw latency values, one per line or '<time> <latency>' pairs (--unit, --time-unit)"
    priority = -10
    #: The reader of the input, once `read` started.
    reader: RawReader | None = None

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        rows = [_fields(line) for line in head if line.strip() and not line.lstrip().startswith("#")]
        if rows and not all(_is_number(f) for f in rows[0]):
            rows = rows[1:]  # a header line
        return bool(rows) and all(1 <= len(r) <= 2 and all(_is_number(f) for f in r) for r in rows)

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            unit_option(),
            time_unit_option(),
            interval_option(),
        ]

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        given = self.options.get("unit")
        given_time = self.options.get("time_unit")
        unit = normalize_unit(given or DEFAULT_UNIT)
        time_unit = normalize_unit(given_time or "s")
        interval = float(self.options.get("interval") or DEFAULT_INTERVAL)
        self.reader = RawReader(name, unit, time_unit, interval, given_unit=given and unit,
                                given_time_unit=given_time and time_unit)
        return self.reader.read(lines)

    def untimed_streams(self) -> set[StreamId]:
        """The stream, once its values turned out to come without times: its columns are when they were read."""
        reader = self.reader
        return {reader.stream} if reader is not None and reader.width == 1 else set()


class RawReader:
    """Batches of lines → parsed arrays → columns of binned values."""

    def __init__(self, name: str, unit: str, time_unit: str, interval: float,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic,
                 given_unit: str | None = None, given_time_unit: str | None = None) -> None:
        self.name = name
        self.label = clean_text("stdin" if name == "<stdin>" else PurePath(name).name) or "values"
        self._set_unit(unit)
        self.time_scale = unit_seconds(time_unit)
        #: The units the user gave (`--unit`, `--time-unit`); None: the default, which a header may replace.
        self.given_unit, self.given_time_unit = given_unit, given_time_unit
        self.header: str | None = None  # the header line, until the first data line tells the columns
        self.started = False  # a line that is no comment was read (a header comes first)
        self.interval = interval
        self.clock, self.monotonic = clock, monotonic
        self.width: int | None = None  # fields per line: 1 (values) or 2 (time, value)
        self.origin = 0.0
        self.column: int | None = None
        self.pending: list[np.ndarray] = []
        self.late = 0
        self.said_top = False  # a value past the top slot was said

    def _set_unit(self, unit: str) -> None:
        """Read values in `unit` (seconds are binned as microseconds)."""
        self.scale = 1e6 if unit == "sec" else 1.0
        unit = "microsec" if unit == "sec" else unit
        self.stream = StreamId(self.label, DATASOURCE, unit)
        self.to_seconds = unit_seconds(unit)

    def _header_units(self, header: str, width: int) -> Iterator[Notice]:
        """Units the header names: taken where the user gave none, said either way."""
        names = header_names(header, width)
        if names is None:
            return
        columns = [("time", names[0], self.given_time_unit, "sec", "--time-unit", "times")] if width == 2 else []
        columns.append(("latency", names[-1], self.given_unit, DEFAULT_UNIT, "--unit", "values"))
        for column, name, given, default, option, what in columns:
            named = header_unit(name)
            if named is None or named == (given or default):
                continue
            whose = f"the header's {column} column" if width == 2 else "the header"
            says = f"{self.name}: {whose} {excerpt(name)} names {_UNIT_NAMES[named][0]}"
            if given is None:
                if column == "time":
                    self.time_scale = UNIT_SECONDS[named]
                else:
                    self._set_unit(named)
                yield Notice(f"{says}: {what} read as {_UNIT_NAMES[named][1]} ({option} to override)", skipped=0)
            else:
                yield Notice(f"{says}, but {option} says {_UNIT_NAMES[given][1]}: {what} read as "
                             f"{_UNIT_NAMES[given][1]}", skipped=0)

    def read(self, lines: Iterable[str]) -> Iterator[Item]:
        batch: list[str] = []
        first = 1
        started = self.monotonic()
        for n, line in enumerate(lines, 1):
            if not batch:
                first, started = n, self.monotonic()
            batch.append(line)
            if len(batch) >= BATCH_LINES or self.monotonic() - started >= BATCH_SECONDS:
                yield from self._batch(batch, first)
                batch = []
        if batch:
            yield from self._batch(batch, first)
        if self.column is not None:
            yield from self._flush(self.column + 1)

    def _batch(self, batch: list[str], first: int) -> Iterator[Item]:
        rows, numbers, notices = self._parse(batch, first)
        yield from notices
        if not len(rows):
            return
        values = rows[:, -1] * self.scale
        k = None if self.said_top else past_top(values)
        if k is not None:
            self.said_top = True
            shown = "sec" if self.scale != 1.0 else None  # as the input gave it
            yield Notice(f"{self.name}: line {int(numbers[k])}: {past_top_note(values[k], self.stream.unit, shown)}",
                         skipped=0)
        last = first + len(batch) - 1
        if self.width == 1:
            if self.column is None:
                self.origin = self.clock()
            columns = np.full(len(values), float(math.floor((self.clock() - self.origin) / self.interval)))
        else:
            with np.errstate(all="ignore"):
                columns = np.floor(rows[:, 0] * self.time_scale / self.interval)
        placeable = self._placeable(columns)
        if not placeable.all():
            lost = int((~placeable).sum())
            yield Notice(f"{self.name}: lines {first}-{last}: {lost} value(s) dropped: their time is too far from "
                         f"{'now' if self.width == 1 else 0} for --interval {self.interval:g} columns (float "
                         "precision)", skipped=lost)
            columns, values = columns[placeable], values[placeable]
            if not len(values):
                return
        keys = columns.astype(np.int64)
        if self.width != 1 and self.column is not None:
            late = keys < self.column
            if late.any():
                self.late += int(late.sum())
                if self.late == int(late.sum()):
                    yield Notice(f"{self.name}: line {first}+: times go backwards; earlier values are counted "
                                 "in the current column", skipped=0)
                keys[late] = self.column
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        uniq, starts = np.unique(keys, return_index=True)
        bounds = [*starts.tolist(), len(keys)]
        for i, key in enumerate(uniq.tolist()):
            if self.column is None:
                self.column = key
            elif key > self.column:
                yield from self._flush(key)
            self.pending.append(values[bounds[i]:bounds[i + 1]])

    def _placeable(self, columns: np.ndarray) -> np.ndarray:
        """Column numbers whose edges are distinct floats (and fit int64): a column narrower than that is no column."""
        with np.errstate(all="ignore"):
            fits = np.abs(columns) < 2.0**52
            safe = np.where(fits, columns, 0.0)
            return fits & (self.origin + (safe + 1) * self.interval > self.origin + safe * self.interval)

    def _parse(self, batch: list[str], first: int) -> tuple[np.ndarray, np.ndarray, list[Notice]]:
        """Rows of floats (one per data line), their line numbers, and the Notices for the lines that are not
        data."""
        notices: list[Notice] = []
        numbered = [(first + i, f) for i, line in enumerate(batch)
                    if (f := _fields(line)) and not f[0].startswith("#")]
        if self.width is None and numbered:
            if not self.started and not all(_is_number(x) for x in numbered[0][1]):
                self.header = batch[numbered[0][0] - first]  # the first line that is no comment, as `sniff` takes it
                numbered = numbered[1:]
            self.started = True
            if numbered:
                self.width = 2 if len(numbered[0][1]) >= 2 else 1
                if self.header is not None:
                    notices += self._header_units(self.header, self.width)
                    self.header = None
        width = self.width or 1
        good = [f for _, f in numbered if len(f) == width]
        try:
            rows = np.array(good, dtype=np.float64).reshape(-1, width)
            bad = [(n, f) for n, f in numbered if len(f) != width]
            numbers = np.array([n for n, f in numbered if len(f) == width], dtype=np.int64)
        except ValueError:
            good, bad, kept = [], [], []
            for n, f in numbered:
                if len(f) == width and all(_is_number(x) for x in f):
                    good.append(f)
                    kept.append(n)
                else:
                    bad.append((n, f))
            rows = np.array(good, dtype=np.float64).reshape(-1, width)
            numbers = np.array(kept, dtype=np.int64)
        expected = "'<latency>'" if width == 1 else "'<time> <latency>'"
        for n, f in bad[:3]:
            notices.append(Notice(f"{self.name}: line {n}: expected {expected} (numbers), got {excerpt(' '.join(f))}; "
                                  "line skipped"))
        if len(bad) > 3:
            notices.append(Notice(f"{self.name}: lines {bad[3][0]}-{bad[-1][0]}: {len(bad) - 3} more lines skipped "
                                  f"(expected {expected})", skipped=len(bad) - 3))
        lines = f"lines {first}-{first + len(batch) - 1}"
        ok = np.isfinite(rows).all(axis=1) & (rows[:, -1] >= 0)
        if not ok.all():
            notices.append(Notice(f"{self.name}: {lines}: {int((~ok).sum())} negative or non-finite value(s) dropped",
                                  skipped=int((~ok).sum())))
            rows, numbers = rows[ok], numbers[ok]
        with np.errstate(over="ignore"):
            huge = rows[:, -1] * self.scale >= MAX_VALUE
        if huge.any():
            notices.append(Notice(f"{self.name}: {lines}: {int(huge.sum())} value(s) of {MAX_VALUE:g} or more dropped "
                                  "(no latency is that long)", skipped=int(huge.sum())))
            rows, numbers = rows[~huge], numbers[~huge]
        return rows, numbers, notices

    def _flush(self, upto: int) -> Iterator[Interval]:
        """The current column, then empty columns up to `upto` (a long idle stretch as one column)."""
        assert self.column is not None
        for first, stop in column_spans(self.column, upto):
            yield self._interval(first, stop, np.concatenate(self.pending) if self.pending else np.empty(0))
            self.pending = []
        self.column = upto

    def _interval(self, first: int, stop: int, values: np.ndarray) -> Interval:
        counts, sums = bin_values(values)
        start = self.origin + first * self.interval
        return Interval(self.stream, start, self.origin + stop * self.interval, counts, sums * self.to_seconds,
                        extremes=bin_extremes(values) * self.to_seconds)
