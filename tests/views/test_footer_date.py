"""The plain footer's `date:` for sources that give no date text: the column's end, as a recording writes it, so a
replay of the recording draws the original view's frames byte for byte."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, StreamId
from latencymap.protocol.writer import format_record
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer, column_date, column_dates

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
S = StreamId("io", "bpf", "microsec")


def recorded_date(end: float) -> str:
    """The date text a recording writes for a column ending at `end` whose source gave none."""
    line = format_record(S, end, np.zeros(64, dtype=np.int64)).splitlines()[1]  # timestamp, microsec, N, DATE
    return line.split(", ", 3)[3]


def footer_date(intervals: list[Interval]) -> str:
    acc = Accumulator()
    acc.add(intervals)
    text = PlainRenderer(ViewOptions(color=False)).render(acc)
    m = re.search(r"date: (.*?)  skipped records", text)
    assert m is not None
    return m.group(1)


def interval(start: float, end: float, date: str = "") -> Interval:
    counts = np.zeros(64, dtype=np.int64)
    counts[10] = 5
    return Interval(S, start, end, counts, date=date)


def test_a_column_without_date_text_shows_its_end_as_a_recording_writes_it() -> None:
    end = 1_700_000_012.75
    assert footer_date([interval(1_700_000_011.75, end)]) == "2023-11-14 22:13:32 UTC" == recorded_date(end)
    # the source's own text is kept as it is
    assert footer_date([interval(1_700_000_011.75, end, date="14-NOV-23 10.13.32 PM")]) == "14-NOV-23 10.13.32 PM"


@pytest.mark.parametrize("end", [1_700_000_012.999999, 0.5, 52_226.0, -5.5, 253_402_300_799.9, 253_402_300_800.0,
                                 -30_610_224_000.0, -30_610_224_000.5, 3e11])
def test_dates_in_bulk_are_the_dates_one_at_a_time(end: float) -> None:
    """NumPy's dates (the bulk footer's) and `time.strftime`'s (the writer's) agree, also where NumPy cannot
    write them (years before 1000 or past 9999: one at a time)."""
    ivs = [interval(end - 1, end), interval(end - 1, end, date="theirs")]
    assert column_dates(ivs) == [column_date(end), "theirs"]
    assert column_date(end) == recorded_date(end)


@pytest.mark.parametrize("end", [math.nan, math.inf, 1e300])
def test_no_date_for_an_end_no_calendar_holds(end: float) -> None:
    assert column_date(end) == "" and column_dates([interval(0.0, end)]) == [""]


@pytest.mark.parametrize("name", ["hdrhistogram/service_ns.hlog", "pylatencymap/test_10046_tracefile.trc"])
@pytest.mark.parametrize("bulk", [False, True])
def test_replay_of_a_recording_draws_the_original_frames(tmp_path: Path, name: str, bulk: bool) -> None:
    """Frame by frame and in bulk (`--screen-delay 0`): the original view and the replay of its recording."""
    env = {**os.environ, "NO_COLOR": "1"}
    rec = tmp_path / "rec.zst"
    delay = ["--screen-delay", "0"] if bulk else ["--screen-delay", "1e-9"]

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True,
                              timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    original = run("--plain", *delay, "--record", str(rec), str(FIXTURES / name))
    replayed = run("replay", "--max", "--plain", *delay, str(rec))
    assert "date:  " not in original and re.search(r"date: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  ", original)
    assert replayed == original


def test_the_footer_follows_the_newest_column() -> None:
    ivs = [interval(1_700_000_000.0 + i, 1_700_000_001.0 + i) for i in range(3)]
    ivs[1] = dataclasses.replace(ivs[1], date="given")
    assert footer_date(ivs[:2]) == "given"
    assert footer_date(ivs) == "2023-11-14 22:13:23 UTC"
