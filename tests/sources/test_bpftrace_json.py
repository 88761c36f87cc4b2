from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict

import numpy as np
import pytest
from formats_support import FIXTURES, intervals, notices, read_items, report_json, totals_by_label
from process_support import bpf_unavailable

from latencymap.core.buckets import bounds_in_unit
from latencymap.sources.bpftrace_json import BpftraceJsonFormat, hist_counts
from latencymap.sources.bpftrace_text import BpftraceTextFormat

INTERVAL_JSON = FIXTURES / "bpftrace" / "block_usecs_interval.json"
CUMULATIVE_JSON = FIXTURES / "bpftrace" / "syscall_nsecs_cumulative.json"


def printed_counts(path) -> dict[str, list[int]]:
    """Per map (and key), each print's count over buckets that have a "min", straight from the JSON."""
    prints: dict[str, list[int]] = defaultdict(list)
    for line in path.read_text().splitlines():
        obj = json.loads(line) if line.strip() else {}
        if obj.get("type") != "hist":
            continue
        for name, value in obj["data"].items():
            for key, rows in (value.items() if isinstance(value, dict) else [(None, value)]):
                label = name if key is None else f"{name}[{key}]"
                prints[label].append(sum(r["count"] for r in rows if "min" in r))
    return prints


def test_per_interval_fixture_totals_equal_the_json_counts() -> None:
    expected = {label: sum(p) for label, p in printed_counts(INTERVAL_JSON).items()}
    assert len(expected) == 3
    report = report_json(INTERVAL_JSON)
    expected.pop("@bytes")  # request sizes: left out, not read as latencies
    assert totals_by_label(report) == expected
    assert {s["stream"]["label"]: s["stream"]["unit"] for s in report["streams"]}["@usecs"] == "microsec"


def test_keyed_cumulative_fixture_totals_are_the_last_print() -> None:
    """The capture starts with `attached_probes`: its map started empty, the last print holds every event."""
    prints = printed_counts(CUMULATIVE_JSON)
    assert all(label.startswith("@nsecs[tracepoint:syscalls:") for label in prints)
    report = report_json(CUMULATIVE_JSON)
    assert totals_by_label(report) == {label: p[-1] for label, p in prints.items()}
    assert {s["stream"]["unit"] for s in report["streams"]} == {"nanosec"}


def test_max_is_inclusive_and_negative_bucket_has_no_min() -> None:
    rows = [{"max": -1, "count": 9}, {"min": 0, "max": 0, "count": 1}, {"min": 1, "max": 1, "count": 2},
            {"min": 8, "max": 15, "count": 3}, {"min": 1024, "max": 2047, "count": 4}]
    read = hist_counts(rows)
    counts = read.counts
    low, high = bounds_in_unit("bpf")
    assert read.negative == 9
    assert {(low[s], high[s]): int(counts[s]) for s in counts.nonzero()[0]} == {
        (0.0, 1.0): 1, (1.0, 2.0): 2, (8.0, 16.0): 3, (1024.0, 2048.0): 4}


def test_other_lines_skipped_bad_lines_reported_time_lines_used() -> None:
    text = "\n".join([
        '{"type": "attached_probes", "data": {"probes": 1}}',
        '{"type": "time", "data": "10:00:00\\n"}',
        '{"type": "hist", "data": {"@usecs": [{"min": 2, "max": 3, "count": 5}]}}',
        '{"type": "printf", "data": "hello"}',
        'not json {',
        '{"type": "hist", "data": {"@usecs": [{"min": 2, "max": 4, "count": 5}]}}',
        '{"type": "time", "data": "10:00:03\\n"}',
        '{"type": "hist", "data": {"@usecs": [{"min": 2, "max": 3, "count": 1}]}}',
    ]) + "\n"
    items = read_items(BpftraceJsonFormat, text, "j.json")
    msgs = notices(items)
    assert any(m.startswith("j.json: line 5: expected one JSON object per line") for m in msgs)
    assert any(m.startswith("j.json: line 6: @usecs: expected log2 bounds") for m in msgs)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [5, 1]
    assert cols[1].end - cols[0].end == 3.0 and cols[1].start == cols[0].end


RAMP_JSON = FIXTURES / "bpftrace" / "sleeps_ramp_cleared.json"


def test_cleared_map_under_rising_load_is_read_per_interval() -> None:
    """Real `bpftrace -f json` of `print(@usecs); clear(@usecs)` over 50, 100, ... 250 sleeps: was 201 events."""
    report = report_json(RAMP_JSON)
    assert totals_by_label(report) == {"@usecs": sum(printed_counts(RAMP_JSON)["@usecs"])} == {"@usecs": 750}
    (stream,) = report["streams"]
    assert stream["columns"] == 7  # 5 prints, 2 idle seconds closed by the next time line (the last one is not)


def _json_lines(*prints: int | None) -> str:
    """One time line per second, then a hist of `@usecs` with that count (None: nothing printed)."""
    out = []
    for k, count in enumerate(prints):
        out.append(f'{{"type": "time", "data": "10:00:{k:02d}\\n"}}')
        if count is not None:
            out.append(f'{{"type": "hist", "data": {{"@usecs": [{{"min": 8, "max": 15, "count": {count}}}]}}}}')
    return "\n".join(out) + "\n"


def test_a_map_missing_after_the_next_time_line_was_cleared_and_idle_seconds_are_columns() -> None:
    items = read_items(BpftraceJsonFormat, _json_lines(5, 6, None, None, 7, None), "j.json")
    assert [int(c.counts.sum()) for c in intervals(items)] == [5, 6, 0, 0, 7]
    assert any("@usecs is missing from the print group" in m for m in notices(items))


def _keyed_lines(*prints: dict[str, int]) -> str:
    """`bpftrace -f json` of `print(@usecs)` of `@usecs[comm] = hist(...)`, no time lines: one hist line per print,
    its keys in the order given (bpftrace 0.17 does not keep one order: a key new in a print may come first)."""
    out = ['{"type": "attached_probes", "data": {"probes": 3}}']
    for keys in prints:
        body = ", ".join(f'"{k}": [{{"min": 8, "max": 15, "count": {n}}}]' for k, n in keys.items())
        out.append(f'{{"type": "hist", "data": {{"@usecs": {{{body}}}}}}}')
    return "\n".join(out) + "\n"


def totals_by_label_of(items: list) -> dict[str, int]:
    """Events per stream over the intervals of `items`."""
    out: dict[str, int] = defaultdict(int)
    for c in intervals(items):
        out[c.stream.label] += int(c.counts.sum())
    return dict(out)


def test_each_hist_line_is_one_print_whatever_the_order_of_its_keys() -> None:
    """A key first printed in the second line, ahead of the others (as real output had `timeout` ahead of `python`),
    belongs to that line's column, not to the column before."""
    text = _keyed_lines({"python": 5, "bpftrace": 3}, {"timeout": 2, "python": 6}, {"python": 4})
    cols = intervals(read_items(BpftraceJsonFormat, text, "k.json", cumulative=False))
    start = min(c.start for c in cols)
    at = {(c.stream.label, round(c.start - start)): int(c.counts.sum()) for c in cols}
    assert at[("@usecs[timeout]", 1)] == 2 and ("@usecs[timeout]", 0) not in at
    assert [at[("@usecs[python]", k)] for k in range(3)] == [5, 6, 4]


def test_a_keyed_cumulative_map_with_a_key_printed_first_stays_cumulative() -> None:
    """Never cleared, `b` first printed in the second line and ahead of `a` from then on: no key is ever missing from
    a print, so nothing says the map was cleared (it was read as per-interval: every print counted whole)."""
    text = _keyed_lines({"a": 5}, {"b": 2, "a": 8}, {"b": 3, "a": 9}, {"b": 3, "a": 12})
    items = read_items(BpftraceJsonFormat, text, "k.json")
    assert not any("is missing from" in m for m in notices(items))
    assert totals_by_label_of(items) == {"@usecs[a]": 12, "@usecs[b]": 3}  # from zero: after `attached_probes`


def test_an_unreadable_print_is_no_sign_of_a_cleared_map() -> None:
    text = _json_lines(5, 6, 7, 8).replace('"count": 6', '"count": -6')
    items = read_items(BpftraceJsonFormat, text, "j.json")
    assert not any("is missing from" in m for m in notices(items)) and any("undecided" in m for m in notices(items))


def test_keys_alike_for_their_first_200_characters_stay_apart_cut_in_the_middle() -> None:
    """`bpftrace -f json` of `@nsecs[str(args.filename)]` keyed by paths that differ only past 200 characters:
    three streams, each with its own counts in every print, named by the map and the path's end; an unreadable
    print of one of them is said under that name."""
    base = "/var/lib/postgresql/16/main/" + "tablespace/" * 20
    keys = [f"{base}base/16384/2619", f"{base}base/16384/2620", f"{base}base/16384/2621"]
    lines = []
    for second in range(3):
        data = {key: [{"min": 128, "max": 255, "count": 10 * (k + 1)}, {"min": 256, "max": 511, "count": k + 1}]
                for k, key in enumerate(keys)}
        lines += [json.dumps({"type": "time", "data": f"01:43:{21 + second}\n"}),
                  json.dumps({"type": "hist", "data": {"@nsecs": data}})]
    lines.append(json.dumps({"type": "hist", "data": {"@nsecs": {keys[1]: [{"min": 3, "max": 7, "count": 1}]}}}))
    items = read_items(BpftraceJsonFormat, "\n".join(lines) + "\n", "j.json", cumulative=False)
    got: dict[str, list[int]] = defaultdict(list)
    for col in intervals(items):
        got[col.stream.label].append(int(col.counts.sum()))
    assert sorted(got.values()) == [[11] * 3, [22] * 3, [33] * 3]
    for label, counts in got.items():
        assert len(label) == 200 and label.count("…") == 1 and label.startswith("@nsecs[/var/lib/postgresql/")
        assert label.endswith(f"/base/16384/26{18 + counts[0] // 11}]")
    (bad,) = [m for m in notices(items) if "histogram skipped" in m]
    assert next(label for label in got if label.endswith("2620]")) + ": expected log2 bounds" in bad


def _print_line(rows: list[dict]) -> str:
    return json.dumps({"type": "hist", "data": {"@ns": rows}})


def test_the_overflowed_2g_row_is_read_as_the_2_to_the_31_bucket() -> None:
    """bpftrace 0.17 prints its [2G, 4G) row as {"min": -2147483648, "max": 0} (32-bit bounds that overflow): it is
    read as [2^31, 2^32), as the text output of the same run labels it, with a note; the print's other rows stay."""
    rows = [{"min": 67108864, "max": 134217727, "count": 1}, {"min": 134217728, "max": 268435455, "count": 0},
            {"min": 268435456, "max": 536870911, "count": 0}, {"min": 536870912, "max": 1073741823, "count": 0},
            {"min": 1073741824, "max": 2147483647, "count": 0}, {"min": -2147483648, "max": 0, "count": 1}]
    text = "\n".join(['{"type": "time", "data": "13:37:25\\n"}', _print_line(rows[:1]),
                      '{"type": "time", "data": "13:37:26\\n"}', _print_line(rows)]) + "\n"
    items = read_items(BpftraceJsonFormat, text, "j.json", cumulative=False)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [1, 2]
    low, _ = bounds_in_unit("bpf")
    assert cols[1].counts[32] == 1 and low[32] == 2**31 and cols[1].counts[27] == 1
    (note,) = [m for m in notices(items) if "2147483648" in m]
    assert note.startswith("j.json: line 4: @ns: the row") and "read as [2^31, 2^32)" in note
    assert not [m for m in notices(items) if "skipped" in m]


def test_a_row_that_cannot_be_read_drops_only_itself() -> None:
    """A row of no log2 bucket is left out with the line and what was expected, the print's other rows read; a row
    whose count cannot be read leaves its bucket unknown, not zero (no false reset in a cumulative map)."""
    prints = [
        [{"min": 8, "max": 15, "count": 10}, {"min": 16, "max": 31, "count": 3}],
        [{"min": 8, "max": 15, "count": 12}, {"min": 16, "max": 31, "count": -1}, {"min": 10, "max": 19, "count": 1}],
        [{"min": 8, "max": 15, "count": 15}, {"min": 16, "max": 31, "count": 7}],
    ]
    text = "\n".join(line for k, rows in enumerate(prints)
                     for line in (f'{{"type": "time", "data": "10:00:0{k}\\n"}}', _print_line(rows))) + "\n"
    items = read_items(BpftraceJsonFormat, text, "j.json", cumulative=True)
    assert [(int(c.counts[4]), int(c.counts[5])) for c in intervals(items)] == [(2, 0), (3, 4)]
    skipped = [m for m in notices(items) if "skipped" in m]
    assert skipped == [
        "j.json: line 4: @ns: expected a bucket with an integer count in [0, 2**62], got "
        "\"{'min': 16, 'max': 31, 'count': -1}\"; row skipped",
        "j.json: line 4: @ns: expected log2 bounds (hist(), not lhist()), got "
        "\"{'min': 10, 'max': 19, 'count': 1}\"; row skipped"]


LONG_VALUES = "BEGIN { @ns = hist(100000000); @ns = hist(3000000000); @ns = hist(5000000000); exit(); }"


@pytest.mark.slow
@pytest.mark.skipif(bpf_unavailable() is not None, reason=bpf_unavailable() or "")
def test_real_bpftrace_json_and_text_of_one_program_read_alike() -> None:
    """Real bpftrace: values of 0.1 s, 3 s and 5 s in one hist(), printed as text and as `-f json`: both read as
    the same buckets (bpftrace 0.17 counts both long values in [2G, 4G), and its JSON prints that row with bounds
    that overflow)."""
    exe = shutil.which("bpftrace")
    assert exe is not None, "bpftrace is not installed (.ci/install-system.sh)"
    slots = {}
    for fmt, args in ((BpftraceJsonFormat, ["-f", "json"]), (BpftraceTextFormat, [])):
        out = subprocess.run([exe, *args, "-e", LONG_VALUES], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        cols = intervals(read_items(fmt, out.stdout, fmt.name, unit="nanosec"))
        total = np.sum([c.counts for c in cols], axis=0)
        slots[fmt.name] = {int(k): int(total[k]) for k in np.flatnonzero(total)}
    assert slots["bpftrace-json"] == slots["bpftrace"] == {27: 1, 32: 2}


def test_a_line_cut_short_or_past_the_longest_read_is_said_so(tmp_path) -> None:
    """A copy of a real `-f json` capture with a hist line cut in two and a printf line past 64 KiB: each message
    says the line was cut, not only that it is no JSON object."""
    from latencymap.core.model import Notice
    from latencymap.flow.inputs import MAX_LINE
    from latencymap.flow.pipeline import input_flow
    from latencymap.plugins import load_registry

    lines = INTERVAL_JSON.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"type": "hist"' in line)
    lines[at] = lines[at][:50] + "\n"
    lines.append('{"type": "printf", "data": "' + "x" * MAX_LINE + '"}\n')
    path = tmp_path / "cut.json"
    path.write_text("".join(lines))
    said = [i.message for i in input_flow([str(path)], load_registry()) if isinstance(i, Notice) and i.skipped]
    assert said[0].startswith(f"{path}: line {at + 1}: expected one JSON object per line (bpftrace -f json), got ")
    assert said[0].endswith(" (the line ends early, inside its JSON: cut short); line skipped")
    assert said[-1].startswith(f"{path}: line {len(lines)}: expected one JSON object per line")
    assert said[-1].endswith(f" (the line was cut at {MAX_LINE:,} characters, the longest read); line skipped")


def test_an_lhist_map_is_left_out_whole_with_one_note_and_other_maps_read() -> None:
    """bpftrace 0.17 `-f json`, `@lin_ms = lhist(ms, 0, 20, 2)` beside `@ns = hist(ns)`: [2, 3] and [4, 5] are
    linear rows (not 2-4 ms and 4-8 ms), and its overflow row {"min": 20} has no max: the map is left out with one
    note, every print of it; @ns is read."""
    text = "\n".join([
        '{"type": "attached_probes", "data": {"probes": 3}}',
        '{"type": "time", "data": "18:03:21\\n"}',
        '{"type": "hist", "data": {"@ns": [{"min": 2097152, "max": 4194303, "count": 3}, '
        '{"min": 4194304, "max": 8388607, "count": 3}]}}',
        '{"type": "hist", "data": {"@lin_ms": [{"min": 2, "max": 3, "count": 3}, {"min": 4, "max": 5, "count": 3}]}}',
        '{"type": "time", "data": "18:03:22\\n"}',
        '{"type": "hist", "data": {"@lin_ms": [{"min": 20, "count": 1}]}}',
        '{"type": "hist", "data": {"@ns": [{"min": 1073741824, "max": 2147483647, "count": 1}]}}',
    ]) + "\n"
    items = read_items(BpftraceJsonFormat, text, "m.json")
    assert [(c.stream.label, int(c.counts.sum())) for c in intervals(items)] == [("@ns", 6), ("@ns", 1)]
    assert [m for m in notices(items) if m.startswith("m.json: line")] == [
        "m.json: line 4: @lin_ms: a linear histogram (lhist): its rows are not log2 buckets; left out"]
    alone = read_items(BpftraceJsonFormat, text.splitlines()[5] + "\n", "o.json")
    assert not intervals(alone) and notices(alone) == [
        "o.json: line 1: @lin_ms: a linear histogram (lhist): its rows are not log2 buckets; left out"]
