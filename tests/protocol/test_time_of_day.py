"""Timestamps that are times of day (PyLatencyMap's Oracle scripts) roll over at midnight; a timestamp that does not
increase skips at most its own record."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from field_support import DAY_US, EXAMPLE, example_timestamps, midnight_shift, shifted_example
from formats_support import report_json

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice
from latencymap.protocol import ProtocolReader


def record(micros: int, counts: list[int], label: str = "x") -> str:
    rows = "".join(f"{1 << i}, {c}\n" for i, c in enumerate(counts))
    return f"<begin record>\ntimestamp, microsec, {micros}, d\nlabel, {label}\n{rows}<end record>\n"


def diffed(text: str, chunks: bool) -> list[Interval | Notice]:
    reader = ProtocolReader("t.txt")
    items = reader.read_chunks([text], runs=True) if chunks else reader.read(text.splitlines(True))
    return list(Differ(name="t.txt").run(items))


def both(text: str) -> list[Interval | Notice]:
    """What the line reader and the bulk reader give (the same, checked), diffed."""
    by_lines, in_bulk = diffed(text, False), diffed(text, True)
    assert [_key(i) for i in in_bulk] == [_key(i) for i in by_lines]
    return by_lines


def _key(item: Interval | Notice) -> tuple[Any, ...]:
    if isinstance(item, Notice):
        return ("notice", item.message, item.skipped)
    return (item.stream, item.start, item.end, item.counts.tolist(), item.reset, item.duration)


def test_the_oracle_sample_run_past_midnight_keeps_every_record(tmp_path: Path) -> None:
    shifted = tmp_path / "overnight.txt"
    shifted.write_text(shifted_example(midnight_shift(30)))
    assert "timestamp, microsec, 1" in shifted.read_text()  # really past midnight: small values after large ones
    base, report = report_json(EXAMPLE), report_json(shifted)
    (before,), (after,) = base["streams"], report["streams"]
    assert after["columns"] == before["columns"] == len(example_timestamps()) - 1
    assert after["total"]["events"] == before["total"]["events"]
    assert np.allclose(after["frequency"], before["frequency"]) and np.allclose(after["intensity"], before["intensity"])
    assert after["end"] - after["start"] == before["end"] - before["start"]
    assert report["errors"]["skipped_records"] == 0
    said = [m for m in report["errors"]["messages"] if "midnight" in m]
    assert len(said) == 1 and "overnight.txt" in said[0] and "line 1111" in said[0]


def test_both_readers_roll_over_alike_and_say_so_once() -> None:
    text = shifted_example(midnight_shift(30))
    items = both(text)
    assert len([i for i in items if isinstance(i, Interval)]) == 71
    notes = [i for i in items if isinstance(i, Notice) and "midnight" in i.message]
    assert len(notes) == 1 and notes[0].skipped == 0 and "a day (86400 s) added" in notes[0].message
    assert sum(i.skipped for i in items if isinstance(i, Notice)) == 0


def test_every_midnight_of_a_long_capture_adds_a_day() -> None:
    """Records every 20 minutes for 50 hours, as a time of day: two midnights."""
    start = 22 * 3_600_000_000
    stamps = [start + k * 1_200_000_000 for k in range(150)]
    text = "".join(record(t % DAY_US, [k, 2 * k]) for k, t in enumerate(stamps))
    items = both(text)
    intervals = [i for i in items if isinstance(i, Interval)]
    assert len(intervals) == 149
    assert [iv.end for iv in intervals] == [t / 1e6 for t in stamps[1:]]
    assert sum(int(iv.counts[1:3].sum()) for iv in intervals) == 3 * 149
    assert len([i for i in items if isinstance(i, Notice)]) == 1


def test_a_clock_stepped_back_skips_one_record_and_the_stream_goes_on() -> None:
    """Not a day: a writer whose clock went back an hour. Only the record at the step is lost, and counted."""
    hour, start = 3_600_000_000, 50_000_000_000
    stamps = [start + k * 1_000_000 for k in range(5)] + [start - hour + k * 1_000_000 for k in range(5)]
    text = "".join(record(t, [10 * k]) for k, t in enumerate(stamps))
    items = both(text)
    intervals = [i for i in items if isinstance(i, Interval)]
    notes = [i for i in items if isinstance(i, Notice)]
    assert len(intervals) == 8 and [n.skipped for n in notes] == [1, 0]
    assert "does not increase" in notes[0].message and "line 26" in notes[0].message
    assert [int(iv.counts[1]) for iv in intervals] == [10] * 8  # 10 per record; the step's 10 is the one lost


def test_a_clock_stepped_back_keeps_the_stream_in_time_order_and_says_by_how_much() -> None:
    """The columns after the step were put an hour in the past, in the same stream: `report` said "8 intervals over
    -59.9min", and a recording of it, read again, showed them apart as another run. They follow on now, said."""
    hour, start = 3_600_000_000, 50_000_000_000
    stamps = [start + k * 1_000_000 for k in range(5)] + [start - hour + k * 1_000_000 for k in range(5)]
    items = both("".join(record(t, [10 * k]) for k, t in enumerate(stamps)))
    intervals = [i for i in items if isinstance(i, Interval)]
    # the step's record is placed at the time of the one before it (its column lost), the later ones as far after
    assert [iv.end for iv in intervals] == [(start + k * 1_000_000) / 1e6 for k in range(1, 9)]
    assert intervals[4].start == (start + 4_000_000) / 1e6
    (step,) = [n for n in items if isinstance(n, Notice) and "clock went back" in n.message]
    assert step.skipped == 0 and "line 26" in step.message
    assert "went back 1h (timestamp 46400.000000 after 50004.000000)" in step.message
    assert "not another run" in step.message and "timestamps +1h)" in step.message


def test_a_stale_or_repeated_record_is_skipped_without_counting_twice() -> None:
    """A record repeated (same time) or an old one sent again: skipped and counted; the next is diffed as before."""
    text = (record(1_000_000, [10]) + record(2_000_000, [20]) + record(2_000_000, [20]) + record(1_000_000, [10])
            + record(3_000_000, [30]) + record(4_000_000, [40]))
    items = both(text)
    intervals = [i for i in items if isinstance(i, Interval)]
    assert [(iv.start, iv.end, int(iv.counts[1])) for iv in intervals] == [(1.0, 2.0, 10), (2.0, 3.0, 10),
                                                                           (3.0, 4.0, 10)]
    assert sum(i.skipped for i in items if isinstance(i, Notice)) == 2


def test_times_of_day_beyond_a_day_or_a_big_jump_are_not_rollovers() -> None:
    """Epoch timestamps never roll over; a drop of only half a day is a step back, not midnight."""
    day = DAY_US
    epoch = 1_700_000_000_000_000
    items = both(record(epoch, [1]) + record(epoch - day + 1_000_000, [2]) + record(epoch - day + 2_000_000, [3]))
    assert not any("midnight" in i.message for i in items if isinstance(i, Notice))
    items = both(record(day - 1_000_000, [1]) + record(day // 2 - 1_000_000, [2]) + record(day // 2, [3]))
    assert not any("midnight" in i.message for i in items if isinstance(i, Notice))
    assert sum(i.skipped for i in items if isinstance(i, Notice)) == 1


def test_times_past_2_53_microseconds_that_collapse_as_seconds_skip_their_record_not_the_stream() -> None:
    """Past 2**53 µs two timestamps a microsecond apart are the same float second: no zero-length interval, a notice."""
    base = 179_573_931_505_908_080  # about 5,700 years of microseconds: seconds keep about 30 µs of precision
    assert base / 1e6 == (base + 1) / 1e6
    cumulative = record(base, [1]) + record(base + 1, [2]) + record(base + 100_000_000, [5])
    items = both(cumulative)
    intervals = [i for i in items if isinstance(i, Interval)]
    assert [(iv.end > iv.start, int(iv.counts.sum())) for iv in intervals] == [(True, 4)]
    assert any(isinstance(i, Notice) and "does not increase" in i.message for i in items)
    per_interval = (f"<begin record>\ntimestamp, microsec, {base + 1}, d\ncounts, interval\nstart, microsec, {base}\n"
                    "label, x\n1, 3\n<end record>\n")
    items = both(per_interval)
    assert not [i for i in items if isinstance(i, Interval)]
    assert any(isinstance(i, Notice) and "no microsecond precision" in i.message for i in items)


def test_a_cumulative_run_joined_to_itself_is_shown_apart_never_counted_twice() -> None:
    """`cat capture.txt capture.txt`: the second copy goes back past the first one's records, its counters lower: not
    a clock step but another run, shown apart from its first record on (a baseline, so none of its columns is lost)."""
    once = "".join(record(1_000_000 * (k + 1), [10 * k]) for k in range(6))
    items = both(once + once)
    intervals = [i for i in items if isinstance(i, Interval)]
    labels = [iv.stream.label for iv in intervals]
    assert labels == ["x"] * 5 + ["x [t.txt, from line 31]"] * 5
    assert [int(iv.counts[1]) for iv in intervals] == [10] * 10
    assert [(iv.start, iv.end) for iv in intervals[5:]] == [(iv.start, iv.end) for iv in intervals[:5]]
    (note,) = [i for i in items if isinstance(i, Notice)]  # line 31's record is no record skipped: a baseline
    assert note.skipped == 0
    assert note.message.startswith("t.txt: line 36: 'x' goes back into the time of its earlier records")
    assert "counters lower): another run (the record at line 31 is its baseline), shown apart, as " \
           "'x [t.txt, from line 31]'" in note.message


def test_a_capture_across_midnight_joined_to_itself_is_another_run_not_a_day_later() -> None:
    """`cat mid.txt mid.txt`, times of day 23:59:57 to 00:00:02: the second copy's 23:59:57 took the day the first
    copy's midnight added, and read as a day later (11 intervals over 1 day, a silence of a day)."""
    once = "".join(record((86_397 + k) * 1_000_000 % 86_400_000_000, [10 * k]) for k in range(6))
    items = both(once + once)
    intervals = [i for i in items if isinstance(i, Interval)]
    assert [iv.stream.label for iv in intervals] == ["x"] * 5 + ["x [t.txt, from line 31]"] * 5
    assert [iv.end - iv.start for iv in intervals] == [1.0] * 10
    assert [(iv.start, iv.end) for iv in intervals[5:]] == [(iv.start, iv.end) for iv in intervals[:5]]


def test_a_capture_that_pauses_half_a_day_after_midnight_goes_on_in_the_next_day() -> None:
    """23:59:55 to 00:00:05, then 13:00:00 on: the 13:00 record was taken for one before that midnight (a capture
    joined to itself) and skipped, and its column made a day long."""
    times = [86_395 + k for k in range(11)] + [46_800 + k for k in range(5)]
    items = both("".join(record(t % 86_400 * 1_000_000, [10 * k]) for k, t in enumerate(times)))
    intervals = [i for i in items if isinstance(i, Interval)]
    assert len(intervals) == 15 and sum(int(iv.counts[1]) for iv in intervals) == 150
    assert intervals[10].end - intervals[10].start == 46_800 + 86_400 - 86_405
    assert not [i for i in items if isinstance(i, Notice) and i.skipped]


def test_a_capture_across_midnight_that_resumes_the_next_evening_goes_on_there() -> None:
    """23:59:50 to 00:00:10, then 23:59:55 the next day, counters going on up: it was taken for the capture joined to
    itself, a record skipped, a column put in the past and one of 24 h."""
    times = [86_390 + k for k in range(21)] + [86_395 + k for k in range(5)]
    items = both("".join(record(t % 86_400 * 1_000_000, [10 * k]) for k, t in enumerate(times)))
    intervals = [i for i in items if isinstance(i, Interval)]
    assert len(intervals) == 25 and not [i for i in items if isinstance(i, Notice) and i.skipped]
    assert [iv.start < iv.end for iv in intervals] == [True] * 25
    assert intervals[20].end - intervals[20].start == 86_400 + 86_395 - 86_410
    assert all(a.end == b.start for a, b in pairwise(intervals))


def test_runs_of_one_stream_past_the_most_shown_apart_are_skipped_and_counted() -> None:
    from latencymap.core.deltas import MAX_RUNS

    once = "".join(record(1_000_000 * (k + 1), [10 * k]) for k in range(3))
    items = both(once * (MAX_RUNS + 3))
    labels = {i.stream.label for i in items if isinstance(i, Interval)}
    assert len(labels) == MAX_RUNS + 1  # the first run and MAX_RUNS shown apart
    skipped = [n for n in items if isinstance(n, Notice) and "runs of it are shown apart already" in n.message]
    assert len(skipped) == 4 and all(n.skipped == 1 and "t.txt: line " in n.message for n in skipped)


def test_a_run_without_events_joined_to_itself_is_shown_apart_and_a_clock_step_is_not() -> None:
    """Counters that never move cannot tell a run read again from a clock step: going back to (or before) the
    stream's first record can; a smaller step back with counters going on up stays one column lost."""
    once = "".join(record(1_000_000 * (k + 1), [5]) for k in range(4))
    labels = [i.stream.label for i in both(once + once) if isinstance(i, Interval)]
    assert labels == ["x"] * 3 + ["x [t.txt, from line 21]"] * 3
    seconds = [1, 2, 3, 4, 5, 2.5, 3.5, 4.5, 6, 7]
    items = both("".join(record(int(t * 1_000_000), [10 * k]) for k, t in enumerate(seconds)))
    intervals = [i for i in items if isinstance(i, Interval)]
    assert {iv.stream.label for iv in intervals} == {"x"} and len(intervals) == 8
    assert [n.skipped for n in items if isinstance(n, Notice)] == [1, 0]
    # the step's record is placed at the time of the one before it, and the stream's later ones as far after it
    assert [iv.end for iv in intervals] == [2, 3, 4, 5, 6, 7, 8.5, 9.5]
