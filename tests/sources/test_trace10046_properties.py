"""Property tests of the Oracle 10046 trace reader: hostile lines never break it; generated WAITs round-trip."""

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
    hostile_lines,
    intervals_of,
    read_bytes_checked,
    read_checked,
    totals,
)

from latencymap.core.buckets import NSLOTS, bin_values
from latencymap.core.model import Notice
from latencymap.sources.trace10046 import Trace10046Format

EVENTS = ["db file sequential read", "log file sync", "gc cr grant 2-way"]
NAMES = st.one_of(st.sampled_from([*EVENTS, "DB FILE SEQUENTIAL READ", "", "x\x1b[2J\x9b"]), st.text(max_size=12))
WAITS = st.builds(lambda c, nam, ela, tim: f"WAIT #{c}: nam='{nam}' ela= {ela} file#=7 block#=1 blocks=1 tim={tim}",
                  st.sampled_from(["1", "", "46929157733848"]), NAMES, NUMERALS, NUMERALS)
ANCHORS = st.builds(lambda d: f"*** {d}", st.sampled_from(["2013-08-26 14:40:23.035", "0001-01-01 00:00:00",
                                                          "9999-12-31 23:59:59", "2013-13-45 99:99:99",
                                                          "SESSION ID:(409.215) 2013-08-26 14:40:23.035"]))
OTHERS = st.sampled_from(["PARSING IN CURSOR #1 len=10", "EXEC #1:c=0,e=5", "WAIT", "WAIT #", "WAIT #1: nam='x",
                          "WAIT #1: nam='x' ela= 5", "WAIT #1: nam='x' ela= 5 tim=", "=====================", "END"])
LINES = hostile_lines(WAITS, ANCHORS, OTHERS, max_size=60)
OPTIONS = st.fixed_dictionaries({"event": st.sampled_from([("all",), (EVENTS[0],), ("log file sync", "nope")]),
                                 "interval": st.sampled_from([1.0, 0.001, 86400.0])})
#: (event index, ela µs, tim step µs) of generated waits.
GENERATED = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10**9), st.integers(0, 3_000_000)), min_size=1,
                     max_size=60)
BASE_TIM = 1_377_520_823_000_000


def wait_line(event: str, ela: int, tim: int) -> str:
    return f"WAIT #46929157733848: nam='{event}' ela= {ela} file#=7 block#=1 blocks=1 obj#=82015 tim={tim}\n"


@QUICK
@given(LINES, OPTIONS)
def test_arbitrary_lines_never_break_the_reader(lines: list[str], options: dict) -> None:
    read_checked(Trace10046Format, [line + "\n" for line in lines], **options)


@QUICK
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(
    [b"WAIT #1: nam='log file sync' ela= 5 tim=1377520823000000", b"*** 2013-08-26 14:40:23.035", b"\xff\xfe",
     b"\x00", b"\xc3", b"\x1b[2J"])), max_size=40))
def test_arbitrary_bytes_never_break_the_reader(chunks: list[bytes]) -> None:
    read_bytes_checked(b"\n".join(chunks), "oracle10046")


@ROUNDTRIP
@given(GENERATED)
def test_generated_waits_round_trip_per_column_with_exact_time(waits: list[tuple[int, int, int]]) -> None:
    lines, tim = [], BASE_TIM
    expected: dict[tuple[str, int], list[int]] = {}
    for event, ela, step in waits:
        tim += step
        lines.append(wait_line(EVENTS[event], ela, tim))
        expected.setdefault((EVENTS[event], tim // 1_000_000), []).append(ela)
    items = read_checked(Trace10046Format, lines, event=("all",))
    got = {(iv.stream.label, int(iv.start)): iv for iv in intervals_of(items)}
    for (event, column), elas in expected.items():
        counts, sums = bin_values(np.asarray(elas, dtype=np.float64))
        iv = got[(event, column)]
        assert iv.counts.tolist() == counts.tolist()
        assert np.allclose(iv.time, sums * 1e-6, rtol=1e-12)
    for event in {EVENTS[e] for e, _, _ in waits}:
        assert int(totals(items, event).sum()) == sum(1 for e, _, _ in waits if EVENTS[e] == event)


@ROUNDTRIP
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(-5_000_000, 5_000_000)), min_size=1, max_size=40))
def test_tim_out_of_order_is_reported_once_and_no_wait_is_lost(waits: list[tuple[int, int]]) -> None:
    lines = [wait_line(EVENTS[0], ela, BASE_TIM + offset) for ela, offset in waits]
    items = read_checked(Trace10046Format, lines)
    assert int(totals(items).sum()) == len(waits)
    backwards = [m for m in (i.message for i in items if isinstance(i, Notice)) if "tim goes backwards" in m]
    assert len(backwards) <= 1
    columns = [(BASE_TIM + offset) // 1_000_000 for _, offset in waits]
    if any(c < max(columns[:k]) for k, c in enumerate(columns) if k):
        assert len(backwards) == 1


def test_megabyte_lines_are_read_or_reported_quickly() -> None:
    mb = 1 << 20
    hostile = [f"WAIT #1: nam='{'x' * mb}' ela= 5 tim={BASE_TIM}\n", f"WAIT #1: nam='x' ela= {'9' * mb} tim=1\n",
               f"WAIT #1: nam='x' ela= 5 {' ' * mb}tim={BASE_TIM}\n", f"WAIT #1: nam='x' ela= 5 tim={'1' * mb}\n",
               "*** " + "9" * mb + "\n", "WAIT " + "#" * mb + "\n"]
    for line in hostile:
        started = time.monotonic()
        items = read_checked(Trace10046Format, [wait_line(EVENTS[0], 3, BASE_TIM), line,
                                                wait_line(EVENTS[0], 4, BASE_TIM)])
        assert time.monotonic() - started < 5, line[:30]
        assert int(totals(items).sum()) == 2, line[:30]


@pytest.mark.timeout(60)
def test_a_million_waits() -> None:
    lines = [wait_line(EVENTS[0], k % 100_000, BASE_TIM + k * 100) for k in range(1_000_000)]
    started = time.monotonic()
    items = read_checked(Trace10046Format, lines)
    assert time.monotonic() - started < 30
    assert int(totals(items).sum()) == 1_000_000 and len(intervals_of(items)) == 100


def test_huge_ela_and_tim_are_reported_not_raised() -> None:
    lines = [wait_line(EVENTS[0], 10**30, BASE_TIM), wait_line(EVENTS[0], 5, 10**30), wait_line(EVENTS[0], 5, BASE_TIM)]
    lines.append(wait_line(EVENTS[0], 10**19, BASE_TIM))
    items = read_checked(Trace10046Format, lines)
    assert int(totals(items).sum()) == 2
    assert totals(items)[NSLOTS - 1] == 1
    assert sum("line skipped" in i.message for i in items if isinstance(i, Notice)) == 2
