"""bcc `print_log2_hist` output (biolatency and friends) and biolatency `-j` dict lines.

Text: a header `     usecs   : count     distribution` (its label gives the unit: `nsecs`,
`usecs`, `msecs`, or a unit in a label of several words: `age (ms)`), then rows `lo -> hi : count |***|` with `hi`
inclusive; an optional section line just before it (`disk = sda`) names the stream, else the stream is
`bcc <unit>`. `-T` prints a `14:03:21` line before each interval (argdist `[14:03:21]`). `-j` prints one Python
dict repr per histogram (`{'ts': '2024-05-01 14:03:21', 'val_type': 'usecs', 'data': [{'interval-start': 0,
'interval-end': 1, 'count': 5}, ...]}`), read with `ast.literal_eval` (never `eval`).

Buckets: bcc stores `bpf_log2l(v)`, so row `2^(k-1) -> 2^k - 1` is slot k; the first row
`0 -> 1` holds the values 0 and 1 together (`[0, 2)`): its events are spread evenly over slots 0 and 1
(`spread_first_row`), with a note.
Prints are timed and counts read as cumulative or per-interval as for bpftrace (see `print_modes`), but for the
banner of a bcc tool known to clear its map after each print (biolatency, runqlat, funclatency...: `bcc_tools`): its
maps are per-interval, with a note naming it. Without one (a snippet, argdist, `-j`) the mode is detected: the text is
bcc's library's, which cumulative programs print too (argdist `-c`), so it is no evidence; an undecided map's note
says what bcc's tools do. A run with no event prints only the tool's banner, time lines and `Detaching...`: no data.
A line inside a histogram that is no row (a stray line, a row cut short or unreadable) is reported and skipped, and
the histogram goes on (see `printed_rows`).

funclatency prints a summary line under a table, after a blank line: `avg = 398 usecs, total: 159335 usecs, count:
400`, the exact sum of the interval's values, truncated to whole units by `%ld` (nsecs: exact), taken as the middle
of that unit; it is read under funclatency's banner only (`_FUNCLATENCY`: biolatency `-e` sums values already cut to
whole units, and a table held for a summary line that never comes would reach a live view an interval late).
Where its count is the table's, its unit the header's and its total one the rows allow (every row read), it is the
print's exact time (`PrintReader.histogram`'s `total`; its column keeps it as a source's sum, see `print_modes`), and
places the first row's events inside `[0, 2)` by `core.rebin`'s rule for a first bucket from 0 (`placed_rows`).
Otherwise it is not used, said once per stream. (It sums every section of a table of several: funclatency's
per-function tables differ from it in count.)
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Notice, empty_counts
from latencymap.core.rebin import rebin_columns
from latencymap.core.sanitize import clean_label, clean_text, excerpt
from latencymap.core.units import normalize_unit
from latencymap.plugins import Item
from latencymap.sources.bcc_tools import clearing_tool
from latencymap.sources.printed_histograms import (
    PrintedHistogramFormat,
    PrintReader,
    add_count,
    decimal,
    is_int,
    parse_time_line,
    slot_of_range,
    unit_from_name,
)
from latencymap.sources.printed_rows import PrintedRows, RowSyntax

#: `     usecs               : count     distribution`; the label may be several words (readahead's `age (ms)`).
_HEADER = re.compile(r"^(\S(?:.*?\S)?)\s*:\s*count\s+distribution$")
_ROW = re.compile(r"^(\d+)\s*->\s*(\d+)\s*:\s*(\d+)\s*\|")
_DICT = re.compile(r"^\{\s*'(ts|val_type|data)'\s*:")
#: What is left of a row cut short (a writer killed mid-line, a copy of a file still being written): no bar.
_CUT_ROW = re.compile(r"^(?:\d+\s*->\s*\d+\s*(?::\s*\d*)?|\d+\s*(?:->\s*\d*)?)$")
_LABEL = re.compile(r"^(\d+)\s*->\s*(\d+)")
#: The line a bcc tool prints once attached (`Tracing block device I/O... Hit Ctrl-C to end.`): a run that saw no
#: event prints only this, time lines and `Detaching...`, and is no data, not an unknown format.
_BANNER = re.compile(r"^Tracing .*Hit Ctrl-C to end\.$")
#: funclatency's banner (`Tracing 1 functions for "..."... Hit Ctrl-C to end.`): its summary lines sum the raw
#: nanoseconds before dividing, so their totals are exact to a unit; biolatency `-e` sums values already cut to whole
#: units (a total up to one unit an I/O short: "total: 0 msecs" for 1,000 I/Os of 0.4 ms).
_FUNCLATENCY = re.compile(r"^Tracing \d+ functions? for ")
_EXPECTED = "expected a row 'lo -> hi : count |***|'"
#: What the note on an undecided map adds: the input shows no banner of a bcc tool known to clear (`bcc_tools`).
_UNDECIDED = ("; no banner of a bcc tool that clears its map after each print (biolatency, runqlat, funclatency, "
              "cpudist...) was read: such output is per-interval, argdist's with -c (it prints no banner) cumulative")
#: funcinterval prints it right after its last histogram, with no blank line between.
_DETACHING = "Detaching..."
#: funclatency's (and biolatency -e's) line under a table: `avg = 398 usecs, total: 159335 usecs, count: 400`.
_SUMMARY = re.compile(r"^avg = (\d{1,40}) (\S.*?), total: (\d{1,40}) (\S.*?), count: (\d{1,40})$")


def bcc_slot(low: int, high: int) -> int | None:
    """Slot of a bcc row `low -> high` (high inclusive); None when it is no bcc log2 row."""
    if low == 0 and high == 1:
        return 1
    return slot_of_range(low, high + 1) if high + 1 == 2 * low else None


def _row_slot(match: re.Match[str]) -> int | None:
    """Slot of a row's `lo -> hi` bounds (groups 1 and 2)."""
    low, high = decimal(match.group(1)), decimal(match.group(2))
    return None if low is None or high is None else bcc_slot(low, high)


def _ends_print(text: str) -> bool:
    """Whether a line (not blank, no time line) ends a histogram: the next header, a `-j` dict, `Detaching...`."""
    return text == _DETACHING or _HEADER.match(text) is not None or _DICT.match(text) is not None


_SYNTAX = RowSyntax(_ROW, _CUT_ROW, _LABEL, _row_slot, _ends_print, _EXPECTED)


def time_unit(val_type: str) -> str | None:
    """The unit a bcc header label names (`usecs` → microsec, `age (ms)` → millisec), None for `kbytes` and the
    like."""
    try:
        unit = normalize_unit(val_type)
    except ValueError:
        return unit_from_name(val_type)
    return None if unit == "sec" and val_type.lower() not in ("secs", "sec") else unit


def spread_first_row(counts: np.ndarray, unknown: np.ndarray | None = None) -> int:
    """Spread the first row `0 -> 1` (slot 1, as bcc indexes it) evenly over the slots of its values, `[0, 1)` and
    `[1, 2)` (the odd event in the first), its bucket's count unknown in both when it is unknown; the events it held.

    It holds the values 0 and 1 of the printed unit together (`bpf_log2l` gives both index 1), so `[0, 2)`: how they
    divide is not known."""
    held = int(counts[1])
    counts[0] += held - held // 2
    counts[1] = held // 2
    if unknown is not None and unknown[1]:
        unknown[0] = True
    return held


def _bcc_layout() -> tuple[np.ndarray, np.ndarray]:
    """bcc's buckets (its slots 1 to NSLOTS - 1): their upper bounds in the printed unit (the first row's 2, the top
    one open) and their shares of latencymap's slots, the first row spread evenly over slots 0 and 1."""
    uppers = np.exp2(np.arange(1, NSLOTS, dtype=np.float64))
    uppers[-1] = np.inf
    matrix = np.zeros((NSLOTS - 1, NSLOTS))
    matrix[np.arange(1, NSLOTS - 1), np.arange(2, NSLOTS)] = 1.0
    matrix[0, :2] = 0.5
    return uppers, matrix


_BCC_UPPERS, _BCC_MATRIX = _bcc_layout()


def placed_rows(counts: np.ndarray, total: float) -> np.ndarray:
    """The slots of a print's counts (as bcc indexes them) whose values sum to `total` (printed unit): the first row's
    events placed inside `[0, 2)` where the total proves them faster (or slower) than spread evenly, as
    `core.rebin` places a first bucket from 0 by a Prometheus `_sum`; every other row is its slot (the rule may put a
    bucket's events at its upper bound, which bcc's rows exclude: the next slot's lower bound)."""
    placed = counts.copy()
    placed[:2] = rebin_columns(_BCC_MATRIX, counts[None, 1:], _BCC_UPPERS, np.array([total]))[0][:2]
    placed[1] += counts[1] - placed[:2].sum()
    return placed


def row_sums(counts: np.ndarray) -> tuple[int, float]:
    """The least and the most that the values of a print's rows (as bcc indexes them) can sum to, printed unit: each
    row's events at its lower bound, or its upper one (which they stay below; the top row open: no most)."""
    events = [(slot, int(n)) for slot, n in enumerate(counts.tolist()) if n]
    least = sum(n << (slot - 1) for slot, n in events if slot > 1)
    most = math.inf if counts[NSLOTS - 1] else sum(n << slot for slot, n in events)  # (an int: exact)
    return least, most


def summary_total(match: re.Match[str], counts: np.ndarray, word: str) -> tuple[float | None, str]:
    """The exact sum of a print's values (printed unit) that bcc's summary line (`match`) says, and why not when it
    cannot be: a count other than the rows', a unit other than the header's `word`, a total the rows cannot make.
    `%ld` truncated it to a whole unit: its middle, but for nsecs (then exact)."""
    avg_unit, printed, total_unit, said = match.group(2), int(match.group(3)), match.group(4), int(match.group(5))
    events = sum(counts.tolist())
    if said != events:
        return None, f"counts {said} events, the histogram above it {events}"
    if clean_label(avg_unit) != word or clean_label(total_unit) != word:
        return None, f"is in {clean_label(total_unit)}, the histogram in {word}"
    least, most = row_sums(counts)
    if printed > most or printed == most > 0:  # (its values lie below their rows' upper bounds)
        return None, f"totals {printed} {word}, more than its rows allow (under {most:.0f})"
    if printed + 1 <= least:
        return None, f"totals {printed} {word}, less than its rows allow ({least})"
    exact = time_unit(word) == "nanosec"
    return min(max(printed + (0.0 if exact else 0.5), least), most), ""


def _printed(head: Sequence[str]) -> bool:
    """Whether `head` holds a histogram's header or row, or a `-j` line."""
    return any(_HEADER.match(s := line.strip()) or _ROW.match(s) or _DICT.match(s) for line in head)


def _announced(head: Sequence[str]) -> bool:
    """Whether `head` starts with a bcc tool's banner."""
    return any(_BANNER.match(line.strip()) for line in head[:3])


class BccTextFormat(PrintedHistogramFormat):
    """bcc log2 histograms as printed by biolatency, runqlat, ext4dist... (text or `-j`)."""

    name = "bcc"
    summary = "bcc print_log2_hist text (usecs : count distribution) and biolatency -j dict lines"

    @classmethod
    def sniff(cls, head: Sequence[str]) -> bool:
        return _printed(head) or _announced(head)

    @classmethod
    def banner_only(cls, head: Sequence[str]) -> bool:
        """The tool's `Tracing ... Hit Ctrl-C to end.` alone (bpftrace's biolatency.bt prints the same line)."""
        return _announced(head) and not _printed(head)

    def read(self, lines: Iterable[str], name: str) -> Iterator[Item]:
        reader = PrintReader(name, self.options, hint=_UNDECIDED)
        self._first_said: set[tuple[str, bool]] = set()  # (label, placed by a total) whose first row was said
        self._summary_said: set[str] = set()  # labels whose summary line was said to be unused
        section, section_line = "", 0
        block: PrintedRows | None = None
        header_word = ""  # the block's header word: its values' unit (`usecs`)
        ended: PrintedRows | None = None  # a block ended by a blank line: bcc's summary line may follow
        exact = False  # funclatency's banner was read: its summary lines' totals are exact (`_FUNCLATENCY`)
        told_unused = False
        n = 0
        for n, raw in enumerate(lines, 1):
            text = raw.strip()
            if block is not None:
                skipped = block.read(text, n, reader)
                if skipped is not None:
                    yield from skipped
                    continue
                if text or not exact:  # a table held for a summary that never comes would reach a live view late
                    yield from self._emit(reader, block, header_word)
                else:
                    ended = block
                block = None
            if not text:
                continue
            if ended is not None:
                summary = _SUMMARY.match(text)
                yield from self._emit(reader, ended, header_word, summary, n)
                ended = None
                if summary is not None:
                    continue
            if _SUMMARY.match(text):
                if not exact and not told_unused:
                    told_unused = True
                    yield Notice(f"{name}: line {n}: bcc's summary lines (avg = ..., total: ..., count: ...) are read "
                                 "under funclatency's banner only: another tool's (biolatency -e) sums values already "
                                 "cut to whole units, a total up to one unit an event short; its times are estimated "
                                 "from the rows", skipped=0)
                continue  # under no table (an old funclatency prints its never-cleared sums after an idle second)
            if _FUNCLATENCY.match(text):
                exact = True
            tool = clearing_tool(text)
            if tool is not None or _BANNER.match(text):  # (a tool not known to clear: its maps are detected)
                reader.produced_by(None if tool is None else False, f"per-interval: line {n} is the banner of bcc's "
                                   f"{tool}, which clears its map after each print")
                continue
            header = _HEADER.match(text)
            if header is not None:
                reader.begins()
                header_word = clean_label(header.group(1))  # labels whole: the reader names their streams
                label = section if section and section_line == n - 1 else f"bcc {header_word}"
                block = PrintedRows(_SYNTAX, label, n)
                continue
            if _DICT.match(text):
                yield from self._dict_line(reader, text, n, name)
                continue
            stamp = parse_time_line(text)
            if stamp is not None:
                yield from reader.time_line(*stamp, n)
                continue
            key, equals, value = text.partition("=")
            if equals and key.strip() and value.strip():
                section = clean_label(f"{key.strip()} {value.strip().strip(chr(39) + chr(34))}")
                section_line = n
            elif _ROW.match(text):
                yield Notice(f"{name}: line {n}: a row outside a histogram (expected a '<unit> : count "
                             f"distribution' header before it), got {excerpt(text)}; line skipped")
        last = block if block is not None else ended
        if last is not None:
            yield from self._emit(reader, last, header_word)
        yield from reader.finish(n)

    def _histogram(self, reader: PrintReader, label: str, counts: np.ndarray, n: int, word: str,
                   unknown: np.ndarray | None = None, summary: re.Match[str] | None = None,
                   summary_line: int = 0) -> list[Item]:
        """The items of one print of `label` (header at line `n`, its values `word`), with bcc's summary line under it
        (`summary`, at `summary_line`) if any: its total the print's exact time where it can be (`summary_total`),
        placing the first row (`placed_rows`), else that row spread (`spread_first_row`); each said once per
        stream in a histogram of latencies."""
        total, why = None, ""
        if summary is not None:
            total, why = (None, "comes under a histogram with a row not read") if unknown is not None else \
                summary_total(summary, counts, word)
        placed = None if total is None else placed_rows(counts, total)
        held = spread_first_row(counts, unknown)
        items = reader.histogram(label, counts, n, unit=time_unit(word), named=word, family=word, unknown=unknown,
                                 total=total, placed=placed)
        if reader.left_out(label):
            return items
        notes = []
        shown = reader.shown(label)
        if why and label not in self._summary_said:
            self._summary_said.add(label)
            notes.append(Notice(f"{reader.name}: line {summary_line}: {shown}: bcc's summary line {why}: its total is "
                                "not used (said once per stream)", skipped=0))
        if held and (label, total is not None) not in self._first_said:
            self._first_said.add((label, total is not None))
            how = ("placed inside it by the exact total of bcc's summary line (avg = ..., total: ..., count: ...), as "
                   "a first bucket from 0 is by its sum (per-interval counts; else spread evenly over [0, 1) and "
                   "[1, 2))") if total is not None else "spread evenly over [0, 1) and [1, 2)"
            notes.append(Notice(f"{reader.name}: line {n}: {shown}: bcc's first row `0 -> 1` holds the values 0 and 1 "
                                f"together ([0, 2) in its unit): its events are {how}", skipped=0))
        return [*notes, *items]

    def _emit(self, reader: PrintReader, block: PrintedRows, word: str, summary: re.Match[str] | None = None,
              summary_line: int = 0) -> list[Item]:
        """The items of a finished histogram whose header says `word` (`usecs`), with bcc's summary line under it."""
        return self._histogram(reader, block.label, block.counts, block.line, word, block.finish(), summary,
                               summary_line)

    def _dict_line(self, reader: PrintReader, text: str, n: int, name: str) -> Iterator[Item]:
        try:
            obj = dict_literal(text)
            counts, val_type, label = dict_histogram(obj)
        except (ValueError, TypeError) as err:
            yield Notice(f"{name}: line {n}: expected a biolatency -j dict "
                         "{'ts': ..., 'val_type': ..., 'data': [{'interval-start': lo, 'interval-end': hi, "
                         f"'count': n}}, ...]}} ({clean_text(str(err), 120)}); line skipped")
            return
        stamp = parse_time_line(str(obj.get("ts", "")))
        if stamp is not None:
            yield from reader.time_line(*stamp, n)
        yield from self._histogram(reader, label, counts, n, val_type)


#: What a `-j` line may hold: a Python literal of dicts, lists, strings and numbers (and tuples, sets, negatives).
_LITERAL_NODES = (ast.Expression, ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Load, ast.UnaryOp,
                  ast.UAdd, ast.USub)


def dict_literal(text: str) -> Any:
    """The value a `-j` line spells (`ast.literal_eval`, never `eval`); ValueError saying, in the input's terms, why
    it spells none: cut at the longest line read, cut short (it ends unclosed), not Python syntax at a column, or an
    expression where a value belongs."""
    from latencymap.flow.inputs import MAX_LINE  # the input layer's cut, needed only to explain a bad line

    cut = len(text) >= MAX_LINE
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" warnings would echo the input to stderr
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        if cut:
            raise ValueError(f"the line was cut at {MAX_LINE:,} characters, the longest read") from None
        column = err.offset or 0
        if column > len(text) or "never closed" in str(err.msg) or "unterminated" in str(err.msg) \
                or "unexpected EOF" in str(err.msg):
            raise ValueError("the line ends early, inside its dict: cut short") from None
        raise ValueError(f"not a Python dict at column {column}: {err.msg}") from None
    except (MemoryError, RecursionError):
        raise ValueError("nested too deeply to read") from None
    except ValueError:  # a NUL character (Python 3.11; later ones say it as a SyntaxError)
        raise ValueError("not a Python dict: it holds a NUL character") from None
    for node in ast.walk(tree):
        if not isinstance(node, _LITERAL_NODES):
            where = getattr(node, "col_offset", -1) + 1
            raise ValueError(f"an expression where a value belongs, at column {where}: "
                             f"{excerpt(ast.get_source_segment(text, node) or '')}")
    try:
        return ast.literal_eval(tree)
    except (ValueError, TypeError, MemoryError, RecursionError):
        raise ValueError("a value that is no plain literal (a string, a number, a dict or a list)") from None





def dict_histogram(obj: Any) -> tuple[np.ndarray, str, str]:
    """Counts, val_type and stream label of one `-j` dict; ValueError when it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        raise ValueError("no 'data' list")
    val_type = clean_label(str(obj.get("val_type", "value")))
    extra = [(k, v) for k, v in obj.items() if k not in ("ts", "val_type", "data")]
    label = clean_label(" ".join(f"{k} {v}" for k, v in extra)) if extra else f"bcc {val_type}"
    counts = empty_counts()
    for row in obj["data"]:
        if not isinstance(row, dict):
            raise ValueError(f"bucket {excerpt(str(row))} is not a dict")
        low, high, count = row.get("interval-start"), row.get("interval-end"), row.get("count")
        if not (is_int(low) and is_int(high) and is_int(count)):
            raise ValueError(f"bucket {excerpt(str(row))} lacks integer interval-start, interval-end, count")
        if not 0 <= count <= MAX_COUNT:
            raise ValueError(f"bucket {excerpt(str(row))} has a count outside [0, 2**62]")
        slot = bcc_slot(low, high)
        if slot is None:
            raise ValueError(f"bucket {excerpt(str(row))} has no log2 bounds")
        if not add_count(counts, slot, count):
            raise ValueError(f"bucket {excerpt(str(row))} brings its bucket past 2**62 events")
    return counts, val_type, label
