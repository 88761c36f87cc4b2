from __future__ import annotations

import math

import pytest

from latencymap.core.units import fit_duration, format_duration, format_number, normalize_unit, plural, unit_seconds


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
    (8.64e13 - 86400, "999,999,999 days"), (8.64e13, "1e+09 days"), (1e297, "1.16e+292 days"),
    (1.267e-05, "12.7µs"), (0.0002481, "248µs"), (0.007225, "7.22ms"), (0, "0"),
])
def test_long_units_write_minutes_hours_and_days(seconds: float, text: str) -> None:
    """Durations of a minute or more read in minutes, hours and days, not `10001000s`; shorter ones as before."""
    assert format_duration(seconds, long_units=True) == text


def test_without_long_units_seconds_stay_seconds() -> None:
    """The default is what the views' bulk formatter (views/numbers.py) reproduces: seconds past a minute."""
    assert format_duration(27840) == "27840s" and format_duration(1074) == "1074s"


@pytest.mark.parametrize("value", [1.1e-5, 6.6e-5, 1e-7, -2.5e-6, 9.8e-5, 5e-324])
def test_a_value_that_is_not_zero_never_reads_zero(value: float) -> None:
    for digits in (3, 4):
        text = format_number(value, digits)
        assert text not in ("0", "-0") and float(text) != 0, text
        assert math.isclose(float(text), value, rel_tol=10 ** (1 - digits)) or value < 1e-300
        assert len(text) <= 10
    assert format_number(1.1e-5, 4) == "1.1e-5" and format_number(1.0813e-5, 4) == "1.081e-5"
    assert value * 1e-9 == 0 or not format_duration(value * 1e-9).startswith(("0", "-0"))


def test_values_from_1e_4_up_read_as_before() -> None:
    assert [format_number(v, 4) for v in (1e-4, 0.000362, 0.25, 12, 1500, 2.3e6)] == \
        ["0.0001", "0.000362", "0.25", "12", "1.5k", "2.3M"]
    assert format_number(0.0) == "0" and format_number(12345.6, 3) == "12.3k"


@pytest.mark.parametrize(("value", "text"), [
    (338_106e9, "338T"), (2e16, "20P"), (2.0 ** 63, "9.22E"), (9_007_199_254_740_993, "9.01P"),
    (-4.5e13, "-45T"), (1.5e21, "1500E"), (999e9, "999G"),
])
def test_rates_past_g_take_t_p_and_e(value: float, text: str) -> None:
    """Counts reach 2**63, and rates of them 1e18/s: `338T/s`, not `338106G/s`."""
    assert format_number(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (0.0009996, "1ms"), (-0.0009996, "-1ms"), (0.0009994, "999µs"), (999.6e-9, "1µs"), (0.9996, "1s"),
    (999.96e-6, "1ms"), (0.00099949999, "999µs"), (1e-3, "1ms"),
])
def test_a_duration_that_rounds_up_to_the_next_unit_is_written_in_it(value: float, text: str) -> None:
    """999.6 µs rounds to 1000 µs: it reads `1ms`, as 1.0004 ms does, never `1000µs` beside it."""
    assert format_duration(value) == text


def test_a_number_that_rounds_up_to_the_next_prefix_is_written_with_it() -> None:
    assert [format_number(v) for v in (999.6, 999.4, 999_600, 999.96e9)] == ["1k", "999", "1M", "1T"]
    assert format_number(999.96, 4) == "1k" and format_number(999.94, 4) == "999.9"


@pytest.mark.parametrize(("seconds", "width", "text"), [
    (1_099_511.627776, 7, "13 days"), (1_099_511.627776, 6, "12.7d"), (1_099_511.627776, 9, "12.7 days"),
    (549_755.8, 7, "6 days"), (68_719.48, 6, "19.1h"), (1.99e-6, 7, "1.99µs"), (1_099_511.627776, 3, "13d"),
    (1_099_511.627776, 2, "13d"),
])
def test_fit_duration_keeps_the_unit_and_shortens_the_number(seconds: float, width: int, text: str) -> None:
    """The report's form (`12.7 days`) where it fits; fewer digits, then `d`, where it does not; never a bare number
    (the shortest when nothing fits)."""
    assert fit_duration(seconds, width) == text


def test_plural() -> None:
    assert (plural(1, "task"), plural(0, "task"), plural(1024, "interval")) == ("1 task", "0 tasks", "1,024 intervals")
