from __future__ import annotations

import pytest

from latencymap.core.units import format_duration, format_number, normalize_unit, unit_seconds


@pytest.mark.parametrize(("name", "canon"), [("ms", "millisec"), ("USEC", "microsec"), ("µs", "microsec"),
                                             ("nanosec", "nanosec"), ("s", "sec")])
def test_normalize_unit(name: str, canon: str) -> None:
    assert normalize_unit(name) == canon


def test_unknown_unit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown latency unit 'fortnights'"):
        normalize_unit("fortnights")


def test_conversions_and_human_forms() -> None:
    assert unit_seconds("microsec") == 1e-6
    assert format_duration(128e-6) == "128µs"
    assert format_duration(1.5e-3) == "1.5ms"
    assert format_duration(0) == "0"
    assert format_duration(750e-9) == "750ns"
    assert format_number(1500) == "1.5k"


@pytest.mark.parametrize(("seconds", "text"), [
    (59, "59s"), (60, "1min"), (1074, "17.9min"), (3600, "1h"), (27840, "7.73h"), (86400, "1 day"),
    (1.5 * 86400, "1.5 days"), (1e7, "116 days"), (17592186, "204 days"), (1.8e10, "208,333 days"), (-120, "-2min"),
    (1.267e-05, "12.7µs"), (0.0002481, "248µs"), (0.007225, "7.22ms"), (0, "0"),
])
def test_long_units_write_minutes_hours_and_days(seconds: float, text: str) -> None:
    """Durations of a minute or more read in minutes, hours and days, not `10001000s`; shorter ones as before."""
    assert format_duration(seconds, long_units=True) == text


def test_without_long_units_seconds_stay_seconds() -> None:
    """The default is what the views' bulk formatter (views/numbers.py) reproduces: seconds past a minute."""
    assert format_duration(27840) == "27840s" and format_duration(1074) == "1074s"
