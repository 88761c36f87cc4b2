"""Durations on the TUI's screens as the report writes them (`format_duration`'s long units, `fit_duration` where a
column is narrow): a stream of days reads `9.86 days`, not `851904s`, in the header, the overview, the inspector, the
percentile strip and the stragglers panel; short ones keep their µs, ms and s."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from skips_support import requires_binary
from tmux_support import Pane
from tui_support import ranks, run_ended

from latencymap.core.model import Interval, StreamId
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.overview import OverviewScreen
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.status import status_text
from latencymap.tui.stragglers import stage_line, straggler_line

#: A duration in raw seconds past a minute (`851904s`, `3.6e+03s`): what the screens wrote before.
RAW_SECONDS = re.compile(r"(?<![\w.])(\d{3,}|\d[\d.]*e\+\d+)s\b")


def hourly(label: str, unit: str, slot: int, columns: int = 6) -> list[Interval]:
    """`label` (bpf, `unit`): hour-long columns of events in slots `slot`..`slot` + 2."""
    out = []
    for k in range(columns):
        counts = np.zeros(64, dtype=np.int64)
        counts[slot: slot + 3] = (5, 9, 3 + k)
        out.append(Interval(StreamId(label, "bpf", unit), 1_700_000_000.0 + 3600 * k, 1_700_003_600.0 + 3600 * k,
                            counts))
    return out


def days() -> list[Interval]:
    """`jobs/queue-wait` (ms): waits of 6 to 50 days."""
    return hourly("jobs/queue-wait", "millisec", 29)


def header(items: list[Interval]) -> list[str]:
    from latencymap.core.accumulator import Accumulator

    acc = Accumulator()
    acc.add(items)
    hist = next(iter(acc.streams.values()))
    return status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1, ingest_rate=0).plain \
        .splitlines()


def test_header_writes_a_stream_of_days_in_days_and_short_ones_as_before() -> None:
    """The header read `interval 3.6e+03s  mean 1013158s  p50 851904s  p99 2104467s`."""
    first, numbers = header(days())
    assert "interval 1h" in first
    assert "mean 11.7 days  p50 9.86 days  p99 24.4 days" in numbers
    assert "overall" in numbers and "mean 10.8 days  p50 8.96 days  p99 24.3 days" in numbers  # as the report
    assert not RAW_SECONDS.search(first + numbers), (first, numbers)
    first, numbers = header(ranks(streams=1))
    assert "interval 1s" in first
    assert "mean 1.87ms  p50 1.56ms  p99 4.02ms" in numbers and "mean 1.8ms  p50 1.47ms  p99 4.01ms" in numbers


def test_overview_and_stream_screens_of_days_write_days(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The overview's numbers and scale, then the stream's header, inspector and percentile strip, as saved."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter([*days(), *hourly("disk/io", "microsec", 10)]), color_mode="mono")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("s")
        await pilot.pause()
        text = app.saved[-1].read_text()
        line = next(t for t in text.splitlines() if "jobs/queue-wait" in t)
        assert re.search(r"\d days +\d+(\.\d)? days +\d+(\.\d)? days +\d[\d,]* days\s", line), line
        fast_line = next(t for t in text.splitlines() if "disk/io" in t)
        assert re.search(r"\dms +\d[\d.]*ms +\d[\d.]*ms +\d[\d.]*ms", fast_line), fast_line  # short: as before
        assert re.search(r"one scale for all streams: [\d.]+ms … [\d.]+ days", text), text
        assert not RAW_SECONDS.search(text), text
        await pilot.press("home", "enter")
        await pilot.pause(0.4)
        if not app.query_one(PercentileStrip).display:
            await pilot.press("p")
            await pilot.pause(0.4)
        await pilot.press("s")
        await pilot.pause()
        text = app.saved[-1].read_text()
        assert "interval 1h" in text and "p99 24.4 days" in text, text
        assert re.search(r"mean [\d.]+ days\n", text) and re.search(r"p50 [\d.]+ days  p90 [\d.]+ days", text), text
        assert re.search(r"▲ p99 [\d.]+ days", text) and re.search(r"▲ p50 [\d.]+ days", text), text
        assert not RAW_SECONDS.search(text), text

    run_ended(app, scenario, size=(160, 50))


def test_straggler_and_stage_lines_of_hour_long_tasks_read_as_the_report() -> None:
    """A Spark task of 2 hours against a median of 10 minutes read `2h, 12.0× the stage median (10min)`."""
    line = straggler_line({"index": 5, "task_id": 9, "stage": 2, "duration_s": 7200.0, "reference_s": 600.0,
                           "reference": "median", "stage_median_s": 600.0, "ratio": 12.0})
    assert line == "task 5 (id 9) in stage 2.0: 2h, 12.0× the stage median (10min)"
    stage = stage_line({"stage": 2, "tasks": 40, "median_s": 600.0, "max_s": 3 * 86400.0, "skew": 432.0})
    assert stage == "stage 2.0: 40 tasks, median 10min, max 3 days, skew 432.0×"
    short = straggler_line({"index": 5, "task_id": 9, "stage": 2, "duration_s": 2.55, "reference_s": 0.34,
                            "reference": "median", "stage_median_s": 0.34, "ratio": 7.5})
    assert short == "task 5 (id 9) in stage 2.0: 2.55s, 7.5× the stage median (340ms)"


RECORD = """<begin record>
timestamp, microsec, {t}, t
latencyunit, millisec
label, {label}
datasource, bpf
{lines}
<end record>
"""


@pytest.mark.slow
@requires_binary("tmux", remedy="apt-get install tmux (.ci/install-system.sh)")
def test_a_record_file_of_days_in_a_real_terminal(tmp_path: Path) -> None:
    """Records in ms of hour-long intervals whose waits last days: the overview and the stream's header in tmux."""
    records = []
    for k in range(8):
        for label, base in (("jobs/queue-wait", 26), ("jobs/run-time", 30)):
            lines = "\n".join(f"{1 << (base + j)}, {(k + 1) * (5 + 3 * j)}" for j in range(4))
            records.append(RECORD.format(t=(1_700_000_000 + 3600 * k) * 1_000_000, label=label, lines=lines))
    path = tmp_path / "days.txt"
    path.write_text("".join(records))
    pane = Pane(f"TZ=UTC TERM=xterm-256color COLORTERM=truecolor {shlex.quote(sys.executable)} -m latencymap "
                f"{shlex.quote(str(path))}", size=(160, 30))
    try:
        screen = pane.wait_for("OVERVIEW · ENDED")
        line = next(t for t in screen.splitlines() if "jobs/run-time" in t)
        assert re.search(r"days +[\d.]+ days +[\d.]+ days +[\d,]+(d| days) +-$", line.rstrip()), screen
        assert " days" in next(t for t in screen.splitlines() if "one scale" in t), screen
        assert not RAW_SECONDS.search(screen), screen
        pane.keys("Enter")
        screen = pane.wait_for("Frequency: events per second")
        head = "\n".join(screen.splitlines()[:2])
        assert "interval 1h" in head and re.search(r"p99 [\d.]+ days", head), head
        assert not RAW_SECONDS.search(screen), screen
        pane.keys("q")
        pane.wait_for("EXIT=0")
    finally:
        pane.close()


@pytest.mark.parametrize(("label", "datasource", "title"), [
    ("spark app task gc", "spark", "Intensity: GC time per second (s/s)"),
    ("spark app", "spark", "Intensity: task time per second (s/s)"),
    ("sda", "bpf", "Intensity: time waited per second (s/s)"),
])
def test_the_intensity_maps_title_says_what_its_streams_time_is(label: str, datasource: str, title: str) -> None:
    """A Spark stream of GC time summed per second is no time waited: its map's title said so whatever the stream."""
    items = [Interval(StreamId(label, datasource, "millisec"), i.start, i.end, i.counts) for i in hourly("x", "ms", 3)]
    app = LatencyMapApp(iter(items), color_mode="truecolor")
    seen: list[str] = []

    async def scenario(pilot) -> None:
        seen.extend(app.query_one("#intensity").plain_lines()[:1])

    run_ended(app, scenario)
    assert seen and seen[0].strip().startswith(title), seen
