"""bpftrace `hist()` text output: `@map:` blocks of `[lo, hi)  count |@@@|` rows, one stream per map.

Rows: `[0]` and `[1]` hold single values, `[lo, hi)` a log2 range (K, M, G... are powers of
1024), `(..., 0)` the negative values, which are dropped with a note. Each map (each key of a
keyed map, `@us[comm]`) is a stream labelled as printed. Prints are timed by lines printed
with `time()` (`14:03:21`, or a date and time) before them, else by arrival order every
`--interval` seconds. Counts are per-interval (map cleared after print) or cumulative,
declared with `--cumulative/--per-interval` or detected (see `print_modes`). A line inside a
print that is no row (a stray line, a row cut short or unreadable) is reported and skipped, and the print goes on
(see `printed_rows`). The latency unit comes from `--unit`, else the map name
(`@usecs`, `@nsecs`, `@lat_ms`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from latencymap.core.model import Notice
from latencymap.core.sanitize import clean_label, excerpt
from latencymap.plugins import Item
from latencymap.sources.printed_histograms import (
    PrintedHistogramFormat,
    PrintReader,
    decimal,
    parse_time_line,
    slot_of_range,
)
from latencymap.sources.printed_rows import PrintedRows, RowSyntax

_HEADER = re.compile(r"^(@\w*(?:\[.*\])?):\s*$")
_ROW = re.compile(r"^([\[(][^\])]*[\])])\s+(\d+)\s*\|")
#: What is left of a row cut short (a writer killed mid-line, a copy of a file still being written): its label, or
#: part of it, and maybe a number, but no bar.
_CUT_ROW = re.compile(r"^(?:([\[(][^\])|]*[\])])(?:\s+\d*)?|[\[(][^\])|]*)$")
_LABEL = re.compile(r"^([\[(][^\])|]*[\])])")
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


class BpftraceTextFormat(PrintedHistogramFormat):
    """bpftrace hist() maps as printed by `print(@map)` or at exit."""

    name = "bpftrace"
    summary = "bpftrace hist() text output (@map: blocks of [lo, hi) count |@@@| rows)"

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return _printed(head) or _attached(head)

    @classmethod
    def banner_only(cls, head: Sequence[str]) -> bool:
        """`Attaching N probes...` alone: a program may print PyLatencyMap records (printf) rather than maps."""
        return _attached(head) and not _printed(head)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        reader = PrintReader(name, self.options, live=self.live)
        block: PrintedRows | None = None
        n = 0
        for n, raw in enumerate(lines, 1):
            text = raw.strip()
            if block is not None:
                skipped = block.read(text, n, reader)
                if skipped is not None:
                    yield from skipped
                    continue
                yield from _emit(reader, block)
                block = None
            if not text:
                continue
            if _ATTACHING.match(text):
                yield from reader.attached(n)
                continue
            header = _HEADER.match(text)
            if header is not None:
                reader.begins()
                block = PrintedRows(_SYNTAX, clean_label(header.group(1)), n)  # whole: the reader names its stream
                continue
            stamp = parse_time_line(text)
            if stamp is not None:
                yield from reader.time_line(*stamp, n)
            elif text[:1] in "[(" and "|" in text:
                yield Notice(f"{name}: line {n}: {_EXPECTED} inside a @map: block, got {excerpt(text)}")
        if block is not None:
            yield from _emit(reader, block)
        yield from reader.finish(n)


def _printed(head: Sequence[str]) -> bool:
    """Whether `head` holds a printed map: a `@map:` header and a hist() row."""
    rows = any((m := _ROW.match(line.strip())) is not None and parse_bucket(m[1]) is not None for line in head)
    return rows and any(_HEADER.match(line.strip()) for line in head)


def _attached(head: Sequence[str]) -> bool:
    """Whether `head` starts with bpftrace's banner, and holds no JSON line (`-f json` prints its own)."""
    attaching = any(_ATTACHING.match(line.strip()) for line in head[:5])
    return attaching and not any(line.lstrip().startswith("{") for line in head)


def _emit(reader: PrintReader, block: PrintedRows) -> list[Item]:
    """The items of a finished block: none when it held no row (a header alone tells nothing)."""
    unknown = block.finish()
    if not (block.rows or block.negative or unknown is not None):
        return []
    return reader.histogram(block.label, block.counts, block.line, negative=block.negative, unknown=unknown)


_SYNTAX = RowSyntax(_ROW, _CUT_ROW, _LABEL, lambda m: parse_bucket(m.group(1)), _HEADER.match, _EXPECTED)
