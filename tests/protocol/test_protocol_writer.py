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
