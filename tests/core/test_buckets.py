from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.buckets import (
    NSLOTS,
    ORACLE_OVERFLOW,
    TOP_BOUND,
    TOP_SLOT,
    bin_extremes,
    bin_values,
    bounds_in_unit,
    bucket_value_of_slot,
    midpoints_seconds,
    past_top,
    past_top_note,
    percentile_duration,
    range_text,
    slot_of_bucket_value,
)


@pytest.mark.parametrize(("value", "low", "high"),
                         [(0, 0.0, 1.0), (1, 1.0, 2.0), (2, 2.0, 4.0), (1024, 1024.0, 2048.0)])
def test_lower_bound_sources_bucket_is_v_to_2v(value: int, low: float, high: float) -> None:
    for ds in ("bpf", "systemtap", "dtrace"):
        slot = slot_of_bucket_value(value, ds)
        lows, highs = bounds_in_unit(ds)
        assert (lows[slot], highs[slot]) == (low, high)
        assert bucket_value_of_slot(slot, ds) == value


@pytest.mark.parametrize(("value", "low", "high"), [(1, 0.0, 1.0), (2, 1.0, 2.0), (4096, 2048.0, 4096.0)])
def test_oracle_bucket_is_half_v_to_v_and_its_first_from_0(value: int, low: float, high: float) -> None:
    """Oracle's `< 1` bucket holds every wait under 1 (no smaller bucket): `[0, 1)`, the same slot as bpf's 0."""
    slot = slot_of_bucket_value(value, "oracle")
    lows, highs = bounds_in_unit("oracle")
    assert (lows[slot], highs[slot]) == (low, high)
    assert bucket_value_of_slot(slot, "oracle") == value


def test_oracle_overflow_bucket_has_no_slot() -> None:
    assert slot_of_bucket_value(ORACLE_OVERFLOW, "oracle") is None


@pytest.mark.parametrize("value", [3, 6, 1000, -4])
def test_non_power_of_two_is_rejected(value: int) -> None:
    with pytest.raises(ValueError, match="power of 2"):
        slot_of_bucket_value(value, "bpf")


def test_huge_values_clamp_to_top_slot() -> None:
    assert slot_of_bucket_value(1 << 200, "bpf") == NSLOTS - 1


def test_midpoints_reproduce_pylatencymap_factors() -> None:
    mid_bpf = midpoints_seconds("bpf", "millisec")
    mid_ora = midpoints_seconds("oracle", "millisec")
    slot = slot_of_bucket_value(8, "bpf")
    assert mid_bpf[slot] == pytest.approx(1.5 * 8e-3)
    slot = slot_of_bucket_value(8, "oracle")
    assert mid_ora[slot] == pytest.approx(0.75 * 8e-3)
    assert mid_ora[slot_of_bucket_value(1, "oracle")] == pytest.approx(0.75e-3)  # [0, 1): PyLatencyMap's 0.75 x 1


def test_every_datasource_has_the_same_slots() -> None:
    for ds in ("oracle", "systemtap", "raw"):
        for got, want in zip(bounds_in_unit(ds), bounds_in_unit("bpf"), strict=True):
            np.testing.assert_array_equal(got, want)


def test_bin_values_counts_and_exact_sums_with_boundaries() -> None:
    values = np.array([0.0, 0.5, 1.0, 1.999, 2.0, 3.0, 4.0, -1.0, np.nan, 1e300])
    counts, sums = bin_values(values)
    assert counts[0] == 2  # 0 and 0.5 -> [0, 1)
    assert counts[1] == 2  # 1.0 and 1.999 -> [1, 2)
    assert counts[2] == 2  # 2.0 (on the boundary) and 3.0 -> [2, 4)
    assert counts[3] == 1  # 4.0 -> [4, 8)
    assert counts[NSLOTS - 1] == 1
    assert counts.sum() == 8
    assert sums[2] == pytest.approx(5.0)


def test_the_top_slot_is_open_and_a_value_past_its_nominal_end_is_found_and_worded() -> None:
    """`bin_values` counts 2**70 in the top slot, `[2**62, 2**63)`: the slot is open, its largest value may pass
    2**63; `past_top` finds the first such value, and `past_top_note` says it in the input's unit, with the bound."""
    values = np.array([3.0, 2.0**62, np.nan, 2.0**70, 2.0**64])
    assert (TOP_SLOT, TOP_BOUND) == (NSLOTS - 1, 2.0**63) and bounds_in_unit("raw")[1][TOP_SLOT] == TOP_BOUND
    assert int(bin_values(values)[0][TOP_SLOT]) == 3 and bin_extremes(values)[1, TOP_SLOT] == 2.0**70
    assert past_top(values) == 3 and past_top(values[:3]) is None and past_top(np.empty(0)) is None
    assert past_top_note(2.0**70, "microsec") == (
        "value 1.18059e+21 microsec is past the top bucket's nominal end, 9.22337e+18 microsec (106,751,991 days): "
        "the top bucket is open (≥53,375,996 days) and counts it, with its exact time; percentiles there reach the "
        "values seen in it; said once per stream")
    assert past_top_note(1e20, "microsec", "sec").startswith(
        "value 1e+14 sec is past the top bucket's nominal end, 9.22337e+12 sec (106,751,991 days)")
    assert range_text(64e-6, 128e-6, 7) == "64µs–128µs" and range_text(0.0, 1e-6, 0) == "0–1µs"
    low, high = 2.0**62 * 1e-6, 2.0**63 * 1e-6
    assert range_text(low, high, TOP_SLOT, long_units=True) == "≥53,375,996 days"
    assert range_text(low, high, TOP_SLOT) == "≥4611686018427s"


def test_a_percentile_that_is_a_lower_bound_only_reads_at_least_its_low() -> None:
    """One text for a percentile in the open top bucket, its values not known (report, gates, diff, the TUI)."""
    low = 2.0**62 * 1e-9
    assert percentile_duration(low, True) == "≥4611686018s" and percentile_duration(low, False) == "4611686018s"
    assert percentile_duration(low, True, long_units=True) == "≥53,376 days"
    assert percentile_duration(None, True) == percentile_duration(float("nan"), False) == "-"
