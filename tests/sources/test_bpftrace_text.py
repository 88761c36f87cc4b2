from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, read_live, registry, report_json, totals_by_label

from latencymap.core.buckets import bounds_in_unit
from latencymap.core.model import Interval, Snapshot
from latencymap.flow.pipeline import input_flow
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


def test_cumulative_fixture_totals_are_the_last_print(tmp_path: Path) -> None:
    """The capture starts with bpftrace's banner: its map started empty, so the last print holds every event (the
    first print, 41,720 of 104,300 reads, was the baseline); without the banner the first print is the baseline."""
    prints = printed_counts(CUMULATIVE_TXT)
    assert len(prints) == 3 and all(len(p) == 4 for p in prints.values())
    assert totals_by_label(report_json(CUMULATIVE_TXT)) == {label: p[-1] for label, p in prints.items()}
    joined = tmp_path / "joined.txt"
    joined.write_text(CUMULATIVE_TXT.read_text().split("\n", 1)[1])  # without `Attaching 8 probes...`
    assert totals_by_label(report_json(joined)) == {label: p[-1] - p[0] for label, p in prints.items()}


def cut_by_ctrl_c(text: str) -> str:
    """`text` (the cumulative fixture) as Ctrl-C left it: its third, last periodic print cut in the middle of a row of
    its second key, then bpftrace's print at exit, whole, its keys in another order (as when their counts change)."""
    lines = text.split("\n")
    cut = [*lines[:78], "[256, 5"]  # pread64 whole, two rows of write, part of a third; read not printed
    at_exit = lines[122:137] + lines[110:122] + lines[104:110]  # read, write, pread64
    return "\n".join([*cut, "", "", *at_exit]) + "\n"


@pytest.mark.parametrize("cumulative", [None, True])
def test_a_last_print_cut_by_ctrl_c_is_no_sign_of_a_cleared_map(cumulative: bool | None) -> None:
    """A never-cleared keyed map whose last periodic print Ctrl-C cut: the keys after the cut looked missing from it
    (and, printed first at exit, from the exit print), so the map was read as cleared and every print counted whole
    (105,253 events against 24,864 on a real capture). A print group not closed by a time line may have been cut: what
    it lacks is no evidence; every event is counted once."""
    items = read_items(BpftraceTextFormat, cut_by_ctrl_c(CUMULATIVE_TXT.read_text()), "cut.txt", cumulative=cumulative)
    assert not any("is missing from" in m for m in notices(items)), notices(items)
    totals: dict[str, int] = defaultdict(int)
    for col in intervals(items):
        totals[col.stream.label] += int(col.counts.sum())
    assert totals == {label: p[-1] for label, p in printed_counts(CUMULATIVE_TXT).items()}
    assert any("cut short" in m for m in notices(items))


def test_a_cut_last_print_after_the_mode_was_decided_does_not_switch_it() -> None:
    """Past the detection window (read as cumulative, undecided), the cut last print turned the map per-interval
    "from here on" with a note that every earlier column was wrong."""
    from latencymap.sources.printed_histograms import DETECT_PRINTS

    groups = DETECT_PRINTS + 2
    text = "Attaching 2 probes...\n" + "".join(
        f"10:00:{k:02d}\n@us[a]: \n[8, 16)  {10 * (k + 1)} |@|\n\n@us[b]: \n[8, 16)  {k + 1} |@|\n\n"
        for k in range(groups))
    text += f"10:00:{groups:02d}\n@us[a]: \n[8, 16)  {10 * (groups + 1)} |@|\n\n"  # cut: b not printed
    text += f"\n\n@us[b]: \n[8, 16)  {groups + 1} |@|\n\n@us[a]: \n[8, 16)  {10 * (groups + 1)} |@|\n\n"
    items = read_items(BpftraceTextFormat, text, "cut.txt")
    assert not any("is missing from" in m for m in notices(items)), notices(items)
    totals: dict[str, int] = defaultdict(int)
    for col in intervals(items):
        totals[col.stream.label] += int(col.counts.sum())
    assert totals == {"@us[a]": 10 * (groups + 1), "@us[b]": groups + 1}


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
    assert cols[0].end - cols[0].start == 2.0  # as long as the time lines are apart


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


RAMP_TXT = FIXTURES / "bpftrace" / "sleeps_ramp_cleared.txt"
BURSTS_TXT = FIXTURES / "bpftrace" / "sleeps_bursts_cleared.txt"
KEYED_TXT = FIXTURES / "bpftrace" / "sleeps_keyed_cumulative.txt"


def _report_cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from latencymap.cli.main import main

    result = CliRunner().invoke(main, ["report", *args])
    return result.exit_code, result.output


def test_cleared_map_under_rising_load_is_read_per_interval() -> None:
    """Real `print(@usecs); clear(@usecs)` output of 50, 100, 150, 200, 250 sleeps in successive seconds: every
    count grows over the first prints, which used to be read as cumulative (202 events and a false reset)."""
    report = report_json(RAMP_TXT)
    assert totals_by_label(report) == {"@usecs": sum(printed_counts(RAMP_TXT)["@usecs"])} == {"@usecs": 750}
    assert not any("reset" in m for m in report["errors"]["messages"])


def _rising(prints: int, idle_after: int = 0, start: int = 0) -> str:
    """A cleared map printed `prints` times with one more event each time, then `idle_after` idle seconds."""
    text = "Attaching 2 probes...\n"
    for k in range(prints):
        text += f"10:00:{start + k:02d}\n@usecs: \n[8, 16)  {10 * (k + 1)} |@@@@|\n\n"
    for k in range(idle_after):
        text += f"10:00:{start + prints + k:02d}\n\n"
    return text


def test_a_map_missing_after_the_next_time_line_was_cleared() -> None:
    items = read_items(BpftraceTextFormat, _rising(4, idle_after=2), "rise.txt")
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [10, 20, 30, 40, 0]  # the idle second closed by a time line
    assert any("per-interval: @usecs is missing from the print group that ends at line 20" in m for m in notices(items))


def test_without_evidence_the_mode_is_undecided_and_the_note_names_the_options() -> None:
    items = read_items(BpftraceTextFormat, _rising(4), "rise.txt")
    (note,) = [m for m in notices(items) if "undecided" in m]
    assert "read as cumulative (counted from the program's start)" in note and "--per-interval or --cumulative" in note
    assert [int(c.counts.sum()) for c in intervals(items)] == [10, 10, 10, 10]  # from zero: after the banner
    joined = read_items(BpftraceTextFormat, _rising(4).split("\n", 1)[1], "rise.txt")
    assert any("read as cumulative (the first print is the baseline)" in m for m in notices(joined))
    assert [int(c.counts.sum()) for c in intervals(joined)] == [10, 10, 10]


def test_missing_after_an_undecided_read_switches_to_per_interval_and_says_so() -> None:
    from latencymap.sources.printed_histograms import DETECT_PRINTS

    items = read_items(BpftraceTextFormat, _rising(DETECT_PRINTS + 2, idle_after=2), "rise.txt")
    messages = notices(items)
    assert any("undecided" in m for m in messages)
    assert any("read as per-interval from here on" in m and "--per-interval" in m for m in messages)
    cols = intervals(items)
    assert cols[-1].counts.sum() == 0 and cols[-2].counts.sum() == 10  # differences until then, an idle column


def test_idle_seconds_of_a_cleared_map_are_empty_columns() -> None:
    """Real output: 300 sleeps, 3 idle seconds (nothing printed but the time line), 100 sleeps, idle again."""
    report = report_json(BURSTS_TXT)
    (stream,) = report["streams"]
    assert stream["total"]["events"] == 400
    assert stream["columns"] == 8  # 4 prints and the 4 idle seconds between and after them (the last line cut)
    assert stream["end"] - stream["start"] == 8.0
    cols = intervals(read_items(BpftraceTextFormat, BURSTS_TXT.read_text(), "b.txt"))
    assert all(a.end == b.start for a, b in pairwise(cols))
    assert [int(c.counts.sum()) for c in cols].count(0) == 4


def test_declared_per_interval_also_fills_idle_seconds() -> None:
    cols = intervals(read_items(BpftraceTextFormat, BURSTS_TXT.read_text(), "b.txt", cumulative=False))
    assert len(cols) == 8 and sum(int(c.counts.sum()) for c in cols) == 400


@pytest.mark.parametrize("cumulative", [None, True])
def test_a_key_first_printed_mid_run_counts_from_zero(cumulative: bool | None) -> None:
    """Real output of `@usecs[comm] = hist(...)` never cleared: `ramp` (150 sleeps, bpftrace's own @n[ramp]) appears
    after the first print; `sc`'s first print (200 of its 600) is the map's first print, after bpftrace's banner: from
    zero too (it was the baseline: 400)."""
    report = report_json(KEYED_TXT, cumulative=cumulative) if cumulative else report_json(KEYED_TXT)
    assert totals_by_label(report) == {"@usecs[ramp]": 150, "@usecs[sc]": 600}


def _cut(text: str, row_start: str, keep: int) -> str:
    """`text` up to the first line starting with `row_start`, which keeps only its first `keep` characters."""
    head, _, rest = text.partition(row_start)
    return head + (row_start + rest)[:keep]


def test_a_row_cut_before_its_bar_is_reported_and_the_rest_kept(tmp_path) -> None:
    text = BURSTS_TXT.read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(_cut(text, "[4K, 8K)              44", 24))  # `[4K, 8K)              44` with no bar
    items = read_items(BpftraceTextFormat, cut.read_text(), "cut.txt", cumulative=False)
    (note,) = [m for m in notices(items) if "cut short" in m]
    assert note.startswith("cut.txt: line 19: @usecs: a row cut short")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 300 + 53  # the rows before the cut one
    code, output = _report_cli("--per-interval", "--strict", str(cut))
    assert code == 2 and "line 19" in output
    code, output = _report_cli("--per-interval", str(cut))
    assert code == 0 and "Skipped records: 1" in output


def test_a_first_row_cut_mid_number_is_reported() -> None:
    text = _cut(BURSTS_TXT.read_text(), "[2K, 4K)              53", 23)  # `[2K, 4K)              5`
    items = read_items(BpftraceTextFormat, text, "cut.txt", cumulative=False)
    assert any(m.startswith("cut.txt: line 18: @usecs: a row cut short") for m in notices(items))
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 300


def test_a_key_that_never_comes_back_costs_one_column_after_a_long_idle_run() -> None:
    from latencymap.sources.printed_histograms import MAX_EMPTY_COLUMNS

    groups = MAX_EMPTY_COLUMNS + 200
    text = "".join(f"{1_700_000_000 + k}\n@us[steady]: \n[8, 16)  {1 + k % 3} |@|\n\n"
                   + ("@us[once]: \n[8, 16)  5 |@|\n\n" if k == 0 else "") for k in range(groups))
    cols = intervals(read_items(BpftraceTextFormat, text, "keys.txt", cumulative=False))
    once = [c for c in cols if c.stream.label == "@us[once]"]
    assert len(once) == 2 and once[1].counts.sum() == 0  # its print, then one column for the whole idle run
    assert once[1].start == once[0].end and once[1].end == 1_700_000_000 + groups - 1  # to the last group
    assert len([c for c in cols if c.stream.label == "@us[steady]"]) == groups


def test_keys_alike_for_their_first_200_characters_stay_apart_cut_in_the_middle() -> None:
    """`@usecs[str(args.filename)]` keyed by paths that differ only past 200 characters: three streams, each with
    its own counts in every print, named by the map and the path's end (a row cut short names it so too)."""
    base = "/var/lib/postgresql/16/main/" + "tablespace/" * 20
    keys = [f"{base}base/16384/2619", f"{base}base/16384/2620", f"{base}base/16384/2621"]
    prints = []
    for second in range(3):
        prints.append(f"05:42:{23 + second}\n")
        for k, key in enumerate(keys):
            prints += [f"@usecs[{key}]: \n", f"[16, 32)             {10 * (k + 1)} |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n",
                       f"[32, 64)              {k + 1} |@@@                          |\n"]
            prints += ["[64, 128)   \n"] if second == k == 2 else []  # the last print was cut mid-row
            prints.append("\n")
    items = read_items(BpftraceTextFormat, "".join(prints), cumulative=False)
    got: dict[str, list[int]] = defaultdict(list)
    for col in intervals(items):
        got[col.stream.label].append(int(col.counts.sum()))
    assert sorted(got.values()) == [[11] * 3, [22] * 3, [33] * 3]
    for label, counts in got.items():
        assert len(label) == 200 and label.count("…") == 1 and label.startswith("@usecs[/var/lib/postgresql/")
        assert label.endswith(f"/base/16384/26{18 + counts[0] // 11}]")
    (cut,) = [m for m in notices(items) if "a row cut short" in m]
    assert next(label for label in got if label.endswith("2621]")) + ": a row cut short" in cut


def _odd_prints(odd: str) -> str:
    """Two prints of `@us[comm] = hist(...)`, as bpftrace wrote them while a process named `ff<odd>name` ran, its
    map first; its second print ends in a malformed row (line 14)."""
    return ("Attaching 1 probe...\n12:00:00\n"
            f"@us[ff{odd}name]: \n[1K, 2K)             783 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "[2K, 4K)               7 |                                                    |\n\n"
            "@us[python]: \n[16K, 32K)            12 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n"
            "12:00:01\n"
            f"@us[ff{odd}name]: \n[1K, 2K)             700 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
            "[2K, 4K)               9 |                                                    |\n"
            "[4K, 8K xx |@|\n\n"
            "@us[python]: \n[16K, 32K)            14 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n")


@pytest.mark.parametrize("odd", list("\f\v\x1c\x1d\x1e\x85\u2028\u2029"))
def test_a_process_name_holding_what_splitlines_takes_for_a_line_end_loses_no_print(odd: str, tmp_path: Path) -> None:
    """bpftrace's `@us[comm]` while a process named `ff\\fname` ran: `str.splitlines` cut the name's line in two, so
    the input was no known format when that map came first (exit 2), and otherwise its prints were lost and every
    message named the line before the right one."""
    path = tmp_path / "bt.txt"
    path.write_text(_odd_prints(odd), encoding="utf-8")
    items = list(input_flow([str(path)], registry(), None, {"cumulative": False}))
    totals = {i.stream.label: 0 for i in intervals(items)}
    for i in intervals(items):
        totals[i.stream.label] += int(i.counts.sum())
    assert totals == {"@us[ff?name]": 783 + 7 + 700 + 9, "@us[python]": 12 + 14}
    assert [m.split(" expected")[0] for m in notices(items) if "expected" in m] == [f"{path}: line 14: @us[ff?name]:"]


#: bpftrace 0.17, `@ms = lhist(ms, 0, 100, 10)` printed every second beside a hist() map (`@us`, added); `@n = count()`
#: says 25 events.
LHIST_TXT = """Attaching 3 probes...
18:03:35

18:03:36
@ms:\x20
[10, 20)              10 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[20, 30)              10 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[30, 40)               0 |                                                    |
[40, 50)               3 |@@@@@@@@@@@@@@@                                     |

@us:\x20
[8K, 16K)              4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

18:03:37
@ms:\x20
[40, 50)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

18:03:38



@n: 25

"""


def totals_by_stream(items: list) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for col in intervals(items):
        totals[col.stream.label] += int(col.counts.sum())
    return dict(totals)


def test_an_lhist_map_is_left_out_whole_with_one_note_and_other_maps_read() -> None:
    """lhist() rows are linear: not one of them is read as a log2 bucket (that would count [20, 30) as 16-32 ms and
    skip [10, 20)); the map is left out with one note, the hist() map beside it read."""
    items = read_items(BpftraceTextFormat, LHIST_TXT, "l.txt")
    assert totals_by_stream(items) == {"@us": 4}
    msgs = notices(items)
    assert [m for m in msgs if "@ms" in m] == [
        "l.txt: line 5: @ms: a linear histogram (lhist): its rows are not log2 buckets; left out"]
    assert not any("skipped" in m for m in msgs), msgs


@pytest.mark.parametrize(("rows", "linear"), [
    (["[2, 4)", "[4, 6)"], True),  # lhist(x, 0, 20, 2): the first row alone would fit a log2 bucket
    (["[1]", "[2, 4)", "[4, 8)", "[8, 16)"], False),
    (["[4, 5)", "[5, 6)", "[6, 7)", "[7, 8)", "[8, 10)", "[10, 12)"], False),  # hist(x, 2)
    (["[8, 10)", "[10, 12)", "[16, 32)"], False),  # steps of two widths: read in their buckets
    (["[0, 10)", "[10, 20)"], True), (["[100, ...)"], True), (["(..., 10)", "[10, 20)"], True),
    (["[10, 20)", "[30, 40)"], True),
])
def test_a_map_is_linear_when_its_rows_are_no_log2_layout(rows: list[str], linear: bool) -> None:
    text = "@us: \n" + "".join(f"{row}  3 |@@@|\n" for row in rows) + "\n"
    items = read_items(BpftraceTextFormat, text, "k.txt")
    assert (not intervals(items)) is linear
    assert any("a linear histogram (lhist)" in m for m in notices(items)) is linear


#: bpftrace 0.17: `@usecs[comm] = hist(...)` where a process named itself `x]:\n[1G, 2G) 9|` (15 characters).
FORGED_KEY_TXT = """Attaching 3 probes...
18:10:16

18:10:17
@usecs[x]:
[1G, 2G) 9|]:\x20
[1K, 2K)               3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@usecs[slA]:\x20
[512, 1K)              1 |@@                                                  |
[1K, 2K)              19 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

"""


def test_a_key_that_spans_lines_is_one_key_never_a_row() -> None:
    items = read_items(BpftraceTextFormat, FORGED_KEY_TXT, "f.txt")
    got = [(c.stream.label, {int(k): int(v) for k, v in enumerate(c.counts) if v}) for c in intervals(items)]
    assert got == [("@usecs[x]:?[1G, 2G) 9|]", {11: 3}), ("@usecs[slA]", {10: 1, 11: 19})]
    assert not [m for m in notices(items) if "line" in m], notices(items)


def test_a_key_whose_first_line_does_not_close_is_joined_with_the_lines_up_to_its_end() -> None:
    text = "10:00:00\n@usecs[a\n[8, 16)   9 |@@@@|\nb]: \n[1K, 2K)   3 |@@@|\n\n@usecs[c]: \n[8, 16)   1 |@|\n\n" \
           "@n[d\ne]: 5\n\n"
    items = read_items(BpftraceTextFormat, text, "f.txt")
    got = [(c.stream.label, {int(k): int(v) for k, v in enumerate(c.counts) if v}) for c in intervals(items)]
    assert got == [("@usecs[a?[8, 16)   9 |@@@@|?b]", {11: 3}), ("@usecs[c]", {4: 1})]
    assert not [m for m in notices(items) if "line" in m], notices(items)


def test_a_stack_key_of_a_hundred_frames_is_one_key() -> None:
    """`@usecs[ustack] = hist(...)` over a recursion 80 deep (bpftrace 0.17 prints a line a frame): a key of more than
    64 lines was skipped with its 30 events, and each of its rows said "expected a hist() row"."""
    frames = "".join(f"    0x5570aa7221{k % 100:02d}\n" for k in range(100))
    text = f"10:00:00\n@usecs[\n{frames}]: \n[128, 256)   10 |@@@@|\n[256, 512)   20 |@@@@|\n\n"
    items = read_items(BpftraceTextFormat, text, "f.txt")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 30
    assert not [m for m in notices(items) if "line" in m], notices(items)


BAR = "|@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"


def test_read_live_the_keys_of_one_print_stay_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys of one print arrive within milliseconds: one print group per second, every key at its time."""
    def keyed(at: float) -> list[tuple[float, str]]:
        return [(at, "@usecs[slA]: "), (at, f"[2K, 4K)              99 {BAR}"), (at, ""),
                (at + 0.002, "@usecs[slB]: "), (at + 0.002, f"[2K, 4K)              48 {BAR}"), (at + 0.002, "")]
    arrivals = [(100.0, "Attaching 3 probes..."), *keyed(101.0), *keyed(102.0), *keyed(103.0)]
    items = read_live(monkeypatch, BpftraceTextFormat, arrivals)
    ends: dict[str, list[float]] = defaultdict(list)
    for col in intervals(items):
        ends[col.stream.label].append(col.end)
    assert ends == {"@usecs[slA]": [101.0, 102.0, 103.0], "@usecs[slB]": [101.0, 102.0, 103.0]}, notices(items)


#: bpftrace 0.17, `interval:ms:500 { time("%H:%M:%S\n"); print(@usecs); clear(@usecs); }`: two prints a second,
#: both stamped with the second (trimmed: the first prints found the map empty and printed nothing).
HALF_PRINTS: list[tuple[str, list[tuple[str, int]]]] = [
    ("18:09:50", []), ("18:09:51", []), ("18:09:51", [("[4K, 8K)", 10)]), ("18:09:52", [("[4K, 8K)", 97)]),
    ("18:09:52", [("[4K, 8K)", 95), ("[8K, 16K)", 2)]), ("18:09:53", [("[4K, 8K)", 96), ("[8K, 16K)", 1)]),
    ("18:09:53", [("[4K, 8K)", 93), ("[8K, 16K)", 2)]), ("18:09:54", [("[4K, 8K)", 3)]), ("18:09:54", []),
    ("18:09:55", []), ("18:09:55", []), ("18:09:56", [])]
HALF = "Attaching 3 probes...\n" + "".join(
    f"{stamp}\n" + ("@usecs: \n" + "".join(f"{label:<18}{n:>6} {BAR}\n" for label, n in rows) if rows else "") + "\n"
    for stamp, rows in HALF_PRINTS)


def test_prints_under_a_repeated_time_line_are_after_its_second() -> None:
    """Two prints a second, stamped with whole seconds: the 10 events printed under the second `18:09:51` line came
    after 18:09:51, not in the second before it (the first print landed a column early); and the note says that
    the time lines cannot tell half seconds apart, so that 1 s columns are no surprise."""
    items = read_items(BpftraceTextFormat, HALF)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [107, 194, 98, 0], notices(items)
    assert [c.end - cols[0].start for c in cols] == [1.0, 2.0, 3.0, 4.0]
    assert all(a.end == b.start for a, b in pairwise(cols))
    assert datetime.fromtimestamp(cols[0].start).strftime("%H:%M:%S") == "18:09:51"
    said = [m for m in notices(items) if "whole seconds" in m]
    assert len(said) == 1 and "line 7: @usecs: printed more often than once a second" in said[0], notices(items)


def test_a_key_cut_short_ends_at_the_next_map() -> None:
    """A stack key cut mid-way (a capture cut, a stray `@u[` line) took the next 64, then 320, lines with it: the two
    whole prints after it too ("No data.", exit 1)."""
    frames = "".join(f"    0x5570aa7221{k:02d}\n" for k in range(5))
    prints = "".join(f"{t}\n@usecs: \n[128, 256)   10 |@@@@|\n[256, 512)   35 |@@@@|\n\n"
                     for t in ("10:00:01", "10:00:02"))
    items = read_items(BpftraceTextFormat, f"10:00:00\n@u[\n{frames}{prints}", "f.txt", cumulative=False)
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 90
    (note,) = [m for m in notices(items) if "does not end" in m]
    assert note == ("f.txt: line 2: a map key that does not end before the next map (line 9), got '@u['; lines 2-8 "
                    "skipped")
