from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.buckets import slot_of_bucket_value
from latencymap.core.model import Interval, Notice, Snapshot, StreamId, one_by_one
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
    (snap,) = ProtocolReader("t.txt", clock=lambda: 123.5).read(["<begin record>", "1, 1", "<end record>"])
    assert isinstance(snap, Snapshot)
    assert snap.stream.datasource == "bpf"
    assert snap.stream.unit == "millisec"
    assert snap.micros is None and snap.timestamp == 123.5  # no timestamp line: the time it was read


def unit_records(*units: str | None) -> str:
    """One record per entry, with a `latencyunit` line when it is not None; the counts grow by 10 a record."""
    return "".join(f"<begin record>\ntimestamp, microsec, {1_000_000 * (i + 1)}, t{i}\nlabel, io\n"
                   + (f"latencyunit, {unit}\n" if unit else "") + f"64, {10 * i}\n128, {10 * i}\n<end record>\n"
                   for i, unit in enumerate(units))


def both_paths(text: str) -> list[list[Snapshot | Interval | Notice]]:
    """What the line reader and the bulk reader (text cut in two places) make of `text`."""
    third = len(text) // 3
    chunks = [text[:third], text[third:2 * third], text[2 * third:]]
    return [read(text), list(one_by_one(ProtocolReader("t.txt").read_chunks(chunks, runs=True)))]


def test_a_record_without_latencyunit_keeps_the_unit_given_before_it_in_its_input() -> None:
    """PyLatencyMap keeps `latencyunit` as a global: a record without the line is in the last unit given (the
    record before, whatever its label), not millisec; one note says so the first time."""
    text = unit_records("microsec", None, None, "nanosec", None)
    for items in both_paths(text):
        notes = [i.message for i in items if isinstance(i, Notice)]
        assert [i.stream.unit for i in items if isinstance(i, Snapshot)] == ["microsec"] * 3 + ["nanosec"] * 2
        assert notes == ["t.txt: line 8: record without a 'latencyunit' line: read in microsec, the unit of the last "
                         "record before it that gave one (as PyLatencyMap does); so are later such records"]
        assert all(i.skipped == 0 for i in items if isinstance(i, Notice))
    # per input: another input starts again from millisec, and one that never names a unit says nothing
    for items in both_paths(unit_records(None, None)):
        assert [i.stream.unit for i in items if isinstance(i, Snapshot)] == ["millisec"] * 2
        assert not [i for i in items if isinstance(i, Notice)]


def test_a_unit_given_by_a_skipped_record_still_holds_as_in_pylatencymap() -> None:
    """PyLatencyMap sets its unit when it reads the line: a record skipped for a bad row after it still gives it."""
    text = unit_records("microsec", None).replace("128, 10\n", "128, x\n") + unit_records(None)
    for items in both_paths(text):
        assert [i.stream.unit for i in items if isinstance(i, Snapshot)] == ["microsec", "microsec"]
        assert sum(i.skipped for i in items if isinstance(i, Notice)) == 1


def test_records_without_a_timestamp_are_at_least_interval_apart() -> None:
    """Read from a file, such records arrive microseconds apart: each stream's are spaced by at least `interval`
    (1 s: PyLatencyMap takes 1 s between them); slower ones keep their arrival times. One note says so."""
    text = "".join(f"<begin record>\nlabel, {label}\nlatencyunit, microsec\n64, {n}\n<end record>\n"
                   for n, label in [(1, "a"), (1, "b"), (5, "a"), (9, "a"), (7, "b"), (20, "a")])
    now = iter([100.0, 100.001, 100.002, 100.003, 107.5, 107.501])
    items = list(ProtocolReader("t.txt", clock=lambda: next(now)).read(text.splitlines()))
    snaps = [(i.stream.label, i.timestamp) for i in items if isinstance(i, Snapshot)]
    assert snaps == [("a", 100.0), ("b", 100.001), ("a", 101.0), ("a", 102.0), ("b", 107.5), ("a", 107.501)]
    notes = [i for i in items if isinstance(i, Notice)]
    assert [n.message for n in notes] == [
        "t.txt: line 11: records without a 'timestamp' line are timed as they are read, at least 1 s apart "
        "(--interval; PyLatencyMap takes 1 s between records): rates are per that time"]
    assert notes[0].skipped == 0 and items.index(notes[0]) == 2  # said before the first record it spaces
    spaced = ProtocolReader("t.txt", interval=3.0, clock=lambda: 50.0).read(text.splitlines())
    assert [i.timestamp for i in spaced if isinstance(i, Snapshot) and i.stream.label == "a"] == [50, 53, 56, 59]


def test_oracle_values_are_upper_bounds_and_overflow_is_dropped() -> None:
    text = "<begin record>\ndatasource, oracle\n1, 3\n4294967295, 9\n<end record>\n"
    snap, note = read(text)
    assert isinstance(snap, Snapshot) and isinstance(note, Notice) and "overflow bucket 4294967295" in note.message
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
    ("8, 4611686018427387904", "count from 0 to 2**62 - 1, got '8, 4611686018427387904'"),
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


LONG = "/cluster/eu-west-1/" + "x" * 250


def long_label_records(*tails: str) -> str:
    return "".join(f"<begin record>\ntimestamp, microsec, {t}000000\nlabel, {LONG}{tail}\ndatasource, bpf\n"
                   f"1, {t}\n<end record>\n" for t in (1_795_700_000, 1_795_700_001) for tail in tails)


def test_labels_longer_than_200_characters_stay_distinct_streams_cut_in_the_middle() -> None:
    text = long_label_records("/disk0/read", "/disk1/read", "/disk2/read")
    for items in both_paths(text):
        assert not [i for i in items if isinstance(i, Notice)]
        labels = [i.stream.label for i in items if isinstance(i, Snapshot)]
        assert len(labels) == 6 and len(set(labels)) == 3
        for label, tail in zip(labels, ["/disk0/read", "/disk1/read", "/disk2/read"], strict=False):
            assert len(label) == 200 and label.count("…") == 1
            assert label.startswith("/cluster/eu-west-1/xx") and label.endswith("x" + tail)


def test_long_labels_whose_cuts_are_the_same_are_named_apart() -> None:
    # They differ only in the middle, which the cut drops: the second is `NAME (2)`, still 200 characters.
    text = long_label_records("a" + "y" * 200, "b" + "y" * 200)
    for items in both_paths(text):
        assert not [i for i in items if isinstance(i, Notice)]
        labels = [i.stream.label for i in items if isinstance(i, Snapshot)]
        assert len(set(labels)) == 2
        assert labels[1].endswith("y (2)") and len(labels[1]) == 200 and labels[1].count("…") == 1
        assert labels[2:] == labels[:2]


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


@pytest.mark.parametrize("rows", [["64, 45, 999", "128, 60"], ["64, 45", "128, 60, 999"]])
def test_a_record_where_only_some_buckets_carry_a_sum_is_skipped_naming_its_line(rows: list[str]) -> None:
    """A sum for some buckets and none for others would give those no time, in a column still called estimated."""
    head = "<begin record>\ntimestamp, microsec, {t}, d\nlatencyunit, microsec\nlabel, disk\n"
    good = head.format(t=1_000_000) + "64, 30\n128, 40\n<end record>\n"
    mixed = head.format(t=2_000_000) + "".join(r + "\n" for r in rows) + "0, 0\n<end record>\n"
    for got in both_paths(good + mixed):
        notes = [i for i in got if isinstance(i, Notice)]
        assert len(notes) == 1 and notes[0].skipped == 1
        assert notes[0].message.startswith("t.txt: line 13: ") and "line 12" in notes[0].message
        assert "record skipped" in notes[0].message
        assert [type(i) for i in got] == [Snapshot, Notice]
    counted = head.format(t=2_000_000) + "64, 45, 999\n128, 0\n<end record>\n"  # no events: no time to lose
    for got in both_paths(good + counted):
        assert not [i for i in got if isinstance(i, Notice)]


EXTREMES_RECORD = """<begin record>
timestamp, microsec, 2000000, now
counts, interval
start, microsec, 1000000
latencyunit, nanosec
label, adv
datasource, hdrhistogram
extremes, {extremes}
131072, 1000, 142169600.0
262144, 20, 5600000.0
<end record>
"""


@pytest.mark.parametrize(("extremes", "why"), [
    ("131072, nan, nan", "expected 'extremes, <bucket value>, <smallest>, <largest>, ...'"),
    ("131072, 250000.0, 140000.0", "expected 'extremes,"),  # swapped
    ("131072, inf, inf", "expected 'extremes,"),
    ("131072, -5, 140000.0", "expected 'extremes,"),
    ("131072, 140000.0", "expected 'extremes,"),  # a value missing
    ("999, 1.0, 2.0", "expected the bucket values of '<bucket value>, <count>' rows: bucket value 999"),
    ("131072, 139904.0, 1e30", "above that bucket's range 131072 to 262144"),
    ("131072, 139904.0, 250111.0, 524288, 600000.0, 600000.0", "bucket 524288: smallest 600000, largest 600000, "
                                                              "but the record has no event in that bucket"),
    ("131072, 262000.0, 262000.0", "but its 1,000 events' exact sum"),  # mean 142 µs
])
@pytest.mark.parametrize("bulk", [False, True])
def test_a_bad_or_contradicting_extremes_line_drops_only_itself(extremes: str, why: str, bulk: bool) -> None:
    """The record's counts and sums are read; a note names the `extremes` line (8, 19: not the record's first) and
    why, and skips nothing, so `--strict` goes on as for a recording's unreadable note line."""
    one = EXTREMES_RECORD.format(extremes=extremes)
    text = one + one.replace("2000000, now", "3000000, now").replace("start, microsec, 1000000",
                                                                    "start, microsec, 2000000")
    reader = ProtocolReader("t.rec")
    items = list(reader.read_chunks([text]) if bulk else reader.read(text.splitlines()))
    intervals = [i for i in items if isinstance(i, Interval)]
    notes = [i for i in items if isinstance(i, Notice)]
    assert len(intervals) == 2 and all(i.extremes is None for i in intervals)
    assert [int(i.counts.sum()) for i in intervals] == [1020, 1020]
    assert all(i.time is not None and abs(i.time.sum() - 0.1477696) < 1e-9 for i in intervals)
    assert [n.skipped for n in notes] == [0, 0]
    assert notes[0].message.startswith("t.rec: line 8: 'extremes' line dropped (")
    assert notes[1].message.startswith("t.rec: line 19: 'extremes' line dropped (")
    assert why in notes[0].message


def test_extremes_that_fit_their_record_are_kept() -> None:
    """The contradiction checks keep a line that fits: values within their buckets, sums within n times them."""
    text = EXTREMES_RECORD.format(extremes="131072, 139904.0, 250111.0, 262144, 270000.0, 290000.0")
    (interval,) = read(text)
    assert isinstance(interval, Interval) and interval.extremes is not None
    assert interval.extremes[1, slot_of_bucket_value(131072, "hdrhistogram")] == pytest.approx(250111e-9)


@pytest.mark.parametrize("line", ["label,", "label, ", "label ,   ", "LABEL,"])
def test_an_empty_label_line_is_no_label(line: str) -> None:
    """PyLatencyMap's NetApp connector prints `label,$beauty`, which may be empty: the record is read, unlabelled,
    on both paths (the bulk path reads header lines with the line reader's parser)."""
    text = "".join(f"<begin record>\ntimestamp, microsec, {t}000000, t\n{line}\nlatencyunit, microsec\n1024, {n}\n"
                   "<end record>\n" for t, n in [(1, 10), (2, 25), (3, 30)])
    for items in both_paths(text):
        assert not [i for i in items if isinstance(i, Notice)]
        assert [(i.stream, int(i.counts.sum())) for i in items if isinstance(i, Snapshot)] == \
            [(StreamId("", "bpf", "microsec"), n) for n in (10, 25, 30)]


@pytest.mark.parametrize("row", ["+16, 10", "+16, +10", " +16 ,10"])
def test_a_plus_sign_on_a_bucket_value_or_count_is_read(row: str) -> None:
    """PyLatencyMap reads rows with int(), which takes a leading `+`."""
    text = "".join(f"<begin record>\ntimestamp, microsec, {t}000000, t\nlabel, io\n{row.replace('10', str(n))}\n"
                   "<end record>\n" for t, n in [(1, 10), (2, 30)])
    for items in both_paths(text):
        assert not [i for i in items if isinstance(i, Notice)]
        assert [int(i.counts[slot_of_bucket_value(16, "bpf")]) for i in items if isinstance(i, Snapshot)] == [10, 30]


def mixed_records(*times: int | None) -> str:
    """Cumulative records of one stream, 10 more events each, with a timestamp line (epoch s) or without (None)."""
    stamps = ["" if t is None else f"timestamp, microsec, {t}000000, d{t}\n" for t in times]
    return "".join(f"<begin record>\n{stamp}label, io\nlatencyunit, microsec\n1024, {10 * (k + 1)}\n<end record>\n"
                   for k, stamp in enumerate(stamps))


def test_a_record_without_a_timestamp_among_timestamped_ones_makes_no_column() -> None:
    """Its events come in the next record's column (cumulative counters): 30 events over 3 s, not a column at the
    clock's time and a later record skipped as going back in time. Said once, naming its line."""
    text = mixed_records(1_700_000_000, None, 1_700_000_002, None, 1_700_000_003)
    for items in both_paths(text):
        snaps = [i for i in items if isinstance(i, Snapshot)]
        assert [(s.timestamp, int(s.counts.sum())) for s in snaps] == \
            [(1_700_000_000, 10), (1_700_000_002, 30), (1_700_000_003, 50)]
        notes = [i for i in items if isinstance(i, Notice)]
        assert [(n.message, n.skipped) for n in notes] == [(
            "t.txt: line 7: 'io': record without a 'timestamp' line among records with one: it has no time of its "
            "own and makes no column; its events are counted in the next timestamped record's column (the counters "
            "are cumulative); so are later such records", 0)]


def test_a_timestamp_in_a_stream_timed_as_read_is_not_used() -> None:
    """A stream whose first record had no timestamp line is timed as read: a later record's epoch time would
    compare with clock times (a message naming a time the input never gave); it is timed as read too."""
    text = mixed_records(None, 1_600_000_000, None)
    now = iter([100.0, 100.001, 100.002])
    items = list(ProtocolReader("t.txt", clock=lambda: next(now)).read(text.splitlines()))
    assert [(i.timestamp, i.micros) for i in items if isinstance(i, Snapshot)] == \
        [(100.0, None), (101.0, None), (102.0, None)]
    notes = [i.message for i in items if isinstance(i, Notice)]
    assert notes[0] == ("t.txt: line 6: 'io': record with a 'timestamp' line after records without one, which were "
                        "timed as read: its timestamp is not used, it is timed as read too, as are later such "
                        "records (a stream's first record decides how its records are timed)")
    assert len(notes) == 2 and "1600000000" not in " ".join(notes)


def overflow_records(datasource: str, *overflow: int | None) -> str:
    """Cumulative records of one stream with an overflow row (4294967295) of each count given (None: no such row)."""
    rows = ["" if n is None else f"4294967295, {n}\n" for n in overflow]
    return "".join(f"<begin record>\ntimestamp, microsec, {k + 1}000000, t\nlabel, log file sync\n"
                   f"datasource, {datasource}\n1, {10 * (k + 1)}\n{row}<end record>\n" for k, row in enumerate(rows))


def test_oracle_overflow_bucket_is_said_once_per_stream_with_what_it_held() -> None:
    """Its events have no finite range and are left out of the map and totals: the end of input says so, once,
    with the cumulative count's first and last values, on both paths."""
    for items in both_paths(overflow_records("oracle", 5, 5, 12)):
        assert [int(i.counts.sum()) for i in items if isinstance(i, Snapshot)] == [10, 20, 30]
        notes = [i for i in items if isinstance(i, Notice)]
        assert [(n.message, n.skipped) for n in notes] == [(
            "t.txt: 'log file sync': Oracle's overflow bucket 4294967295 (waits past its largest bucket: no finite "
            "range) is left out of the map and totals: its cumulative count went from 5 (line 6) to 12 (line 20)",
            0)]
        assert items[-1] is notes[0]


def test_an_overflow_bucket_first_filled_in_the_input_counts_from_0() -> None:
    """Oracle lists no row for an empty bucket: a stream's record without the overflow row means 0 there, so the 2
    waits of the later records' rows came within the input."""
    for items in both_paths(overflow_records("oracle", None, 2, 2)):
        assert [int(i.counts.sum()) for i in items if isinstance(i, Snapshot)] == [10, 20, 30]
        (note,) = [i.message for i in items if isinstance(i, Notice)]
        assert note.endswith(": its cumulative count went from 0 (line 1: no row of it) to 2 (line 19)"), note
    for items in both_paths(overflow_records("oracle", None, 3)):
        (note,) = [i.message for i in items if isinstance(i, Notice)]
        assert note.endswith(": its cumulative count went from 0 (line 1: no row of it) to 3 (line 12)"), note


def test_bucket_value_4294967295_under_another_datasource_is_said_not_a_power_of_two() -> None:
    for items in both_paths(overflow_records("bpf", 7)):
        assert [int(i.counts.sum()) for i in items if isinstance(i, Snapshot)] == [10]
        (note,) = [i.message for i in items if isinstance(i, Notice)]
        assert note == ("t.txt: 'log file sync': bucket value 4294967295 is not a power of 2 (it is Oracle's overflow "
                        "bucket; the stream is read as bpf: if it is Oracle's, add 'datasource, oracle' or pass "
                        "--datasource oracle); its rows are left out: its cumulative count is 7 (line 6)")


def test_overflow_rows_of_interval_records_are_said_as_the_sum_of_their_events() -> None:
    text = overflow_records("oracle", 4, 0, 9).replace("datasource,", "counts, interval\ndatasource,")
    for items in both_paths(text):
        assert [int(i.counts.sum()) for i in items if isinstance(i, Interval)] == [10, 20, 30]
        (note,) = [i.message for i in items if isinstance(i, Notice)]
        assert note.endswith(": 13 events in them (lines 7 to 23)")


def test_keys_differing_only_in_unicode_blanks_name_streams_of_their_own() -> None:
    tables = "".join(f"{key}\nvalue |---- count\n1 |@ {n}\n" for key, n in
                     (("disk  a", 3), ("disk a", 4), ("disk\u3000a", 5), ("disk\u00a0a", 6)))
    items = read(f"<begin record>\ntimestamp, microsec, 1000000, x\nlabel, io\n{tables}<end record>\n")
    got = {i.stream.label: int(i.counts.sum()) for i in items if isinstance(i, Snapshot)}
    # runs of ASCII blanks are one (bpftrace pads keys); other blanks are part of the key
    assert got == {"io [disk a]": 7, "io [disk\u3000a]": 5, "io [disk\u00a0a]": 6}
