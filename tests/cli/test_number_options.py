"""Numbers that mean nothing (NaN, infinities) and empty time ranges are usage errors (exit 2), not a traceback or a
run that shows nothing; replay and profile-export check `--start`/`--end` alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from latencymap.cli.main import main


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert not isinstance(result.exception, (ValueError, OverflowError)), result.exception  # no traceback
    return result.exit_code, result.output


@pytest.mark.parametrize(("option", "value"), [("--speed", "nan"), ("--speed", "inf"), ("--start", "nan"),
                                               ("--end", "nan"), ("--start", "-inf")])
def test_replay_refuses_a_number_that_is_not_one(example_data: Path, option: str, value: str) -> None:
    code, out = invoke("replay", example_data, "--max", "--plain", "--once", option, value)
    assert code == 2 and f"Invalid value for '{option}': '{value}' is not a finite number" in out


def test_replay_speed_must_still_be_above_zero(example_data: Path) -> None:
    code, out = invoke("replay", example_data, "--max", "--plain", "--once", "--speed", "0")
    assert code == 2 and "Invalid value for '--speed'" in out


@pytest.mark.parametrize("command", ["replay", "profile-export"])
def test_an_empty_range_is_the_same_usage_error_in_both_commands(example_data: Path, command: str) -> None:
    code, out = invoke(command, example_data, "--start", "100", "--end", "50")
    assert code == 2 and out.strip().endswith("Error: --start 100 is not before --end 50: the range is empty")
    code, out = invoke(command, example_data, "--start", "30.5", "--end", "30.5")
    assert code == 2 and "--start 30.5 is not before --end 30.5" in out


def test_a_range_that_is_not_empty_replays(example_data: Path) -> None:
    code, out = invoke("replay", example_data, "--max", "--plain", "--once", "--start", "30", "--end", "60")
    assert code == 0 and "Columns: " in out


@pytest.mark.parametrize(("option", "value"), [("--screen_delay", "nan"), ("--screen-delay", "inf"),
                                               ("--intensity_maxval", "inf"), ("--frequency_maxval", "nan"),
                                               ("--duration", "nan")])
def test_view_numbers_must_be_finite(example_data: Path, option: str, value: str) -> None:
    code, out = invoke("--plain", "--once", option, value, example_data)
    assert code == 2 and f"'{value}' is not a finite number" in out


@pytest.mark.parametrize(("option", "value", "why"), [
    ("--frequency_maxval", "1e308", "expected a scale up to 1e15"),  # the legend's steps overflowed (a traceback)
    ("--intensity-maxval", "1e16", "expected a scale up to 1e15"),
    ("--frequency_maxval", "0", "expected -1 (autoscale) or a scale above 0"),  # silently autoscaled
    ("--frequency-maxval", "-5", "expected -1 (autoscale) or a scale above 0"),
    ("--intensity_maxval", "-0.5", "expected -1 (autoscale) or a scale above 0"),
])
def test_a_colour_scale_is_minus_one_or_above_zero_and_not_absurd(example_data: Path, option: str, value: str,
                                                                   why: str) -> None:
    """Only -1 autoscales (PyLatencyMap divides by any other value: 0 crashes it); a scale past any rate is a usage
    error, not an OverflowError in the legend."""
    code, out = invoke("--plain", "--once", option, value, example_data)
    assert code == 2 and f"'{value}': {why}" in out


@pytest.mark.parametrize(("option", "value"), [("--frequency_maxval", "-1"), ("--intensity_maxval", "1e15"),
                                               ("--frequency-maxval", "0.001")])
def test_a_colour_scale_of_minus_one_or_above_zero_is_shown(example_data: Path, option: str, value: str) -> None:
    code, out = invoke("--plain", "--once", option, value, example_data)
    assert code == 0 and "Columns: " in out
