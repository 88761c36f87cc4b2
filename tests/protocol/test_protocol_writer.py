"""Protocol records out: what a recording writes reads back as the same numbers, bit for bit."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.core.units import UNIT_SECONDS
from latencymap.protocol import ProtocolReader, format_record
from latencymap.protocol.writer import in_unit

#: The units a protocol record may give (`latencyunit`).
UNITS = ["millisec", "microsec", "nanosec"]
#: Per-bucket times in seconds: any finite time >= 0 a source or a sum of columns may give.
SECONDS = st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False)


def record_of(stream: StreamId, times: list[float]) -> str:
    """One interval record of `times` seconds in slots 10, 11, ... (one event each)."""
    counts = np.zeros(NSLOTS, dtype=np.int64)
    sums = np.zeros(NSLOTS, dtype=np.float64)
    counts[10:10 + len(times)] = 1
    sums[10:10 + len(times)] = times
    return format_record(stream, 1_700_000_001.0, counts, sums, start=1_700_000_000.0, per_interval=True)


def read_times(text: str, bulk: bool) -> list[float]:
    """The per-slot times of the one interval in `text`, read line by line or in bulk (as `report` reads)."""
    reader = ProtocolReader("t")
    items = list(reader.read_chunks([text]) if bulk else reader.read(text.splitlines()))
    (iv,) = [i for i in items if isinstance(i, Interval)]
    assert iv.time is not None
    return [float(t) for t in iv.time[np.flatnonzero(iv.counts)]]


def test_a_time_a_source_gave_in_its_unit_is_written_as_the_source_gave_it() -> None:
    # The Spark fixture's 348 ms: 348 * 1e-3 s was written as 348.00000000000006 (times 1 / 1e-3), and every
    # recording of its replay moved the last bits again.
    stream = StreamId("spark task", "spark", "millisec")
    text = record_of(stream, [348 * 1e-3, 1986 * 1e-3])
    assert ", 1, 348.0\n" in text and ", 1, 1986.0\n" in text
    assert read_times(text, bulk=True) == [348 * 1e-3, 1986 * 1e-3]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(UNITS), st.lists(SECONDS, min_size=1, max_size=8), st.booleans())
def test_recording_then_replay_then_record_is_bit_exact(unit: str, times: list[float], bulk: bool) -> None:
    stream = StreamId("io", "bpf", unit)
    first = record_of(stream, times)
    read = read_times(first, bulk)
    for wrote, got in zip(times, read, strict=True):  # within a float of what was given (exact below)
        assert got == wrote or math.nextafter(got, wrote) == wrote or got == 0.0 == wrote
    second = record_of(stream, read)
    assert second == first
    assert read_times(second, not bulk) == read


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(UNITS), st.lists(SECONDS, min_size=1, max_size=8), st.booleans())
def test_a_time_that_a_value_in_the_unit_gives_reads_back_exactly(unit: str, values: list[float],
                                                                  bulk: bool) -> None:
    # What a source read in its unit (`value * per` seconds, as the readers make it) is written back exactly.
    per = UNIT_SECONDS[unit]
    times = [v * per for v in values]
    assert read_times(record_of(StreamId("io", "bpf", unit), times), bulk) == times


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(UNITS), SECONDS)
def test_in_unit_reads_back_as_the_time_given_or_the_nearest_one_that_does(unit: str, seconds: float) -> None:
    per = UNIT_SECONDS[unit]
    value = in_unit(seconds, per)
    back = value * per
    if any(c * per == seconds for c in _near(seconds / per)):
        assert back == seconds
    else:
        assert abs(back - seconds) <= math.ulp(seconds)
    assert in_unit(back, per) == value  # the time read back is written with the same text again


def _near(value: float) -> list[float]:
    out = [value]
    for direction in (-math.inf, math.inf):
        step = value
        for _ in range(4):
            step = math.nextafter(step, direction)
            out.append(step)
    return out


#: Values 0, or from 1e-6 of the unit up: far below, in seconds, floats are subnormal and a value's sum and extremes
#: round apart (2e-311 ns: the line is rightly dropped as inconsistent).
VALUES = st.one_of(st.just(0.0), st.floats(1e-6, 1e9))


@settings(max_examples=100, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=50), st.sampled_from(["millisec", "microsec", "nanosec"]))
def test_extremes_round_trip_bit_exact_in_both_readers(values: list[float], unit: str) -> None:
    """The `extremes` line (per-interval records) reads back as the seconds written, line by line and in bulk."""
    from latencymap.core.buckets import bin_extremes, bin_values

    per = UNIT_SECONDS[unit]
    counts, sums = bin_values(np.asarray(values))
    extremes = bin_extremes(np.asarray(values)) * per
    stream = StreamId("x", "bpf", unit)
    text = format_record(stream, 10.0, counts, sums * per, start=9.0, per_interval=True, extremes=extremes)
    assert text.count("\nextremes, ") == 1
    for bulk in (False, True):
        reader = ProtocolReader("t")
        items = list(reader.read_chunks([text + text.replace("10000000", "11000000")]) if bulk
                     else reader.read(text.splitlines()))
        got = next(i for i in items if isinstance(i, Interval)).extremes
        assert got is not None and np.array_equal(got, extremes, equal_nan=True)


def test_extremes_are_written_only_in_per_interval_records_and_checked_when_read() -> None:
    stream = StreamId("x", "bpf", "millisec")
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[3] = 2
    extremes = np.full((2, NSLOTS), np.nan)
    extremes[:, 3] = np.array([4.5, 6.1]) * UNIT_SECONDS["millisec"]  # as a source in ms gives them
    assert "extremes" not in format_record(stream, 10.0, counts, extremes=extremes)  # what PyLatencyMap reads
    text = format_record(stream, 10.0, counts, start=9.0, per_interval=True, extremes=extremes)
    assert "extremes, 4, 4.5, 6.1\n" in text
    bad = text.replace("extremes, 4, 4.5, 6.1", "extremes, 4, 6.1, 4.5")
    items = list(ProtocolReader("t").read(bad.splitlines()))
    (interval,) = [i for i in items if isinstance(i, Interval)]  # only the line is dropped, not the record
    assert interval.extremes is None and interval.counts[3] == 2
    assert "expected 'extremes, <bucket value>, <smallest>, <largest>, ...'" in str(items)


def test_a_label_or_date_ending_in_a_marker_is_written_so_that_its_record_reads_back() -> None:
    """A line that ends in `<begin record>` or `<end record>` is read as one cut short: the writer spells such text
    with `?` for the marker's `>`, and the record is read, not skipped."""
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[3] = 7
    for text in ("x<end record>", "x <Begin Record>  ", "<end record>"):
        record = format_record(StreamId(text, "bpf", "microsec"), 1_700_000_001.0, counts, date=text)
        for items in (list(ProtocolReader("t").read(record.splitlines())),
                      list(ProtocolReader("t").read_chunks([record]))):
            (snap,) = items
            assert snap.stream.label == text.rstrip()[:-1] + "?" and snap.date == snap.stream.label
            assert int(snap.counts.sum()) == 7
