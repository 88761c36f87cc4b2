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
