from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from formats_support import intervals, notices, read_items, report_json

from latencymap.core.buckets import bounds_in_unit
from latencymap.core.deltas import Differ
from latencymap.sources.raw_values import RawReader, RawValuesFormat


def test_pairs_totals_and_exact_time_through_the_report(tmp_path) -> None:
    rng = np.random.default_rng(7)
    times = np.sort(rng.uniform(1_700_000_000, 1_700_000_030, 5000))
    lat = rng.lognormal(5, 1, 5000)
    path = tmp_path / "pairs.txt"
    path.write_text("time latency\n" + "".join(f"{t:.6f} {v:.3f}\n" for t, v in zip(times, lat, strict=True)))
    values = [float(line.split()[1]) for line in path.read_text().splitlines()[1:]]
    (stream,) = report_json(path, interval=5)["streams"]
    assert stream["stream"]["label"] == "pairs.txt" and stream["stream"]["unit"] == "microsec"
    assert stream["total"]["events"] == len(values)
    assert stream["intensity_exact"] and stream["total"]["time_s"] == pytest.approx(sum(values) / 1e6, rel=1e-9)
    assert stream["columns"] == 6 and stream["start"] == 1_700_000_000


@pytest.mark.parametrize(("value", "low", "high"), [("0", 0.0, 1.0), ("0.99", 0.0, 1.0), ("1", 1.0, 2.0),
                                                    ("1023", 512.0, 1024.0), ("1024", 1024.0, 2048.0)])
def test_value_on_a_boundary(value: str, low: float, high: float) -> None:
    (col,) = intervals(read_items(RawValuesFormat, value + "\n"))
    (slot,) = col.counts.nonzero()[0]
    lows, highs = bounds_in_unit("raw")
    assert (lows[slot], highs[slot]) == (low, high)


def test_units_seconds_become_microseconds_and_time_unit_scales() -> None:
    text = "1000 0.5\n1500,0.25\n3000 2\n"
    cols = intervals(read_items(RawValuesFormat, text, unit="sec", time_unit="millisec"))
    assert [int(c.counts.sum()) for c in cols] == [2, 0, 1]
    assert cols[0].stream.unit == "microsec" and cols[0].start == 1.0
    assert sum(float(c.time.sum()) for c in cols) == pytest.approx(2.75)
    assert cols[0].counts[np.nonzero(cols[0].counts)[0]].tolist() == [1, 1]


def test_bad_lines_reported_with_line_numbers_and_reading_goes_on() -> None:
    text = "# comment\n5\nabc\n6 7\n-3\nnan\n8\n"
    items = read_items(RawValuesFormat, text, "v.txt")
    msgs = notices(items)
    assert any(m.startswith("v.txt: line 3: expected '<latency>'") for m in msgs)
    assert any(m.startswith("v.txt: line 4: expected '<latency>'") for m in msgs)
    assert any("2 negative or non-finite" in m for m in msgs)
    (col,) = intervals(items)
    assert int(col.counts.sum()) == 2 and float(col.time.sum()) == pytest.approx(13e-6)


def test_sniff_accepts_numbers_only() -> None:
    assert RawValuesFormat.sniff(["time latency\n", "1 2\n", "3 4\n"])
    assert RawValuesFormat.sniff(["12.5\n", "\n", "# x\n", "3\n"])
    assert not RawValuesFormat.sniff(["1 2 3\n"]) and not RawValuesFormat.sniff(["hello\n", "world\n"])


def test_a_long_idle_stretch_is_one_empty_column() -> None:
    cols = intervals(read_items(RawValuesFormat, "10 5\n10.5 6\n5000.2 7\n"))
    assert [(c.start, c.end, int(c.counts.sum())) for c in cols] == [(10, 11, 2), (11, 5000, 0), (5000, 5001, 1)]


def test_values_without_times_are_said_to_carry_no_time_of_their_own() -> None:
    """Plain values are grouped by when they are read, which is no time of theirs: the format names their stream
    (a report then gives it no rate); `<time> <latency>` pairs carry their own time."""
    plain = RawValuesFormat(unit="ms")
    assert plain.untimed_streams() == set()
    items = list(plain.read(["1.5\n", "2\n"], "plain.txt"))
    assert {i.stream for i in intervals(items)} == plain.untimed_streams() and len(plain.untimed_streams()) == 1
    pairs = RawValuesFormat(unit="ms")
    list(pairs.read(["0.5 1.5\n", "1.5 2\n"], "pairs.txt"))
    assert pairs.untimed_streams() == set()


def test_a_value_past_the_top_bucket_is_said_once_with_its_line_value_and_the_bound() -> None:
    """2**70 µs was folded into the top bucket, [2**62, 2**63) µs, without a word: percentiles said 128x less. It is
    still counted there (its exact time kept), and one note per stream names the first such line."""
    text = "10\n# a comment\n1180591620717411303424\n3\n2e20\n"
    items = read_items(RawValuesFormat, text, "v.txt")
    said = [m for m in notices(items) if "top bucket" in m]
    assert said == ["v.txt: line 3: value 1.18059e+21 microsec is past the top bucket's nominal end, 9.22337e+18 "
                    "microsec (106,751,991 days): the top bucket is open (≥53,375,996 days) and counts it, with its "
                    "exact time; percentiles there reach the values seen in it; said once per stream"]
    (col,) = intervals(items)
    assert int(col.counts[-1]) == 2 and int(col.counts.sum()) == 4
    assert float(col.time.sum()) == pytest.approx((2**70 + 2e20 + 13) / 1e6)
    assert not [m for m in notices(read_items(RawValuesFormat, "9.2e18\n1\n")) if "top bucket" in m]
    (in_s,) = [m for m in notices(read_items(RawValuesFormat, "1\n1e14\n", "s.txt", unit="s")) if "top" in m]
    assert in_s.startswith("s.txt: line 2: value 1e+14 sec is past the top bucket's nominal end, 9.22337e+12 sec ")


def test_a_header_naming_milliseconds_is_read_as_milliseconds_and_said() -> None:
    """`latency_ms` over 1.5 and 2.5 was reported as 4µs waited, 1000x less, without a word: the header's unit is
    taken, with one note saying so."""
    done = subprocess.run([sys.executable, "-m", "latencymap", "report"], input="latency_ms\n1.5\n2.5\n",
                          capture_output=True, text=True, check=True)
    assert "== stdin  [raw, millisec]" in done.stdout and "2 events, 4ms waited (exact)" in done.stdout
    assert done.stdout.count("header") == 1
    assert ("<stdin>: the header 'latency_ms' names milliseconds: values read as ms (--unit to override)"
            in done.stdout)


@pytest.mark.parametrize(("header", "unit", "total"), [
    ("latency_ms", "millisec", 4e-3), ("latency_msec", "millisec", 4e-3), ("latency (ms)", "millisec", 4e-3),
    ("latency [ms]", "millisec", 4e-3), ("latency(ms)", "millisec", 4e-3), ("duration_ms", "millisec", 4e-3),
    ("LATENCY_MS", "millisec", 4e-3), ("durationMillis", "millisec", 4e-3), ("latency in ms", "millisec", 4e-3),
    ("latency_us", "microsec", 4e-6), ("latency_usec", "microsec", 4e-6), ("latency µs", "microsec", 4e-6),
    ("elapsed_micros", "microsec", 4e-6), ("latency_ns", "nanosec", 4e-9), ("latency_nsec", "nanosec", 4e-9),
    ("wait_nanos", "nanosec", 4e-9), ("latencyNs", "nanosec", 4e-9), ("latency_s", "microsec", 4.0),
    ("latency_sec", "microsec", 4.0), ("latency_seconds", "microsec", 4.0), ("elapsed (s)", "microsec", 4.0),
])
def test_each_spelling_of_a_unit_in_the_header_sets_the_unit(header: str, unit: str, total: float) -> None:
    items = read_items(RawValuesFormat, f"{header}\n1.5\n2.5\n", "v.txt")
    (col,) = intervals(items)
    assert col.stream.unit == unit and float(col.time.sum()) == pytest.approx(total)
    said = [m for m in notices(items) if "header" in m]
    if unit == "microsec" and total < 1:  # the default: nothing to say
        assert said == []
    else:
        (note,) = said
        assert note.startswith(f"v.txt: the header {header!r} names ") and note.endswith("(--unit to override)")


@pytest.mark.parametrize("header", ["latency", "value", "latency_ms_p99", "ops_per_sec", "req/s", "time latency",
                                    "latency_min", "lat ms extra"])
def test_a_header_without_one_unit_word_at_its_end_keeps_the_default(header: str) -> None:
    items = read_items(RawValuesFormat, f"{header}\n1.5\n2.5\n", "v.txt")
    (col,) = intervals(items)
    assert col.stream.unit == "microsec" and float(col.time.sum()) == pytest.approx(4e-6)
    assert notices(items) == []


def test_unit_given_agreeing_is_quiet_and_disagreeing_is_kept_and_said() -> None:
    agree = read_items(RawValuesFormat, "latency_ms\n1.5\n2.5\n", "v.txt", unit="ms")
    (col,) = intervals(agree)
    assert col.stream.unit == "millisec" and float(col.time.sum()) == pytest.approx(4e-3) and notices(agree) == []
    disagree = read_items(RawValuesFormat, "latency_ms\n1.5\n2.5\n", "v.txt", unit="us")
    (col,) = intervals(disagree)
    assert col.stream.unit == "microsec" and float(col.time.sum()) == pytest.approx(4e-6)
    assert notices(disagree) == ["v.txt: the header 'latency_ms' names milliseconds, but --unit says µs: values read "
                                 "as µs"]
    in_s = read_items(RawValuesFormat, "latency_seconds\n1.5\n", "v.txt", unit="s")
    assert notices(in_s) == [] and float(intervals(in_s)[0].time.sum()) == pytest.approx(1.5)


def test_two_columns_each_take_the_unit_their_header_names(tmp_path) -> None:
    """`time_ms,latency_us`: the time column in ms (3 columns of 1 s, not 2,500), the values in µs as by default;
    `--time-unit` given against the header is kept and said, through the command line."""
    path = tmp_path / "pairs.csv"
    path.write_text("time_ms,latency_ms\n1000,3\n1500,1\n3200,4\n")
    doc = report_json(path)
    (stream,) = doc["streams"]
    assert stream["stream"]["unit"] == "millisec" and stream["total"]["time_s"] == pytest.approx(8e-3)
    assert stream["start"] == 1.0 and stream["columns"] == 3
    assert doc["errors"]["messages"] == [
        f"{path}: the header's time column 'time_ms' names milliseconds: times read as ms (--time-unit to override)",
        f"{path}: the header's latency column 'latency_ms' names milliseconds: values read as ms (--unit to override)"]
    doc = report_json(path, time_unit="s", unit="ms")
    (stream,) = doc["streams"]
    assert (stream["start"], stream["end"]) == (1000, 3201) and stream["total"]["time_s"] == pytest.approx(8e-3)
    assert doc["errors"]["messages"] == [f"{path}: the header's time column 'time_ms' names milliseconds, but "
                                         "--time-unit says s: times read as s"]
    spaced = read_items(RawValuesFormat, "time (us) latency (ns)\n1000000 3\n2000000 4\n", "p.txt")
    cols = intervals(spaced)
    assert [c.start for c in cols] == [1.0, 2.0] and cols[0].stream.unit == "nanosec"
    assert len([m for m in notices(spaced) if "header" in m]) == 2
    quiet = read_items(RawValuesFormat, "time_s\tlatency_us\n1 3\n2 4\n", "p.txt")
    assert notices(quiet) == [] and intervals(quiet)[0].stream.unit == "microsec"
    assert notices(read_items(RawValuesFormat, "latency_ms\n1 3\n", "p.txt")) == []  # 1 name, 2 columns: no guess


def test_a_header_read_alone_and_after_comments_is_taken_when_the_data_comes() -> None:
    """Live input cuts batches by time: a header alone in its batch still names the unit of the values that follow;
    `#` lines before the header leave it a header (as `sniff` takes it), not a bad line."""
    ticks = iter(range(1000))
    reader = RawReader("live", "microsec", "sec", 1.0, clock=lambda: 0.0, monotonic=lambda: float(next(ticks)),
                       given_unit=None)
    items = list(Differ(name="live").run(reader.read(["latency_ms\n", "1.5\n", "2.5\n"])))
    assert float(sum(c.time.sum() for c in intervals(items))) == pytest.approx(4e-3)
    assert notices(items) == ["live: the header 'latency_ms' names milliseconds: values read as ms (--unit to "
                              "override)"]
    items = read_items(RawValuesFormat, "# from probe\n\nlatency_ns\n1.5\n2.5\n", "v.txt")
    assert float(intervals(items)[0].time.sum()) == pytest.approx(4e-9)
    assert [m for m in notices(items) if "line" in m] == []


def test_fields_are_cut_at_spaces_tabs_and_commas_only(tmp_path) -> None:
    """`str.split()` also cut at `\\x1c`-`\\x1f`, `\\x85` and U+2028: `2\\x1c5` was read as the pair (2, 5), and a
    header name holding such a character as two names (no unit taken). Through `latencymap report` on a file."""
    path = tmp_path / "pairs.txt"
    path.write_bytes("time\x1fstamp latency_ms\n1 3\n2\x1c5\n3\u20287\n4\x855\n5,\t1\n".encode())
    doc = report_json(path, "raw")
    (stream,) = doc["streams"]
    assert stream["stream"]["unit"] == "millisec"
    assert stream["total"]["events"] == 2 and stream["total"]["time_s"] == pytest.approx(4e-3)
    said = "expected '<time> <latency>' (numbers), got"
    assert doc["errors"]["messages"] == [
        f"{path}: the header's latency column 'latency_ms' names milliseconds: values read as ms (--unit to override)",
        f"{path}: line 3: {said} '2?5'; line skipped", f"{path}: line 4: {said} '3?7'; line skipped",
        f"{path}: line 5: {said} '4?5'; line skipped"]


def test_fields_are_still_cut_at_no_break_and_other_unicode_spaces_and_a_form_feed_line_is_blank(tmp_path) -> None:
    """Cutting only at spaces, tabs and commas (not at `\\x1c`) also stopped cutting at the blanks `str.split()` cut
    at: a file of `time<U+00A0>latency` pairs (pasted from a web page or a spreadsheet) was no longer recognised, and a
    form feed line became a skipped line. Recognised by the input itself (no --input-format)."""
    path = tmp_path / "pasted.txt"
    path.write_bytes("time\u00a0latency_ms\n1\u00a03\n2\u20035\n\f\n3\u30007 \v\n4\u00a0\u00a01\n".encode())
    doc = report_json(path)
    (stream,) = doc["streams"]
    assert stream["stream"]["unit"] == "millisec"
    assert stream["total"]["events"] == 4 and stream["total"]["time_s"] == pytest.approx(16e-3)
    assert not [m for m in doc["errors"]["messages"] if "line" in m]
