"""bpftrace `-f json` output: `{"type": "hist", "data": {"@map": [{"min": 8, "max": 15, "count": n}]}}` lines.

`max` is inclusive; the negative bucket has no `min` and is dropped with a note. Keyed maps
(`{"@map": {"key": [...]}}`) give one stream per key, labelled `@map[key]`. `{"type": "time"}`
lines time the prints that follow; other line types are skipped. Timing, units and
cumulative/per-interval counts work as for the text output (see `bpftrace_text`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
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


def keyed(data: Any) -> dict[str, Any]:
    """A hist's or map's entries by key string (`""` for an unkeyed one)."""
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    return {"": data}


def split_key(key: str, parts: int) -> list[str]:
    """A joined multi-part key split into `parts` fields (the last one keeps any extra commas)."""
    fields = key.split(",", parts - 1)
    if len(fields) != parts:
        raise ValueError(f"map key {key!r} has not {parts} parts")
    return fields


class HistRowError(ValueError):
    """A hist entry that is not `{"min": int, "max": int, "count": int}`."""


def hist_counts(rows: Any) -> tuple[np.ndarray, int]:
    """Per-slot counts and the negative-bucket count of one map's JSON hist rows."""
    if not isinstance(rows, list):
        raise HistRowError(f"expected a list of buckets, got {type(rows).__name__}")
    counts = empty_counts()
    negative = 0
    for row in rows:
        count = row.get("count") if isinstance(row, dict) else None
        if not is_int(count) or not 0 <= count <= MAX_COUNT:
            raise HistRowError(f"expected a bucket with an integer count in [0, 2**62], got {excerpt(str(row))}")
        if "min" not in row:
            negative = min(negative + count, MAX_COUNT)  # only reported, never counted
            continue
        low, high = row.get("min"), row.get("max")
        if not (is_int(low) and is_int(high)):
            raise HistRowError(f"expected integer min and max, got {excerpt(str(row))}")
        slot = slot_of_range(low, high + 1)
        if slot is None:
            raise HistRowError(f"expected log2 bounds (hist(), not lhist()), got {excerpt(str(row))}")
        if not add_count(counts, slot, count):
            raise HistRowError(f"expected at most 2**62 events per bucket, got more in {excerpt(str(row))}")
    return counts, negative


class BpftraceJsonFormat(PrintedHistogramFormat):
    """bpftrace `-f json` lines; hist maps become streams."""

    name = "bpftrace-json"
    summary = 'bpftrace -f json lines ({"type": "hist", ...}, {"type": "time", ...})'

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return any((m := _TYPED.match(line.strip())) is not None and m.group(1) in _KNOWN_TYPES for line in head)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        reader = PrintReader(name, self.options)
        n = 0
        for n, raw in enumerate(lines, 1):
            try:
                event = parse_line(raw)
            except ValueError:
                yield Notice(f"{name}: line {n}: expected one JSON object per line (bpftrace -f json), "
                             f"got {excerpt(raw.strip())}; line skipped")
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
                yield from self._hist(reader, data, n, name)
        yield from reader.finish(n)

    def _hist(self, reader: PrintReader, data: Any, n: int, name: str) -> Iterator[Item]:
        if not isinstance(data, dict):
            yield Notice(f"{name}: line {n}: expected \"data\": {{\"@map\": [...]}} in a hist line; line skipped")
            return
        for map_name, value in data.items():
            keyed = value.items() if isinstance(value, dict) else [(None, value)]
            for key, rows in keyed:
                # whole (a long key): the reader names the stream
                label = clean_label(str(map_name) if key is None else f"{map_name}[{key}]")
                try:
                    counts, negative = hist_counts(rows)
                except HistRowError as err:
                    reader.unreadable(label)
                    yield Notice(f"{name}: line {n}: {reader.shown(label)}: {err}; histogram skipped")
                    continue
                yield from reader.histogram(label, counts, n, negative=negative)
