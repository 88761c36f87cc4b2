"""Tail dominance against raw values whose exact shares are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latencymap.analysis.tail import tail_dominance
from latencymap.core.buckets import NSLOTS, bin_extremes, bin_values, bounds_seconds

LOW, HIGH = bounds_seconds("bpf", "nanosec")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thin_slow_band_dominates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.r_[rng.lognormal(np.log(300e3), 0.5, 95_000), rng.lognormal(np.log(10e6), 0.5, 5_000)]
    counts, sums = bin_values(values)
    tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH)
    assert tail is not None and tail.dominant
    assert 2e-3 < tail.threshold_s < 10e-3  # inside the slow band
    # The raw values from the threshold up: about the tail's share of the events, and half of the time.
    above = values >= tail.threshold_s * 1e9
    assert tail.events_share == pytest.approx(above.mean(), rel=0.05)
    assert values[above].sum() / values.sum() == pytest.approx(0.5, abs=0.02)
    assert tail.time_share == 0.5 and tail.events_share < 0.05
    # The bucket it starts in holds it: the slower ones alone hold less than half of the time, with it more.
    assert sums[tail.first_slot + 1:].sum() / sums.sum() < 0.5 <= sums[tail.first_slot:].sum() / sums.sum()


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
    # half of the time is 1012/1024 of slot 20's: its slowest part, from x = high - 1012/1024 (high - low) up,
    # holds ln(high / x) / ln 2 of its event (log-uniform inside it)
    x = HIGH[20] - 1012 / 1024 * (HIGH[20] - LOW[20])
    assert tail.first_slot == 20 and tail.threshold_s == pytest.approx(x)
    assert tail.events_share == pytest.approx(math.log(HIGH[20] / x) / math.log(2) / 1001)
    assert tail.time_share == 0.5 and tail.time_s == pytest.approx(0.5 * (1000 * 1.5 * LOW[10] + 1.5 * LOW[20]))
    assert tail.to_json()["dominant"] is True


def test_the_share_moves_little_when_the_input_does() -> None:
    """20 samples of one lognormal (the hunter's `gen.py s_N.txt N 20000 200 0.5`): the slowest whole buckets held
    49.8% or 50.2% of the time, and whole buckets gave 31% or 81% of the events; now each gives 1 - Phi(0.5), 31%,
    of a lognormal of that spread, as its raw values do."""
    shares = []
    for seed in range(101, 121):
        values = np.random.default_rng(seed).lognormal(np.log(200e3), 0.5, 20_000)
        counts, sums = bin_values(values)
        tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH)
        assert tail is not None
        shares.append(tail.events_share)
        exact = np.sort(values)[::-1]
        half = int(np.searchsorted(np.cumsum(exact), exact.sum() / 2))
        assert tail.events_share == pytest.approx(half / len(values), abs=0.01)
    assert max(shares) - min(shares) < 0.01
    assert 0.30 < float(np.mean(shares)) < 0.32


@pytest.mark.parametrize(("sigma", "low", "high"), [(0.05, 0.39, 0.42), (0.3, 0.33, 0.38), (0.5, 0.27, 0.31),
                                                     (1.3, 0.085, 0.1)])
def test_narrow_unimodal_streams_have_30_to_42_percent_in_the_tail(sigma: float, low: float, high: float) -> None:
    """The README's figures: a narrow unimodal stream 30-42% (27-31% at spread 0.5 with estimated times), a lognormal
    of spread 1.3 about 10%; with exact times and with times estimated from the buckets' midpoints, wherever the
    distribution sits against the bucket bounds."""
    for mu in (1e5, 1.4e5, 2e5, 3e5):
        counts, sums = bin_values(np.random.default_rng(1).lognormal(np.log(mu), sigma, 100_000))
        for times in (sums * 1e-9, None):
            tail = tail_dominance(counts, times, LOW, HIGH)
            assert tail is not None and low <= tail.events_share <= high, (mu, times is None, tail.events_share)


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
    # 2% of the events: slots 17-19 whole (180) and the slowest 3.6 of slot 14's 2000, near its top
    assert few.first_slot == 14 and few.events_share == 0.02 and few.events == pytest.approx(183.6)
    assert few.threshold_s == pytest.approx(HIGH[14] * 2 ** (-3.6 / 2000)) and few.dominant  # log-uniform in it
    assert 0.3 <= few.time_share < 0.5 and not tail.dominant  # a third of the time; half of it is in 24% of events
    counts[17:20] = [9, 6, 3]  # a tenth as many: a tail of a wide distribution, not heavy
    assert not slowest_few(counts, None, LOW, HIGH).dominant
    one = np.zeros(NSLOTS)
    one[30] = 49
    assert slowest_few(one, None, LOW, HIGH) is None  # under 50 events: their slowest 2% is less than one event


def test_the_slowest_few_move_little_when_the_input_does() -> None:
    """20 samples of one distribution, 3% of its events in a slow band (1.5 octaves of spread at 50 ms) over a 2 ms
    body: the slowest whole buckets holding at most 2% of the events held 0.9% or 2.0% of them and 25% to 40% of the
    time, heavy in 3 of the 20; now the slowest 2% hold 39-41%, heavy in each, as the raw values' slowest 2% do."""
    from latencymap.analysis.tail import slowest_few

    shares = []
    for seed in range(1, 21):
        rng = np.random.default_rng(seed)
        slow = int(rng.binomial(20_000, 0.03))
        values = np.r_[rng.lognormal(np.log(2e6), 0.5, 20_000 - slow), rng.lognormal(np.log(50e6), 0.7, slow)]
        counts, sums = bin_values(values)
        few = slowest_few(counts, sums * 1e-9, LOW, HIGH)
        assert few is not None and few.dominant and few.events_share == 0.02
        shares.append(few.time_share)
        exact = np.sort(values)[::-1][:400]  # the raw values' slowest 2%
        assert few.time_share == pytest.approx(exact.sum() / values.sum(), abs=0.01)
        assert few.threshold_s == pytest.approx(exact[-1] * 1e-9, rel=0.1)
    assert max(shares) - min(shares) < 0.03


@pytest.mark.parametrize("sigma", [0.5, 1.0, 1.3])
def test_lognormal_of_ordinary_spread_has_no_heavy_tail(sigma: float) -> None:
    from latencymap.analysis.tail import slowest_few

    values = np.random.default_rng(7).lognormal(np.log(2e5), sigma, 200_000)
    counts, sums = bin_values(values)
    few = slowest_few(counts, sums * 1e-9, LOW, HIGH)
    assert few is not None and not few.dominant and few.time_share < 0.3


def test_the_threshold_lies_within_the_values_seen_in_its_bucket() -> None:
    """An HdrHistogram log of 1,000 values of 100 µs and one of 1 s: the slowest half of the time is most of the
    1 s value. Log-uniform in its bucket, [537 ms, 1.07 s), the threshold was 778 ms, below the one value the bucket
    holds; read within the values seen in it (1 s: a bucket of one value), it is that value. Values spread over
    600-700 ms put it among them."""
    values = np.r_[np.full(1000, 100e3), 1e9]
    counts, sums = bin_values(values)
    seen = bin_extremes(values) * 1e-9
    blind = tail_dominance(counts, sums * 1e-9, LOW, HIGH)
    assert blind is not None and blind.threshold_s == pytest.approx(0.778, abs=1e-3)  # what it says without them
    tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH, seen=(seen[0], seen[1]))
    assert tail is not None and tail.first_slot == blind.first_slot and tail.threshold_s == 1.0
    assert tail.time_share == 0.5 and tail.dominant
    spread = np.r_[np.full(10_000, 100e3), np.linspace(600e6, 700e6, 5)]
    counts, sums = bin_values(spread)
    seen = bin_extremes(spread) * 1e-9
    tail = tail_dominance(counts, sums * 1e-9, LOW, HIGH, seen=(seen[0], seen[1]))
    assert tail is not None and 0.6 <= tail.threshold_s <= 0.7
    above = spread >= tail.threshold_s * 1e9
    assert spread[above].sum() / spread.sum() == pytest.approx(0.5, abs=0.05)


def test_the_slowest_few_start_within_the_values_seen_and_unknown_ones_change_nothing() -> None:
    """The slowest 2% of 1,000 values of 100 µs and 30 of 1.00-1.01 s start among the slow values seen, not low in
    their bucket [537 ms, 1.07 s); a slot whose values seen are not known (NaN, or infinite: not all seen) is read
    as before."""
    from latencymap.analysis.tail import slowest_few

    values = np.r_[np.full(1000, 100e3), np.linspace(1.0e9, 1.01e9, 30)]
    counts, sums = bin_values(values)
    seen = bin_extremes(values) * 1e-9
    blind = slowest_few(counts, sums * 1e-9, LOW, HIGH)
    few = slowest_few(counts, sums * 1e-9, LOW, HIGH, seen=(seen[0], seen[1]))
    assert blind is not None and few is not None and blind.threshold_s < 1.0
    assert 1.0 <= few.threshold_s <= 1.01 and few.events == blind.events
    for unknown in (np.full(NSLOTS, np.nan), np.full(NSLOTS, np.inf)):
        assert slowest_few(counts, sums * 1e-9, LOW, HIGH, seen=(-unknown, unknown)) == blind
        assert tail_dominance(counts, sums * 1e-9, LOW, HIGH, seen=(-unknown, unknown)) == \
            tail_dominance(counts, sums * 1e-9, LOW, HIGH)
