from __future__ import annotations

import numpy as np
import pytest

from latencymap.core.buckets import (
    NSLOTS,
    ORACLE_OVERFLOW,
    bin_values,
    bounds_in_unit,
    bucket_value_of_slot,
    midpoints_seconds,
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


def test_oracle_overflow_bucket_is_dropped() -> None:
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
