"""bpftrace `hist()` text output: `@map:` blocks of `[lo, hi)  count |@@@|` rows, one stream per map.

Rows: `[0]` and `[1]` hold single values, `[lo, hi)` a log2 range (K, M, G... are powers of
1024), `(..., 0)` the negative values, which are dropped with a note. Each map (each key of a
keyed map, `@us[comm]`) is a stream labelled as printed. Prints are timed by lines printed
with `time()` (`14:03:21`, or a date and time) before them, else by arrival order every
`--interval` seconds. Counts are per-interval (map cleared after print) or cumulative,
declared with `--cumulative/--per-interval` or detected (see `printed_histograms`). The
latency unit comes from `--unit`, else the map name (`@usecs`, `@nsecs`, `@lat_ms`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import MAX_COUNT
from latencymap.core.model import Notice, empty_counts
from latencymap.core.sanitize import clean_text, excerpt
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
        for n, raw in enumerate(lines, 1):
            text = raw.strip()
            row = _ROW.match(text) if block is not None and text[:1] in "[(" else None
            if row is not None and block is not None:
                bad = _add_row(block, row)
                if bad:
                    yield Notice(f"{name}: line {n}: {_EXPECTED} with log2 bounds and a count < 2**62, got "
                                 f"{excerpt(text)}; row skipped")
                continue
            if block is not None:
                if block.rows or block.negative:
                    yield from reader.histogram(block.label, block.counts, block.line, negative=block.negative)
                block = None
            if not text or _ATTACHING.match(text):
                continue
            header = _HEADER.match(text)
            if header is not None:
                block = _Block(clean_text(header.group(1)), n)
                continue
            stamp = parse_time_line(text)
            if stamp is not None:
                yield from reader.time_line(*stamp, n)
            elif text[:1] in "[(" and "|" in text:
                yield Notice(f"{name}: line {n}: {_EXPECTED} inside a @map: block, got {excerpt(text)}")
        if block is not None and (block.rows or block.negative):
            yield from reader.histogram(block.label, block.counts, block.line, negative=block.negative)
        yield from reader.finish()


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
    return not (isinstance(slot, int) and add_count(block.counts, slot, count))
