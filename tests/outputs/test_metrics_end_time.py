"""`latencymap_interval_end_timestamp_seconds` is Unix time, as Prometheus reads a `_timestamp_seconds` gauge:
inputs whose times are not dates (PyLatencyMap's Oracle scripts: seconds since midnight) publish no 1970 time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from latencymap.cli.main import main
from latencymap.core.model import Interval, StreamId
from latencymap.outputs.metrics import END_HELP, MetricsServer

NAME = "latencymap_interval_end_timestamp_seconds"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DAY = 86_400.0


def families(text: str) -> dict[str, list]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def report(path: Path) -> str:
    result = CliRunner().invoke(main, ["report", "--format", "openmetrics", str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_time_of_day_input_has_no_end_timestamp_and_help_says_why() -> None:
    text = report(FIXTURES / "pylatencymap" / "example_latency_data.txt")  # ends at 52226.12 s after midnight
    got = families(text)
    assert got[NAME] == [] and len(got["latencymap_interval_seconds"]) == 1
    assert f"# HELP {NAME} {END_HELP}\n" in text and "not dates" in END_HELP and "Unix time" in END_HELP
    assert "52226" not in text


def test_an_input_timed_by_dates_has_its_end() -> None:
    got = families(report(FIXTURES / "hdrhistogram" / "service_ns.hlog"))
    assert [s.value for s in got[NAME]] == [1_700_000_012.0]


def interval(stream: StreamId, start: float, end: float) -> Interval:
    counts = np.zeros(64, dtype=np.int64)
    counts[5] = 3
    return Interval(stream, start, end, counts)


def served_ends(clock: float, *intervals: Interval) -> dict[str, float]:
    server = MetricsServer(0, clock=lambda: clock)
    try:
        for iv in intervals:
            server.update(iv)
        text = server.text()
    finally:
        server.close()
    return {s.labels["label"]: s.value for s in families(text)[NAME]}


def test_served_live_time_of_day_is_moved_to_today() -> None:
    """A PyLatencyMap Oracle script piped in live: its ends are the clock's time of day, so the whole days since the
    epoch are known (as the profiler knows them); a date-timed stream is as it is; seconds since a start are not."""
    today = 19_000 * DAY
    tod, dated, relative = StreamId("tod"), StreamId("dated"), StreamId("relative")
    got = served_ends(today + 52_226.5,
                      interval(tod, 52_223.0, 52_226.0), interval(tod, 52_226.0, 52_229.0),
                      interval(dated, today + 52_000.0, today + 52_001.0), interval(relative, 3_000.0, 3_001.0))
    assert got == {"tod": today + 52_229.0, "dated": today + 52_001.0}


def test_served_time_of_day_of_another_time_has_no_end() -> None:
    """A time-of-day file served now (hours off the clock's time of day): no day to give it."""
    assert served_ends(19_000 * DAY + 3 * 3600.0, interval(StreamId("tod"), 52_223.0, 52_226.0)) == {}
