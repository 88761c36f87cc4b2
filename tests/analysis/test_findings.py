"""Findings' wording of times and durations: human units at every scale."""

from __future__ import annotations

from latencymap.analysis.findings import Scope, dur, since, span


def test_times_since_the_start_stay_in_seconds_below_1000_then_use_minutes_hours_days() -> None:
    assert [since(x) for x in (0.0, 2.011, 40.0, 999.0)] == ["0s", "2.011s", "40s", "999s"]
    assert since(18_000.0) == "5h" and since(3 * 86_400.0) == "3 days"
    when = Scope(0, 10, 0.0, 1e6, 0.0, 10.0, 1.0).when(3, 3, 172_800.0, 172_801.0)
    assert when == "col 3 (t+2 days–t+2 days)" and "e+" not in when


def test_durations_past_a_minute_read_in_minutes_hours_days_never_bare_seconds() -> None:
    assert dur(1e7) == "116 days" and span(537.0, 17_592_186.0) == "8.95min–204 days"
    assert dur(0.000131) == "131µs" and dur(2.05) == "2.05s"
