"""bpftrace `-f json` output: `{"type": "hist", "data": {"@map": [{"min": 8, "max": 15, "count": n}]}}` lines.

`max` is inclusive; the negative bucket has no `min` and is dropped with a note; a map whose rows are an
`lhist()`'s (linear bounds, a `{"min": 20}` row past its max) is left out whole, with one note; bpftrace
before 0.20 prints its `[2G, 4G)` row as `{"min": -2147483648, "max": 0}` (see OVERFLOWED_BOUNDS). A row that
cannot be read is left out with a note, not the rest of its print. Keyed maps (`{"@map": {"key": [...]}}`) give one
stream per key, labelled `@map[key]`; a hist line is one whole print of its map, so its keys share one column in
whatever order bpftrace lists them (it changes between prints). `{"type": "time"}` lines time the prints that
follow; other line types are skipped. Timing, units and cumulative/per-interval counts work as for the text output
(see `bpftrace_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencymap.core.buckets import MAX_COUNT
from latencymap.core.json_input import json_input
from latencymap.core.model import Notice, empty_counts
from latencymap.core.sanitize import clean_label, excerpt
from latencymap.plugins import Item
from latencymap.sources.printed_histograms import (
    PrintedHistogramFormat,
    PrintReader,
    add_count,
    is_int,
    lhist_layout,
    parse_time_line,
    slot_of_range,
)

_TYPED = re.compile(r'^\{\s*"type"\s*:\s*"(\w+)"')
_KNOWN_TYPES = frozenset({"attached_probes", "hist", "time", "map", "value", "printf", "stats", "join",
                          "syscall", "lost_events", "helper_error"})


@dataclass(frozen=True, slots=True)
class Event:
    """One output line: `kind` is the bpftrace type (`hist`, `map`, `printf`, `time`, ...; `""` when untyped)."""

    kind: str
    name: str = ""
    data: Any = None


def parse_line(line: str) -> Event | None:
    """The event on one `bpftrace -f json` line; None for blank lines. ValueError for text that is not a JSON object.

    A hist or map of one map comes with its name (`@x`) and entries; anything else with its whole `data`.
    """
    text = line.strip()
    if not text:
        return None
    try:
        obj = json_input(text)
    except ValueError as err:
        raise ValueError(f"not bpftrace JSON: {text[:120]!r}") from err
    if not isinstance(obj, dict):
        raise ValueError(f"not a bpftrace JSON event: {text[:120]!r}")
    kind, data = ("" if obj.get("type") is None else str(obj["type"])), obj.get("data")
    if kind in ("hist", "map", "stats", "lhist") and isinstance(data, dict) and len(data) == 1:
        name, value = next(iter(data.items()))
        return Event(kind, str(name), value)
    return Event(kind, "", data)


def line_cut(raw: str, err: BaseException | None) -> str:
    """Why a line is no whole JSON object when it was cut (` (...)`): at the longest line read, or short, its JSON
    ending with the line, unclosed (a file copied or written only in part); "" otherwise."""
    from latencymap.flow.inputs import MAX_LINE  # the input layer's cut, needed only to explain a bad line

    text = raw.rstrip("\r\n")
    if len(text) >= MAX_LINE:
        return f" (the line was cut at {MAX_LINE:,} characters, the longest read)"
    if isinstance(err, json.JSONDecodeError) and (err.pos >= len(text.rstrip())
                                                   or err.msg.startswith("Unterminated string")):
        return " (the line ends early, inside its JSON: cut short)"
    return ""


def keyed(data: Any) -> dict[str, Any]:
    """A hist's or map's entries by key string (`""` for an unkeyed one)."""
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    return {"": data}


class HistRowError(ValueError):
    """Hist data that is not a list of `{"min": int, "max": int, "count": int}` rows."""


#: The bounds bpftrace before 0.20 prints in `-f json` for its `[2G, 4G)` hist row (they overflow 32 bits): the
#: row its text output of the same map labels `[2G, 4G)`, where its `hist()` counts every value of 2^31 or more.
OVERFLOWED_BOUNDS = (-(2**31), 0)
#: The slot of `[2^31, 2^32)`, where that row is read.
OVERFLOWED_SLOT = 32


@dataclass(slots=True)
class HistRows:
    """One map's JSON hist rows read: counts per slot, the negative-bucket count (only reported), the count of the
    overflowed `[2G, 4G)` row (see OVERFLOWED_BOUNDS), and why each row that could not be read was left out."""

    counts: np.ndarray = field(default_factory=empty_counts)
    negative: int = 0
    overflowed: int = 0
    read: int = 0  # rows read
    bad: list[str] = field(default_factory=list)
    unknown: np.ndarray | None = None  # slots of rows left out for their count: not known
    ranges: list[tuple[int, int]] = field(default_factory=list)  # `[min, max + 1)` of the rows that have both
    linear: bool = False  # a row no hist() prints: an lhist()'s past its max (`{"min": 20}`) or below its min

    @property
    def is_linear(self) -> bool:
        """Whether the rows are an `lhist()`'s (`lhist_layout`)."""
        return self.linear or lhist_layout(self.ranges)

    def leave_out(self, why: str, slot: int | None = None) -> None:
        """A row left out (`why` it could not be read); its bucket's count unknown (none of it counted) when `slot`
        says which it is."""
        self.bad.append(why)
        if slot is not None:
            if self.unknown is None:
                self.unknown = np.zeros(len(self.counts), dtype=bool)
            self.unknown[slot] = True
            self.counts[slot] = 0


def hist_counts(rows: Any) -> HistRows:
    """The counts of one map's JSON hist rows; a row that cannot be read is left out (with why), not the others.
    HistRowError when `rows` is no list of rows."""
    if not isinstance(rows, list):
        raise HistRowError(f"expected a list of buckets, got {type(rows).__name__}")
    out = HistRows()
    for row in rows:
        _add_row(out, row)
    return out


def _add_row(out: HistRows, row: Any) -> None:
    """Add one `{"min", "max", "count"}` row to `out`, or say why it is left out."""
    if not isinstance(row, dict):
        out.leave_out(f"expected a bucket {{\"min\": m, \"max\": n, \"count\": c}}, got {excerpt(str(row))}")
        return
    low, high, count = row.get("min"), row.get("max"), row.get("count")
    bounds = (low, high) if is_int(low) and is_int(high) else None
    slot = None
    if bounds == OVERFLOWED_BOUNDS:
        slot = OVERFLOWED_SLOT
    elif bounds is not None:
        slot = slot_of_range(bounds[0], bounds[1] + 1)
    if bounds is not None and bounds != OVERFLOWED_BOUNDS:
        out.ranges.append((bounds[0], bounds[1] + 1))
    elif ("min" in row) != ("max" in row) and is_int(row.get("min", row.get("max"))) and row.get("max") != -1:
        out.linear = True  # lhist()'s rows past its max (`{"min": 20}`) and below a min above 0 (`{"max": 9}`)
    if not is_int(count) or not 0 <= count <= MAX_COUNT:
        out.leave_out(f"expected a bucket with an integer count in [0, 2**62], got {excerpt(str(row))}", slot)
        return
    if "min" not in row:
        out.negative = min(out.negative + count, MAX_COUNT)  # only reported, never counted
        out.read += 1
        return
    if bounds is None:
        out.leave_out(f"expected integer min and max, got {excerpt(str(row))}")
    elif slot is None:
        out.leave_out(f"expected log2 bounds (hist(), not lhist()), got {excerpt(str(row))}")
    elif not add_count(out.counts, slot, count):
        out.leave_out(f"expected at most 2**62 events per bucket, got more in {excerpt(str(row))}", slot)
    else:
        out.read += 1
        if bounds == OVERFLOWED_BOUNDS:
            out.overflowed = min(out.overflowed + count, MAX_COUNT)


class BpftraceJsonFormat(PrintedHistogramFormat):
    """bpftrace `-f json` lines; hist maps become streams."""

    name = "bpftrace-json"
    summary = 'bpftrace -f json lines ({"type": "hist", ...}, {"type": "time", ...})'

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any((m := _TYPED.match(line.strip())) is not None and m.group(1) in _KNOWN_TYPES for line in head)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        reader = PrintReader(name, self.options)
        overflowed: set[str] = set()  # labels whose overflowed [2G, 4G) row was said
        n = 0
        for n, raw in enumerate(lines, 1):
            try:
                event = parse_line(raw)
            except ValueError as err:
                yield Notice(f"{name}: line {n}: expected one JSON object per line (bpftrace -f json), "
                             f"got {excerpt(raw.strip())}{line_cut(raw, err.__cause__)}; line skipped")
                continue
            if event is None:
                continue
            kind, data = event.kind, ({event.name: event.data} if event.name else event.data)
            if kind == "time":
                stamp = parse_time_line(data) if isinstance(data, str) else None
                if stamp is None:
                    yield Notice(f"{name}: line {n}: expected a time such as \"14:03:21\\n\" in a time line, "
                                 f"got {excerpt(str(data))}; line skipped")
                else:
                    yield from reader.time_line(*stamp, n)
            elif kind == "hist":
                yield from self._hist(reader, data, n, name, overflowed)
            elif kind == "attached_probes":
                yield from reader.attached(n)
        yield from reader.finish(n)

    def _hist(self, reader: PrintReader, data: Any, n: int, name: str, overflowed: set[str]) -> Iterator[Item]:
        if not isinstance(data, dict):
            yield Notice(f"{name}: line {n}: expected \"data\": {{\"@map\": [...]}} in a hist line; line skipped")
            return
        for map_name, value in data.items():
            keyed = value.items() if isinstance(value, dict) else [(None, value)]
            opened = False  # the line's first readable key opens its print (one read of none is no print)
            for key, rows in keyed:
                # whole (a long key): the reader names the stream
                label = clean_label(str(map_name) if key is None else f"{map_name}[{key}]")
                try:
                    read = hist_counts(rows)
                except HistRowError as err:
                    read = HistRows(bad=[str(err)])
                shown = reader.shown(label)
                family = clean_label(str(map_name))
                if reader.is_linear(family) or read.is_linear:
                    yield from reader.linear(label, family, n)
                    continue
                if read.bad and not read.read:  # nothing of it could be read: no print, and no sign of a cleared map
                    reader.unreadable(label)
                    more = f" (and {len(read.bad) - 1} more unreadable rows)" if len(read.bad) > 1 else ""
                    yield Notice(f"{name}: line {n}: {shown}: {read.bad[0]}{more}; histogram skipped")
                    continue
                for why in read.bad:
                    yield Notice(f"{name}: line {n}: {shown}: {why}; row skipped")
                if read.overflowed and label not in overflowed:
                    overflowed.add(label)
                    yield Notice(f"{name}: line {n}: {shown}: the row {{\"min\": -2147483648, \"max\": 0}} is "
                                 "bpftrace's [2G, 4G) row, printed with bounds that overflow (bpftrace before 0.20, "
                                 "whose hist() also counts every value of 2^31 or more there): read as [2^31, 2^32)",
                                 skipped=0)
                if not opened:
                    opened = True
                    yield from reader.whole_print(str(map_name), n)
                yield from reader.histogram(label, read.counts, n, negative=read.negative, unknown=read.unknown)
