"""bpftrace `hist()` text output: `@map:` blocks of `[lo, hi)  count |@@@|` rows, one stream per map.

Rows: `[0]` and `[1]` hold single values, `[lo, hi)` a log2 range or a power-of-two part of one (`hist(n, k)`; K,
M, G... are powers of 1024), `(..., 0)` the negative values, which are dropped with a note. A map whose rows are an
`lhist()`'s is left out whole, with one note (`lhist_layout`). A row ends with its bar: a line that
ends in `]:` ends a map key, which may span lines (a key holding a newline). Each map (each key of a keyed map,
`@us[comm]`) is a stream labelled as printed. Prints are timed by lines printed with `time()` (`14:03:21`, or a
date and time) before them, else by arrival order every `--interval` seconds. Counts are per-interval (map cleared
after print) or cumulative, declared with `--cumulative/--per-interval` or detected (see `print_modes`). A line
inside a print that is no row (a stray line, a row cut short or unreadable) is reported and skipped, and the print
goes on (see `printed_rows`). The latency unit comes from `--unit`, else the map name (`@usecs`, `@nsecs`,
`@lat_ms`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from latencymap.core.model import Notice
from latencymap.core.sanitize import clean_label, excerpt
from latencymap.plugins import Item
from latencymap.sources.printed_histograms import (
    PrintedHistogramFormat,
    PrintReader,
    decimal,
    lhist_layout,
    parse_time_line,
    slot_of_range,
)
from latencymap.sources.printed_rows import PrintedRows, RowSyntax

_HEADER = re.compile(r"^(@\w*(?:\[.*\])?):\s*$")
#: A row ends with its bar (`|@@@|`, or part of it when cut): never with `]:`, as every line that ends a map key does.
_ROW = re.compile(r"^([\[(][^\])]*[\])])\s+(\d+)\s*\|[@ ]*\|?$")
#: What is left of a row cut short (a writer killed mid-line, a copy of a file still being written): its label, or
#: part of it, and maybe a number, but no bar.
_CUT_ROW = re.compile(r"^(?:([\[(][^\])|]*[\])])(?:\s+\d*)?|[\[(][^\])|]*)$")
_LABEL = re.compile(r"^([\[(][^\])|]*[\])])")
_NUMBER = re.compile(r"^(\d+)([KMGTPE]?)$")
_ATTACHING = re.compile(r"^Attaching \d+ probes?\.\.\.$")
#: The first line of a map key that goes on past it (a key holding a newline): `@map[` and no `]:` ending the entry.
_KEY_START = re.compile(r"^@\w*\[")
#: The line that ends a key printed with a value on the same line (`@n[comm]: 5`, not a hist()).
_VALUE_ENTRY = re.compile(r"\]: \S")
#: The most lines a key may span: a stack key (`@[ustack]`, `@[kstack, ustack]`) prints a line a frame, up to 127
#: frames each (perf_event_max_stack); a string key at most 64 bytes, so a few lines.
MAX_KEY_LINES = 320
_SUFFIX = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}
_EXPECTED = "expected a hist() row '[lo, hi)  count |@@@|', '[0]', '[1]' or '(..., 0)'"


def _number(text: str) -> int | None:
    m = _NUMBER.match(text.strip())
    if m is None:
        return None
    value = decimal(m.group(1))
    return None if value is None else value << _SUFFIX[m.group(2)]


def row_range(label: str) -> tuple[int, int] | str | None:
    """The integer range `[low, high)` of a row label; "negative" for `(..., 0)`, "linear" for an `lhist()` row no
    `hist()` prints (`[100, ...)`, `(..., 10)`); None when it cannot be read."""
    if label == "(..., 0)":
        return "negative"
    if label.startswith("(...,") or label.endswith(", ...)"):
        return "linear" if _number(label.strip("()[]").replace("...", "").strip(", ")) is not None else None
    if not (label.startswith("[") and label[-1] in ")]"):
        return None
    inner = label[1:-1]
    if label.endswith("]"):
        value = _number(inner)
        return None if value is None else (value, value + 1)
    low_text, _, high_text = inner.partition(",")
    low, high = _number(low_text), _number(high_text)
    return None if low is None or high is None else (low, high)


def parse_bucket(label: str) -> int | str | None:
    """Slot of a row label, "negative" for `(..., 0)`, None when it is no log2 bucket."""
    bounds = row_range(label)
    if bounds == "negative" or not isinstance(bounds, tuple):
        return bounds if bounds == "negative" else None
    return slot_of_range(*bounds)


@dataclass(slots=True)
class _Print:
    """One `@map:` print being read: its rows, the lines of its header (a key may span several), the row ranges
    printed (to tell an `lhist()`), and the notices of its lines, given once the print is known to be a hist()."""

    rows: PrintedRows
    key: list[str]
    ranges: list[tuple[int, int]] = field(default_factory=list)
    linear: bool = False  # a row no hist() prints (`[100, ...)`)
    notes: list[Item] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # its lines before its first row (a key's lines, if one follows)

    @classmethod
    def open(cls, key: list[str], line: int) -> _Print:
        header = "\n".join(key).strip()
        return cls(PrintedRows(_SYNTAX, clean_label(header.removesuffix(":").rstrip()), line), key)

    def read(self, raw: str, text: str, n: int, reader: PrintReader) -> bool:
        """Read line `n` (`text` stripped) of the print; False when it ends the print."""
        if text.endswith("]:") and not (self.rows.rows or self.rows.negative or self.ranges):
            rows = _Print.open([*self.key, *self.lines, raw], self.rows.line)  # the key goes on: no row so far
            self.rows, self.key, self.notes, self.lines = rows.rows, rows.key, [], []
            return True
        label = _LABEL.match(text)
        bounds = row_range(label.group(1)) if label is not None else None
        if bounds is not None and bounds != "negative" and _ROW.match(text):
            if isinstance(bounds, tuple):
                self.ranges.append(bounds)
            else:
                self.linear = True
        skipped = self.rows.read(text, n, reader)
        if skipped is None:
            return False
        self.notes += skipped
        if not (self.rows.rows or self.rows.negative or self.ranges):
            self.lines.append(raw)
        return True

    def items(self, reader: PrintReader) -> list[Item]:
        """The items of the finished print: none when it held no row (a header alone tells nothing); an `lhist()`
        left out whole."""
        label = self.rows.label
        family = label.split("[", 1)[0]
        if self.linear or reader.is_linear(family) or lhist_layout(self.ranges):
            return reader.linear(label, family, self.rows.line)
        unknown = self.rows.finish()
        if not (self.rows.rows or self.rows.negative or unknown is not None):
            return self.notes
        return [*self.notes, *reader.histogram(label, self.rows.counts, self.rows.line, negative=self.rows.negative,
                                               unknown=unknown)]


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
        reader = PrintReader(name, self.options)
        block: _Print | None = None
        key: list[str] = []  # the lines of a map key that spans lines, read so far
        key_line = 0
        n = 0
        for n, raw in enumerate(lines, 1):
            raw = raw.rstrip("\r\n")
            text = raw.strip()
            if key and (_HEADER.match(text) or _KEY_START.match(text)):  # no frame starts a map: the key was cut
                yield Notice(f"{name}: line {key_line}: a map key that does not end before the next map (line {n}), "
                             f"got {excerpt(key[0].strip())}; lines {key_line}-{n - 1} skipped", skipped=len(key))
                key = []
            if key:
                key.append(raw)
                if text.endswith("]:"):
                    block, key = _Print.open(key, key_line), []
                elif _VALUE_ENTRY.search(text):
                    key = []  # a map of values (`@n[comm]: 5`), no hist()
                elif len(key) >= MAX_KEY_LINES:
                    yield Notice(f"{name}: line {key_line}: a map key that does not end within {MAX_KEY_LINES} lines, "
                                 f"got {excerpt(key[0].strip())}; lines {key_line}-{n} skipped", skipped=len(key))
                    key = []
                continue
            if block is not None:
                if block.read(raw, text, n, reader):
                    continue
                yield from block.items(reader)
                block = None
            if not text:
                continue
            if _ATTACHING.match(text):
                yield from reader.attached(n)
                continue
            if _HEADER.match(text):
                reader.begins()
                block = _Print.open([raw], n)  # whole: the reader names its stream
                continue
            if _KEY_START.match(text) and not _VALUE_ENTRY.search(text):
                reader.begins()
                key, key_line = [raw], n
                continue
            stamp = parse_time_line(text)
            if stamp is not None:
                yield from reader.time_line(*stamp, n)
            elif text[:1] in "[(" and "|" in text:
                yield Notice(f"{name}: line {n}: {_EXPECTED} inside a @map: block, got {excerpt(text)}")
        if key:
            yield Notice(f"{name}: line {key_line}: a map key that does not end (the output ends inside it), got "
                         f"{excerpt(key[0].strip())}; lines {key_line}-{n} skipped", skipped=len(key))
        if block is not None:
            yield from block.items(reader)
        yield from reader.finish(n)


def _printed(head: Sequence[str]) -> bool:
    """Whether `head` holds a printed map: a `@map:` header and a hist() row."""
    rows = any((m := _ROW.match(line.strip())) is not None and parse_bucket(m[1]) is not None for line in head)
    return rows and any(_HEADER.match(line.strip()) for line in head)


def _attached(head: Sequence[str]) -> bool:
    """Whether `head` starts with bpftrace's banner, and holds no JSON line (`-f json` prints its own)."""
    attaching = any(_ATTACHING.match(line.strip()) for line in head[:5])
    return attaching and not any(line.lstrip().startswith("{") for line in head)


_SYNTAX = RowSyntax(_ROW, _CUT_ROW, _LABEL, lambda m: parse_bucket(m.group(1)), _HEADER.match, _EXPECTED)
