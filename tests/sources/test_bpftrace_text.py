from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, report_json, totals_by_label

from latencymap.core.buckets import bounds_in_unit
from latencymap.core.model import Interval, Snapshot
from latencymap.sources.bpftrace_text import BpftraceTextFormat, parse_bucket

INTERVAL_TXT = FIXTURES / "bpftrace" / "block_usecs_interval.txt"
CUMULATIVE_TXT = FIXTURES / "bpftrace" / "syscall_nsecs_cumulative.txt"


def printed_counts(path) -> dict[str, list[int]]:
    """Per map, the sum of each print's non-negative rows, found by regex."""
    prints: dict[str, list[int]] = defaultdict(list)
    label = None
    for line in path.read_text().splitlines():
        if m := re.match(r"^(@\S*): $", line):
            label = m.group(1)
            prints[label].append(0)
        elif (m := re.match(r"^\[[^\]]*[\])]\s+(\d+) \|", line)) and label:
            prints[label][-1] += int(m.group(1))
        elif not line.strip():
            label = None
    return prints


def test_per_interval_fixture_totals_equal_the_printed_counts() -> None:
    expected = {label: sum(p) for label, p in printed_counts(INTERVAL_TXT).items()}
    assert set(expected) == {"@usecs", "@bytes", "@skew_from_100us"}
    report = report_json(INTERVAL_TXT)
    sizes = expected.pop("@bytes")  # request sizes: no latencies, left out with a note
    assert sizes > 0 and totals_by_label(report) == expected
    assert any(m.endswith("@bytes: a histogram of bytes, not of latencies: left out (--unit reads it as latencies)")
               for m in report["errors"]["messages"])
    assert all(s["columns"] == 4 for s in report["streams"])
    messages = report["errors"]["messages"]
    assert any("@skew_from_100us" in m and "negative value(s) in the (..., 0) row dropped" in m for m in messages)
    assert report["errors"]["skipped_records"] == 0


def test_cumulative_fixture_totals_are_last_minus_first_print() -> None:
    prints = printed_counts(CUMULATIVE_TXT)
    assert len(prints) == 3 and all(len(p) == 4 for p in prints.values())
    expected = {label: p[-1] - p[0] for label, p in prints.items()}
    assert totals_by_label(report_json(CUMULATIVE_TXT)) == expected


def test_declared_mode_overrides_detection() -> None:
    prints = printed_counts(CUMULATIVE_TXT)
    got = totals_by_label(report_json(CUMULATIVE_TXT, cumulative=False))
    assert got == {label: sum(p) for label, p in prints.items()}


def test_detection_yields_intervals_or_snapshots() -> None:
    per = list(BpftraceTextFormat().read(INTERVAL_TXT.open(), "x"))
    cum = list(BpftraceTextFormat().read(CUMULATIVE_TXT.open(), "x"))
    assert any(isinstance(i, Interval) for i in per) and not any(isinstance(i, Snapshot) for i in per)
    assert any(isinstance(i, Snapshot) for i in cum) and not any(isinstance(i, Interval) for i in cum)


@pytest.mark.parametrize(("label", "low", "high"), [
    ("[0]", 0.0, 1.0), ("[1]", 1.0, 2.0), ("[2, 4)", 2.0, 4.0), ("[512, 1K)", 512.0, 1024.0),
    ("[1K, 2K)", 1024.0, 2048.0), ("[1M, 2M)", 2.0**20, 2.0**21), ("[4G, 8G)", 2.0**32, 2.0**33),
    ("[4, 5)", 4.0, 8.0),  # hist(x, 2) sub-bucket: inside [4, 8)
])
def test_row_labels_map_to_their_bucket(label: str, low: float, high: float) -> None:
    slot = parse_bucket(label)
    lows, highs = bounds_in_unit("bpf")
    assert (lows[slot], highs[slot]) == (low, high)


def test_negative_row_dropped_with_a_note_and_non_log2_rows_reported() -> None:
    assert parse_bucket("(..., 0)") == "negative"
    assert parse_bucket("[0, 5)") is None and parse_bucket("[100, ...)") is None
    text = "@usecs: \n(..., 0)   7 |@@|\n[0]   2 |@|\n[0, 5)   3 |@|\n[1K, 2K)   5 |@@|\n\n"
    items = read_items(BpftraceTextFormat, text, "neg.txt")
    (col,) = intervals(items)
    assert col.counts.sum() == 7 and col.counts[0] == 2 and col.counts[11] == 5
    msgs = notices(items)
    assert any("7 negative" in m for m in msgs)
    assert any("neg.txt: line 4:" in m and "[0, 5)" in m for m in msgs)


def test_malformed_row_names_file_and_line_and_stream_goes_on() -> None:
    text = "10:00:00\n@usecs: \n[8, 16)  4 |@|\n\n[8, 16 xx |@|\n10:00:01\n@usecs: \n[8, 16)  1 |@|\n\n"
    items = read_items(BpftraceTextFormat, text, "bad.txt")
    assert any(m.startswith("bad.txt: line 5: expected a hist() row") for m in notices(items))
    assert [int(i.counts.sum()) for i in intervals(items)] == [4, 1]


def test_time_lines_time_the_prints() -> None:
    text = "Attaching 1 probe...\n23:59:59\n@ns: \n[1]  3 |@|\n\n00:00:01\n@ns: \n[1]  1 |@|\n\n"
    cols = intervals(read_items(BpftraceTextFormat, text))
    assert [c.stream.unit for c in cols] == ["nanosec", "nanosec"]
    assert cols[1].start == cols[0].end and cols[1].end - cols[0].end == 2.0  # across midnight
    assert cols[0].end - cols[0].start == 1.0


def test_without_time_lines_prints_are_interval_seconds_apart() -> None:
    text = "@ms: \n[2, 4)  3 |@|\n\n@ms: \n[2, 4)  1 |@|\n\n@ms: \n[2, 4)  2 |@|\n\n"
    cols = intervals(read_items(BpftraceTextFormat, text, interval=5.0))
    assert [c.end - c.start for c in cols] == [5.0, 5.0, 5.0]
    assert np.diff([c.end for c in cols]).tolist() == [5.0, 5.0]
    assert cols[0].stream.unit == "millisec"


def test_unit_from_option_name_or_fallback_with_note() -> None:
    text = "@usecs: \n[1]  1 |@|\n\n@x: \n[1]  1 |@|\n\n@bytes: \n[1]  1 |@|\n\n@req_size[sda]: \n[1]  1 |@|\n\n"
    items = read_items(BpftraceTextFormat, text * 2)
    assert {c.stream.label: c.stream.unit for c in intervals(items)} == {"@usecs": "microsec", "@x": "microsec"}
    assert any("@x: the unit is not evident" in m for m in notices(items))
    left_out = [m for m in notices(items) if "not of latencies: left out" in m]
    assert len(left_out) == 2 and "@bytes: a histogram of bytes" in left_out[0] and "of size" in left_out[1]
    forced = intervals(read_items(BpftraceTextFormat, text, unit="nanosec"))  # --unit: every map is a latency
    assert {c.stream.unit for c in forced} == {"nanosec"} and len({c.stream.label for c in forced}) == 4


def test_exit_print_without_time_line_comes_after_the_last_one() -> None:
    text = "10:00:00\n@x_us: \n[1]  1 |@|\n\n10:00:01\n@x_us: \n[1]  2 |@|\n\n@x_us: \n[1]  3 |@|\n\n"
    snaps = list(BpftraceTextFormat(cumulative=True).read(text.splitlines(), "x"))
    times = [s.timestamp for s in snaps if isinstance(s, Snapshot)]
    assert len(times) == 3 and times[0] < times[1] < times[2]


def test_live_prints_without_time_lines_take_their_arrival_time() -> None:
    from latencymap.sources.printed_histograms import PrintClock

    now = [100.0]
    clock = PrintClock(1.0, clock=lambda: now[0])
    assert clock.stamp("a") == (99.0, 100.0)
    now[0] = 105.0  # a live tool printing every 5 s
    assert clock.stamp("a") == (100.0, 105.0)
    assert clock.stamp("a") == (105.0, 106.0)  # read at once: `interval` apart
