from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.buckets import slot_of_bucket_value
from latencymap.core.model import Interval, Notice, Snapshot, StreamId
from latencymap.protocol import ProtocolReader, format_record


def read(text: str) -> list[Snapshot | Interval | Notice]:
    return list(ProtocolReader("t.txt").read(text.splitlines()))


RECORD = """<begin record>
timestamp, microsec, 1000000, now
latencyunit, microsec
label, my label, with comma
datasource, bpf
1, 5
2, 7
<end record>
"""


def test_reads_a_record() -> None:
    (snap,) = read(RECORD)
    assert isinstance(snap, Snapshot)
    assert snap.stream == StreamId("my label, with comma", "bpf", "microsec")
    assert snap.timestamp == 1.0
    assert snap.counts[slot_of_bucket_value(1, "bpf")] == 5
    assert snap.counts[slot_of_bucket_value(2, "bpf")] == 7


def test_tags_and_keys_are_case_insensitive_with_spaces_around_commas() -> None:
    text = """<BEGIN RECORD>
TimeStamp ,  MicroSec ,  2000000 , date
LatencyUnit ,  NanoSec
Label ,  Mixed Case Label
DataSource ,  BPF
  4 ,   3
<End Record>"""
    (snap,) = read(text)
    assert snap.stream == StreamId("Mixed Case Label", "bpf", "nanosec")
    assert snap.timestamp == 2.0
    assert snap.counts[slot_of_bucket_value(4, "bpf")] == 3


def test_noise_between_records_and_blank_lines_are_skipped() -> None:
    text = "31 rows selected.\n\nPL/SQL procedure successfully completed.\n" + RECORD + "\n\nnoise\n" + RECORD
    items = read(text)
    assert len(items) == 2 and all(isinstance(i, Snapshot) for i in items)


def test_repeated_bucket_values_add_up() -> None:
    text = "<begin record>\ntimestamp, microsec, 1, x\n1, 10\n2, 1\n1, 32\n<end record>\n"
    (snap,) = read(text)
    assert snap.counts[slot_of_bucket_value(1, "bpf")] == 42


def test_default_datasource_is_bpf_and_default_unit_millisec() -> None:
    (snap,) = read("<begin record>\n1, 1\n<end record>\n")
    assert snap.stream.datasource == "bpf"
    assert snap.stream.unit == "millisec"
    assert snap.timestamp is None


def test_oracle_values_are_upper_bounds_and_overflow_is_dropped() -> None:
    text = "<begin record>\ndatasource, oracle\n1, 3\n4294967295, 9\n<end record>\n"
    (snap,) = read(text)
    assert snap.counts[slot_of_bucket_value(1, "oracle")] == 3
    assert snap.counts.sum() == 3


def test_zero_bucket_for_lower_bound_sources() -> None:
    (snap,) = read("<begin record>\ndatasource, dtrace\n0, 4\n<end record>\n")
    assert snap.counts[0] == 4


def test_systemtap_and_dtrace_blocks_inside_records() -> None:
    text = """<begin record>
timestamp, microsec, 5, x
datasource, dtrace
           value  ------------- Distribution ------------- count
             256 |                                         0
             512 |@@@@                                     10
            1024 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@            77
               ~
          -1 |                                             2
<end record>
"""
    (snap,) = read(text)
    assert snap.counts[slot_of_bucket_value(512, "dtrace")] == 10
    assert snap.counts[slot_of_bucket_value(1024, "dtrace")] == 77
    assert snap.counts.sum() == 87


def test_systemtap_fixture_totals(fixtures) -> None:  # type: ignore[no-untyped-def]
    path = fixtures / "pylatencymap" / "test_SystemTap_data.txt"
    items = list(ProtocolReader(str(path)).read(path.read_text().splitlines()))
    assert len(items) == 48 and all(isinstance(i, Snapshot) for i in items)
    last_block = path.read_text().split("<begin record>")[-1]
    expected = sum(int(line.split("|")[1].split()[-1]) for line in last_block.splitlines() if "|" in line
                   and line.split("|")[0].strip().isdigit())
    assert items[-1].counts.sum() == expected


@pytest.mark.parametrize(("line", "expect"), [
    ("3, 5", "power of 2"),
    ("abc, 5", "unknown record line"),
    ("8, x", "expected integers"),
    ("8, -1", "count from 0 to 2**62"),
    ("8, 100000000000000000000", "count from 0 to 2**62"),
    ("8, 1, 2, 3", "expected '<bucket value>, <count>[, <sum>]'"),
    ("latencyunit, parsecs", "expected latencyunit"),
    ("timestamp, millisec, 5", "timestamp, microsec"),
])
def test_bad_lines_skip_the_record_with_line_number_and_stream_goes_on(line: str, expect: str) -> None:
    text = f"<begin record>\ntimestamp, microsec, 1, a\n{line}\n<end record>\n" + RECORD
    items = read(text)
    assert isinstance(items[0], Notice)
    assert "t.txt: line 3:" in items[0].message and expect in items[0].message
    assert isinstance(items[1], Snapshot)


def test_unterminated_record_is_reported() -> None:
    items = read("<begin record>\n1, 1\n<begin record>\n2, 2\n<end record>\n<begin record>\n1, 1\n")
    assert isinstance(items[0], Notice) and "line 1" in items[0].message
    assert isinstance(items[1], Snapshot)
    assert isinstance(items[2], Notice) and "input ended" in items[2].message


def test_control_characters_in_labels_are_neutralised() -> None:
    (snap,) = read("<begin record>\nlabel, evil\x1b[2J\x1b]0;title\x07\n1, 1\n<end record>\n")
    assert "\x1b" not in snap.stream.label and "\x07" not in snap.stream.label


def test_writer_round_trips_cumulative_and_interval_records() -> None:
    stream = StreamId("rt", "oracle", "microsec")
    counts = np.zeros(64, dtype=np.int64)
    counts[[0, 3, 10]] = [1, 2, 3]
    (snap,) = read(format_record(stream, 12.5, counts))
    assert snap.stream == stream and snap.timestamp == 12.5
    assert np.array_equal(snap.counts, counts)
    sums = counts * 1e-6
    text = format_record(stream, 20.0, counts, sums, start=19.0, per_interval=True, flags=["reset"])
    (iv,) = read(text)
    assert isinstance(iv, Interval)
    assert (iv.start, iv.end, iv.reset) == (19.0, 20.0, True)
    assert np.array_equal(iv.counts, counts)
    assert np.allclose(iv.time, sums)


def test_writer_without_extensions_is_pylatencymap_shaped() -> None:
    text = format_record(StreamId("x", "bpf", "millisec"), 1.0, np.ones(64, dtype=np.int64))
    for line in text.splitlines()[1:-1]:
        fields = line.split(",")
        assert len(fields) == (4 if fields[0] == "timestamp" else 2)
