"""Property tests of the bpftrace `hist()` text reader: hostile input never breaks it; printed maps round-trip."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import (
    NUMERALS,
    QUICK,
    ROUNDTRIP,
    as_vector,
    assert_backwards_times_refused_and_no_print_lost,
    hostile_lines,
    intervals_of,
    read_bytes_checked,
    read_checked,
    totals,
)

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Notice
from latencymap.flow.inputs import MAX_LINE
from latencymap.sources.bpftrace_text import BpftraceTextFormat

SUFFIXES = (("E", 60), ("P", 50), ("T", 40), ("G", 30), ("M", 20), ("K", 10))
TIMES = st.one_of(
    st.sampled_from(["10:00:00", "11:00:00", "10:00:00.5", "23:59:59", "00:00:01", "25:00:00", "2001-01-01 11:00:00",
                     "2030-06-01 10:00:00", "2024-02-30 10:00:00", "0001-01-01 00:00:00",
                     "9999-12-31 23:59:59", "1970-01-01 00:00:00", "1700000000", "1700000000.25", "1799999999"]),
    st.builds(lambda h, m, s: f"{h:02d}:{m:02d}:{s:02d}", st.integers(0, 30), st.integers(0, 70), st.integers(0, 70)),
)
SUFFIX = st.sampled_from(["", "K", "M", "G", "T", "P", "E", "Z"])
ROWS = st.one_of(
    st.builds(lambda lo, s1, hi, s2, br, c: f"[{lo}{s1}, {hi}{s2}{br}  {c} |@@@|", NUMERALS, SUFFIX, NUMERALS, SUFFIX,
              st.sampled_from([")", "]"]), NUMERALS),
    st.builds(lambda v, c: f"[{v}]  {c} |@|", NUMERALS, NUMERALS),
    st.builds(lambda c: f"(..., 0)  {c} |@|", NUMERALS),
    st.builds(lambda s, c: f"{label(s)}  {c} |@|", st.integers(0, NSLOTS - 1), NUMERALS),
)
HEADERS = st.builds(lambda n, k: f"@{n}{k}:", st.sampled_from(["usecs", "ns", "lat_ms", "x", "", "bytes"]),
                    st.one_of(st.just(""), st.text(max_size=8).map(lambda k: f"[{k}]")))
LINES = hostile_lines(HEADERS, ROWS, TIMES, st.just("Attaching 3 probes..."))
OPTIONS = st.fixed_dictionaries({"cumulative": st.sampled_from([None, True, False]),
                                 "interval": st.sampled_from([1.0, 0.001, 3600.0])})
PRINT = st.dictionaries(st.integers(0, NSLOTS - 1), st.integers(0, 2**40), min_size=1).filter(
    lambda d: any(d.values()))


def _number(value: int) -> str:
    for suffix, shift in SUFFIXES:
        if value >= 1 << shift and value % (1 << shift) == 0:
            return f"{value >> shift}{suffix}"
    return str(value)


def label(slot: int) -> str:
    """The row label bpftrace prints for a slot."""
    if slot < 2:
        return f"[{slot}]"
    return f"[{_number(1 << (slot - 1))}, {_number(1 << slot)})"


def render(name: str, counts: dict[int, int]) -> list[str]:
    """One printed map, as bpftrace prints it (every row from the lowest to the highest used bucket)."""
    lo, hi = min(counts), max(counts)
    return [f"{name}: \n", *(f"{label(s):<20}{counts.get(s, 0):>8} |@@@@|\n" for s in range(lo, hi + 1)), "\n"]


@QUICK
@given(LINES, OPTIONS)
def test_arbitrary_lines_never_break_the_reader(lines: list[str], options: dict) -> None:
    read_checked(BpftraceTextFormat, [line + "\n" for line in lines], **options)


@QUICK
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from([b"@usecs:", b"[1K, 2K)  5 |@|", b"10:00:00",
                                                                    b"\xff\xfe", b"\x00", b"\xc3", b"\x1b[2J"])),
                max_size=40))
def test_arbitrary_bytes_never_break_the_reader(chunks: list[bytes]) -> None:
    read_bytes_checked(b"\n".join(chunks), "bpftrace")


@ROUNDTRIP
@given(st.lists(PRINT, min_size=1, max_size=8), st.booleans())
def test_per_interval_prints_round_trip(prints: list[dict[int, int]], timed: bool) -> None:
    lines: list[str] = []
    for k, counts in enumerate(prints):
        if timed:
            lines.append(f"10:{k // 60:02d}:{k % 60:02d}\n")
        lines += render("@usecs", counts)
    items = read_checked(BpftraceTextFormat, lines, cumulative=False)
    got = intervals_of(items)
    assert [iv.counts.tolist() for iv in got] == [as_vector(p).tolist() for p in prints]
    assert all(iv.stream.label == "@usecs" and iv.stream.unit == "microsec" for iv in got)
    if timed:
        assert [iv.end - iv.start for iv in got[1:]] == [1.0] * (len(got) - 1)


@ROUNDTRIP
@given(st.lists(PRINT, min_size=2, max_size=8))
def test_cumulative_prints_round_trip_to_their_increments(increments: list[dict[int, int]]) -> None:
    running = np.cumsum([as_vector(p) for p in increments], axis=0)
    lines: list[str] = []
    for vector in running:
        lines += render("@nsecs", {int(s): int(vector[s]) for s in np.flatnonzero(vector)})
    got = intervals_of(read_checked(BpftraceTextFormat, lines, cumulative=True))
    assert [iv.counts.tolist() for iv in got] == [as_vector(p).tolist() for p in increments[1:]]
    assert all(iv.stream.unit == "nanosec" for iv in got)


@ROUNDTRIP
@given(st.lists(PRINT, min_size=2, max_size=8))
def test_counters_going_backwards_are_resets_never_negative(prints: list[dict[int, int]]) -> None:
    lines: list[str] = []
    for counts in prints:
        lines += render("@usecs", counts)
    got = intervals_of(read_checked(BpftraceTextFormat, lines, cumulative=True))
    assert len(got) == len(prints) - 1
    for before, after, iv in zip(prints[:-1], prints[1:], got, strict=True):
        b, a = as_vector(before), as_vector(after)
        assert iv.counts.tolist() == np.where(a >= b, a - b, a).tolist()
        assert iv.reset == bool((a < b).any())


@ROUNDTRIP
@given(st.lists(st.tuples(st.integers(0, 50), PRINT), min_size=1, max_size=10, unique_by=lambda p: p[0]))
def test_time_lines_out_of_order_are_reported_and_skipped(prints: list[tuple[int, dict[int, int]]]) -> None:
    lines: list[str] = []
    for second, counts in prints:
        lines += [f"10:00:{second:02d}\n", *render("@usecs", counts)]
    items = read_checked(BpftraceTextFormat, lines, cumulative=False)
    assert_backwards_times_refused_and_no_print_lost(items, prints)


@ROUNDTRIP
@given(st.lists(st.tuples(st.sampled_from(["10:00:00", "11:00:00", "23:59:59", "00:00:01", "2001-01-01 11:00:00",
                                           "2030-06-01 10:00:00", "2030-06-01 11:00:00", "1700000000"]),
                          st.booleans(), PRINT), min_size=1, max_size=10))
def test_time_of_day_and_dated_time_lines_never_run_a_column_backwards(
        prints: list[tuple[str, bool, dict[int, int]]]) -> None:
    lines: list[str] = []
    for stamp, printed, counts in prints:
        lines += [f"{stamp}\n", *(render("@usecs", counts) if printed else [])]
    items = read_checked(BpftraceTextFormat, lines, cumulative=False)  # checks end > start, columns in order
    assert int(totals(items).sum()) == sum(sum(p.values()) for _, printed, p in prints if printed)


def test_megabyte_lines_are_read_or_reported_quickly() -> None:
    mb = 1 << 20
    hostile = ["@" + "a" * mb + ":\n", "@x[" + "]" * mb + "\n", "[" + "9" * mb + ", 2)  1 |@|\n",
               "[1, 2)  " + "9" * mb + " |@|\n", "10:00:00" + " " * mb + "x\n", "(" * mb + "\n"]
    for line in hostile:
        started = time.monotonic()
        items = read_checked(BpftraceTextFormat, ["@usecs:\n", "[1]  3 |@|\n", line, "\n"], cumulative=False)
        assert time.monotonic() - started < 5, line[:20]
        assert int(totals(items).sum()) == 3
    data = b"@usecs:\n[1]  3 |@|\n" + b"[2, 4)  " + b"7" * (3 * MAX_LINE) + b" |@|\n[4, 8)  2 |@|\n\n"
    items = read_bytes_checked(data, "bpftrace")  # the cut line is a row cut short, reported; the map goes on
    assert int(totals(items).sum()) == 5
    assert any("line 3: @usecs: a row cut short" in i.message for i in items if isinstance(i, Notice))


@pytest.mark.timeout(60)
def test_a_million_buckets_in_one_print() -> None:
    rows = [f"{label(s % NSLOTS)}  1 |@|\n" for s in range(1_000_000)]
    started = time.monotonic()
    items = read_checked(BpftraceTextFormat, ["@usecs:\n", *rows, "\n"], cumulative=False)
    assert time.monotonic() - started < 30
    (column,) = intervals_of(items)
    assert int(column.counts.sum()) == 1_000_000 and (column.counts == 1_000_000 // NSLOTS).sum() >= NSLOTS - 1


def test_huge_counts_are_rejected_not_wrapped() -> None:
    big = 2**62
    items = read_checked(BpftraceTextFormat, ["@usecs:\n", f"[1]  {big} |@|\n", f"[1]  {big} |@|\n",
                                              f"[2, 4)  {10**30} |@|\n", "[4, 8)  5 |@|\n", "\n"], cumulative=False)
    (column,) = intervals_of(items)
    assert (column.counts >= 0).all() and column.counts[3] == 5
    assert any("count" in i.message for i in items if isinstance(i, Notice))
