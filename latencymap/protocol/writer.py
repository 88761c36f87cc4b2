"""Protocol records out: what recordings, `--emit` and the training-loop sinks write."""

from __future__ import annotations

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
) -> str:
    """One protocol record. With `per_interval` and `start` it uses latencymap's extensions.

    `sums` (seconds per slot) adds the third column, written in the stream's unit; `source` (per-interval
    records only) adds the source's own buckets (`sourcebuckets`, `sourcecounts`, `sourcetime` lines).
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
        if source.bounds:  # none: the buckets folded exactly, only their sum is kept
            lines.append("sourcebuckets, " + ", ".join(repr(float(b)) for b in source.bounds))
            lines.append("sourcecounts, " + ", ".join(str(int(c)) for c in source.counts))
        if source.total_time is not None:
            lines.append(f"sourcetime, {float(source.total_time)!r}")
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
