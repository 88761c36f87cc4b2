from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from datetime import datetime

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, read_live, report_json, totals_by_label

from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import bounds_in_unit
from latencymap.sources.bcc_text import BccTextFormat, bcc_slot

BCC = FIXTURES / "bcc"
TEXT_FIXTURES = ["biolatency_usecs.txt", "biolatency_usecs_T.txt", "biolatency_usecs_D.txt", "biolatency_msecs.txt"]
DICT_FIXTURES = ["biolatency_usecs_j.txt", "biolatency_usecs_jD.txt"]


def text_counts(path) -> tuple[dict[str, int], dict[str, str]]:
    """Total of every `lo -> hi : count` row per histogram label, and each label's header word."""
    totals: dict[str, int] = defaultdict(int)
    units: dict[str, str] = {}
    section, label = "", None
    for line in path.read_text().splitlines():
        if m := re.match(r"^disk = (\S+)$", line):
            section = f"disk {m.group(1)}"
        elif m := re.match(r"^\s+(\w+)\s+: count\s+distribution$", line):
            label = section or f"bcc {m.group(1)}"
            units[label] = m.group(1)
        elif (m := re.match(r"^\s+\d+ -> \d+\s+: (\d+)\s+\|", line)) and label:
            totals[label] += int(m.group(1))
    return dict(totals), units


@pytest.mark.parametrize("name", TEXT_FIXTURES)
def test_text_fixture_totals_equal_the_printed_rows(name: str) -> None:
    expected, units = text_counts(BCC / name)
    assert expected and all(v > 0 for v in expected.values())
    report = report_json(BCC / name)
    assert totals_by_label(report) == expected
    unit_of = {"usecs": "microsec", "msecs": "millisec", "nsecs": "nanosec"}
    assert {s["stream"]["label"]: s["stream"]["unit"] for s in report["streams"]} == {
        label: unit_of[word] for label, word in units.items()}


@pytest.mark.parametrize("name", DICT_FIXTURES)
def test_dict_fixture_totals_equal_the_dict_counts(name: str) -> None:
    expected: dict[str, int] = defaultdict(int)
    for line in (BCC / name).read_text().splitlines():
        if line.startswith("{"):
            obj = ast.literal_eval(line)
            label = f"disk {obj['disk']}" if "disk" in obj else f"bcc {obj['val_type']}"
            expected[label] += sum(row["count"] for row in obj["data"])
    report = report_json(BCC / name)
    assert totals_by_label(report) == dict(expected)
    assert all(s["columns"] == 3 for s in report["streams"])


def test_timestamp_lines_time_the_intervals() -> None:
    stamps = re.findall(r"^(\d\d:\d\d:\d\d)\s*$", (BCC / "biolatency_usecs_T.txt").read_text(), re.M)
    cols = intervals(list(BccTextFormat().read((BCC / "biolatency_usecs_T.txt").open(), "t")))
    seconds = [int(h) * 3600 + int(m) * 60 + int(s) for h, m, s in (t.split(":") for t in stamps)]
    assert [c.end - cols[0].end for c in cols] == [s - seconds[0] for s in seconds]
    assert all(b.start == a.end for a, b in itertools.pairwise(cols))


@pytest.mark.parametrize(("low", "high", "range_"), [
    (0, 1, (1.0, 2.0)),  # bpf_log2l puts 0 and 1 in index 1 (the reader spreads it over [0, 2))
    (2, 3, (2.0, 4.0)), (1024, 2047, (1024.0, 2048.0)), (1048576, 2097151, (2.0**20, 2.0**21)),
])
def test_rows_map_to_bcc_log2_slots(low: int, high: int, range_: tuple[float, float]) -> None:
    slot = bcc_slot(low, high)
    lows, highs = bounds_in_unit("bpf")
    assert (lows[slot], highs[slot]) == range_
    assert bcc_slot(0, 5) is None and bcc_slot(3, 5) is None


def test_dict_lines_never_evaluated_and_bad_lines_reported() -> None:
    text = "\n".join([
        "{'ts': '2024-05-01 10:00:00', 'val_type': 'nsecs', 'data': [{'interval-start': 0, 'interval-end': 1, "
        "'count': 4}]}",
        "{'ts': __import__('os').system('echo pwned'), 'data': []}",
        "     usecs               : count     distribution",
        "         2 -> 3          : 7        |****|",
        "         4 -> 9          : 7        |****|",
    ]) + "\n"
    items = read_items(BccTextFormat, text, "b.txt")
    msgs = notices(items)
    assert any(m.startswith("b.txt: line 2: expected a biolatency -j dict") for m in msgs)
    assert any(m.startswith("b.txt: line 5: bcc usecs: expected a row") for m in msgs)
    cols = intervals(items)
    assert [(c.stream.label, c.stream.unit, int(c.counts.sum())) for c in cols] == [
        ("bcc nsecs", "nanosec", 4), ("bcc usecs", "microsec", 7)]


def test_a_key_value_line_names_only_the_histogram_right_below_it() -> None:
    text = ("\nFunction = vfs_read\n     nsecs               : count     distribution\n"
            "         2 -> 3          : 7        |****|\navg = 3 nsecs, total: 21 nsecs, count: 7\n\n"
            "     nsecs               : count     distribution\n         2 -> 3          : 1        |****|\n")
    cols = intervals(read_items(BccTextFormat, text))
    assert [c.stream.label for c in cols] == ["Function vfs_read", "bcc nsecs"]


def test_a_histogram_of_sizes_is_left_out_unless_unit_says_otherwise() -> None:
    text = ("     kbytes          : count     distribution\n"
            "         4 -> 7          : 12       |**        |\n\n"
            "     usecs           : count     distribution\n"
            "         4 -> 7          : 3        |**        |\n")
    items = read_items(BccTextFormat, text)
    assert [i.stream.label for i in intervals(items)] == ["bcc usecs"]
    (said,) = [m for m in notices(items) if "left out" in m]
    assert said.endswith("line 1: bcc kbytes: a histogram of kbytes, not of latencies: left out (--unit reads it as "
                          "latencies)")
    forced = intervals(read_items(BccTextFormat, text, unit="microsec"))
    assert {i.stream.label for i in forced} == {"bcc kbytes", "bcc usecs"}


FUNCLATENCY_T = BCC / "funclatency_T.txt"


@pytest.mark.parametrize("name", ["funclatency_idle_T.txt", "funclatency_idle.txt"])
def test_an_idle_run_is_no_data_not_an_unknown_format(name: str) -> None:
    """Real funclatency output of a run that saw no call: its banner, time lines or `Detaching...`."""
    from click.testing import CliRunner

    from latencymap.cli.main import main

    result = CliRunner().invoke(main, ["report", str(BCC / name)])
    assert result.exit_code == 0 and result.output.strip() == "No data.", result.output
    assert BccTextFormat.sniff((BCC / name).read_text().splitlines()[:3])


def test_idle_seconds_of_a_cleared_table_are_empty_columns() -> None:
    """funclatency -T (it clears after each print): prints at 06:10:31 and :32, then :33 idle (closed by :34)."""
    cols = intervals(read_items(BccTextFormat, FUNCLATENCY_T.read_text(), "f.txt"))
    assert [int(c.counts.sum()) for c in cols] == [262, 47, 0]
    assert all(a.end == b.start for a, b in itertools.pairwise(cols))


@pytest.mark.parametrize(("keep", "known"), [(28, 37), (31, 37), (17, 37)])  # before the bar, mid-number, mid-bound
def test_a_row_cut_short_is_reported_with_file_and_line_and_the_rest_kept(keep: int, known: int, tmp_path) -> None:
    from click.testing import CliRunner

    from latencymap.cli.main import main

    text = FUNCLATENCY_T.read_text()
    row = "     16384 -> 32767      : 10"
    cut = tmp_path / "cut.txt"
    cut.write_text(text[:text.index(row) + keep])
    line = text[:text.index(row)].count("\n") + 1
    items = read_items(BccTextFormat, cut.read_text(), "cut.txt", cumulative=False)
    assert any(m.startswith(f"cut.txt: line {line}: ") and "a row cut short" in m for m in notices(items))
    assert [int(c.counts.sum()) for c in intervals(items)] == [262, known]
    assert CliRunner().invoke(main, ["report", "--strict", str(cut)]).exit_code == 2


def test_sections_alike_for_their_first_200_characters_stay_apart_cut_in_the_middle() -> None:
    """biolatency -D prints (text and -j dicts) of disks whose names differ only past 200 characters: three
    streams, each with its own counts in every print, named by the start and end of `disk NAME`."""
    base = "pci-0000:00:1f.2-ata-1-" + "lvm-pv-uuid-" * 20
    disks = [f"{base}part1", f"{base}part2", f"{base}part3"]
    text, dicts = ["Tracing block device I/O... Hit Ctrl-C to end.\n"], []
    for second in range(3):
        text.append(f"\n01:44:{7 + second:02d}\n")
        for k, disk in enumerate(disks):
            text += [f"\ndisk = {disk}\n", "     usecs               : count     distribution\n",
                     f"         8 -> 15         : {10 * (k + 1):<8} |****************************************|\n",
                     f"        16 -> 31         : {k + 1:<8} |****                                    |\n"]
            rows = [{"interval-start": 8, "interval-end": 15, "count": 10 * (k + 1)},
                    {"interval-start": 16, "interval-end": 31, "count": k + 1}]
            printed = {"ts": f"2026-11-21 01:44:{24 + second}", "val_type": "usecs", "data": rows, "disk": disk}
            dicts.append(f"{printed}\n")  # the dict's repr, as biolatency -j prints it
    for lines in (text, dicts):
        got: dict[str, list[int]] = defaultdict(list)
        for col in intervals(read_items(BccTextFormat, "".join(lines), cumulative=False)):
            got[col.stream.label].append(int(col.counts.sum()))
        assert sorted(got.values()) == [[11] * 3, [22] * 3, [33] * 3]
        for label, counts in got.items():
            assert len(label) == 200 and label.count("…") == 1 and label.startswith("disk pci-0000:00:1f.2-ata-1-")
            assert label.endswith(f"uuid-part{counts[0] // 11}")


def test_bad_dict_lines_say_what_is_wrong_in_the_inputs_terms(tmp_path) -> None:
    """An expression, a line cut short, one past the longest line read, and bad syntax in a copy of a real -j capture:
    each message says what the line holds instead of a dict, with no parser internals (`<ast.BinOp ...>`)."""
    from latencymap.core.model import Notice
    from latencymap.flow.inputs import MAX_LINE
    from latencymap.flow.pipeline import input_flow
    from latencymap.plugins import load_registry

    first = (FIXTURES / "bcc" / "biolatency_usecs_j.txt").read_text().splitlines()[0]
    lines = [first, first.replace("'count': 0}", "'count': 1+1}", 1), first[:80],
             first.replace("]}", ", '" + "x" * MAX_LINE + "']}"), first.replace("'data':", "'data' =", 1)]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    said = [i.message for i in input_flow([str(path)], load_registry()) if isinstance(i, Notice) and i.skipped]
    column = first.index("'count': 0}") + len("'count': ") + 1
    assert [m.split(" (", 1)[1] for m in said[:3]] == [
        f"an expression where a value belongs, at column {column}: '1+1'); line skipped",
        "the line ends early, inside its dict: cut short); line skipped",
        f"the line was cut at {MAX_LINE:,} characters, the longest read); line skipped"]
    assert re.search(r"\(not a Python dict at column \d+: ':' expected after dictionary key\); line skipped$", said[3])
    assert [m.split(": ", 2)[1] for m in said] == ["line 2", "line 3", "line 4", "line 5"]


#: funclatency -m (bcc 0.26) of calls of about 0.4 ms: `avg = 0 msecs, total: 159 msecs, count: 400`.
FUNCLATENCY_MSECS = """Tracing 1 functions for "fl:work_a"... Hit Ctrl-C to end.

18:05:53

Function = [unknown] [17532]
     msecs               : count     distribution
         0 -> 1          : 399      |****************************************|
         2 -> 3          : 0        |                                        |
         4 -> 7          : 1        |                                        |

avg = 0 msecs, total: 159 msecs, count: 400

"""


def test_the_first_row_holds_0_and_1_spread_over_0_to_2_with_a_note() -> None:
    """bcc's `0 -> 1` row holds the values 0 and 1 (bpf_log2l(0) = bpf_log2l(1) = 1): [0, 2) in the printed unit,
    not [1, 2); without bcc's summary line, its events are spread evenly over [0, 1) and [1, 2), said once per
    stream."""
    alone = FUNCLATENCY_MSECS.replace("avg = 0 msecs, total: 159 msecs, count: 400\n", "")
    text = alone + alone.split("\n", 2)[2].replace("18:05:53", "18:05:54")
    items = read_items(BccTextFormat, text, "m.txt", cumulative=False)
    cols = intervals(items)
    assert [(c.stream.label, c.stream.unit) for c in cols] == [("Function [unknown] [17532]", "millisec")] * 2
    assert [(int(c.counts[0]), int(c.counts[1]), int(c.counts[3]), int(c.counts.sum())) for c in cols] == [
        (200, 199, 1, 400)] * 2
    said = [m for m in notices(items) if "0 -> 1" in m]
    assert said == ["m.txt: line 6: Function [unknown] [17532]: bcc's first row `0 -> 1` holds the values 0 and 1 "
                    "together ([0, 2) in its unit): its events are spread evenly over [0, 1) and [1, 2)"]


def sums(items: list) -> list[float | None]:
    """Each interval's exact seconds from its source (`SourceBuckets.sum_only`), None where it has none."""
    out: list[float | None] = []
    for col in intervals(items):
        source = col.source_buckets
        assert source is None or not len(source.bounds)  # the rows are bcc's buckets: only the sum is kept
        out.append(None if source is None else source.total_time)
    return out


def test_the_summary_line_gives_its_print_exact_time_and_places_the_first_row() -> None:
    """funclatency prints `avg = 0 msecs, total: 159 msecs, count: 400` under its table: the exact time of that
    interval, truncated to whole msecs by `%ld` (taken as its middle, 159.5 ms). With it, the 399 events of `0 -> 1`
    average at most (159.5 - 4) / 399 = 0.39 ms (the event of `4 -> 7` at 4 ms): placed in [0, 0.78] ms, row [0, 1),
    as Prometheus' first bucket is placed by its `_sum`; -u on the same calls put 394 of them in 256-511 µs."""
    items = read_items(BccTextFormat, FUNCLATENCY_MSECS, "m.txt", cumulative=False)
    (col,) = intervals(items)
    assert sums(items) == [pytest.approx(0.1595)]
    assert (int(col.counts[0]), int(col.counts[1]), int(col.counts[3]), int(col.counts.sum())) == (399, 0, 1, 400)
    said = [m for m in notices(items) if "0 -> 1" in m]
    assert said == ["m.txt: line 6: Function [unknown] [17532]: bcc's first row `0 -> 1` holds the values 0 and 1 "
                    "together ([0, 2) in its unit): its events are placed inside it by the exact total of bcc's "
                    "summary line (avg = ..., total: ..., count: ...), as a first bucket from 0 is by its sum "
                    "(per-interval counts; else spread evenly over [0, 1) and [1, 2))"]
    assert not [m for m in notices(items) if "avg" in m and "0 -> 1" not in m]


def test_a_report_takes_time_and_mean_from_the_summary_line(tmp_path) -> None:
    """fm.txt (funclatency -T -m -i 1): the mean was 1.01 ms from the rows spread evenly; the summary line says
    159 ms for 400 calls. The same calls in µs (-u): total 159335 µs, 394 of 400 in 256-511 µs."""
    path = tmp_path / "fm.txt"
    path.write_text(FUNCLATENCY_MSECS + "\n18:05:54\n\n18:05:55\nDetaching...\n")
    (stream,) = report_json(path)["streams"]
    total = stream["total"]
    assert total["events"] == 400 and stream["columns"] == 2
    assert total["time_s"] == pytest.approx(0.1595) and total["mean_s"] == pytest.approx(0.1595 / 400)
    assert 0.2e-3 <= total["p50_s"] <= 0.6e-3
    from click.testing import CliRunner

    from latencymap.cli.main import main

    text = CliRunner().invoke(main, ["report", str(path)]).output
    assert "160ms waited (the source's exact sum)" in text, text


#: funclatency -m -d 9 (bcc 0.26) on a uprobe of a C program's work(), which nanosleeps 100 µs 400 times and 5 ms 40
#: times; the program timed each call (CLOCK_MONOTONIC): 399 calls under 1 ms (69.6 ms), 40 in 4-8 ms (206.9 ms, mean
#: 5.17 ms) and one short sleep late by 8 ms (8.2 ms): 284.6 ms, 72.7% of it in the 4-8 ms row.
FUNCLATENCY_MIX = """Tracing 1 functions for "prog:work"... Hit Ctrl-C to end.


Function = [unknown] [14397]
     msecs               : count     distribution
         0 -> 1          : 399      |****************************************|
         2 -> 3          : 0        |                                        |
         4 -> 7          : 40       |****                                    |
         8 -> 15         : 1        |                                        |

avg = 0 msecs, total: 283 msecs, count: 440

Detaching...
"""


def test_the_summary_lines_total_leaves_each_rows_mean_inside_it_and_nearer_the_calls_timed() -> None:
    """The rows' midpoints estimate 450.5 ms for the 283.5 ms bcc sums. Scaled by one factor, the 4-8 ms row took
    53.2% of the time, a mean of 3.77 ms (outside it), where the calls took 72.7%; each row's events moved alike
    inside their rows, 67.9% (4.81 ms), and the zero row 28.7% where it took 24.4% (44.2% before)."""
    items = read_items(BccTextFormat, FUNCLATENCY_MIX, "m.txt", cumulative=False)
    acc = Accumulator()
    acc.add(items)
    (hist,) = acc.streams.values()
    counts, spent = hist.counts_in()[0], hist.time_in()[0].astype(np.float64)
    assert counts[[0, 1, 3, 4]].tolist() == [399, 0, 40, 1] and spent.sum() == pytest.approx(0.2835, rel=1e-9)
    mean = spent[counts > 0] / counts[counts > 0]
    assert (mean >= hist.low[counts > 0]).all() and (mean < hist.high[counts > 0]).all()
    timed = {0: 0.069576, 3: 0.206868, 4: 0.008151}  # the program's own timing of the calls in each row
    share = spent / spent.sum()
    assert abs(share[3] - timed[3] / 0.284595) < 0.06 and abs(share[0] - timed[0] / 0.284595) < 0.06


def test_a_summary_line_whose_count_differs_from_the_histogram_is_not_used() -> None:
    """funclatency_T.txt: the first print's rows hold 262 calls, its summary line 263 (a call that ended between
    reading the table and its sums): that total is not the rows' time. The second's agree (47); the idle second
    after them took no time."""
    items = read_items(BccTextFormat, FUNCLATENCY_T.read_text(), "f.txt")
    assert sums(items) == [None, pytest.approx(0.2425915), 0.0]
    assert [int(c.counts.sum()) for c in intervals(items)] == [262, 47, 0]
    said = [m for m in notices(items) if "summary line" in m]
    assert said == ["f.txt: line 25: Function work [7809]: bcc's summary line counts 263 events, the histogram above "
                    "it 262: its total is not used (said once per stream)"]


@pytest.mark.parametrize(("was", "line", "why"), [
    ("total: 159 msecs", "total: 15900 msecs", "totals 15900 msecs, more than its rows allow (under 806)"),
    ("avg = 0 msecs, total: 159 msecs", "avg = 0 usecs, total: 159 usecs", "is in usecs, the histogram in msecs"),
    ("2 -> 3          : 0 ", "2 -> 3          : x ", "comes under a histogram with a row not read"),
])
def test_a_summary_line_at_odds_with_its_histogram_is_not_used(was: str, line: str, why: str) -> None:
    text = FUNCLATENCY_MSECS.replace(was, line)
    items = read_items(BccTextFormat, text, "m.txt", cumulative=False)
    (col,) = intervals(items)
    assert sums(items) == [None] and (int(col.counts[0]), int(col.counts[1])) == (200, 199)
    assert [m for m in notices(items) if "summary line" in m] == [
        f"m.txt: line 11: Function [unknown] [17532]: bcc's summary line {why}: its total is not used (said once "
        "per stream)"]


def test_cumulative_counts_leave_the_summary_totals_unused_with_a_note() -> None:
    """Declared cumulative, each print is a Snapshot whose column is the difference of two: the summary lines' totals
    (cumulative too, or not) are no column's time."""
    text = FUNCLATENCY_MSECS + FUNCLATENCY_MSECS.split("\n", 2)[2].replace("18:05:53", "18:05:54").replace(
        "399 ", "799 ").replace("count: 400", "count: 800")
    items = read_items(BccTextFormat, text, "m.txt", cumulative=True)
    assert sums(items) == [None]
    assert [(int(c.counts[0]), int(c.counts[1])) for c in intervals(items)] == [(200, 200)]  # spread, both prints
    assert [m for m in notices(items) if "total" in m and "0 -> 1" not in m] == [
        "m.txt: Function [unknown] [17532]: its counts are cumulative: the exact totals printed with its histograms "
        "are not used"]


def test_a_summary_line_with_no_histogram_above_it_is_ignored() -> None:
    """An old funclatency that never cleared its sums prints the line after an idle second too (no table)."""
    text = FUNCLATENCY_MSECS + "\n18:05:54\n\navg = 0 msecs, total: 159 msecs, count: 400\n\n18:05:55\n"
    items = read_items(BccTextFormat, text, "m.txt", cumulative=False)
    assert sums(items) == [pytest.approx(0.1595), 0.0]
    assert not [m for m in notices(items) if "0 -> 1" not in m and ("avg" in m or "summary" in m)]


def test_a_recording_keeps_the_summary_total_as_sourcetime(tmp_path) -> None:
    from click.testing import CliRunner

    from latencymap.cli.main import main

    path, rec = tmp_path / "fm.txt", tmp_path / "rec.txt"
    path.write_text(FUNCLATENCY_MSECS)
    assert CliRunner().invoke(main, ["--plain", "--once", "--record", str(rec), str(path)]).exit_code == 0
    assert "sourcetime, 0.1595" in rec.read_text()
    assert report_json(rec)["streams"][0]["total"]["time_s"] == pytest.approx(0.1595)


def test_the_first_row_of_a_dict_line_is_spread_too() -> None:
    text = ("{'ts': '2024-05-01 10:00:00', 'val_type': 'msecs', 'data': [{'interval-start': 0, 'interval-end': 1, "
            "'count': 5}, {'interval-start': 2, 'interval-end': 3, 'count': 2}]}\n")
    items = read_items(BccTextFormat, text, "j.txt")
    (col,) = intervals(items)
    assert (int(col.counts[0]), int(col.counts[1]), int(col.counts[2])) == (3, 2, 2)
    assert any("`0 -> 1`" in m for m in notices(items))


#: readahead-bpfcc and dbstat-bpfcc print a header of several words (`age (ms)`, `query latency (ms)`).
READAHEAD = """Tracing... Hit Ctrl-C to end.

18:10:00
     age (ms)            : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 10       |****************************************|
        32 -> 63         : 0        |                                        |
        64 -> 127        : 0        |                                        |
       128 -> 255        : 3        |************                            |

18:10:01
     query latency (ms)  : count     distribution
        16 -> 31         : 10       |****************************************|
"""


def test_a_header_of_several_words_is_read_and_names_its_unit() -> None:
    items = read_items(BccTextFormat, READAHEAD, "r.txt")
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for col in intervals(items):
        totals[col.stream.label, col.stream.unit] += int(col.counts.sum())
    assert totals == {("bcc age (ms)", "millisec"): 13, ("bcc query latency (ms)", "millisec"): 10}
    assert not [m for m in notices(items) if "outside a histogram" in m or "unit is not evident" in m]


def usecs_table(counts: dict[int, int]) -> list[str]:
    """bcc's print_log2_hist of usecs (as bcc 0.26 prints it) up to the highest non-empty row: its lines."""
    top = max(counts)
    rows = [(0, 1)] + [(1 << k, (2 << k) - 1) for k in range(1, top.bit_length())]
    return ["     usecs               : count     distribution"] + [
        f"{lo:>10} -> {hi:<10}: {counts.get(lo, 0):<8} |{'*' * 40 if counts.get(lo) else ' ' * 40}|" for lo, hi in rows]


#: argdist-bpfcc -i 1 -H 'r::...:u64:$latency/1000#lat_us' (bcc 0.26): a `[%H:%M:%S]` line every interval, the
#: histogram under it when it holds events, and no blank line between a histogram and the next time line.
ARGDIST = """[18:04:54]
[18:04:55]
[18:04:56]
[18:04:57]
     lat_us              : count     distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 0        |                                        |
         4 -> 7          : 0        |                                        |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 0        |                                        |
        64 -> 127        : 0        |                                        |
       128 -> 255        : 0        |                                        |
       256 -> 511        : 0        |                                        |
       512 -> 1023       : 0        |                                        |
      1024 -> 2047       : 2        |                                        |
      2048 -> 4095       : 97       |****************************************|
      4096 -> 8191       : 1        |                                        |
[18:04:58]
[18:04:59]
"""


def test_argdist_bracketed_time_lines_time_the_prints() -> None:
    """argdist prints `[18:04:57]`: they were rows that did not parse (two records skipped), the print was timed
    when read, and the idle second after it was lost."""
    items = read_items(BccTextFormat, ARGDIST, "ad.txt")
    assert not [m for m in notices(items) if "expected a row" in m], notices(items)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [100, 0], notices(items)
    assert [c.end - cols[0].start for c in cols] == [1.0, 2.0]
    assert datetime.fromtimestamp(cols[0].end).strftime("%H:%M:%S") == "18:04:57"


def test_read_live_each_section_takes_the_time_its_print_arrived(monkeypatch: pytest.MonkeyPatch) -> None:
    """biolatency -D 1 prints `disk = sda`, `disk = sdb` each second, and nothing after sdb's last row until the next
    print: sdb's print ends when the next one arrives, but it arrived with sda's, and is timed with it."""
    def disks(at: float) -> list[tuple[float, str]]:
        lines = ["", "", "disk = 'sda'", *usecs_table({1024: 5}), "", "disk = 'sdb'", *usecs_table({2048: 7})]
        return [(at, line) for line in lines]
    arrivals = [(100.0, "Tracing block device I/O... Hit Ctrl-C to end."), *disks(101.0), *disks(102.0),
                *disks(103.0), (103.5, "")]
    items = read_live(monkeypatch, BccTextFormat, arrivals, cumulative=False)
    ends: dict[str, list[float]] = defaultdict(list)
    for col in intervals(items):
        ends[col.stream.label].append(col.end)
    assert ends == {"disk sda": [101.0, 102.0, 103.0], "disk sdb": [101.0, 102.0, 103.0]}, notices(items)


def test_biolatency_e_summary_lines_are_not_taken_for_exact_totals() -> None:
    """biolatency `-e` sums values already cut to whole units: 1,000 I/Os of 0.4 ms print `total: 0 msecs`, read as
    the exact sum (1.5 ms waited, mean 500 ns, where 0.4 s were). funclatency's banner alone makes them exact."""
    text = "Tracing block device I/O... Hit Ctrl-C to end.\n\n" + "".join(
        f"10:00:0{k}\n     msecs               : count     distribution\n"
        f"         0 -> 1          : 1000     |****************************************|\n\n"
        "avg = 0 msecs, total: 0 msecs, count: 1000\n\n\n" for k in range(3))
    items = read_items(BccTextFormat, text, "bio.txt", cumulative=False)
    assert all(iv.source_buckets is None for iv in intervals(items))
    assert sum(int(iv.counts.sum()) for iv in intervals(items)) == 3000
    (note,) = [m for m in notices(items) if "summary lines" in m]
    assert note.startswith("bio.txt: line 7: bcc's summary lines (avg = ..., total: ..., count: ...) are read under "
                           "funclatency's banner only")


FUNCLATENCY_STEADY = BCC / "funclatency_steady_T.txt"


def printed_rows_total(text: str) -> int:
    """The events of every `lo -> hi : count` row of a capture: what the tool printed."""
    return sum(int(n) for n in re.findall(r"^\s+\d+ -> \d+\s+: (\d+)\s+\|", text, re.M))


def test_a_tool_known_to_clear_is_read_per_interval_though_no_count_ever_goes_down() -> None:
    """funclatency_steady_T.txt (real funclatency -T under a steady load): every row holds as many calls as in the print
    before, or more, for 15 prints, as a never-cleared table would print: read as cumulative (undecided), 5 of its 59
    calls were counted. Its banner says funclatency, which clears its table after each print."""
    text = FUNCLATENCY_STEADY.read_text()
    items = read_items(BccTextFormat, text, "s.txt")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == printed_rows_total(text) == 59
    assert not [m for m in notices(items) if "undecided" in m]
    assert ("s.txt: bcc usecs: counts read as per-interval: line 1 is the banner of bcc's funclatency, which clears "
            "its map after each print (declare with --cumulative or --per-interval)") in notices(items)


def steady_biolatency(banner: str | None, prints: int = 12) -> str:
    """biolatency -T under a steady load (a dd loop): about 5,000 I/Os a second in the same rows, each row a few more
    each second, never fewer, and `banner` (if any) first."""
    lines = [] if banner is None else [banner]
    for k in range(prints):
        lines += ["", f"10:00:{k:02d}", *usecs_table({8: 1000 + k, 16: 3000 + 5 * k, 32: 900 + k, 64: 100})]
    return "\n".join(lines) + "\n"


BIOLATENCY_BANNER = "Tracing block device I/O... Hit Ctrl-C to end."


def test_biolatency_under_a_steady_load_keeps_every_io() -> None:
    """12 prints of about 5,000 I/Os each: all of them are read, not the differences of the prints (about 10)."""
    text = steady_biolatency(BIOLATENCY_BANNER)
    items = read_items(BccTextFormat, text, "bio.txt")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == printed_rows_total(text) == 60_462
    assert [m for m in notices(items) if "counts read as" in m] == [
        "bio.txt: bcc usecs: counts read as per-interval: line 1 is the banner of bcc's biolatency, which clears its "
        "map after each print (declare with --cumulative or --per-interval)"]


@pytest.mark.parametrize("banner", [None, "Tracing... Hit Ctrl-C to end."])
def test_without_the_banner_of_a_tool_known_to_clear_the_mode_is_detected(banner: str | None) -> None:
    """A snippet (no banner), or a banner bcc's examples and scripts copied from them print (some never clear): the
    text is bcc's library's, which argdist -c prints too, cumulative: undecided, read as cumulative, and the note says
    what bcc's tools do."""
    items = read_items(BccTextFormat, steady_biolatency(banner), "bio.txt")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 11 * 7  # the last print less the first
    (note,) = [m for m in notices(items) if "undecided" in m]
    assert note.endswith("say --per-interval or --cumulative; no banner of a bcc tool that clears its map after each "
                         "print (biolatency, runqlat, funclatency, cpudist...) was read: such output is per-interval, "
                         "argdist's with -c (it prints no banner) cumulative")


@pytest.mark.parametrize(("cumulative", "events"), [(True, 11 * 7), (False, 60_462)])
def test_the_declared_mode_rules_over_the_tools_banner(cumulative: bool, events: int) -> None:
    items = read_items(BccTextFormat, steady_biolatency(BIOLATENCY_BANNER), "bio.txt", cumulative=cumulative)
    assert sum(int(c.counts.sum()) for c in intervals(items)) == events
    assert not [m for m in notices(items) if "counts read as" in m or "undecided" in m]


#: A periodic job: 3 sleeps of 5 ms (clock_nanosleep, traced) each second, the rest of the second waited in select().
PERIODIC_JOB = """
import select, sys, time
start = time.monotonic()
for second in range(1, int(sys.argv[1]) + 1):
    for _ in range(3):
        time.sleep(0.005)
    select.select([], [], [], max(0.0, start + second - time.monotonic()))
"""


@pytest.mark.slow
def test_real_funclatency_under_a_steady_load_counts_every_call_it_printed(tmp_path) -> None:
    """Real funclatency-bpfcc -u -T -i 1 -d 12 on a periodic job's sleeps: each print holds about 3 calls, a row's
    count seldom lower than the print before; every call the tool printed is read, with the note naming funclatency."""
    import os
    import subprocess
    import sys

    from process_support import bpf_unavailable
    from skips_support import need_binary

    from latencymap.sources.bpf import preconditions

    skip = bpf_unavailable()
    if skip is not None:
        pytest.skip(skip)
    exe = need_binary("funclatency-bpfcc", remedy="apt-get install bpfcc-tools (.ci/install-system.sh)")
    env = dict(os.environ)
    headers = preconditions.kernel_headers_dir()
    if headers and not env.get("BCC_KERNEL_SOURCE"):
        env["BCC_KERNEL_SOURCE"] = headers
    job_file = tmp_path / "job.py"
    job_file.write_text(PERIODIC_JOB)
    job = subprocess.Popen([sys.executable, str(job_file), "60"])
    try:
        out = subprocess.run([exe, "-u", "-T", "-i", "1", "-d", "12", "-p", str(job.pid), "c:clock_nanosleep"],
                             capture_output=True, text=True, timeout=120, env=env)
    finally:
        job.kill()
        job.wait()
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith('Tracing 1 functions for "c:clock_nanosleep"... Hit Ctrl-C to end.\n'), out.stdout
    printed = printed_rows_total(out.stdout)
    assert printed >= 30, out.stdout
    items = read_items(BccTextFormat, out.stdout, "f.txt")
    assert sum(int(c.counts.sum()) for c in intervals(items)) == printed, notices(items)
    assert any("line 1 is the banner of bcc's funclatency" in m for m in notices(items)), notices(items)


def test_time_lines_ending_in_a_colon_time_the_file_system_tools_prints() -> None:
    """ext4dist and its kin print `14:03:21:`: it was no time line, so `ext4dist 5` read as 1 s prints (5x the rate)."""
    report = report_json(BCC / "ext4dist_5.txt")
    by_label = {s["stream"]["label"]: s for s in report["streams"]}
    assert sorted(by_label) == ["operation read", "operation write"]
    for label, events in (("operation read", 1500), ("operation write", 150)):
        s = by_label[label]
        assert s["columns"] == 3 and s["total"]["events"] == events
        assert s["end"] - s["start"] == 15.0
