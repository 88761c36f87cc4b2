"""bpftrace `hist()` text output: `@map:` blocks of `[lo, hi)  count |@@@|` rows, one stream per map.

Rows: `[0]` and `[1]` hold single values, `[lo, hi)` a log2 range (K, M, G... are powers of
1024), `(..., 0)` the negative values, which are dropped with a note. Each map (each key of a
keyed map, `@us[comm]`) is a stream labelled as printed. Prints are timed by lines printed
with `time()` (`14:03:21`, or a date and time) before them, else by arrival order every
`--interval` seconds. Counts are per-interval (map cleared after print) or cumulative,
declared with `--cumulative/--per-interval` or detected (see `print_modes`). A row cut short
(no bar) is reported and skipped. The latency unit comes from `--unit`, else the map name
(`@usecs`, `@nsecs`, `@lat_ms`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Notice, empty_counts
from latencymap.core.sanitize import clean_label, excerpt
from latencymap.plugins import Item
from latencymap.sources.printed_histograms import (
    PrintedHistogramFormat,
    PrintReader,
    add_count,
    decimal,
    parse_time_line,
    slot_of_range,
)

_HEADER = re.compile(r"^(@\w*(?:\[.*\])?):\s*$")
_ROW = re.compile(r"^([\[(][^\])]*[\])])\s+(\d+)\s*\|")
#: What is left of a row cut short (a writer killed mid-line, a copy of a file still being written): its label, or
#: part of it, and maybe a number, but no bar.
_CUT_ROW = re.compile(r"^(?:([\[(][^\])|]*[\])])(?:\s+\d*)?|[\[(][^\])|]*)$")
_NUMBER = re.compile(r"^(\d+)([KMGTPE]?)$")
_ATTACHING = re.compile(r"^Attaching \d+ probes?\.\.\.$")
_SUFFIX = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}
_EXPECTED = "expected a hist() row '[lo, hi)  count |@@@|', '[0]', '[1]' or '(..., 0)'"


def _number(text: str) -> int | None:
    m = _NUMBER.match(text.strip())
    if m is None:
        return None
    value = decimal(m.group(1))
    return None if value is None else value << _SUFFIX[m.group(2)]


def parse_bucket(label: str) -> int | str | None:
    """Slot of a row label, "negative" for `(..., 0)`, None when it is no log2 bucket."""
    if label == "(..., 0)":
        return "negative"
    if not (label.startswith("[") and label[-1] in ")]"):
        return None
    inner = label[1:-1]
    if label.endswith("]"):
        value = _number(inner)
        return None if value is None else slot_of_range(value, value + 1)
    low_text, _, high_text = inner.partition(",")
    low, high = _number(low_text), _number(high_text)
    return None if low is None or high is None else slot_of_range(low, high)


@dataclass(slots=True)
class _Block:
    """One printed map being read."""

    label: str
    line: int
    counts: np.ndarray = field(default_factory=empty_counts)
    negative: int = 0
    rows: int = 0
    last_slot: int = -1
    unknown: np.ndarray | None = None  # slots whose row was cut short: their count is not known


class BpftraceTextFormat(PrintedHistogramFormat):
    """bpftrace hist() maps as printed by `print(@map)` or at exit."""

    name = "bpftrace"
    summary = "bpftrace hist() text output (@map: blocks of [lo, hi) count |@@@| rows)"

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        rows = any((m := _ROW.match(line.strip())) is not None and parse_bucket(m[1]) is not None for line in head)
        headers = any(_HEADER.match(line.strip()) for line in head)
        attaching = any(_ATTACHING.match(line.strip()) for line in head[:5])
        return (headers and rows) or (attaching and not any(line.lstrip().startswith("{") for line in head))

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        reader = PrintReader(name, self.options)
        block: _Block | None = None
        n = 0
        for n, raw in enumerate(lines, 1):
            text = raw.strip()
            row = _ROW.match(text) if block is not None and text[:1] in "[(" else None
            if row is not None and block is not None:
                bad = _add_row(block, row)
                if bad:
                    yield Notice(f"{name}: line {n}: {_EXPECTED} with log2 bounds and a count < 2**62, got "
                                 f"{excerpt(text)}; row skipped")
                continue
            if block is not None and (cut := _CUT_ROW.match(text)) is not None:
                _cut_row(block, cut.group(1))
                yield Notice(f"{name}: line {n}: {reader.shown(block.label)}: a row cut short (no '|' bar: was the "
                             f"output cut mid-line?), got {excerpt(text)}; row skipped, its bucket's count unknown")
                continue
            if block is not None:
                yield from _emit(reader, block)
                block = None
            if not text or _ATTACHING.match(text):
                continue
            header = _HEADER.match(text)
            if header is not None:
                block = _Block(clean_label(header.group(1)), n)  # whole: the reader names its stream
                continue
            stamp = parse_time_line(text)
            if stamp is not None:
                yield from reader.time_line(*stamp, n)
            elif text[:1] in "[(" and "|" in text:
                yield Notice(f"{name}: line {n}: {_EXPECTED} inside a @map: block, got {excerpt(text)}")
        if block is not None:
            yield from _emit(reader, block)
        yield from reader.finish(n)


def _emit(reader: PrintReader, block: _Block) -> list[Item]:
    """The items of a finished block: none when it held no row (a header alone tells nothing)."""
    if not (block.rows or block.negative or block.unknown is not None):
        return []
    return reader.histogram(block.label, block.counts, block.line, negative=block.negative, unknown=block.unknown)


def _cut_row(block: _Block, label: str | None) -> None:
    """Mark the buckets a row cut short leaves unknown: rows come in ascending order, so the rest of the print is
    missing from its bucket (the one its label names, else the one after the last row read) up."""
    if block.unknown is None:
        block.unknown = np.zeros(NSLOTS, dtype=bool)
    slot = None if label is None else parse_bucket(label)
    if slot != "negative":
        block.unknown[slot if isinstance(slot, int) else block.last_slot + 1:] = True


def _add_row(block: _Block, row: re.Match[str]) -> bool:
    """Add one row to `block`; True when the row is no log2 bucket or its count is absurd (skipped).

    A count is absurd above 2**62, alone or added to the same bucket's earlier rows.
    """
    slot = parse_bucket(row.group(1))
    count = decimal(row.group(2))
    if count is None or count > MAX_COUNT:
        return True
    if slot == "negative":
        block.negative = min(block.negative + count, MAX_COUNT)  # only reported, never counted
        return False
    block.rows += 1
    if isinstance(slot, int):
        block.last_slot = max(block.last_slot, slot)
        if block.unknown is not None:  # a row after a cut one: this bucket is known after all
            block.unknown[slot] = False
    return not (isinstance(slot, int) and add_count(block.counts, slot, count))
