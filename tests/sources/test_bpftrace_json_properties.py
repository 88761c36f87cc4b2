"""Property tests of the bpftrace `-f json` reader: hostile lines never break it; generated hist lines round-trip."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties_support import (
    NUMBERS,
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
from latencymap.flow.inputs import MAX_LINE
from latencymap.sources.bpftrace_json import BpftraceJsonFormat, HistRowError, hist_counts

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.floats(allow_nan=True), st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
BUCKETS = st.one_of(
    st.fixed_dictionaries({"min": NUMBERS, "max": NUMBERS, "count": NUMBERS}),
    st.fixed_dictionaries({"max": NUMBERS, "count": NUMBERS}),
    st.builds(lambda s, c: bucket(s, c), st.integers(0, NSLOTS - 1), NUMBERS),
    JSON_VALUES,
)
HISTS = st.builds(
    lambda name, value: json.dumps({"type": "hist", "data": {name: value}}),
    st.sampled_from(["@usecs", "@ns", "@x", "", "@a\x1b[2J"]),
    st.one_of(st.lists(BUCKETS, max_size=6), st.dictionaries(st.text(max_size=8), st.lists(BUCKETS, max_size=4),
                                                              max_size=3), JSON_VALUES),
)
TIMES = st.builds(lambda t: json.dumps({"type": "time", "data": t}),
                  st.one_of(st.sampled_from(["10:00:00\n", "09:00:00\n", "2030-06-01 10:00:00", "99:99:99",
                                             "0001-01-01 00:00:00", "9999-12-31 23:59:59\n"]),
                            JSON_VALUES))
OTHERS = st.one_of(
    st.builds(lambda k, d: json.dumps({"type": k, "data": d}), st.sampled_from(["map", "printf", "stats", "x"]),
              JSON_VALUES),
    st.builds(json.dumps, JSON_VALUES),
    st.sampled_from(['{"type": "hist", "data": {"@x": [{"min": 1, "max": 1, "count": 1e400}]}}', "{" * 50_000,
                     "[" * 50_000 + "]" * 50_000, '{"type": "hist"', "NaN", '{"type": "hist", "data": null}']),
)
LINES = hostile_lines(HISTS, TIMES, OTHERS, max_size=30)
OPTIONS = st.fixed_dictionaries({"cumulative": st.sampled_from([None, True, False]), "unit": st.sampled_from(
    [None, "nanosec"])})
PRINT = st.dictionaries(st.integers(0, NSLOTS - 1), st.integers(0, 2**40), min_size=1)


def bucket(slot: int, count: int) -> dict[str, int]:
    """The JSON bucket bpftrace prints for a slot (`max` inclusive)."""
    low = 0 if slot == 0 else 1 << (slot - 1)
    high = 0 if slot == 0 else (1 << slot) - 1
    return {"min": low, "max": high, "count": count}


def hist_line(name: str, counts: dict[int, int], key: str | None = None) -> str:
    rows = [bucket(s, c) for s, c in sorted(counts.items())]
    return json.dumps({"type": "hist", "data": {name: rows if key is None else {key: rows}}}) + "\n"


@QUICK
@given(LINES, OPTIONS)
def test_arbitrary_lines_never_break_the_reader(lines: list[str], options: dict) -> None:
    read_checked(BpftraceJsonFormat, [line + "\n" for line in lines], **options)


@QUICK
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(
    [b'{"type": "hist", "data": {"@us": [{"min": 1, "max": 1, "count": 2}]}}', b'{"type": "time", "data": "1:2:3"}',
     b"\xff\xfe", b"\x00", b'"\xc3"', b"\x1b[2J"])), max_size=30))
def test_arbitrary_bytes_never_break_the_reader(chunks: list[bytes]) -> None:
    read_bytes_checked(b"\n".join(chunks), "bpftrace-json")


@QUICK
@given(JSON_VALUES)
def test_hist_counts_accepts_only_valid_buckets(rows: object) -> None:
    try:
        read = hist_counts(rows)
    except HistRowError as err:
        assert str(err) and not isinstance(rows, list)
        return
    counts = read.counts
    assert counts.shape == (NSLOTS,) and counts.dtype == np.int64
    assert ((counts >= 0) & (counts <= MAX_COUNT)).all() and read.negative >= 0
    assert read.read + len(read.bad) == len(rows) and all(read.bad)


@ROUNDTRIP
@given(st.lists(PRINT, min_size=1, max_size=8), st.booleans(), st.sampled_from([None, "sda", "a,b"]))
def test_per_interval_hist_lines_round_trip(prints: list[dict[int, int]], timed: bool, key: str | None) -> None:
    lines: list[str] = []
    for k, counts in enumerate(prints):
        if timed:
            lines.append(json.dumps({"type": "time", "data": f"10:00:{k:02d}\n"}) + "\n")
        lines.append(hist_line("@usecs", counts, key))
    got = intervals_of(read_checked(BpftraceJsonFormat, lines, cumulative=False))
    assert [iv.counts.tolist() for iv in got] == [as_vector(p).tolist() for p in prints]
    assert {iv.stream.label for iv in got} == {"@usecs" if key is None else f"@usecs[{key}]"}


@ROUNDTRIP
@given(st.lists(PRINT, min_size=2, max_size=8))
def test_cumulative_hist_lines_round_trip_and_resets_are_never_negative(prints: list[dict[int, int]]) -> None:
    lines = [hist_line("@nsecs", counts) for counts in prints]
    got = intervals_of(read_checked(BpftraceJsonFormat, lines, cumulative=True))
    assert len(got) == len(prints) - 1
    for before, after, iv in zip(prints[:-1], prints[1:], got, strict=True):
        b, a = as_vector(before), as_vector(after)
        assert iv.counts.tolist() == np.where(a >= b, a - b, a).tolist()
        assert iv.stream.unit == "nanosec"


@ROUNDTRIP
@given(st.lists(st.tuples(st.integers(0, 59), PRINT), min_size=1, max_size=10, unique_by=lambda p: p[0]))
def test_time_lines_out_of_order_lose_no_print(prints: list[tuple[int, dict[int, int]]]) -> None:
    lines: list[str] = []
    for second, counts in prints:
        lines += [json.dumps({"type": "time", "data": f"10:00:{second:02d}\n"}) + "\n", hist_line("@usecs", counts)]
    items = read_checked(BpftraceJsonFormat, lines, cumulative=False)
    assert_backwards_times_refused_and_no_print_lost(items, prints)


def test_megabyte_lines_are_read_or_reported_quickly() -> None:
    mb = 1 << 20
    hostile = ['{"type": "hist", "data": {"@' + "a" * mb + '": [{"min": 1, "max": 1, "count": 2}]}}\n',
               '{"type": "hist", "data": {"@x": [{"min": 1, "max": 1, "count": ' + "9" * mb + "}]}}\n",
               "[" * mb + "\n", '{"type": "time", "data": "' + " " * mb + '"}\n', "x" * mb + "\n"]
    for line in hostile:
        started = time.monotonic()
        items = read_checked(BpftraceJsonFormat, [hist_line("@usecs", {3: 4}), line], cumulative=False)
        assert time.monotonic() - started < 5, line[:30]
        assert totals(items, "@usecs")[3] == 4
    data = hist_line("@usecs", {1: 3}).encode() + b'{"type": "printf", "data": "' + b"7" * (3 * MAX_LINE) + b'"}\n'
    items = read_bytes_checked(data + hist_line("@usecs", {2: 5}).encode(), "bpftrace-json")
    assert totals(items)[1:3].tolist() == [3, 5]
    assert any("line 2: expected one JSON object per line" in i.message for i in items if isinstance(i, Notice))


@pytest.mark.timeout(60)
def test_a_million_buckets_in_one_hist() -> None:
    rows = [bucket(s % NSLOTS, 1) for s in range(1_000_000)]
    line = json.dumps({"type": "hist", "data": {"@usecs": rows}}) + "\n"
    started = time.monotonic()
    (column,) = intervals_of(read_checked(BpftraceJsonFormat, [line], cumulative=False))
    assert time.monotonic() - started < 30
    assert int(column.counts.sum()) == 1_000_000


def test_huge_counts_in_one_bucket_are_rejected_not_wrapped() -> None:
    rows = [bucket(1, 2**62), bucket(1, 2**62), bucket(2, 7)]
    items = read_checked(BpftraceJsonFormat, [json.dumps({"type": "hist", "data": {"@usecs": rows}}) + "\n",
                                              hist_line("@usecs", {2: 7})], cumulative=False)
    assert all((iv.counts >= 0).all() for iv in intervals_of(items))
    assert any("at most 2**62 events per bucket" in i.message and i.message.endswith("row skipped")
               for i in items if isinstance(i, Notice))
    assert int(totals(items).sum()) == 14  # the bucket past 2**62 is left out, not its print's other rows
