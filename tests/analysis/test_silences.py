"""Silences: a continuous stream with no events for a while is said, with when; bursty streams' idle time is not."""

from __future__ import annotations

import numpy as np

from latencymap.analysis.diagnosis import diagnose
from latencymap.analysis.silences import find_silences
from latencymap.core.buckets import bounds_seconds

LOW, HIGH = bounds_seconds("bpf", "microsec")
T0 = 1_700_000_000.0


def columns(rates: list[float], seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Poisson counts at `rates` events per 1 s column in slot 10, and the columns' starts and ends."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((len(rates), 64))
    counts[:, 10] = rng.poisson(rates)
    starts = T0 + np.arange(len(rates), dtype=np.float64)
    return counts, starts, starts + 1.0


def test_a_minute_without_events_in_a_steady_stream_is_a_silence() -> None:
    counts, starts, ends = columns([200.0] * 30 + [0.0] * 60 + [200.0] * 30)
    (q,) = find_silences(counts, starts, ends)
    assert (q.first_col, q.last_col, q.events) == (30, 89, 0.0)
    assert abs(q.usual_rate - 200) < 10 and abs(q.expected - 12_000) < 600
    d = diagnose(counts, None, LOW, HIGH, starts, ends)
    (f,) = [f for f in d.findings if f.kind == "silence"]
    assert f.what.startswith("silence cols 30–89 (t+30s–t+90s): no events in 1min where the usual")
    assert "the incident" in f.why


def test_one_long_column_where_the_records_stopped_is_a_silence() -> None:
    counts, starts, ends = columns([200.0] * 60)
    ends = ends.copy()
    ends[30:] += 60.0  # column 30 spans 61 s: nothing came between t+30s and t+91s but its 200 events
    starts = np.r_[starts[:31], starts[31:] + 60.0]
    (q,) = find_silences(counts, starts, ends)
    assert (q.first_col, q.last_col) == (30, 30) and q.expected > 10_000


def test_no_silence_in_gaps_bursty_streams_or_a_chance_dip() -> None:
    counts, starts, ends = columns([200.0] * 30 + [0.0] * 10 + [200.0] * 30)
    gaps = np.zeros(70, dtype=bool)
    gaps[30:40] = True  # data missing, said as gaps
    assert find_silences(counts, starts, ends, gaps) == []
    bursty = [300.0 if j % 10 == 0 else 0.0 for j in range(100)]  # a cron job: idle seconds are its nature
    assert find_silences(*columns(bursty)) == []
    assert find_silences(*columns([3.0] * 100)) == []  # a sparse stream's empty seconds are chance


def test_a_silence_at_the_end_is_the_work_ending_not_an_incident() -> None:
    counts, starts, ends = columns([200.0] * 50 + [0.0] * 10)
    d = diagnose(counts, None, LOW, HIGH, starts, ends)
    (f,) = [f for f in d.findings if f.kind == "silence"]
    assert "the work ended" in f.why and (f.first_col, f.last_col) == (50, 59)


def counted(per_column: list[float], seconds: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exactly `per_column` events in slot 10 of columns `seconds` long."""
    counts = np.zeros((len(per_column), 64))
    counts[:, 10] = per_column
    starts = T0 + seconds * np.arange(len(per_column), dtype=np.float64)
    return counts, starts, starts + seconds


def test_the_usual_rate_rests_on_20_events_outside_the_run() -> None:
    """4 a second usually, then 5 s without: 20 missing either way; 20 events outside say so, 19 do not."""
    (q,) = find_silences(*counted([4, 4, 4, 0, 0, 0, 0, 0, 4, 4]))
    assert (q.first_col, q.last_col, q.expected) == (3, 7, 20.0)
    assert find_silences(*counted([4, 4, 3, 0, 0, 0, 0, 0, 4, 4])) == []  # median still 4/s: 20 expected, 19 seen


def test_the_usual_rate_is_the_median_of_5_columns_with_events_outside_the_run() -> None:
    """5 a second in 5 columns is a usual rate; in 4 (20 events, 25 missing) it is those columns' own accident."""
    (q,) = find_silences(*counted([5, 5, 0, 0, 0, 0, 0, 5, 5, 5]))
    assert (q.first_col, q.last_col, q.expected) == (2, 6, 25.0)
    assert find_silences(*counted([5, 5, 0, 0, 0, 0, 0, 5, 5])) == []


def test_an_application_of_4_tasks_has_no_usual_rate_and_no_silence() -> None:
    """The real 4-task PySpark app (10 ms columns): stage 0's two tasks end in col 0, stage 1's two (running all
    along) in col 24. "No events in 230ms where the usual 200/s would give 46" came from 2 events in one column."""
    counts, starts, ends = counted([2] + [0] * 23 + [2], seconds=0.01)
    assert find_silences(counts, starts, ends) == []
    d = diagnose(counts, None, LOW, HIGH, starts, ends, datasource="spark")
    assert d.silences == [] and not any(f.kind == "silence" for f in d.findings)
