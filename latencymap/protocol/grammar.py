"""The PyLatencyMap record grammar: what each line of a record means, and what a finished record becomes.

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
`start, microsec, <epoch_usecs>` (the interval's start), `flags, reset|gap|overlap` (`overlap`: it ends no later than an
interval of its stream written earlier, and is in that stream all the same: `Timeline`), and in per-interval records the
source's own buckets (`sourcebuckets`, `sourcecounts`, `sourcetime`) and the values seen per bucket (`extremes`).
SystemTap `@hist_log` and DTrace `quantize` rows (`  value |@@@  count`) are read as data rows; a line right
above a histogram header (`value  ---- Distribution ---- count`) is the aggregation's key, as `dtrace`'s `printa`
prints it, and names a stream of its own (`<label> [<key>]`). `timestamp, musec, ...` (older PyLatencyMap scripts)
is `timestamp, microsec, ...`. A record without a `latencyunit` line is in the unit the last record before it in
the same input gave (PyLatencyMap keeps the unit as a global), or millisec when none did: the reader decides that.
Both readers (line by line, and in bulk) use these functions, so they agree on every record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import field
from itertools import pairwise

import numpy as np

from latencymap.core.buckets import (
    MAX_COUNT,
    NSLOTS,
    ORACLE_OVERFLOW,
    bounds_seconds,
    bucket_value_of_slot,
    slot_of_bucket_value,
)
from latencymap.core.lean import dataclass
from latencymap.core.model import Interval, Snapshot, SourceBuckets, StreamId
from latencymap.core.patterns import lazy_pattern
from latencymap.core.sanitize import StreamNames, clean_label, clean_text, excerpt
from latencymap.core.units import normalize_unit, unit_seconds

BEGIN = "<begin record>"
END = "<end record>"
DEFAULT_DATASOURCE = "bpf"
DEFAULT_UNIT = "millisec"
PROTOCOL_UNITS = ("millisec", "microsec", "nanosec")
#: How a timestamp line names microseconds (`musec`: PyLatencyMap's DTrace and AWR scripts).
MICROSECONDS = ("microsec", "musec")
#: The first line of a latencymap recording (JSON follows): noise to a PyLatencyMap reader.
RECORDING_HEADER = "# latencymap-recording "
#: A note of the recorded run, between records (JSON follows: `message`, `skipped`): the reader says it again.
NOTE_TAG = "note"
NOTE_PREFIX = f"# latencymap-{NOTE_TAG} "
#: latencymap's lines for a source's own (not power-of-two) buckets in a per-interval record.
SOURCE_KEYS = ("sourcebuckets", "sourcecounts", "sourcetime")
#: latencymap's line for the smallest and largest value seen per bucket in a per-interval record.
EXTREMES_KEY = "extremes"

_HIST_ROW = lazy_pattern(r"^(-?\d+)\s*\|[^|]*?(\d+)$")
_HIST_HEADER = lazy_pattern(r"^value\s*\|?[-\s]*(distribution[-\s]*)?count$")


class RecordError(ValueError):
    """A record that cannot be read; carries the line number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(slots=True)
class Record:
    """What the lines of one record said so far."""

    first_line: int
    micros: int | None = None
    start_micros: int | None = None
    date: str = ""
    label: str = ""
    datasource: str | None = None  # None: no datasource line (the reader's default applies)
    unit: str | None = None  # None: no latencyunit line (the reader gives the input's last unit, else millisec)
    per_interval: bool = False
    flags: set[str] = field(default_factory=set)
    values: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    sums: list[float] | None = None
    #: The first bucket line with events and no third column (sum): (line number, excerpt); 0 when there is none.
    unsummed: tuple[int, str] = (0, "")
    #: The first bucket line with a third column (sum), 0 when there is none.
    summed: int = 0
    source_bounds: tuple[float, ...] | None = None
    source_counts: tuple[int, ...] | None = None
    source_time: float | None = None
    #: From an `extremes` line: (bucket values, smallest, largest), in the stream unit.
    extremes: tuple[list[int], list[float], list[float]] | None = None
    #: The line of the `extremes` line (0: none).
    extremes_line: int = 0
    #: Why the `extremes` line was dropped ("": it was not); the record's counts and sums are read all the same.
    extremes_dropped: str = ""
    #: (index in `values` where its table starts, key) for each key line; rows before the first have no key.
    keys: list[tuple[int, str]] = field(default_factory=list)
    #: A line that is not the protocol's, kept until the next line says whether it was a histogram's key.
    pending: RecordError | None = None
    pending_line: str = ""
    #: The events of Oracle's overflow bucket (4294967295 rows), left out, and the line of its first row (0: none).
    overflow: int = 0
    overflow_line: int = 0


def parse_record_line(rec: Record, line: str, low: str, n: int) -> None:
    """Read one non-blank line of a record into `rec`; RecordError when it is not one the protocol knows.

    A line without a comma that is none of the protocol's waits for the next one: above a histogram header it is
    the table's key, otherwise its own error is raised then (or by `end_record`).
    """
    if rec.pending is not None:
        if _is_hist_header(low):
            rec.keys.append((len(rec.values), " ".join(w for w in clean_label(rec.pending_line).split(" ") if w)))
            rec.pending = None
            return
        end_record(rec)
    try:
        _parse_line(rec, line, low, n)
    except RecordError as err:
        if "," in line:
            raise
        rec.pending, rec.pending_line = err, line


def end_record(rec: Record) -> None:
    """Raise the error of a line left waiting for a histogram header that never came."""
    if rec.pending is not None:
        err, rec.pending = rec.pending, None
        raise err


def _is_hist_header(low: str) -> bool:
    return low.startswith("value") and _HIST_HEADER().match(re.sub(r"\s+", " ", low)) is not None


def _parse_line(rec: Record, line: str, low: str, n: int) -> None:
    if low[0].isdigit() or low[0] in "-+":  # `+16, 10`: PyLatencyMap's int() reads a sign
        _parse_data(rec, line, n)
        return
    key, comma, _ = low.partition(",")
    key = key.strip()
    if not comma:
        if low.startswith("~") or _is_hist_header(low):
            return  # SystemTap/DTrace histogram decoration
        raise RecordError(n, f"expected '<key>, <value>' or '<bucket value>, <count>', got {excerpt(line)}")
    value = line.partition(",")[2].strip()
    if key == "timestamp":
        parts = [p.strip() for p in value.split(",", 2)]
        if len(parts) < 2 or parts[0].lower() not in MICROSECONDS:
            raise RecordError(n, f"expected 'timestamp, microsec, <epoch usecs>, <date>', got {excerpt(line)}")
        rec.micros = parse_micros(parts[1], n, line)
        rec.date = clean_text(parts[2]) if len(parts) > 2 else ""
    elif key == "label":
        rec.label = clean_label(value)  # whole: StreamCache names the stream (cut, told apart); `label,`: no label
    elif key == "datasource":
        rec.datasource = clean_text(value.lower()) or None
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
        rec.start_micros = parse_micros(parts[1], n, line)
    elif key == "flags":
        rec.flags.update(p.strip().lower() for p in value.split(",") if p.strip())
    elif key in SOURCE_KEYS:
        _parse_source_line(rec, key, value, n, line)
    elif key == EXTREMES_KEY:
        _parse_extremes_line(rec, value, n, line)
    else:
        raise RecordError(n, f"unknown record line {excerpt(line)} (expected timestamp, label, datasource, "
                             "latencyunit or '<bucket value>, <count>')")

def _parse_data(rec: Record, line: str, n: int) -> None:
    if "|" in line:
        m = _HIST_ROW().match(line)
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
        raise RecordError(n, f"expected a count from 0 to 2**62 - 1, got {excerpt(line)}")
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
    if value == ORACLE_OVERFLOW:  # no finite range: left out, and said by the reader
        rec.overflow += count
        rec.overflow_line = rec.overflow_line or n
        return
    if value & (value - 1):
        raise RecordError(n, f"expected a bucket value that is 0 or a power of 2, got {excerpt(line)}")
    if total is None and count and rec.summed:
        raise RecordError(n, f"{excerpt(line)} has no third column (sum), which line {rec.summed} has: a record's "
                             "bucket lines with events carry a sum each, or none does (its events' time would be "
                             "neither exact nor estimated)")
    if total is not None and rec.unsummed[0]:
        raise RecordError(n, f"{excerpt(line)} has a third column (sum), which line {rec.unsummed[0]} "
                             f"({rec.unsummed[1]}) has not: a record's bucket lines with events carry a sum each, or "
                             "none does (its events' time would be neither exact nor estimated)")
    if total is None and count and not rec.unsummed[0]:
        rec.unsummed = (n, excerpt(line))
    if total is not None and not rec.summed:
        rec.summed = n
    rec.values.append(value)
    rec.counts.append(count)
    if total is not None:
        if rec.sums is None:
            rec.sums = [0.0] * (len(rec.values) - 1)
        rec.sums.append(total)
    elif rec.sums is not None:
        rec.sums.append(0.0)


def _parse_source_line(rec: Record, key: str, value: str, n: int, line: str) -> None:
    """`sourcebuckets, <upper bound>...` (stream unit, `inf` last), `sourcecounts, <count>...`, `sourcetime, <s>`."""
    parts = [p.strip() for p in value.split(",")]
    try:
        if key == "sourcebuckets":
            bounds = tuple(float(p) for p in parts)
            if not bounds or bounds[0] < 0 or any(not b > a for a, b in pairwise(bounds)):
                raise ValueError
            rec.source_bounds = bounds
        elif key == "sourcecounts":
            counts = tuple(int(p) for p in parts)
            if any(not 0 <= c < MAX_COUNT for c in counts):
                raise ValueError
            rec.source_counts = counts
        else:
            seconds = float(value)
            if not (np.isfinite(seconds) and seconds >= 0):
                raise ValueError
            rec.source_time = seconds
    except ValueError:
        expected = {"sourcebuckets": "ascending upper bounds >= 0", "sourcecounts": "counts from 0 to 2**62 - 1",
                    "sourcetime": "seconds >= 0"}[key]
        raise RecordError(n, f"expected '{key}, <{expected}>', got {excerpt(line)}") from None


def _parse_extremes_line(rec: Record, value: str, n: int, line: str) -> None:
    """`extremes, <bucket value>, <smallest>, <largest>, ...`: the values seen in each bucket (stream unit). A
    malformed one is dropped (`extremes_dropped`), not the record: it only narrows percentiles."""
    rec.extremes, rec.extremes_line, rec.extremes_dropped = None, n, ""
    parts = [p.strip() for p in value.split(",")]
    try:
        if not parts or len(parts) % 3:
            raise ValueError
        buckets = [int(p) for p in parts[0::3]]
        least, most = [float(p) for p in parts[1::3]], [float(p) for p in parts[2::3]]
        if any(not (0 <= a <= b < np.inf) for a, b in zip(least, most, strict=True)) or min(buckets) < 0:
            raise ValueError
    except ValueError:
        rec.extremes_dropped = ("expected 'extremes, <bucket value>, <smallest>, <largest>, ...' with 0 <= smallest "
                                f"<= largest, finite, got {excerpt(line)}")
        return
    rec.extremes = (buckets, least, most)


#: How far a value seen may lie past its bucket's bounds, or a slot's exact sum past n times its extremes, as float
#: rounding (of the unit's conversion, of a sum of many values), before the `extremes` line contradicts its record.
_EXTREMES_TOLERANCE = 1e-6


def _extremes_of(rec: Record, stream: StreamId, counts: np.ndarray, sums: np.ndarray | None) -> np.ndarray | None:
    """(2, NSLOTS) seconds from a record's `extremes` line (None: none, or dropped: `extremes_dropped` says why,
    as when a bucket is not one of the record's, the record is cumulative, or the values contradict the record's
    own counts, bucket bounds or exact sums)."""
    if rec.extremes is None:
        return None
    out = np.full((2, NSLOTS), np.nan)
    per = unit_seconds(stream.unit)
    why = "" if rec.per_interval else "an 'extremes' line needs a 'counts, interval' record"
    for bucket, least, most in zip(*rec.extremes, strict=True) if not why else ():
        try:
            slot = slot_of_bucket_value(bucket, stream.datasource)
        except ValueError as err:
            why = f"expected the bucket values of '<bucket value>, <count>' rows: {err}"
            break
        if slot is not None:
            out[0, slot] = np.fmin(out[0, slot], least * per)
            out[1, slot] = np.fmax(out[1, slot], most * per)
    why = why or _contradiction(out, stream, counts, sums)
    if why:
        rec.extremes_dropped = why
        return None
    return out


def extremes_faults(extremes: np.ndarray, high: np.ndarray, counts: np.ndarray,
                    sums: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where values seen ((..., 2, NSLOTS) seconds) contradict their records, each (..., NSLOTS): a slot with values
    seen and none of its events; a largest value above its bucket (`high`: upper bounds, s; the top slot holds any
    larger value); an exact sum (`sums`, like `counts`; None: none) that n such values cannot make."""
    least, most = extremes[..., 0, :], extremes[..., 1, :]
    seen = np.isfinite(least)
    tol = _EXTREMES_TOLERANCE
    top = high * (1 + tol)
    top[..., NSLOTS - 1] = np.inf
    # not `least` below the bucket: HdrHistogram's folded extremes give 0 there (to be fixed)
    above = seen & (most > top)
    if sums is None:
        bad_sum = np.zeros_like(seen)
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            bad_sum = seen & ((sums < counts * least * (1 - tol)) | (sums > counts * most * (1 + tol)))
    return seen & (counts == 0), above, bad_sum


def _contradiction(extremes: np.ndarray, stream: StreamId, counts: np.ndarray, sums: np.ndarray | None) -> str:
    """How a record's extremes (seconds) contradict the record itself (see `extremes_faults`), at the first slot
    that does; "": none."""
    low, high = bounds_seconds(stream.datasource, stream.unit)
    no_events, above, bad_sum = extremes_faults(extremes, high, counts, sums)
    faulty = np.flatnonzero(no_events | above | bad_sum)
    if not faulty.size:
        return ""
    slot = int(faulty[0])
    per = unit_seconds(stream.unit)
    least, most = extremes[0, slot], extremes[1, slot]
    seen = f"bucket {bucket_value_of_slot(slot, stream.datasource)}: smallest {least / per:g}, largest {most / per:g}"
    if no_events[slot]:
        return f"{seen}, but the record has no event in that bucket"
    if above[slot]:
        return f"{seen}, above that bucket's range {low[slot] / per:g} to {high[slot] / per:g}"
    n, total = int(counts[slot]), float(sums[slot]) if sums is not None else 0.0
    return (f"{seen}, but its {n:,} events' exact sum {total / per:g} is not between {n:,} times the smallest and "
            "the largest")


def source_buckets_of(rec: Record) -> SourceBuckets | None:
    """The source's own buckets a record carries (latencymap's extension lines), or None."""
    if rec.source_bounds is None and rec.source_counts is None:
        if rec.source_time is None:
            return None
        if not rec.per_interval:
            raise RecordError(rec.first_line, "a source's sum needs a 'counts, interval' record")
        return SourceBuckets.sum_only(rec.source_time)
    if rec.source_bounds is None or rec.source_counts is None or len(rec.source_bounds) != len(rec.source_counts):
        raise RecordError(rec.first_line, "expected 'sourcebuckets' and 'sourcecounts' lines of the same length")
    if not rec.per_interval:
        raise RecordError(rec.first_line, "source buckets need a 'counts, interval' record")
    return SourceBuckets(rec.source_bounds, np.asarray(rec.source_counts, dtype=np.int64), rec.source_time)


def record_items(rec: Record, stream_of: Callable[[str, str | None, str], StreamId]) -> list[Snapshot | Interval]:
    """What a finished record is: a cumulative Snapshot, or an Interval for `counts, interval` records; one per
    histogram key when the record holds keyed tables (`stream_of(label, datasource or None, unit)` names them).

    RecordError (numbered with the record's first line) when its bucket values or times do not fit.
    """
    if not rec.keys:
        return [_item(rec, stream_of(rec.label, rec.datasource, rec.unit or DEFAULT_UNIT))]
    parts = [(0, "")] if rec.keys[0][0] > 0 else []
    parts += rec.keys
    bounds = [start for start, _ in parts[1:]] + [len(rec.values)]
    merged: dict[str, list[tuple[int, int]]] = {}  # a key printed twice in one record: its counts add up
    for (start, key), stop in zip(parts, bounds, strict=True):
        merged.setdefault(key, []).append((start, stop))
    out = []
    for key, spans in merged.items():
        label = rec.label if not key else f"{rec.label} [{key}]" if rec.label else key
        picked = Record(rec.first_line, rec.micros, rec.start_micros, rec.date, label, rec.datasource, rec.unit,
                        rec.per_interval, rec.flags)
        for start, stop in spans:
            picked.values += rec.values[start:stop]
            picked.counts += rec.counts[start:stop]
            if rec.sums is not None:
                picked.sums = (picked.sums or []) + rec.sums[start:stop]
        out.append(_item(picked, stream_of(label, rec.datasource, rec.unit or DEFAULT_UNIT)))
    return out


def _item(rec: Record, stream: StreamId) -> Snapshot | Interval:
    """The item of the rows of `rec`, in `stream` (whose datasource says what the bucket values mean)."""
    counts = np.zeros(NSLOTS, dtype=np.int64)
    present = np.zeros(NSLOTS, dtype=bool)
    sums = np.zeros(NSLOTS, dtype=np.float64) if rec.sums is not None else None
    try:
        slots = [slot_of_bucket_value(v, stream.datasource) for v in rec.values]
    except ValueError as err:
        raise RecordError(rec.first_line, str(err)) from None
    for i, slot in enumerate(slots):
        if slot is None:
            continue
        counts[slot] += rec.counts[i]
        present[slot] = True
        if sums is not None and rec.sums is not None:
            sums[slot] += rec.sums[i]
    if sums is not None:
        sums *= unit_seconds(stream.unit)
    source = source_buckets_of(rec)
    item = make_item(stream, rec.first_line, rec.micros, rec.date, rec.per_interval, rec.start_micros, rec.flags,
                     counts, present, sums)
    if source is not None and isinstance(item, Interval):
        item.source_buckets = source
    extremes = _extremes_of(rec, stream, counts, sums)
    if extremes is not None and isinstance(item, Interval):
        item.extremes = extremes
    return item


def interval_start(micros: int, start_micros: int | None) -> int:
    """Where a per-interval record starts: its start line, else one second before its timestamp."""
    return start_micros if start_micros is not None else micros - 1_000_000


def make_item(stream: StreamId, first_line: int, micros: int | None, date: str, per_interval: bool,
              start_micros: int | None, flags: Iterable[str], counts: np.ndarray, present: np.ndarray,
              sums: np.ndarray | None) -> Snapshot | Interval:
    """A Snapshot or Interval from a record's parts; RecordError when a per-interval record's times do not fit."""
    if per_interval:
        if micros is None:
            raise RecordError(first_line, "a 'counts, interval' record needs a timestamp line")
        start_us = interval_start(micros, start_micros)
        if start_us >= micros:
            raise RecordError(first_line, "interval start is not before its timestamp")
        if start_us / 1e6 >= micros / 1e6:
            raise RecordError(first_line, f"interval start and timestamp are the same second at this magnitude "
                                          f"({micros} µs has no microsecond precision as seconds)")
        return Interval(stream, start_us / 1e6, micros / 1e6, counts, sums, reset="reset" in flags,
                        gap="gap" in flags, date=date, duration=(micros - start_us) / 1e6)
    return Snapshot(stream, None if micros is None else micros / 1e6, counts, sums, date=date, line=first_line,
                    present=present, micros=micros)


class StreamCache:
    """One StreamId per (label, datasource, unit), so equal streams are the same object. Its label is the stream's
    name (`StreamNames`): a label longer than MAX_TEXT is cut in the middle, and one whose cut another label's
    already is becomes `NAME (2)`, so distinct labels stay distinct streams in both readers."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, str, str], StreamId] = {}
        self.names = StreamNames()

    def get(self, label: str, datasource: str, unit: str) -> StreamId:
        """The stream of this identity."""
        key = (label, datasource, unit)
        stream = self._streams.get(key)
        if stream is None:
            if len(self._streams) > 4096:
                self._streams.clear()
            stream = self._streams[key] = StreamId(self.names.name(label, (datasource, unit)), datasource, unit)
        return stream


def parse_micros(text: str, n: int, line: str) -> int:
    """Integer microseconds within +-2**62 (RecordError otherwise)."""
    try:
        micros = int(text.strip())
    except ValueError:
        raise RecordError(n, f"expected an integer of microseconds, got {excerpt(line)}") from None
    if not -MAX_COUNT < micros < MAX_COUNT:
        raise RecordError(n, f"expected epoch microseconds within +-2**62, got {excerpt(line)}")
    return micros
