"""Bands and bimodality against histograms of known lognormal mixtures."""

from __future__ import annotations

import numpy as np
import pytest

from latencymap.analysis.bands import Band, estimate_time, find_bands, is_bimodal, local_peaks, significant_bands
from latencymap.core.buckets import NSLOTS, bin_values, bounds_seconds

LOW, HIGH = bounds_seconds("bpf", "nanosec")


Parts = list[tuple[float, float, float]]


def mixture(seed: int, n: int, parts: Parts) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Raw ns values of each (share, median_s, sigma) part, and the binned counts and time (s)."""
    rng = np.random.default_rng(seed)
    raw = [rng.lognormal(np.log(median * 1e9), sigma, round(n * share)) for share, median, sigma in parts]
    counts, sums = bin_values(np.concatenate(raw))
    return raw, counts, sums * 1e-9


def holds(band: Band, seconds: float) -> bool:
    """True when `seconds` lies in the band's latency range."""
    return band.low_s <= seconds < band.high_s


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 1.5, 2.5])
def test_unimodal_lognormal_is_one_band(seed: int, sigma: float) -> None:
    _, counts, time = mixture(seed, 100_000, [(1.0, 300e-6, sigma)])
    bands = find_bands(counts, time, LOW, HIGH)
    assert not is_bimodal(bands)
    major = significant_bands(bands)
    assert len(major) == 1 and holds(major[0], 300e-6)
    assert major[0].events_share > 0.99


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("exact_time", [True, False])
def test_bimodal_300us_and_10ms(seed: int, exact_time: bool) -> None:
    raw, counts, time = mixture(seed, 200_000, [(0.95, 300e-6, 0.5), (0.05, 10e-3, 0.5)])
    bands = find_bands(counts, time if exact_time else None, LOW, HIGH)
    assert is_bimodal(bands)
    assert len(bands) == 2
    fast, slow = bands
    assert holds(fast, 300e-6) and holds(slow, 10e-3)
    true_slow_time = raw[1].sum() / (raw[0].sum() + raw[1].sum())  # ~0.64
    assert slow.events_share == pytest.approx(0.05, abs=0.005)
    assert fast.events_share == pytest.approx(0.95, abs=0.005)
    assert slow.time_share == pytest.approx(true_slow_time, abs=0.01 if exact_time else 0.05)
    assert fast.events + slow.events == counts.sum()
    assert fast.high_s <= slow.low_s


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thin_slow_band_that_owns_the_time_is_bimodal(seed: int) -> None:
    raw, counts, time = mixture(seed, 100_000, [(0.99, 300e-6, 0.4), (0.01, 30e-3, 0.4)])
    bands = find_bands(counts, time, LOW, HIGH)
    assert len(bands) == 2 and bands[1].events_share < 0.03  # below the events threshold ...
    assert bands[1].time_share == pytest.approx(raw[1].sum() / (raw[0].sum() + raw[1].sum()), abs=0.01)
    assert bands[1].time_share > 0.4  # ... but it owns the waiting
    assert is_bimodal(bands)
    assert not is_bimodal(bands, min_time_share=0.9)


def test_close_modes_of_equal_weight_split() -> None:
    _, counts, time = mixture(5, 100_000, [(0.5, 300e-6, 0.3), (0.5, 2.4e-3, 0.3)])  # 3 octaves apart
    bands = find_bands(counts, time, LOW, HIGH)
    assert is_bimodal(bands)
    assert [round(b.events_share, 2) for b in bands] == [0.5, 0.5]


@pytest.mark.parametrize("seed", range(10))
def test_sparse_noise_does_not_make_bands(seed: int) -> None:
    _, counts, time = mixture(seed, 150, [(1.0, 1e-3, 1.2)])
    assert not is_bimodal(find_bands(counts, time, LOW, HIGH))


def test_shallow_and_insignificant_valleys_merge() -> None:
    counts = np.zeros(NSLOTS)
    counts[10:15] = [50, 100, 70, 100, 50]  # valley at 70% of the peaks: one band
    assert len(find_bands(counts, None, LOW, HIGH)) == 1
    counts[10:15] = [5, 10, 2, 10, 5]  # deep but within Poisson noise
    assert len(find_bands(counts, None, LOW, HIGH)) == 1
    counts[10:15] = [500, 1000, 200, 1000, 500]  # deep and significant
    bands = find_bands(counts, None, LOW, HIGH)
    assert len(bands) == 2 and bands[0].last_slot == 12  # a tie goes left


def test_tiny_bands_fold_into_a_neighbour() -> None:
    counts = np.zeros(NSLOTS)
    counts[10:13] = [1000, 5000, 1000]
    counts[20] = 20  # 0.3% of events, ~0.3% x 512 of the time: kept (it owns time)
    counts[2] = 20  # 0.3% of events, no time: folded
    bands = find_bands(counts, None, LOW, HIGH)
    assert len(bands) == 2
    assert bands[0].first_slot == 2 and bands[1].first_slot == 20


def test_band_range_shows_the_core_but_shares_count_everything() -> None:
    counts = np.zeros(NSLOTS)
    counts[10:13] = [1000, 5000, 1000]
    counts[4] = 1  # a stray fast event
    (band,) = find_bands(counts, None, LOW, HIGH)
    assert band.first_slot == 4 and band.low_s == LOW[10]
    assert band.events == counts.sum() and band.events_share == 1.0


def test_edge_cases() -> None:
    assert find_bands(np.zeros(NSLOTS), None, LOW, HIGH) == []
    assert not is_bimodal([])
    assert list(local_peaks(np.array([0, 3, 3, 1, 0, 2.0]))) == [2, 5]
    counts = np.zeros(NSLOTS)
    counts[7] = 4
    np.testing.assert_allclose(estimate_time(counts, LOW, HIGH)[7], 4 * 1.5 * LOW[7])


@pytest.mark.parametrize("seed", range(5))
def test_one_far_task_after_three_empty_octaves_is_a_band(seed: int) -> None:
    # Issue 20: tasks of 64-256 ms and one of 2.5 s were called unimodal.
    rng = np.random.default_rng(seed)
    values = np.r_[rng.uniform(64e6, 256e6, 40), 2.5e9]
    counts, sums = bin_values(values)
    bands = find_bands(counts, sums * 1e-9, LOW, HIGH)
    assert len(bands) == 2 and is_bimodal(bands)
    far = bands[1]
    assert holds(far, 2.5) and not holds(far, 0.256) and far.events == 1
    assert far.time_share == pytest.approx(2.5e9 / values.sum())


def test_gap_evidence_needs_enough_empty_octaves() -> None:
    from latencymap.analysis.bands import gap_evidence, poisson_cdf

    assert poisson_cdf(0, 3.0) == pytest.approx(np.exp(-3.0))
    assert poisson_cdf(2, 1.5) == pytest.approx(np.exp(-1.5) * (1 + 1.5 + 1.5**2 / 2))
    c = np.zeros(NSLOTS)
    c[20], c[24] = 500, 1  # one far event after three empty slots: e^-3 < 0.05
    assert gap_evidence(c, 20, 21, 24) == pytest.approx(np.exp(-3.0))
    c[22] = 0
    c2 = c.copy()
    c2[24], c2[23] = 0, 1  # two empty slots: e^-2 > 0.05, merged as a sparse tail
    assert gap_evidence(c2, 20, 21, 23) == pytest.approx(np.exp(-2.0))
    assert len(find_bands(c2, None, LOW, HIGH)) == 1 and len(find_bands(c, None, LOW, HIGH)) == 2


def test_a_few_fast_events_below_a_gap_are_not_a_band() -> None:
    c = np.zeros(NSLOTS)
    c[16], c[18:23] = 3, [10, 13, 16, 20, 7]  # 3 fast events, one empty octave, the bulk
    assert len(find_bands(c, None, LOW, HIGH)) == 1


def test_a_handful_of_events_two_slow_ones_owning_the_time_above_the_widest_gap() -> None:
    """A DoubleHistogram's 10 read waits (fixtures/hdrhistogram/java/double_tagged.hlog, ms): 0, 12 us ... 3.75 ms, and
    two of 1 s. The peaks below and above the gap hold 2 events each, and the lowest slots between them are one
    empty slot beside the fast events and seven empty octaves below the slow ones."""
    c = np.zeros(NSLOTS)
    for slot, n in {0: 1, 14: 1, 17: 1, 18: 1, 19: 2, 20: 1, 22: 1, 30: 2}.items():
        c[slot] = n
    (fast, slow) = find_bands(c, None, LOW, HIGH)
    assert (fast.first_slot, fast.last_slot, slow.first_slot) == (0, 22, 30) and slow.time_share > 0.99
    c[30] = 0
    c[23] = 2  # two events just one empty slot above: a tail, not a band
    assert len(find_bands(c, None, LOW, HIGH)) == 1


def test_equal_peaks_split_only_where_the_upper_band_is_the_thinner() -> None:
    c = np.zeros(NSLOTS)
    c[0], c[14:20] = 1, [1, 0, 0, 1, 1, 1]  # one event at 0, thirteen empty slots, four of 8-500 us: one band
    assert len(find_bands(c, None, LOW, HIGH)) == 1
    c[0] = 0
    c[4], c[30] = 1, 1  # 8 ns and 0.5 s, one each: the one above ten empty octaves is a band of its own
    bands = find_bands(c, None, LOW, HIGH)
    assert len(bands) == 2 and bands[-1].first_slot == 30


US_LOW, US_HIGH = bounds_seconds("bpf", "microsec")


def bands_of_us(values_us: np.ndarray) -> list[Band]:
    """Bands of raw µs latencies (slot 0 holds everything below 1 µs)."""
    counts, sums = bin_values(values_us)
    return find_bands(counts, sums * 1e-6, US_LOW, US_HIGH)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("shape", [0.3, 0.5])
def test_a_smooth_low_tail_going_on_below_1_unit_makes_no_band_in_slot_0(seed: int, shape: float) -> None:
    # Weibull(0.5): 5.6% of the events in [0, 1 µs) against 2.1% in 1-2 µs; per octave, slot 0 continues the fall
    values = 200.0 * np.random.default_rng(seed).weibull(shape, 60_000)
    bands = bands_of_us(values)
    assert len(bands) == 1 and not is_bimodal(bands)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("median_us", "sigma"), [(2.0, 1.5), (16.0, 2.5), (1.0, 2.0)])
def test_a_lognormal_with_much_mass_below_1_unit_is_one_band(seed: int, median_us: float, sigma: float) -> None:
    values = np.random.default_rng(seed).lognormal(np.log(median_us), sigma, 60_000)
    assert len(significant_bands(bands_of_us(values))) == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sub_unit_cache_hits_below_a_slow_band_stay_a_band(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(np.log(0.2), 0.3, 18_000), rng.lognormal(np.log(1000.0), 0.5, 42_000)])
    fast, slow = bands_of_us(values)
    assert fast.first_slot == fast.last_slot == 0 and fast.events_share == pytest.approx(0.3, abs=0.002)
    assert holds(slow, 1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cache_hits_on_top_of_a_low_tail_going_on_below_1_unit_stay_a_band(seed: int) -> None:
    # 5% of the events at 0.3 µs on a Weibull(0.5) whose own share below 1 µs is ~5.6%
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(np.log(0.3), 0.3, 3_000), 200.0 * rng.weibull(0.5, 57_000)])
    bands = bands_of_us(values)
    assert is_bimodal(bands) and bands[0].high_s <= 2e-6  # slot 0 and the valley, slot 1


def test_a_few_events_in_slots_1_to_3_do_not_explain_slot_0_away() -> None:
    # six events at 0, one each at 1 and 2-4 units, and two 1 µs ones: the two far events stay a band
    c = np.zeros(NSLOTS)
    c[[0, 1, 2, 10]] = [6, 1, 1, 2]
    assert [(b.first_slot, b.last_slot) for b in find_bands(c, None, LOW, HIGH)] == [(0, 2), (10, 10)]


@pytest.mark.parametrize(("fast", "slow", "fast_us", "slow_us"),
                         [(8, 8, 100.0, 1e6), (5, 5, 100.0, 1e6), (2, 2, 1.0, 3e9), (2, 3, 100.0, 1e6)])
def test_small_groups_empty_octaves_apart_are_two_bands(fast: int, slow: int, fast_us: float, slow_us: float) -> None:
    # 8 events at 100 µs and 8 at 1 s, twelve empty octaves between, were one band 64µs–1.05s (9 + 1 was two)
    bands = bands_of_us(np.r_[np.full(fast, fast_us), np.full(slow, slow_us)])
    assert len(bands) == 2 and is_bimodal(bands)
    assert bands[0].events == fast and holds(bands[0], fast_us * 1e-6) and holds(bands[1], slow_us * 1e-6)


def test_a_fast_group_below_a_gap_needs_more_than_one_event_and_an_improbable_gap() -> None:
    c = np.zeros(NSLOTS)
    c[16], c[22:26] = 2, [3, 6, 6, 3]  # two fast events, five empty octaves, the bulk: P = e^-10 < 1e-4
    assert [(b.first_slot, b.last_slot) for b in find_bands(c, None, LOW, HIGH)] == [(16, 16), (22, 25)]
    c[16], c[17] = 0, 2  # four empty octaves: e^-8 is a sparse low tail's
    assert len(find_bands(c, None, LOW, HIGH)) == 1
    c[17], c[10] = 0, 1  # a lone fast event eleven empty octaves below: no mode
    assert len(find_bands(c, None, LOW, HIGH)) == 1


@pytest.mark.parametrize("n", [30, 50, 100])
def test_fast_groups_below_gaps_add_few_false_bands_to_a_wide_population(n: int) -> None:
    """Weibull(0.5) samples (their low tail halves only every two octaves) scatter fast events below empty octaves:
    the fast-group rule makes at most 2% of them bimodal that were not without it."""
    added = 0
    for seed in range(200):
        counts, sums = bin_values(300.0 * np.random.default_rng(seed).weibull(0.5, n))
        args = (counts, sums * 1e-6, US_LOW, US_HIGH)
        added += is_bimodal(find_bands(*args)) and not is_bimodal(find_bands(*args, fast_gap_alpha=0.0))
    assert added <= 4
