"""The TUI's ingest rate: items per second, steady for a slow producer, quick to follow a fast one."""

from __future__ import annotations

import pytest

from latencymap.tui.ingest import RATE_WINDOW_S, Rate


def rates(every: float, seconds: float, tick: float = 0.25, burst: int = 1) -> list[float]:
    """The rate shown at each of the UI's drains (every `tick` s) while `burst` items arrive every `every` s."""
    rate = Rate(0.0)
    shown = []
    due = every
    for k in range(1, int(seconds / tick) + 1):
        now = k * tick
        arrived = 0
        while due <= now:
            arrived += burst
            due += every
        rate.add(arrived, now)
        shown.append(rate.value(now))
    return shown


def test_one_record_every_two_seconds_reads_half_a_record_a_second() -> None:
    """Measured over 1 s windows, the header read `ingest 0/s` and `1/s` in turn."""
    settled = rates(2.0, 60.0)[int(RATE_WINDOW_S / 0.25):]
    assert all(0.4 <= r <= 0.6 for r in settled), sorted(set(settled))


def test_a_fast_producer_is_measured_over_the_last_second() -> None:
    shown = rates(0.25, 30.0, burst=250)  # 1,000 a second, then it doubles
    assert shown[-1] == pytest.approx(1000)
    rate = Rate(0.0)
    for k in range(1, 41):
        rate.add(250 if k <= 20 else 500, k * 0.25)
    assert rate.value(10.0) == pytest.approx(2000)  # a second after the change, the new rate


def test_a_producer_gone_quiet_reads_zero_within_the_window() -> None:
    rate = Rate(0.0)
    for k in range(1, 21):
        rate.add(1, k * 0.5)
    assert rate.value(10.0) > 1 and rate.value(10.0 + RATE_WINDOW_S + 0.5) == 0
