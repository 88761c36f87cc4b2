"""The rule bpftrace and bcc text share for a line inside a print that is no row, on their real output (fixtures): it
is reported once (file, line, map, what was expected) and skipped, and the print goes on. Real bpftrace and bcc print
every bucket from the lowest non-empty one up, and end a print with a blank line, a header, a time line or the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from formats_support import FIXTURES, report_json

BPFTRACE_CUMULATIVE = FIXTURES / "bpftrace" / "syscall_nsecs_cumulative.txt"
BPFTRACE_INTERVAL = FIXTURES / "bpftrace" / "block_usecs_interval.txt"
BCC_INTERVAL = FIXTURES / "bcc" / "biolatency_usecs_T.txt"
BPFTRACE_EXPECTED = "expected a hist() row '[lo, hi)  count |@@@|', '[0]', '[1]' or '(..., 0)'"
BCC_EXPECTED = "expected a row 'lo -> hi : count |***|'"
READ = "@nsecs[tracepoint:syscalls:sys_exit_read]"  # lines 20-33 its first print, 54-67 its second
STRAY = "WARNING: stray line"


def edited(tmp_path: Path, fixture: Path, line: int, new: str | None = None, insert: str | None = None) -> Path:
    """A copy of `fixture` with line `line` (1-based) replaced by `new`, or `insert` put before it."""
    lines = fixture.read_text().split("\n")
    if insert is not None:
        lines.insert(line - 1, insert)
    else:
        assert new is not None
        lines[line - 1] = new
    path = tmp_path / fixture.name
    path.write_text("\n".join(lines))
    return path


def streams(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A report's streams by label, without their notes."""
    return {s["stream"]["label"]: {k: v for k, v in s.items() if k != "errors"} for s in report["streams"]}


def messages(report: dict[str, Any], path: Path) -> list[str]:
    """The report's notes on lines of `path` it skipped."""
    return [m for m in report["errors"]["messages"]
            if m.startswith(f"{path}: line ") and ("; line skipped" in m or "; row skipped" in m)]


def frequency(report: dict[str, Any], label: str) -> list[list[float]]:
    (stream,) = [s for s in report["streams"] if s["stream"]["label"] == label]
    return stream["frequency"]


@pytest.mark.parametrize(("fixture", "line", "map_name", "expected", "options"), [
    (BPFTRACE_CUMULATIVE, 56, READ, BPFTRACE_EXPECTED, {"cumulative": True}),  # after the first row of a print
    (BPFTRACE_CUMULATIVE, 55, READ, BPFTRACE_EXPECTED, {"cumulative": True}),  # right after its header
    (BPFTRACE_CUMULATIVE, 68, READ, BPFTRACE_EXPECTED, {"cumulative": True}),  # after its last row
    (BPFTRACE_CUMULATIVE, 56, READ, BPFTRACE_EXPECTED, {}),  # its mode detected
    (BPFTRACE_INTERVAL, 64, "@usecs", BPFTRACE_EXPECTED, {}),
    (BCC_INTERVAL, 10, "bcc usecs", BCC_EXPECTED, {}),
    (BCC_INTERVAL, 5, "bcc usecs", BCC_EXPECTED, {}),
])
def test_a_stray_line_inside_a_print_is_said_once_and_changes_nothing_else(
        tmp_path: Path, fixture: Path, line: int, map_name: str, expected: str, options: dict[str, Any]) -> None:
    """A line that is no row between two rows of a print (stderr mixed into stdout) closed the print: the rows after
    it were lost (bcc: blamed on them, "a row outside a histogram"), and in a cumulative map their buckets read as
    zero, a false counter reset and, a print later, the whole count at once (a false stall)."""
    path = edited(tmp_path, fixture, line, insert=STRAY)
    report, truth = report_json(path, **options), report_json(fixture, **options)
    assert streams(report) == streams(truth)
    assert messages(report, path) == [f"{path}: line {line}: {map_name}: {expected} (a blank line ends the print), "
                                      f"got '{STRAY}'; line skipped"]
    assert report["errors"]["skipped_records"] == 1


@pytest.mark.parametrize(("fixture", "line", "old", "new"), [
    (BPFTRACE_INTERVAL, 63, "2815", "28x15"),
    (BPFTRACE_INTERVAL, 63, "2815", "28\x0015"),
    (BPFTRACE_INTERVAL, 63, "[8, 16)", "[8, 1\x006)"),  # a mangled label: the bucket between its neighbours
    (BPFTRACE_INTERVAL, 63, "[8, 16)", "[8, 17)"),
    (BCC_INTERVAL, 8, "2720", "27x20"),
    (BCC_INTERVAL, 8, "8 -> 15", "8 -> 1\x005"),
])
def test_a_row_that_cannot_be_read_skips_only_itself(tmp_path: Path, fixture: Path, line: int, old: str,
                                                     new: str) -> None:
    """`28x15` for `2815` lost the print's 9 good rows after it (bpftrace; 2,958 events in all with bcc's `27x20`),
    while a bad bucket label skipped only its own row."""
    text = fixture.read_text().split("\n")[line - 1]
    path = edited(tmp_path, fixture, line, new=text.replace(old, new))
    report, truth = report_json(path), report_json(fixture)
    label = "@usecs" if "bpftrace" in str(fixture) else "bcc usecs"
    count = int(text.split("|")[0].split()[-1])
    lost = [(col, bucket, a - b) for col, (got, want) in enumerate(zip(frequency(report, label),
                                                                       frequency(truth, label), strict=True))
            for bucket, (b, a) in enumerate(zip(got, want, strict=True)) if a != b]
    assert len(lost) == 1 and lost[0][2] == count  # that row's count, from its column and bucket
    (said,) = messages(report, path)
    assert said.startswith(f"{path}: line {line}: {label}: expected ")
    assert report["errors"]["skipped_records"] == 1


@pytest.mark.parametrize("new", ["[8K, 16K)           38x18 |@       |", "[8K, 1\x006K)           3818 |@     |",
                                 "[8K, 17K)           3818 |@         |", "[8K, 16K)           38", STRAY])
def test_a_row_lost_from_a_cumulative_print_holds_its_last_count(tmp_path: Path, new: str) -> None:
    """The `[8K, 16K)` row of the second print of sys_exit_read (3,818; 1,519 in the first print) unreadable, cut
    short or replaced by another line: its bucket is unknown there, so the delta since the first print (2,299) lands
    in the next column; the total is exact, no reset, no jump. (The capture starts with bpftrace's banner: the first
    print, 41,720 events, counts from zero.)"""
    path = edited(tmp_path, BPFTRACE_CUMULATIVE, 62, new=new)
    report, truth = report_json(path, cumulative=True), report_json(BPFTRACE_CUMULATIVE, cumulative=True)
    got, want = streams(report), streams(truth)
    assert {k: v["total"]["events"] for k, v in got.items()} == {k: v["total"]["events"] for k, v in want.items()}
    assert [sum(c) for c in frequency(report, READ)] == [41_720, 62_580 - 2_299, 2_299, 0]
    assert [sum(c) for c in frequency(truth, READ)] == [41_720, 62_580, 0, 0]
    assert all(s["resets"] == [] for s in got.values())
    assert {k: v for k, v in got.items() if k != READ} == {k: v for k, v in want.items() if k != READ}
    assert len(messages(report, path)) == 1


def test_a_row_lost_from_the_baseline_print_counts_from_its_first_count_read(tmp_path: Path) -> None:
    """Output joined mid-run (no banner), the baseline's `[8K, 16K)` row (1,519) unreadable: its bucket counts from
    its next count (3,818), not from zero, which would add the 1,519 events from before reading started to the first
    column. After bpftrace's banner the map started empty: that bucket held 0, and its 3,818 land in the next one."""
    path = edited(tmp_path, BPFTRACE_CUMULATIVE, 28, new="[8K, 16K)           15x19 |@      |")
    started = report_json(path, cumulative=True)
    assert [sum(c) for c in frequency(started, READ)] == [41_720 - 1_519, 62_580 + 1_519, 0, 0]
    path.write_text(path.read_text().split("\n", 1)[1])  # without its first line, `Attaching 8 probes...`
    report = report_json(path, cumulative=True)
    assert [sum(c) for c in frequency(report, READ)] == [62_580 - (3_818 - 1_519), 0, 0]
    assert all(s["resets"] == [] for s in (*started["streams"], *report["streams"]))


def test_bcc_detaching_right_after_a_histogram_ends_it(tmp_path: Path) -> None:
    """funcinterval prints `Detaching...` right after its last histogram, without a blank line between."""
    path = tmp_path / "funcinterval.txt"
    path.write_text(BCC_INTERVAL.read_text().rstrip("\n") + "\nDetaching...\n")
    report = report_json(path)
    assert streams(report) == streams(report_json(BCC_INTERVAL)) and not messages(report, path)
