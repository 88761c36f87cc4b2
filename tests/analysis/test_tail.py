"""Tail dominance against raw values whose exact shares are known."""

from __future__ import annotations

import numpy as np
import pytest

from latencymap.analysis.tail import tail_dominance
from latencymap.core.buckets import NSLOTS, bin_values, bounds_seconds

LOW, HIGH = bounds_seconds("bpf", "nanosec")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thin_slow_band_dominates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.r_[rng.lognormal(np.log(300e3), 0.5, 95_000), rng.lognormal(np.log(10e6), 0.5, 5_000)]
    counts, sums = bin_values(values)
    tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH)
    assert tail is not None and tail.dominant
    assert 2e-3 < tail.threshold_s < 10e-3  # inside the slow band
    # The shares are exactly those of the raw values at or above the threshold.
    above = values >= tail.threshold_s * 1e9
    assert tail.events_share == pytest.approx(above.mean())
    assert tail.time_share == pytest.approx(values[above].sum() / values.sum())
    assert tail.time_share >= 0.5 and tail.events_share < 0.05
    # Smallest such set: without its fastest bucket the rest holds less than half.
    rest = sums[tail.first_slot + 1:].sum() / sums.sum()
    assert rest < 0.5


def test_narrow_distribution_is_not_tail_dominated() -> None:
    rng = np.random.default_rng(4)
    counts, sums = bin_values(rng.lognormal(np.log(1e6), 0.3, 50_000))
    tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH)
    assert tail is not None and not tail.dominant and tail.events_share > 0.2


def test_hand_built_histogram_with_estimated_time() -> None:
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[10], counts[20] = 1000, 1  # slot 20's midpoint is 1024x slot 10's: 1 event holds 51% of the time
    tail = tail_dominance(counts, None, LOW, HIGH)
    assert tail is not None
    assert tail.first_slot == 20 and tail.threshold_s == LOW[20]
    assert tail.events_share == pytest.approx(1 / 1001)
    assert tail.time_share == pytest.approx(1024 / 2024)
    assert tail.to_json()["dominant"] is True


def test_empty_has_no_tail() -> None:
    assert tail_dominance(np.zeros(NSLOTS), None, LOW, HIGH) is None


def test_a_few_slowest_events_holding_a_third_of_the_time_are_a_heavy_tail() -> None:
    from latencymap.analysis.tail import slowest_few

    counts = np.zeros(NSLOTS)
    counts[12:15] = [2000, 5000, 2000]  # 4-8 us and around: the bulk
    counts[17:20] = [90, 60, 30]  # 2% of the events, 64-512 us
    tail = tail_dominance(counts, None, LOW, HIGH)
    few = slowest_few(counts, None, LOW, HIGH)
    assert tail is not None and few is not None
    assert few.first_slot == 17 and few.events_share == pytest.approx(180 / 9180) and few.dominant
    assert 0.3 <= few.time_share < 0.5 and not tail.dominant  # a third of the time; half of it is in 24% of events
    counts[17:20] = [9, 6, 3]  # a tenth as many: a tail of a wide distribution, not heavy
    assert not slowest_few(counts, None, LOW, HIGH).dominant
    one = np.zeros(NSLOTS)
    one[30] = 5
    assert slowest_few(one, None, LOW, HIGH) is None  # the slowest bucket alone holds more than 2% of the events


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.3])
def test_lognormal_of_ordinary_spread_has_no_heavy_tail(sigma: float) -> None:
    from latencymap.analysis.tail import slowest_few

    values = np.random.default_rng(7).lognormal(np.log(2e5), sigma, 200_000)
    counts, sums = bin_values(values)
    few = slowest_few(counts, sums * 1e-9, LOW, HIGH)
    assert few is not None and not few.dominant and few.time_share < 0.3
