"""The PyLatencyMap record protocol: a streaming reader and a writer, with latencymap's extensions.

```
<begin record>
timestamp, microsec, <epoch_usecs>, <free-text date>
latencyunit, <millisec|microsec|nanosec>
label, <free text>
datasource, <oracle|bpf|systemtap|dtrace|...>
<bucket_value>, <cumulative_count>[, <cumulative_sum>]
<end record>
```

Extensions written only by latencymap: a third column (exact time in the bucket, in
`latencyunit`), `counts, interval` (the record holds one interval, not cumulative counters),
`start, microsec, <epoch_usecs>` (the interval's start) and `flags, reset|gap`.
SystemTap `@hist_log` and DTrace `quantize` rows (`  value |@@@  count`) are read as data rows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from latencymap.buckets import MAX_COUNT, NSLOTS, ORACLE_OVERFLOW, bucket_value_of_slot, slot_of_bucket_value
from latencymap.model import Interval, Notice, Snapshot, SnapshotRun, StreamId
from latencymap.protocol_chunks import FastPath
from latencymap.sanitize import clean_text, excerpt
from latencymap.units import normalize_unit, unit_seconds

Item = Snapshot | SnapshotRun | Interval | Notice
BEGIN = "<begin record>"
END = "<end record>"
DEFAULT_DATASOURCE = "bpf"
DEFAULT_UNIT = "millisec"
PROTOCOL_UNITS = ("millisec", "microsec", "nanosec")

_HIST_ROW = re.compile(r"^(-?\d+)\s*\|[^|]*?(\d+)$")
_HIST_HEADER = re.compile(r"^value\s*\|?[-\s]*(distribution[-\s]*)?count$")


class RecordError(ValueError):
    """A record that cannot be read; carries the line number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(slots=True)
class _Record:
    first_line: int
    micros: int | None = None
    start_micros: int | None = None
    date: str = ""
    label: str = ""
    datasource: str = DEFAULT_DATASOURCE
    unit: str = DEFAULT_UNIT
    per_interval: bool = False
    flags: set[str] = field(default_factory=set)
    values: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    sums: list[float] | None = None


class ProtocolReader:
    """Incremental reader: feed lines, get Snapshots, Intervals (per-interval records) and Notices.

    A malformed record is skipped whole with a Notice naming the line; reading goes on at the
    next `<begin record>`. Repeated bucket values in one record add up.
    """

    def __init__(self, name: str = "<stdin>") -> None:
        self.name = name
        self.line_no = 0
        self._record: _Record | None = None
        self._bad_record = False
        self._streams: dict[tuple[str, str, str], StreamId] = {}
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
                self._record = _Record(first_line=self.line_no)
                self._bad_record = False
                continue
            if self._record is None:
                continue  # noise between records
            if low == END:
                record, bad = self._record, self._bad_record
                self._record = None
                if not bad:
                    yield self._finish(record)
                continue
            if self._bad_record:
                continue
            try:
                self._parse_line(self._record, line, low)
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

    def _parse_line(self, rec: _Record, line: str, low: str) -> None:
        n = self.line_no
        if low[0].isdigit() or low[0] == "-":
            self._parse_data(rec, line, n)
            return
        key, _, rest = low.partition(",")
        key = key.strip()
        if not rest:
            if low.startswith("~") or _HIST_HEADER.match(re.sub(r"\s+", " ", low)):
                return  # SystemTap/DTrace histogram decoration
            raise RecordError(n, f"expected '<key>, <value>' or '<bucket value>, <count>', got {excerpt(line)}")
        value = line.partition(",")[2].strip()
        if key == "timestamp":
            parts = [p.strip() for p in value.split(",", 2)]
            if len(parts) < 2 or parts[0].lower() != "microsec":
                raise RecordError(n, f"expected 'timestamp, microsec, <epoch usecs>, <date>', got {excerpt(line)}")
            rec.micros = _micros(parts[1], n, line)
            rec.date = clean_text(parts[2]) if len(parts) > 2 else ""
        elif key == "label":
            rec.label = clean_text(value)
        elif key == "datasource":
            rec.datasource = clean_text(value.lower()) or DEFAULT_DATASOURCE
        elif key == "latencyunit":
            try:
                unit = normalize_unit(value)
            except ValueError:
                unit = ""
            if unit not in PROTOCOL_UNITS:
                raise RecordError(n, f"expected latencyunit millisec, microsec or nanosec, got {excerpt(value)}")
            rec.unit = unit
        elif key == "counts":
            mode = value.lower()
            if mode not in ("cumulative", "interval"):
                raise RecordError(n, f"expected 'counts, cumulative' or 'counts, interval', got {excerpt(line)}")
            rec.per_interval = mode == "interval"
        elif key == "start":
            parts = [p.strip() for p in value.split(",")]
            if len(parts) < 2 or parts[0].lower() != "microsec":
                raise RecordError(n, f"expected 'start, microsec, <epoch usecs>', got {excerpt(line)}")
            rec.start_micros = _micros(parts[1], n, line)
        elif key == "flags":
            rec.flags.update(p.strip().lower() for p in value.split(",") if p.strip())
        else:
            raise RecordError(n, f"unknown record line {excerpt(line)} (expected timestamp, label, datasource, "
                                 "latencyunit or '<bucket value>, <count>')")

    def _parse_data(self, rec: _Record, line: str, n: int) -> None:
        if "|" in line:
            m = _HIST_ROW.match(line)
            if m is None:
                raise RecordError(n, f"expected a histogram row '<value> |@@@ <count>', got {excerpt(line)}")
            fields = [m.group(1), m.group(2)]
        else:
            fields = line.split(",")
        if len(fields) not in (2, 3):
            raise RecordError(n, f"expected '<bucket value>, <count>[, <sum>]', got {excerpt(line)}")
        try:
            value = int(fields[0])
            count = int(fields[1])
        except ValueError:
            raise RecordError(n, f"expected integers in '<bucket value>, <count>', got {excerpt(line)}") from None
        if not 0 <= count < MAX_COUNT:
            raise RecordError(n, f"expected a count from 0 to 2**62, got {excerpt(line)}")
        if value < 0:
            return  # DTrace/bpftrace negative-value row: not a latency
        total = None
        if len(fields) == 3:
            try:
                total = float(fields[2])
            except ValueError:
                raise RecordError(n, f"expected a number as the third column (sum), got {excerpt(line)}") from None
            if not np.isfinite(total) or total < 0:
                raise RecordError(n, f"expected a finite sum >= 0, got {excerpt(line)}")
        if value == ORACLE_OVERFLOW:
            return
        if value & (value - 1):
            raise RecordError(n, f"expected a bucket value that is 0 or a power of 2, got {excerpt(line)}")
        rec.values.append(value)
        rec.counts.append(count)
        if total is not None:
            if rec.sums is None:
                rec.sums = [0.0] * (len(rec.values) - 1)
            rec.sums.append(total)
        elif rec.sums is not None:
            rec.sums.append(0.0)

    def _finish(self, rec: _Record) -> Snapshot | Interval | Notice:
        counts = np.zeros(NSLOTS, dtype=np.int64)
        present = np.zeros(NSLOTS, dtype=bool)
        sums = np.zeros(NSLOTS, dtype=np.float64) if rec.sums is not None else None
        try:
            slots = [slot_of_bucket_value(v, rec.datasource) for v in rec.values]
        except ValueError as err:
            return self._notice(rec.first_line, str(err))
        for i, slot in enumerate(slots):
            if slot is None:
                continue
            counts[slot] += rec.counts[i]
            present[slot] = True
            if sums is not None and rec.sums is not None:
                sums[slot] += rec.sums[i]
        if sums is not None:
            sums *= unit_seconds(rec.unit)
        return self._item(self._stream(rec.label, rec.datasource, rec.unit), rec.first_line, rec.micros, rec.date,
                          rec.per_interval, rec.start_micros, rec.flags, counts, present, sums)

    def _stream(self, label: str, datasource: str, unit: str) -> StreamId:
        key = (label, datasource, unit)
        stream = self._streams.get(key)
        if stream is None:
            if len(self._streams) > 4096:
                self._streams.clear()
            stream = self._streams[key] = StreamId(label, datasource, unit)
        return stream

    def _item(self, stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
              start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
              sums: np.ndarray | None) -> Snapshot | Interval | Notice:
        if per_interval:
            if micros is None:
                return self._notice(first_line, "a 'counts, interval' record needs a timestamp line")
            start_us = start_micros if start_micros is not None else micros - 1_000_000
            if start_us >= micros:
                return self._notice(first_line, "interval start is not before its timestamp")
            return Interval(stream, start_us / 1e6, micros / 1e6, counts, sums, reset="reset" in flags,
                            gap="gap" in flags, date=date, duration=(micros - start_us) / 1e6)
        return Snapshot(stream, None if micros is None else micros / 1e6, counts, sums, date=date, line=first_line,
                        present=present, micros=micros)


def _micros(text: str, n: int, line: str) -> int:
    try:
        micros = int(text.strip())
    except ValueError:
        raise RecordError(n, f"expected an integer of microseconds, got {excerpt(line)}") from None
    if not -MAX_COUNT < micros < MAX_COUNT:
        raise RecordError(n, f"expected epoch microseconds within +-2**62, got {excerpt(line)}")
    return micros


def format_record(
    stream: StreamId,
    timestamp: float,
    counts: np.ndarray,
    sums: np.ndarray | None = None,
    *,
    date: str = "",
    start: float | None = None,
    per_interval: bool = False,
    flags: Iterable[str] = (),
) -> str:
    """One protocol record. With `per_interval` and `start` it uses latencymap's extensions.

    `sums` (seconds per slot) adds the third column, written in the stream's unit.
    Without any extension the record is exactly what PyLatencyMap 1.3 reads.
    """
    date = _one_line(date) or time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(timestamp)) + " UTC"
    lines = [BEGIN, f"timestamp, microsec, {round(timestamp * 1e6)}, {date}"]
    if per_interval:
        lines.append("counts, interval")
        if start is not None:
            lines.append(f"start, microsec, {round(start * 1e6)}")
    flag_list = [f for f in flags if f]
    if flag_list:
        lines.append("flags, " + ", ".join(flag_list))
    lines.append(f"latencyunit, {stream.unit}")
    lines.append(f"label, {_one_line(stream.label)}")
    lines.append(f"datasource, {stream.datasource}")
    scale = 1.0 / unit_seconds(stream.unit)
    for slot in np.flatnonzero(counts if sums is None else (counts != 0) | (sums != 0)):
        value = bucket_value_of_slot(int(slot), stream.datasource)
        if sums is None:
            lines.append(f"{value}, {int(counts[slot])}")
        else:
            lines.append(f"{value}, {int(counts[slot])}, {float(sums[slot]) * scale!r}")
    lines.append(END)
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return clean_text(text).replace("\n", " ")
