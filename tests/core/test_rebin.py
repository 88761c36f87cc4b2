"""Spreading non-power-of-two buckets onto the log2 slots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latencymap.core.rebin import largest_remainder, rebin_counts, spread_fractions, spread_matrix, with_time

PROMETHEUS_DEFAULT_US = [5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, math.inf]


def test_bucket_inside_one_slot_stays_there() -> None:
    shares = spread_fractions(8192, 12000)
    assert shares[14] == 1.0 and shares.sum() == 1.0


def test_bucket_over_two_slots_splits_by_log_width() -> None:
    shares = spread_fractions(10_000, 25_000)
    expected = math.log2(16384 / 10_000) / math.log2(2.5)
    assert shares[14] == pytest.approx(expected)
    assert shares[15] == pytest.approx(1 - expected)
    assert np.count_nonzero(shares) == 2


def test_zero_lower_bound_is_one_octave_and_overflow_is_one_slot() -> None:
    assert spread_fractions(0, 5000)[12:14] == pytest.approx([math.log2(4096 / 2500), math.log2(5000 / 4096)])
    assert spread_fractions(1e7, math.inf)[24] == 1.0  # 2**23 <= 1e7 < 2**24


def test_rebin_keeps_the_total_exactly() -> None:
    counts = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    slots = rebin_counts(PROMETHEUS_DEFAULT_US, counts)
    assert slots.sum() == sum(counts)
    assert (slots >= 0).all()
    assert spread_matrix(PROMETHEUS_DEFAULT_US).sum(axis=1) == pytest.approx(np.ones(12))


def test_largest_remainder_rounds_to_the_total() -> None:
    assert list(largest_remainder(np.array([0.4, 0.4, 0.2]), 1)) == [1, 0, 0]
    assert largest_remainder(np.array([2.6, 0.7]), 3).sum() == 3


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="ascending"):
        spread_matrix([1.0, 1.0])
    with pytest.raises(ValueError, match="counts"):
        rebin_counts([1.0, 2.0], [1])


def test_totals_past_float_precision_stay_exact() -> None:
    counts = [(1 << 60) + 12345, 7, (1 << 59) + 3]
    slots = rebin_counts([10.0, 100.0, math.inf], counts)
    assert int(slots.sum()) == sum(counts)


def test_the_first_bucket_goes_as_low_as_the_columns_time_proves() -> None:
    bounds = [1e5, 2e5, 4e5, math.inf]  # a first bucket of 100 ms, in µs: the rule's octave is [50, 100) ms
    matrix = spread_matrix(bounds)
    counts = np.array([[2, 0, 0, 0],    # two 0.72 ms events: the time is their own
                       [3, 0, 0, 1],    # three 1 ms events and one of 400 ms, the most that overflow's low allows
                       [2, 1, 0, 0],    # the other event's lower bound leaves the first two up to 75 ms: the rule
                       [2, 0, 0, 0],    # no time known
                       [2, 0, 0, 0]])   # a time below zero after the others: not believed, the rule
    times = np.array([1449.0, 3000.0 + 4e5, 1449.0 + 2.5e5, math.nan, -5.0])
    shares = with_time(matrix, bounds, counts, times)
    assert shares.sum(axis=1) == pytest.approx(counts.sum(axis=1))
    low = 1449.0 / 2 * math.log(2)  # the octave [low, 2 low) whose log-uniform mean is 724.5 µs
    assert shares[0] == pytest.approx(2 * spread_fractions(low, 2 * low))
    assert shares[0][10] > 1.9 and shares[0][:9].sum() == 0 and shares[0][11:].sum() == 0  # [512, 1024) µs
    assert shares[1] == pytest.approx(3 * spread_fractions(1000 * math.log(2), 2000 * math.log(2)) + matrix[3])
    for rule in (2, 3, 4):
        assert shares[rule] == pytest.approx(counts[rule] @ matrix)
    mean = (shares[0] * (2.0 ** np.arange(64)) * 0.75).sum() / 2  # the rows' midpoints (~0.7 ms), not 75 ms
    assert 500 < mean < 1000
