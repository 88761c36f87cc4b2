"""Property tests of the raw-values reader: hostile lines never break it; values and pairs round-trip exactly."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import (
    NUMERALS,
    QUICK,
    ROUNDTRIP,
    check_items,
    clock,
    hostile_lines,
    intervals_of,
    read_bytes_checked,
    read_checked,
    totals,
)

from latencymap.core.buckets import bin_values
from latencymap.core.model import Interval, Notice
from latencymap.sources.raw_values import RawReader, RawValuesFormat

FLOATS = st.one_of(NUMERALS, st.floats().map(repr), st.sampled_from(
    ["nan", "-inf", "1e308", "1e-320", "1_000", "\u0661\u0662", "+5", "-0", "0x10", "1e999", "9e18", "1e300"]))
LINES = hostile_lines(
    FLOATS,
    st.builds(lambda t, v, sep: f"{t}{sep}{v}", FLOATS, FLOATS, st.sampled_from([" ", "\t", ",", " , "])),
    st.builds(lambda a, b, c: f"{a} {b} {c}", FLOATS, FLOATS, FLOATS),
    st.sampled_from(["# comment", "time latency", "latency", "#", ",,,"]),
    max_size=60,
)
OPTIONS = st.fixed_dictionaries({"unit": st.sampled_from([None, "sec", "nanosec"]),
                                 "time_unit": st.sampled_from(["s", "millisec", "nanosec"]),
                                 "interval": st.sampled_from([1.0, 1e-9, 1e9])})
VALUES = st.floats(0, 1e15, allow_nan=False)


def numeric_lines(lines: list[str]) -> int:
    """How many lines are data lines of one or two numbers (what the reader must count or report)."""
    return sum(1 for line in lines if (f := line.replace(",", " ").split()) and not f[0].startswith("#")
               and len(f) <= 2 and all(_number(x) for x in f))


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@QUICK
@given(LINES, OPTIONS)
def test_arbitrary_lines_never_break_the_reader(lines: list[str], options: dict) -> None:
    items = read_checked(RawValuesFormat, [line + "\n" for line in lines], **options)
    counted = int(totals(items).sum())
    reported = sum(i.skipped for i in items if isinstance(i, Notice))
    assert counted <= numeric_lines(lines)
    assert counted + reported + 1 >= numeric_lines(lines)  # every data line is counted or reported (bar a header)


@QUICK
@given(st.lists(st.one_of(st.binary(max_size=30), st.sampled_from(
    [b"12.5", b"1700000000 12", b"\xff\xfe", b"\x00", b"\xc3", b"\x1b[2J", b"1e999", b"\xd9\xa1"])), max_size=40))
def test_arbitrary_bytes_never_break_the_reader(chunks: list[bytes]) -> None:
    read_bytes_checked(b"\n".join(chunks), "raw")


@ROUNDTRIP
@given(st.lists(VALUES, min_size=1, max_size=200))
def test_values_round_trip_with_exact_time(values: list[float]) -> None:
    items = read_checked(RawValuesFormat, [f"{v!r}\n" for v in values])
    counts, sums = bin_values(np.asarray(values))
    assert totals(items).tolist() == counts.tolist()
    spent = np.sum([iv.time for iv in intervals_of(items)], axis=0)
    assert np.allclose(spent, sums * 1e-6, rtol=1e-9, atol=1e-12)


@ROUNDTRIP
@given(st.lists(st.tuples(st.floats(0, 3600, allow_nan=False), VALUES), min_size=1, max_size=200),
       st.sampled_from([1.0, 0.25, 60.0]))
def test_sorted_pairs_round_trip_per_column(pairs: list[tuple[float, float]], interval: float) -> None:
    pairs.sort()
    start = 1_700_000_000.0
    items = read_checked(RawValuesFormat, [f"{start + t!r} {v!r}\n" for t, v in pairs], interval=interval)
    expected: dict[int, list[float]] = {}
    for t, v in pairs:
        expected.setdefault(math.floor((start + t) / interval), []).append(v)
    got = {round(iv.start / interval): iv for iv in intervals_of(items)}
    for column, values in expected.items():
        assert got[column].counts.tolist() == bin_values(np.asarray(values))[0].tolist()
    assert sum(int(iv.counts.sum()) for iv in got.values()) == len(pairs)


@ROUNDTRIP
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10**6)), min_size=1, max_size=100))
def test_times_out_of_order_lose_no_value(pairs: list[tuple[int, int]]) -> None:
    ticks = iter(range(10**6))
    reader = RawReader("t.txt", "microsec", "sec", 1.0, clock=clock(), monotonic=lambda: float(next(ticks)))
    items = check_items(reader.read([f"{1_700_000_000 + t} {v}\n" for t, v in pairs]))  # one line per batch
    assert int(totals(items).sum()) == len(pairs)
    times = [t for t, _ in pairs]
    late = any(t < max(times[:k]) for k, t in enumerate(times) if k)
    assert late == any("times go backwards" in i.message for i in items if isinstance(i, Notice))


@pytest.mark.parametrize("line", ["1e300 5", "-1e300 5", "9.3e18 5", "1e308 1", "5 1e308"])
def test_times_and_values_beyond_every_column_are_reported_not_garbled(line: str) -> None:
    items = read_checked(RawValuesFormat, ["1700000000 1\n", f"{line}\n", "1700000001 2\n"], unit="sec")
    columns = intervals_of(items)
    assert all(iv.start >= 1_699_999_999 and iv.end <= 1_700_000_003 for iv in columns), columns
    assert int(totals(items).sum()) == 2
    assert sum(i.skipped for i in items if isinstance(i, Notice)) == 1


def test_megabyte_lines_are_read_or_reported_quickly() -> None:
    mb = 1 << 20
    hostile = ["9" * mb + "\n", "1 " * (mb // 2) + "\n", "1e" + "9" * mb + "\n", "#" + "x" * mb + "\n",
               "0." + "1" * mb + "\n"]
    for line in hostile:
        started = time.monotonic()
        items = read_checked(RawValuesFormat, ["5\n", line, "6\n"])
        assert time.monotonic() - started < 5, line[:30]
        assert 2 <= int(totals(items).sum()) <= 3, line[:30]


@pytest.mark.timeout(60)
def test_a_million_values() -> None:
    lines = [f"{1_700_000_000 + k // 10_000} {k % 5000}\n" for k in range(1_000_000)]
    started = time.monotonic()
    items = read_checked(RawValuesFormat, lines)
    assert time.monotonic() - started < 30
    assert int(totals(items).sum()) == 1_000_000
    assert len([i for i in items if isinstance(i, Interval)]) == 100
