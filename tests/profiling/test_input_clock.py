"""Samples are timed by the wall clock, columns by their input: a live input timed by its own clock (epoch or time
of day) gets its samples; one of another time (an old file, a replayed recording) says so once, with real py-spy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from profiling_support import needs_pyspy, phase_child, phase_of, phases_log, profiled_stream

from latencymap.cli.common import REGISTRY
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.flow.recording import Recorder
from latencymap.profiling.clock import DAY_S, LIVE_SLACK_S, InputClock, judge
from latencymap.profiling.session import profile_session

NOW = 1_800_000_000.0
T0 = 1_700_000_000.0  # 2023-11-14


def latencymap(*args: str | Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TZ": "UTC"}, **kw)


def test_columns_ending_about_now_take_samples_as_they_are() -> None:
    for lag in (0.0, 2.5, -1.0, LIVE_SLACK_S):
        assert judge(NOW - lag, NOW).shift == 0.0 and judge(NOW - lag, NOW).not_now is None


def test_times_of_day_take_samples_moved_back_to_the_epochs_day() -> None:
    midnight = NOW - NOW % DAY_S
    verdict = judge(NOW - midnight - 1.5, NOW)  # microseconds since midnight UTC, 1.5 s late
    assert verdict.not_now is None and verdict.shift == -midnight
    rolled = judge(NOW - midnight + DAY_S - 1.5, NOW)  # a day added at a midnight the stream passed
    assert rolled.not_now is None and rolled.shift == -(midnight - DAY_S)


def test_columns_of_another_time_are_said_to_be_so() -> None:
    old = judge(T0, NOW).not_now
    assert old is not None and "1157.4 days before the clock" in old and old.endswith("profiling stopped")
    assert "after the clock" in (judge(NOW + 3600, NOW).not_now or "")
    of_day = judge(12 * 3600.0, NOW - NOW % DAY_S + 18 * 3600)  # 12:00 read at 18:00
    assert of_day.not_now is not None and "12:00:00 UTC, a time of day" in of_day.not_now


def test_only_the_first_column_is_judged() -> None:
    clock = InputClock(lambda: NOW)
    assert clock.first_column(T0) is not None and clock.first_column(NOW) is None
    assert clock.verdict is not None and clock.verdict.not_now is not None


def old_recording(path: Path) -> Path:
    rec = Recorder(str(path))
    for k in range(5):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[10] = k + 1
        rec.write(Interval(StreamId("s", "bpf", "microsec"), T0 + k, T0 + k + 1, counts))
    rec.close()
    return path


def time_of_day_copy(example: Path, path: Path) -> tuple[Path, str]:
    """The example (microseconds since midnight) moved to half a day from now's time of day, a file that cannot be
    live whenever the test runs, and its first column's end as the message gives it."""
    stamps = [int(line.split(",")[2]) for line in example.read_text().splitlines() if line.startswith("timestamp,")]
    offset_us = int((time.time() + DAY_S / 2) % DAY_S * 1e6) - stamps[0]
    lines = []
    for line in example.read_text().splitlines(keepends=True):
        if line.startswith("timestamp,"):
            head, unit, stamp, tail = line.split(",", 3)
            line = f"{head},{unit}, {int(stamp) + offset_us},{tail}"
        lines.append(line)
    path.write_text("".join(lines))
    return path, time.strftime("%H:%M:%S", time.gmtime((stamps[1] + offset_us) / 1e6 % DAY_S))


@needs_pyspy
@pytest.mark.slow
def test_an_old_file_or_recording_says_once_that_samples_taken_now_cannot_be_attached(example_data: Path,
                                                                                     tmp_path: Path) -> None:
    old = old_recording(tmp_path / "old.zst")
    said = ("latencymap: profile: the input's columns are not timed by the present (its first column ends at {}: a "
            "recording or file of another time), so samples taken now cannot be attached to them; profiling stopped")
    with phase_child(tmp_path / "log", seconds=0.5) as child:
        replayed = latencymap("replay", "--max", "--plain", "--once", "--profile", child.pid, old)
        of_day, ends = time_of_day_copy(example_data, tmp_path / "of_day.txt")  # microseconds since midnight
        read = latencymap("--plain", "--once", "--profile", child.pid, of_day)
    age = (time.time() - (T0 + 1)) / DAY_S
    assert replayed.returncode == 0 and "Frequency heat map" in replayed.stdout
    (line,) = [line for line in replayed.stderr.splitlines() if "profile:" in line]
    assert line == said.format(f"2023-11-14 22:13:21, {age:.1f} days before the clock")
    assert read.returncode == 0
    (line,) = [line for line in read.stderr.splitlines() if "profile:" in line]
    assert line == said.format(f"{ends} UTC, a time of day")


@needs_pyspy
@pytest.mark.slow
def test_a_live_input_timed_by_the_time_of_day_gets_every_sample_in_its_columns(tmp_path: Path) -> None:
    rec, log, done = profiled_stream(tmp_path, 11, "timeofday")  # stamped as PyLatencyMap's Oracle scripts do
    assert done.returncode == 0 and "profile:" not in done.stderr, done.stderr
    intervals = [i for i in input_flow([str(rec)], REGISTRY) if isinstance(i, Interval)]
    assert len(intervals) == 10 and all(0 <= iv.end < 2 * DAY_S for iv in intervals)  # times of day
    phases = phases_log(log)
    days = round((phases[-1][1] - intervals[-1].end) / DAY_S) * DAY_S
    with profile_session({}, [str(rec)]) as session:
        assert session is not None
        store = session.store
        span = store.span()
        assert span is not None and span[1] < 2 * DAY_S  # on the columns' time, not the epoch's
        inside = [iv for iv in intervals if span[0] <= iv.start and iv.end <= span[1]]
        assert len(inside) >= 6
        for iv in inside:
            assert 35 <= store.count(iv.start, iv.end) <= 65  # ≈ 0.5 s × 100 Hz: no gaps, no doubles
        pairs = [(phase_of(phases, iv.start + days, iv.end + days), store.functions(iv.start, iv.end)[0].function)
                 for iv in inside]
    pairs = [(expected, top.split(" ")[0]) for expected, top in pairs if expected is not None]
    assert len(pairs) >= 3 and all(expected == top for expected, top in pairs), pairs
