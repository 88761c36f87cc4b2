"""Protocol records out: what recordings, `--emit` and the training-loop sinks write."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import numpy as np

from latencymap.core.buckets import bucket_value_of_slot
from latencymap.core.model import SourceBuckets, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.core.units import unit_seconds
from latencymap.protocol.grammar import BEGIN, END


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
    source: SourceBuckets | None = None,
    extremes: np.ndarray | None = None,
) -> str:
    """One protocol record. With `per_interval` and `start` it uses latencymap's extensions.

    `sums` (seconds per slot) adds the third column, written in the stream's unit; `source` (per-interval
    records only) adds the source's own buckets (`sourcebuckets`, `sourcecounts`, `sourcetime` lines);
    `extremes` ((2, NSLOTS) seconds, per-interval records only) the values seen per slot (`extremes` line).
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
    if source is not None and per_interval:
        if len(source.bounds):  # none: the buckets folded exactly, only their sum is kept
            lines.append("sourcebuckets, " + ", ".join(repr(float(b)) for b in source.bounds))
            lines.append("sourcecounts, " + ", ".join(str(int(c)) for c in source.counts))
        if source.total_time is not None:
            lines.append(f"sourcetime, {float(source.total_time)!r}")
    if extremes is not None and per_interval:
        lines += _extremes_line(stream, extremes)
    if sums is None:
        for slot in np.flatnonzero(counts).tolist():
            lines.append(f"{bucket_value_of_slot(slot, stream.datasource)}, {int(counts[slot])}")
    else:
        slots = np.flatnonzero((counts != 0) | (sums != 0))
        for slot, total in zip(slots.tolist(), in_units(sums[slots], unit_seconds(stream.unit)).tolist(), strict=True):
            lines.append(f"{bucket_value_of_slot(slot, stream.datasource)}, {int(counts[slot])}, {total!r}")
    lines.append(END)
    return "\n".join(lines) + "\n"


def _extremes_line(stream: StreamId, extremes: np.ndarray) -> list[str]:
    """`extremes, <bucket value>, <smallest>, <largest>, ...` (stream unit) for each slot with both known; none
    when no slot has them."""
    slots = np.flatnonzero(np.isfinite(extremes[0]) & np.isfinite(extremes[1]))
    if not slots.size:
        return []
    per = unit_seconds(stream.unit)
    least, most = in_units(extremes[0, slots], per).tolist(), in_units(extremes[1, slots], per).tolist()
    parts = [f"{bucket_value_of_slot(slot, stream.datasource)}, {a!r}, {b!r}"
             for slot, a, b in zip(slots.tolist(), least, most, strict=True)]
    return ["extremes, " + ", ".join(parts)]


#: How many floats on each side of `seconds / per` may read back as `seconds` (at most 2: a float in the unit is at
#: most twice as coarse as one in seconds, relatively); one more to be safe.
_NEAR = 3


def in_unit(seconds: float, per: float) -> float:
    """`seconds` in a unit of `per` seconds, as the reader will read it back (`value * per`) to the same float.

    The readers multiply the value written by `per` (`unit_seconds`): of the floats that give `seconds` back so, the
    one with the shortest text (a source's `348` stays `348.0`, not `348.00000000000006`), then the nearest to
    `seconds / per`. A time that no float in the unit gives back (a few in a hundred, made by arithmetic in
    seconds) is written as the nearest time that one does give back, chosen as that time would be: the next
    recording of what was read writes the same text, so recording -> replay -> record is bit-exact.
    """
    if per == 1.0 or seconds == 0.0 or not math.isfinite(seconds):
        return seconds + 0.0  # -0.0 becomes 0.0, as the readers make it
    near = seconds / per
    if not math.isfinite(near):
        return near
    found = _reads_back_as(seconds, per)
    if found is not None:
        return found
    given = min(_around(near), key=lambda c: (abs(c * per - seconds), c))
    found = _reads_back_as(given * per, per)
    return given if found is None else found


def in_units(seconds: np.ndarray, per: float) -> np.ndarray:
    """`in_unit` of each time in `seconds`: those that only one float gives back at once, the others one by one."""
    seconds = np.asarray(seconds, dtype=np.float64) + 0.0
    if per == 1.0 or not seconds.size:
        return seconds
    with np.errstate(over="ignore", invalid="ignore"):
        near = seconds / per
        # the only float that reads back as the time (those that do are next to each other), or 0
        only = (near * per == seconds) & (np.nextafter(near, -np.inf) * per != seconds) \
            & (np.nextafter(near, np.inf) * per != seconds) | (seconds == 0.0)
    for i in np.flatnonzero(~only).tolist():
        near[i] = in_unit(float(seconds[i]), per)
    return near


def _reads_back_as(seconds: float, per: float) -> float | None:
    """Of the floats that read back as `seconds` (times `per`), the one with the shortest text, then the nearest to
    `seconds / per`; None when there is none."""
    near = seconds / per
    back = [c for c in _around(near) if c * per == seconds]
    return min(back, key=lambda c: (len(repr(c)), abs(c - near), c)) if back else None


def _around(value: float) -> list[float]:
    """`value` and the _NEAR floats on each side of it."""
    out = [value]
    down = up = value
    for _ in range(_NEAR):
        down, up = math.nextafter(down, -math.inf), math.nextafter(up, math.inf)
        out += (down, up)
    return out


def _one_line(text: str) -> str:
    """`text` on one line that does not end in a record marker (which the reader takes for a line cut short: its
    `>` is written `?`)."""
    line = clean_text(text).replace("\n", " ")
    cut = line.rstrip()
    return f"{cut[:-1]}?" if cut.lower().endswith((BEGIN, END)) else line
