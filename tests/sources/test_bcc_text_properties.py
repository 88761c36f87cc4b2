"""Property tests of the bcc reader (print_log2_hist text and biolatency `-j` dicts): hostile input, round trips."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import (
    NUMBERS,
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

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.core.model import Notice
from latencymap.sources.bcc_text import BccTextFormat, dict_histogram

UNITS = st.sampled_from(["usecs", "nsecs", "msecs", "secs", "kbytes", "slots", "µs\x1b[2J"])
HEADERS = st.builds(lambda u: f"     {u}               : count     distribution", UNITS)
ROWS = st.one_of(
    st.builds(lambda lo, hi, c: f"{lo:>10} -> {hi:<10} : {c:<8} |****|", NUMERALS, NUMERALS, NUMERALS),
    st.builds(lambda s, c: row(s, c), st.integers(1, NSLOTS - 1), NUMERALS),
)
SECTIONS = st.builds(lambda k, v: f"{k} = {v}", st.sampled_from(["disk", "flags", "comm", ""]), st.text(max_size=10))
TIMES = st.sampled_from(["10:00:00", "11:00:00", "09:59:59", "2001-01-01 11:00:00", "1700000000", "99:00:00",
                         "0001-01-01 00:00:00", "9999-12-31 23:59:59"])
LITERALS = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.floats(), st.text(max_size=8), st.binary(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
BUCKETS = st.one_of(
    st.fixed_dictionaries({"interval-start": NUMBERS, "interval-end": NUMBERS, "count": NUMBERS}),
    st.builds(lambda s, c: bucket(s, c), st.integers(1, NSLOTS - 1), NUMBERS),
    LITERALS,
)
DICTS = st.one_of(
    st.builds(lambda ts, vt, data, extra: repr({"ts": ts, "val_type": vt, "data": data, **extra}),
              st.one_of(TIMES, LITERALS), st.one_of(UNITS, LITERALS), st.one_of(st.lists(BUCKETS, max_size=6),
                                                                                LITERALS),
              st.dictionaries(st.text(max_size=6), LITERALS, max_size=2)),
    st.builds(lambda x: repr({"data": x}), LITERALS),
    st.sampled_from(["{'data': " + "[" * 5000, "{'ts': 1" + "0" * 6000 + "}", "{'data': [" + "(1," * 3000 + "]}",
                     "{'data': __import__('os').system('true')}", "{'data': [], 'ts': 1e400}"]),
)
SUMMARIES = st.builds(lambda a, u, t, v, c: f"avg = {a} {u}, total: {t} {v}, count: {c}", NUMERALS, UNITS, NUMERALS,
                      UNITS, NUMERALS)
LINES = hostile_lines(HEADERS, ROWS, SECTIONS, TIMES, DICTS, SUMMARIES, max_size=40)
OPTIONS = st.fixed_dictionaries({"cumulative": st.sampled_from([None, True, False])})
PRINT = st.dictionaries(st.integers(1, NSLOTS - 1), st.integers(0, 2**40), min_size=1)


def bounds(slot: int) -> tuple[int, int]:
    """bcc's `lo -> hi` (hi inclusive) of a slot; slot 1 is the `0 -> 1` row."""
    return (0, 1) if slot == 1 else (1 << (slot - 1), (1 << slot) - 1)


def row(slot: int, count: int | str) -> str:
    lo, hi = bounds(slot)
    return f"{lo:>10} -> {hi:<10} : {count:<8} |****|"


def bucket(slot: int, count: int) -> dict[str, int]:
    lo, hi = bounds(slot)
    return {"interval-start": lo, "interval-end": hi, "count": count}


def read_as(counts: dict[int, int]) -> np.ndarray:
    """The slots a print of `counts` reads as: the `0 -> 1` row (slot 1, [0, 2)) spread evenly over slots 0 and 1, the
    odd event in slot 0."""
    vector = as_vector(counts)
    held = int(vector[1])
    vector[0], vector[1] = held - held // 2, held // 2
    return vector


def render(counts: dict[int, int], unit: str = "usecs", section: str | None = None) -> list[str]:
    """One print_log2_hist print, every row from the first to the highest used one."""
    lines = [f"{section}\n"] if section else []
    lines.append(f"     {unit}               : count     distribution\n")
    lines += [row(s, counts.get(s, 0)) + "\n" for s in range(1, max(counts) + 1)]
    return [*lines, "\n"]


@QUICK
@given(LINES, OPTIONS)
def test_arbitrary_lines_never_break_the_reader(lines: list[str], options: dict) -> None:
    read_checked(BccTextFormat, [line + "\n" for line in lines], **options)


@QUICK
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(
    [b"     usecs   : count     distribution", b"  8 -> 15   : 3 |**|", b"{'data': [], 'ts': '1:2:3'}",
     b"\xff\xfe", b"\x00", b"\xc3", b"\x1b[2J", b"disk = \x9b"])), max_size=30))
def test_arbitrary_bytes_never_break_the_reader(chunks: list[bytes]) -> None:
    read_bytes_checked(b"\n".join(chunks), "bcc")


@QUICK
@given(LITERALS)
def test_dict_histogram_accepts_only_valid_dicts(obj: object) -> None:
    try:
        counts, _val_type, label = dict_histogram(obj)
    except ValueError as err:
        assert str(err)
        return
    assert counts.shape == (NSLOTS,) and ((counts >= 0) & (counts <= MAX_COUNT)).all()
    assert label


@ROUNDTRIP
@given(st.lists(PRINT, min_size=1, max_size=8), st.sampled_from(["usecs", "nsecs", "msecs"]),
       st.sampled_from([None, "disk = sda"]), st.booleans())
def test_per_interval_text_prints_round_trip(prints: list[dict[int, int]], unit: str, section: str | None,
                                             timed: bool) -> None:
    lines: list[str] = []
    for k, counts in enumerate(prints):
        if timed:
            lines.append(f"10:00:{k:02d}\n")
        lines += render(counts, unit, section)
    got = intervals_of(read_checked(BccTextFormat, lines, cumulative=False))
    assert [iv.counts.tolist() for iv in got] == [read_as(p).tolist() for p in prints]
    assert {iv.stream.label for iv in got} == {"disk sda" if section else f"bcc {unit}"}
    assert {iv.stream.unit for iv in got} == {{"usecs": "microsec", "nsecs": "nanosec", "msecs": "millisec"}[unit]}


@ROUNDTRIP
@given(st.lists(st.tuples(PRINT, st.floats(0.0, 1.0)), min_size=1, max_size=8), st.sampled_from(["usecs", "nsecs"]))
def test_summary_lines_give_each_print_its_time_and_keep_its_rows(prints: list[tuple[dict[int, int], float]],
                                                                  unit: str) -> None:
    """A print with funclatency's summary line (a count that is its rows', a total they allow) is a column whose exact
    time is that total, every row but the first its own slot, the first's events within slots 0 and 1."""
    lines: list[str] = ['Tracing 1 functions for "work"... Hit Ctrl-C to end.\n', "\n"]
    expected = []
    for k, (counts, where) in enumerate(prints):
        low = sum(n << (s - 1) for s, n in counts.items() if s > 1)
        high = sum(n << s for s, n in counts.items())
        total = max(0, min(high - 1, low + int(where * (high - low))))  # values lie below their rows' upper bounds
        events = sum(counts.values())
        lines += [f"10:00:{k:02d}\n", *render(counts, unit), f"avg = {total // max(events, 1)} {unit}, total: {total} "
                  f"{unit}, count: {events}\n", "\n"]
        half = 0.0 if unit == "nsecs" or not events else 0.5  # `%ld` truncated it: the middle of its unit
        expected.append(pytest.approx((total + half) * (1e-9 if unit == "nsecs" else 1e-6)))
    got = intervals_of(read_checked(BccTextFormat, lines, cumulative=False))
    assert [iv.source_buckets.total_time if iv.source_buckets else None for iv in got] == expected
    for iv, (counts, _) in zip(got, prints, strict=True):
        vector = as_vector(counts)
        assert iv.counts[2:].tolist() == vector[2:].tolist()
        assert int(iv.counts[0] + iv.counts[1]) == int(vector[1])


@ROUNDTRIP
@given(st.lists(PRINT, min_size=1, max_size=8))
def test_dict_lines_round_trip(prints: list[dict[int, int]]) -> None:
    lines = [repr({"ts": f"2030-01-01 10:00:{k:02d}", "val_type": "usecs", "data": [bucket(s, c) for s, c in
                                                                                     sorted(p.items())]}) + "\n"
             for k, p in enumerate(prints)]
    got = intervals_of(read_checked(BccTextFormat, lines, cumulative=False))
    assert [iv.counts.tolist() for iv in got] == [read_as(p).tolist() for p in prints]
    assert all(iv.end - iv.start == pytest.approx(1.0) for iv in got[1:])


@ROUNDTRIP
@given(st.lists(PRINT, min_size=2, max_size=8))
def test_cumulative_counters_going_backwards_are_resets_never_negative(prints: list[dict[int, int]]) -> None:
    lines = [line for counts in prints for line in render(counts)]
    got = intervals_of(read_checked(BccTextFormat, lines, cumulative=True))
    assert len(got) == len(prints) - 1
    for before, after, iv in zip(prints[:-1], prints[1:], got, strict=True):
        b, a = read_as(before), read_as(after)
        assert iv.counts.tolist() == np.where(a >= b, a - b, a).tolist()


@ROUNDTRIP
@given(st.lists(st.tuples(st.integers(0, 59), PRINT), min_size=1, max_size=10, unique_by=lambda p: p[0]))
def test_time_lines_out_of_order_lose_no_print(prints: list[tuple[int, dict[int, int]]]) -> None:
    lines = [line for second, counts in prints for line in [f"10:00:{second:02d}\n", *render(counts)]]
    items = read_checked(BccTextFormat, lines, cumulative=False)
    assert_backwards_times_refused_and_no_print_lost(items, prints)


def test_megabyte_lines_are_read_or_reported_quickly() -> None:
    mb = 1 << 20
    hostile = [" " * mb + "usecs : count distribution\n", "8 -> 15 : " + "9" * mb + " |*|\n",
               "9" * mb + " -> 15 : 1 |*|\n", "{'data': [" + "1, " * (mb // 3) + "]}\n", "disk = " + "x" * mb + "\n",
               "{'ts': '" + "x" * mb + "', 'data': []}\n"]
    for line in hostile:
        started = time.monotonic()
        items = read_checked(BccTextFormat, [*render({4: 6}), line, *render({4: 1})], cumulative=False)
        assert time.monotonic() - started < 10, line[:30]
        assert totals(items)[4] == 7, line[:30]


@pytest.mark.timeout(60)
def test_a_million_rows_in_one_print() -> None:
    lines = ["     usecs : count     distribution\n", *(row(1 + s % (NSLOTS - 1), 1) + "\n" for s in range(1_000_000))]
    started = time.monotonic()
    (column,) = intervals_of(read_checked(BccTextFormat, lines, cumulative=False))
    assert time.monotonic() - started < 30
    assert int(column.counts.sum()) == 1_000_000


def test_hostile_dict_lines_raise_no_warning_that_would_echo_them() -> None:
    line = "{'ts': '\\\x1b]0;pwned\x07', 'val_type': 'usecs', 'data': []}\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        items = read_checked(BccTextFormat, [line, "{'data': '\\)'}\n"], cumulative=False)
    assert caught == [] and len([i for i in items if isinstance(i, Notice)]) >= 1


def test_huge_counts_in_one_bucket_are_rejected_not_wrapped() -> None:
    big = 2**62
    lines = ["     usecs : count     distribution\n", row(3, big) + "\n", row(3, big) + "\n", row(4, 10**30) + "\n",
             row(5, 2) + "\n", "\n",
             repr({"ts": "10:00:00", "val_type": "usecs", "data": [bucket(3, big), bucket(3, big)]}) + "\n"]
    items = read_checked(BccTextFormat, lines, cumulative=False)
    assert all((iv.counts >= 0).all() for iv in intervals_of(items))
    assert int(totals(items).sum()) == big + 2
    assert sum("count" in i.message for i in items if isinstance(i, Notice)) >= 3
