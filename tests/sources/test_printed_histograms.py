from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from formats_support import intervals, notices, read_items, report_json
from process_support import bpf_unavailable

from latencymap.sources import bcc_text, bpftrace_text
from latencymap.sources.bcc_text import BccTextFormat
from latencymap.sources.bpftrace_json import BpftraceJsonFormat
from latencymap.sources.bpftrace_text import BpftraceTextFormat
from latencymap.sources.printed_histograms import (
    PrintClock,
    PrintReader,
    lhist_layout,
    log2_layout,
    parse_time_line,
    slot_of_range,
)

BAR = "|@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"


def utc(*fields: int) -> float:
    """Epoch seconds of a UTC date and time."""
    return datetime(*fields, tzinfo=UTC).timestamp()


def bpftrace(stamps: list[str], count: int = 100) -> str:
    """`interval:s:N { time(...); print(@usecs); clear(@usecs); }` output: one print of `count` events per stamp."""
    return "Attaching 3 probes...\n" + "".join(f"{s}\n@usecs: \n[1K, 2K)             {count} {BAR}\n\n" for s in stamps)


def bpftrace_json(stamps: list[str]) -> str:
    """The same program's output under `bpftrace -f json`."""
    lines = ['{"type": "attached_probes", "data": {"probes": 3}}']
    for s in stamps:
        lines += [json.dumps({"type": "time", "data": s + "\n"}),
                  '{"type": "hist", "data": {"@usecs": [{"min": 1024, "max": 2047, "count": 100}]}}']
    return "\n".join(lines) + "\n"


def bcc_timed(stamps: list[str]) -> str:
    """`biolatency -T 1` output: a time of day, then the usecs table, every interval."""
    rows = [(0, 1, 0), (2, 3, 0), (4, 7, 0), (8, 15, 0), (16, 31, 0), (32, 63, 0), (64, 127, 0), (128, 255, 0),
            (256, 511, 0), (512, 1023, 0), (1024, 2047, 100)]
    table = "     usecs               : count     distribution\n" + "".join(
        f"{lo:>10} -> {hi:<10}: {n:<8} |{'*' * 40 if n else ' ' * 40}|\n" for lo, hi, n in rows)
    return "Tracing block device I/O... Hit Ctrl-C to end.\n\n" + "".join(f"{s}\n{table}\n" for s in stamps)


def bcc_dicts(stamps: list[str]) -> str:
    """`biolatency -j` output: one dict per interval, timed by its `ts`."""
    data = [{"interval-start": 1024, "interval-end": 2047, "count": 100}]
    return "".join(str({"ts": s, "val_type": "usecs", "data": data}) + "\n" for s in stamps)  # as biolatency print()s


def on_day(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    """The bpftrace and bcc readers' clock reads `now`: a capture read live, on the day it printed its times of day."""
    for module in (bpftrace_text, bcc_text):
        monkeypatch.setattr(module, "PrintReader", partial(PrintReader, clock=lambda: now))


def spans(cols: list) -> list[tuple[float, float]]:
    return [(c.start, c.end) for c in cols]


def every(seconds: float, ends: list[float]) -> list[tuple[float, float]]:
    """Columns ending at `ends`, each `seconds` long (the first too)."""
    return [(end - seconds, end) for end in ends]


# 2026-11-01 in New York: 02:00 EDT (06:00 UTC) goes back to 01:00 EST. Prints 5 s apart across it.
NY_FALL_DATED = ["2026-11-01 01:59:50", "2026-11-01 01:59:55", "2026-11-01 01:00:00", "2026-11-01 01:00:05",
                 "2026-11-01 01:00:10"]
NY_FALL_ENDS = [utc(2026, 11, 1, 5, 59, 50), utc(2026, 11, 1, 5, 59, 55), utc(2026, 11, 1, 6, 0, 0),
                utc(2026, 11, 1, 6, 0, 5), utc(2026, 11, 1, 6, 0, 10)]


# a POSIX rule, which zoneinfo cannot read: the C library's local time, with the same rules
@pytest.mark.parametrize("zone", ["America/New_York", "EST5EDT,M3.2.0,M11.1.0"], indirect=True)
@pytest.mark.parametrize(("fmt", "render"), [(BpftraceTextFormat, bpftrace), (BpftraceJsonFormat, bpftrace_json),
                                             (BccTextFormat, bcc_dicts)])
def test_dated_time_lines_in_the_hour_clocks_go_back_to_are_its_second_occurrence(zone: str, fmt, render) -> None:
    """They were read as the first one (EDT), each went backwards and was ignored, each print got --interval."""
    items = read_items(fmt, render(NY_FALL_DATED), cumulative=False)
    assert notices(items) == []
    assert spans(intervals(items)) == every(5.0, NY_FALL_ENDS)


@pytest.mark.parametrize("zone", ["America/New_York"], indirect=True)
def test_a_run_across_the_fall_back_reports_its_real_length_and_rate(zone: str, tmp_path: Path) -> None:
    """20 minutes of 5 s prints, 100 events each, from 01:50 EDT to 01:10 EST: 20/s, nothing skipped."""
    start = datetime(2026, 11, 1, 5, 50, tzinfo=UTC)
    stamps = [(start + timedelta(seconds=5 * k)).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
              for k in range(241)]
    assert stamps[-1] == "2026-11-01 01:10:00"
    path = tmp_path / "fall.txt"
    path.write_text(bpftrace(stamps))
    report = report_json(path, cumulative=False)
    (stream,) = report["streams"]
    assert report["errors"] == {"skipped_records": 0, "messages": []}
    assert stream["columns"] == 241 and stream["total"]["events"] == 24_100
    assert (stream["start"], stream["end"]) == (start.timestamp() - 5, start.timestamp() + 1200)


@pytest.mark.parametrize("zone", ["Europe/Rome"], indirect=True)
def test_times_of_day_read_on_the_fall_back_day_go_on_through_the_repeated_hour(
        zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`biolatency -T`, 2026-10-25 in Rome: 03:00 CEST (01:00 UTC) goes back to 02:00 CET; read that morning."""
    on_day(monkeypatch, utc(2026, 10, 25, 1, 30))
    items = read_items(BccTextFormat, bcc_timed(["02:59:50", "02:59:55", "02:00:00", "02:00:05"]), cumulative=False)
    assert notices(items) == []
    ends = [utc(2026, 10, 25, 0, 59, 50), utc(2026, 10, 25, 0, 59, 55), utc(2026, 10, 25, 1),
            utc(2026, 10, 25, 1, 0, 5)]
    assert spans(intervals(items)) == every(5.0, ends)


@pytest.mark.parametrize("zone", ["America/New_York"], indirect=True)
def test_times_of_day_read_on_the_spring_forward_day_have_no_hour_long_column(
        zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """2026-03-08 in New York: 02:00 EST (07:00 UTC) jumps to 03:00 EDT. 20 prints 1 s apart, read just after: 20 s at
    100/s, where seconds were added to midnight (a 1 h column and a false silence)."""
    on_day(monkeypatch, utc(2026, 3, 8, 7, 0, 30))
    first = datetime(2026, 3, 8, 6, 59, 50, tzinfo=UTC)
    stamps = [(first + timedelta(seconds=k)).astimezone(ZoneInfo(zone)).strftime("%H:%M:%S") for k in range(20)]
    assert stamps[9:11] == ["01:59:59", "03:00:00"]
    items = read_items(BpftraceTextFormat, bpftrace(stamps), cumulative=False)
    assert notices(items) == []
    assert spans(intervals(items)) == every(1.0, [first.timestamp() + k for k in range(20)])


@pytest.mark.parametrize("zone", ["Europe/Rome"], indirect=True)
def test_a_dated_time_the_spring_forward_skips_is_moved_on_as_the_zone_moves_it(zone: str) -> None:
    """2026-03-29 in Rome: 02:00 CET (01:00 UTC) jumps to 03:00 CEST; 02:30 does not exist there and reads as 03:30."""
    stamps = ["2026-03-29 01:59:59", "2026-03-29 02:30:00", "2026-03-29 03:40:00"]
    items = read_items(BccTextFormat, bcc_dicts(stamps), cumulative=False)
    assert notices(items) == []
    ends = [utc(2026, 3, 29, 0, 59, 59), utc(2026, 3, 29, 1, 30), utc(2026, 3, 29, 1, 40)]
    assert [c.end for c in intervals(items)] == ends


@pytest.mark.parametrize("zone", ["America/New_York"], indirect=True)
@pytest.mark.parametrize(("stamps", "backwards"), [
    # in the first 01:xx (EDT), 10 minutes back: a clock step, not the fall back
    (["2026-11-01 01:30:00", "2026-11-01 01:20:00"], "2026-11-01 01:20:00 after 2026-11-01 01:30:00"),
    # in the second 01:xx (EST), back again: neither occurrence goes forward
    (["2026-11-01 01:59:55", "2026-11-01 01:00:00", "2026-11-01 01:20:00", "2026-11-01 01:10:00"],
     "2026-11-01 01:10:00 after 2026-11-01 01:20:00"),
    # on a day without a change
    (["2026-11-02 01:59:55", "2026-11-02 01:00:00"], "2026-11-02 01:00:00 after 2026-11-02 01:59:55"),
])
def test_a_time_line_that_really_goes_backwards_is_still_reported(zone: str, stamps: list[str],
                                                                  backwards: str) -> None:
    items = read_items(BpftraceTextFormat, bpftrace(stamps), cumulative=False)
    (message,) = notices(items)
    assert f"timestamp goes backwards ({backwards}); line ignored" in message
    assert sum(c.counts.sum() for c in intervals(items)) == 100 * len(stamps)  # its print is kept, `interval` on


@pytest.mark.parametrize("zone", ["Europe/Rome"], indirect=True)
def test_the_first_timed_print_covers_the_spacing_of_the_time_lines(zone: str, tmp_path: Path) -> None:
    """`interval:s:5` prints: the first column is 5 s long, not --interval (1 s, five times the rate)."""
    path = tmp_path / "five.txt"
    path.write_text(bpftrace(["2026-06-01 10:00:00", "2026-06-01 10:00:05", "2026-06-01 10:00:10"]))
    (stream,) = report_json(path, cumulative=False)["streams"]
    assert stream["columns"] == 3 and stream["end"] - stream["start"] == 15.0
    items = read_items(BpftraceTextFormat, path.read_text(), cumulative=False)
    assert [c.end - c.start for c in intervals(items)] == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("zone", ["Europe/Rome"], indirect=True)
@pytest.mark.parametrize(("text", "lengths"), [
    (bpftrace(["2026-06-01 10:00:00"]), [2.0]),  # one time line: nothing tells its spacing
    # a map printed again after the only time line (bpftrace's print at exit) comes `--interval` later
    (bpftrace(["2026-06-01 10:00:00"]) + f"@usecs: \n[1K, 2K)   100 {BAR}\n\n", [2.0, 2.0]),
])
def test_without_a_second_time_line_the_first_print_covers_the_interval(zone: str, text: str,
                                                                        lengths: list[float]) -> None:
    items = read_items(BpftraceTextFormat, text, cumulative=False, interval=2.0)
    assert [c.end - c.start for c in intervals(items)] == lengths


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Rome"], indirect=True)
def test_the_clock_maps_local_times_forward_across_both_changes(zone: str) -> None:
    """Every second of a day with each change, printed as a time of day, comes back as its own instant."""
    tz = ZoneInfo(zone)
    for day in (datetime(2026, 3, 8, tzinfo=tz), datetime(2026, 11, 1, tzinfo=tz), datetime(2026, 3, 29, tzinfo=tz),
                datetime(2026, 10, 25, tzinfo=tz)):
        first = day.timestamp() + 30
        clock = PrintClock(1.0, clock=lambda first=first: first + 1)
        for k in range(0, 86_400 - 60, 7):
            stamp = parse_time_line(datetime.fromtimestamp(first + k, tz).strftime("%H:%M:%S"))
            assert stamp is not None and clock.time_line(*stamp) is None
            assert clock.current == first + k


def never_cleared(fmt: type, started: bool) -> str:
    """A never-cleared `@usecs` printed each second with 10, 20, 30 events so far, as text or `-f json`, with
    bpftrace's banner first (`started`) or without it (a snippet, output joined mid-run)."""
    if fmt is BpftraceTextFormat:
        banner = "Attaching 2 probes...\n"
        prints = "".join(f"10:00:0{k}\n@usecs: \n[8, 16)  {10 * k} {BAR}\n\n" for k in (1, 2, 3))
    else:
        banner = '{"type": "attached_probes", "data": {"probes": 2}}\n'
        prints = "".join(f'{{"type": "time", "data": "10:00:0{k}\\n"}}\n'
                         f'{{"type": "hist", "data": {{"@usecs": [{{"min": 8, "max": 15, "count": {10 * k}}}]}}}}\n'
                         for k in (1, 2, 3))
    return banner + prints if started else prints


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
@pytest.mark.parametrize("cumulative", [None, True])
def test_after_the_banner_a_never_cleared_map_counts_its_first_print_from_zero(fmt: type,
                                                                               cumulative: bool | None) -> None:
    """bpftrace's banner says the program started there, its maps empty: the first print holds the events since, as
    long as the time lines are apart (it was the baseline: 4,196 of a real capture's 28,802 events lost). Without
    the banner the map may hold events from before the input began: the first print stays the baseline."""
    items = read_items(fmt, never_cleared(fmt, True), cumulative=cumulative)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [10, 10, 10]
    assert spans(cols)[0] == (cols[1].start - 1.0, cols[1].start)
    assert not any("baseline" in m for m in notices(items))
    joined = intervals(read_items(fmt, never_cleared(fmt, False), cumulative=cumulative))
    assert [int(c.counts.sum()) for c in joined] == [10, 10]


def test_a_live_untimed_first_print_after_the_banner_covers_the_time_since_the_banner() -> None:
    """Read live (a pipe), the banner's arrival is the program's start: the first print covers the time since,
    however long its `interval:s:N` is; read from a file at once, it covers `--interval` as before."""
    now = [100.0]
    clock = PrintClock(1.0, clock=lambda: now[0])
    clock.attached()
    now[0] = 105.0
    assert clock.stamp("a") == (100.0, 105.0)
    at_once = PrintClock(1.0, clock=lambda: 100.0)
    at_once.attached()
    assert at_once.stamp("a") == (99.0, 100.0)


@pytest.mark.skipif(bpf_unavailable() is not None, reason=bpf_unavailable() or "")
@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
def test_real_bpftrace_never_cleared_counts_every_event_since_it_started(fmt: type, tmp_path: Path) -> None:
    """Real bpftrace: a never-cleared hist() of a child's 3,000 getppid calls over ~1.5 s, printed every 0.5 s and at
    exit: all 3,000 are read (the first print, 1,000 of them, was the baseline)."""
    exe = shutil.which("bpftrace")
    assert exe is not None, "bpftrace is not installed (.ci/install-system.sh)"
    child = tmp_path / "calls.py"
    child.write_text("import os, time\nfor _ in range(6):\n    [os.getppid() for _ in range(500)]\n"
                     "    time.sleep(0.25)\n")
    program = ("tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @usecs = hist(1); } "
               "interval:ms:500 { print(@usecs); }")
    json_args = ["-f", "json"] if fmt is BpftraceJsonFormat else []
    out = subprocess.run([exe, *json_args, "-c", f"{sys.executable} {child}", "-e", program],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cols = intervals(read_items(fmt, out.stdout, fmt.name))
    assert sum(int(c.counts.sum()) for c in cols) == 3000, out.stdout


def cleared_keyed_cut_short(fmt: type) -> str:
    """Real output (trimmed) of a 2.5 s run of `@usecs[comm] = hist(...)` on openat, cleared after each print: the
    second print found the map empty, Ctrl-C came before the third, and the print at exit holds one key of two."""
    rows = {"C1 CompilerThre": [(4, 1), (32, 1)], "bpftrace": [(4, 1), (32, 1)]}
    at_exit = {"C1 CompilerThre": [(4, 2), (16, 1), (32, 1)]}
    if fmt is BpftraceTextFormat:
        def text(printed: dict[str, list[tuple[int, int]]]) -> str:
            return "".join(f"@usecs[{key}]: \n" + "".join(f"[{low}, {2 * low})  {n} {BAR}\n" for low, n in hist) + "\n"
                           for key, hist in printed.items())
        return f"Attaching 4 probes...\n12:24:51\n{text(rows)}12:24:52\n\n\n\n{text(at_exit)}"

    def line(printed: dict[str, list[tuple[int, int]]]) -> str:
        data = {"@usecs": {key: [{"min": low, "max": 2 * low - 1, "count": n} for low, n in hist]
                           for key, hist in printed.items()}}
        return json.dumps({"type": "hist", "data": data}) + "\n"
    return ('{"type": "attached_probes", "data": {"probes": 4}}\n{"type": "time", "data": "12:24:51\\n"}\n'
            f'{line(rows)}{{"type": "time", "data": "12:24:52\\n"}}\n{line(at_exit)}')


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
def test_a_key_missing_from_the_cut_group_and_from_the_print_at_exit_was_cleared(fmt: type) -> None:
    """The print at exit is whole: a key missing from it and from the group before it (which Ctrl-C may have cut) is
    no longer in the map, which was cleared. The map was read as cumulative (undecided) and 6 of its 8 events
    counted; every print counts whole."""
    items = read_items(fmt, cleared_keyed_cut_short(fmt), fmt.name)
    assert any("per-interval: @usecs[bpftrace] is missing" in m for m in notices(items)), notices(items)
    totals: dict[str, int] = {}
    for col in intervals(items):
        totals[col.stream.label] = totals.get(col.stream.label, 0) + int(col.counts.sum())
    assert totals == {"@usecs[C1 CompilerThre]": 6, "@usecs[bpftrace]": 2}


def test_a_key_missing_from_the_last_periodic_print_and_the_print_at_exit_after_it_was_cleared() -> None:
    """The print at exit opens its own group when it prints a key the last periodic print printed: a key both lack
    is no longer in the map (read as cumulative, undecided, the map counted 3 of its 5 events); a key only the last
    periodic print lacks (taken into it from the print at exit, or cut) is no evidence."""
    def hist(key: str, n: int) -> str:
        return f"@usecs[{key}]: \n[8, 16)  {n} {BAR}\n\n"
    text = f"Attaching 2 probes...\n10:00:01\n{hist('a', 1)}{hist('b', 2)}10:00:02\n{hist('a', 1)}\n\n{hist('a', 1)}"
    items = read_items(BpftraceTextFormat, text, "x")
    assert any("per-interval: @usecs[b] is missing" in m for m in notices(items)), notices(items)
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 5
    cut = f"Attaching 2 probes...\n10:00:01\n{hist('a', 1)}{hist('b', 2)}10:00:02\n{hist('a', 1)}\n\n" \
          f"{hist('b', 2)}{hist('a', 1)}"  # b printed first at exit: taken into the periodic print
    items = read_items(BpftraceTextFormat, cut, "x")
    assert not any("is missing" in m for m in notices(items)), notices(items)


def getppid_prints(fmt: type, runs: list[list[tuple[str, dict[str, tuple[int, int]]]]], probes: int = 2) -> str:
    """Real bpftrace output of `@usecs = hist(1)` (and `@busecs = hist(2)`) over a child's getppid calls, printed each
    second after `time()`, then at exit, as text or `-f json`: per run its (time line or "" for the print at exit, the
    maps printed: map -> (slot low, count)) in order. Runs are joined as `cat run1 run2` joins them."""
    out = ""
    for run in runs:
        out += f"Attaching {probes} probes...\n" if fmt is BpftraceTextFormat \
            else f'{{"type": "attached_probes", "data": {{"probes": {probes}}}}}\n'
        for stamp, maps in run:
            if fmt is BpftraceTextFormat:
                out += f"{stamp}\n" if stamp else "\n\n"
                out += "".join(f"{name}: \n{f'[{low}, {2 * low})' if low > 1 else f'[{low}]':<20}{n:>5} {BAR}\n\n"
                               for name, (low, n) in maps.items())
            else:
                out += json.dumps({"type": "time", "data": stamp + "\n"}) + "\n" if stamp else "\n\n"
                out += "".join(json.dumps({"type": "hist", "data": {name: [{"min": low, "max": 2 * low - 1 if low > 1
                                                                            else low, "count": n}]}}) + "\n"
                               for name, (low, n) in maps.items())
    return out


def usecs(stamp: str, n: int) -> tuple[str, dict[str, tuple[int, int]]]:
    return stamp, {"@usecs": (1, n)}


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
@pytest.mark.parametrize("cumulative", [None, True])
def test_two_runs_joined_count_the_second_from_zero(fmt: type, cumulative: bool | None) -> None:
    """Two runs of a never-cleared map joined (`cat run1 run2`): 6,000 then 4,000 getppid calls. The second banner is
    a new start, its map empty: its prints count from zero (a restart, not counts that go down). Read as per-interval
    they counted 28,000."""
    runs = [[usecs("12:45:42", 2000), usecs("12:45:43", 4000), usecs("12:45:44", 6000), usecs("", 6000)],
            [usecs("12:45:46", 2000), usecs("12:45:47", 4000), usecs("", 4000)]]
    items = read_items(fmt, getppid_prints(fmt, runs), cumulative=cumulative)
    cols = intervals(items)
    assert [int(c.counts.sum()) for c in cols] == [2000, 2000, 2000, 0, 2000, 2000, 0], notices(items)
    assert [k for k, c in enumerate(cols) if c.reset] == [4]  # the restart's column is a reset, as every view marks
    assert not any("read as per-interval" in m for m in notices(items)), notices(items)
    banner = 19 if fmt is BpftraceTextFormat else 11
    assert any(f"line {banner}: bpftrace's banner again: the program restarted" in m for m in notices(items))
    assert [c.end for c in cols] == sorted(c.end for c in cols)
    # joined the other way round, the second run's time lines go backwards (ignored, said): its prints follow the
    # first's `--interval` apart, and still count from zero
    items = read_items(fmt, getppid_prints(fmt, runs[::-1]), cumulative=cumulative)
    assert sum(int(c.counts.sum()) for c in intervals(items)) == 10_000
    assert sum("timestamp goes backwards" in m for m in notices(items)) == 3


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
def test_two_cleared_runs_joined_stay_per_interval(fmt: type) -> None:
    """Two runs of a map cleared after each print, joined: 8,400 calls each, read as per-interval as before."""
    run = [usecs("12:49:36", 6000), usecs("12:49:37", 2000), usecs("12:49:38", 400)]
    second = [usecs("12:49:40", 6000), usecs("12:49:41", 2000), usecs("12:49:42", 400)]
    items = read_items(fmt, getppid_prints(fmt, [run, second]))
    assert any("per-interval: counts go down" in m for m in notices(items)), notices(items)
    assert [int(c.counts.sum()) for c in intervals(items)] == [6000, 2000, 400, 6000, 2000, 400]


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
def test_a_map_printed_twice_at_one_time_line_is_printed_at_that_time(fmt: type) -> None:
    """Real bpftrace: `interval:s:1 { time(); print(@usecs); print(@busecs); } interval:s:2 { print(@busecs); }`, both
    never cleared, over 9,000 getppid calls. @busecs's second print at a time line is the same moment: its columns end
    at the time lines as @usecs's do, and at the print at exit a second after the last (it got 7 columns, the last
    3 s after the last time line, as the second print opened a group a second later and swallowed the next time
    line)."""
    def both(stamp: str, n: int, again: bool = False) -> tuple[str, dict[str, tuple[int, int]]]:
        return stamp, {"@usecs": (1, n), "@busecs": (2, n)}
    run = [both("12:46:09", 2000), both("12:46:10", 4000), ("", {"@busecs": (2, 4000)}), both("12:46:11", 6000),
           both("12:46:12", 8000), ("", {"@busecs": (2, 8000)}), ("", {"@busecs": (2, 9000), "@usecs": (1, 9000)})]
    items = read_items(fmt, getppid_prints(fmt, [run], probes=3), unit="microsec")
    ends = {label: [c.end for c in intervals(items) if c.stream.label == label] for label in ("@usecs", "@busecs")}
    assert ends["@busecs"] == ends["@usecs"], notices(items)
    assert len(ends["@usecs"]) == 5 and ends["@usecs"][-1] - ends["@usecs"][-2] == 1.0
    assert [int(c.counts.sum()) for c in intervals(items) if c.stream.label == "@busecs"] == [2000] * 4 + [1000]
    assert not any("does not increase" in m or "backwards" in m for m in notices(items)), notices(items)


@pytest.mark.parametrize("fmt", [BpftraceTextFormat, BpftraceJsonFormat])
def test_time_lines_closer_than_their_second_do_not_swallow_the_next(fmt: type) -> None:
    """Real bpftrace: `interval:ms:500 { time(); print(@usecs); }`, never cleared, 3,000 calls: two prints stamped
    12:44:58. The second is at that time, not a second later where it swallowed the 12:44:59 time line (columns
    ran to 12:45:01 for a run that ended before 12:45:00)."""
    run = [usecs("12:44:58", 1000), usecs("12:44:58", 2000), usecs("12:44:59", 3000), usecs("", 3000)]
    cols = intervals(read_items(fmt, getppid_prints(fmt, [run])))
    assert [int(c.counts.sum()) for c in cols] == [1000, 2000, 0]
    assert [c.end - cols[0].end for c in cols] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(("rows", "log2"), [
    ([(0, 1), (1, 2), (2, 4), (4, 8), (1 << 30, 1 << 31)], True),  # hist(): [0], [1], [2, 4)...
    ([(4, 5), (5, 6), (8, 10), (14, 16), (16, 20)], True),  # hist(x, 2): 4 rows an octave
    ([(2, 3), (3, 4), (4, 5), (8, 10)], True),  # hist(x, 2): single values below 4
    ([(2, 4), (4, 6)], False),  # lhist(x, 0, 20, 2)
    ([(8, 10), (16, 32)], False), ([(10, 20)], False), ([(40, 50)], False), ([(0, 2)], False), ([(6, 10)], False),
])
def test_log2_layout_tells_hist_rows_from_lhist_rows(rows: list[tuple[int, int]], log2: bool) -> None:
    assert log2_layout(rows) is log2


@pytest.mark.parametrize(("rows", "linear"), [
    ([(2, 4), (4, 6)], True), ([(10, 20), (20, 30), (40, 50)], True), ([(0, 2), (2, 4)], True),
    ([(40, 50)], False), ([(0, 2)], False),  # one row alone: a mangled hist() row as likely
    ([(4, 8), (8, 17), (16, 32)], False),  # a hist() print with one row mangled: that row alone is skipped
    ([(8, 10), (16, 32)], False), ([(1, 2), (2, 4)], False), ([], False), ([(10, 20), (25, 35)], False),
    ([(1, 1), (0, 1)], False), ([(5, 3), (3, 1)], False),  # bounds that are no range
])
def test_lhist_layout_is_rows_of_one_width_on_one_grid_that_are_no_log2_layout(rows: list[tuple[int, int]],
                                                                                 linear: bool) -> None:
    assert lhist_layout(rows) is linear


@pytest.mark.parametrize(("low", "high", "slot"), [
    (0, 1, 0), (1, 2, 1), (2, 4, 2), (4, 5, 3), (6, 8, 3), (1 << 40, 1 << 41, 41),
    (0, 2, None), (10, 20, None), (40, 50, None), (6, 10, None), (5, 7, None), (4, 7, None), (3, 2, None),
])
def test_slot_of_range_takes_log2_buckets_and_their_aligned_power_of_two_parts(low: int, high: int,
                                                                                slot: int | None) -> None:
    """A row inside one power of two but of no width a hist() prints (lhist's [40, 50)) is no log2 bucket."""
    assert slot_of_range(low, high) == slot


@pytest.mark.parametrize(("line", "expected"), [
    ("[18:04:58]", ("tod", 18 * 3600 + 4 * 60 + 58)),  # argdist, dbstat, dbslower: print("[%s]" % strftime(...))
    ("  [18:04:58]  ", ("tod", 18 * 3600 + 4 * 60 + 58)),
    ("18:04:58  ", ("tod", 18 * 3600 + 4 * 60 + 58)),  # biolatency -T and most bcc tools: "%-8s\n"
    ("[2024-05-01 14:03:21]", ("date", (datetime(2024, 5, 1, 14, 3, 21) - datetime(1970, 1, 1)).total_seconds())),
    ("[1700000000]", None),  # a bpftrace row label cut short, not an epoch time line
    ("[18:04:58", None), ("18:04:58]", None), ("[[18:04:58]]", None),
])
def test_time_lines_in_brackets_are_read(line: str, expected: tuple[str, float] | None) -> None:
    assert parse_time_line(line) == expected
