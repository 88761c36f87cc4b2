"""Stragglers: known slow items are found, nothing else, and warm-up alone is not a straggler."""

from __future__ import annotations

import json

import numpy as np
import pytest

from latencymap.analysis.stragglers import Item, already_slow, find_stragglers, first_wave, stragglers_to_json


def schedule(group: str, durations: np.ndarray, cores: int, t0: float = 1000.0) -> list[Item]:
    """Items run greedily on `cores` slots, in order, as a local Spark executor would."""
    free = np.full(cores, t0)
    items = []
    for k, d in enumerate(durations):
        core = int(np.argmin(free))
        start = float(free[core])
        free[core] = start + d
        items.append(Item(f"{group}.{k}", group, float(d), start, start + float(d)))
    return items


def stage(rng: np.random.Generator, group: str, n: int, *, warmup: int = 0, slow: tuple[int, ...] = (),
          cores: int = 2) -> list[Item]:
    """A stage of `n` tasks of ~200 ms (10% spread); the first `warmup` pay 1.8 s, `slow` ones take 5x."""
    durations = 0.2 * rng.lognormal(0.0, 0.1, n)
    durations[:warmup] += 1.8
    durations[list(slow)] *= 5.0
    return schedule(group, durations, cores)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_known_stragglers_found_and_no_others(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = stage(rng, "stage-1", 60, slow=(7, 31, 52)) + stage(rng, "stage-2", 40)
    found = find_stragglers(items)
    assert sorted(s.item.key for s in found) == ["stage-1.31", "stage-1.52", "stage-1.7"]
    for s in found:
        assert s.ratio > 4.0 and s.mad_score > 10
        assert s.group_median_s == pytest.approx(0.2, rel=0.1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_warmup_alone_is_not_a_straggler(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = stage(rng, "stage-0", 40, warmup=2, cores=2)
    assert first_wave(items).sum() == 2
    assert find_stragglers(items) == []
    with_warmup = find_stragglers(items, include_warmup=True)
    assert sorted(s.item.key for s in with_warmup) == ["stage-0.0", "stage-0.1"]
    assert all(s.warmup and s.ratio > 5 for s in with_warmup)


def test_warmup_does_not_hide_a_real_straggler() -> None:
    rng = np.random.default_rng(7)
    durations = 0.2 * rng.lognormal(0.0, 0.1, 40)
    durations[:2] += 1.8  # the first wave pays the warm-up
    durations[1] += 6.0  # ... and one of its tasks is a straggler on top of it
    durations[20] *= 5.0  # a later straggler
    found = find_stragglers(schedule("s", durations, cores=2))
    assert sorted(s.item.key for s in found) == ["s.1", "s.20"]
    by_key = {s.item.key: s for s in found}
    wave, late = by_key["s.1"], by_key["s.20"]
    assert (wave.reference, wave.reference_s) == ("wave", durations[0])  # its wave-mate, not the median
    assert wave.ratio == pytest.approx(durations[1] / durations[0]) and wave.reference_s > wave.group_median_s
    assert (late.reference, late.reference_s) == ("median", late.group_median_s)
    assert wave.to_json()["reference"] == "wave"


def test_warmup_without_times_is_judged_against_the_median() -> None:
    durations = np.r_[2.0, 2.0, np.full(20, 0.2)]
    items = [Item(str(k), "g", float(d)) for k, d in enumerate(durations)]
    assert {s.item.key for s in find_stragglers(items)} == {"0", "1"}


def test_tiny_spread_and_small_groups_do_not_flag() -> None:
    tight = [Item(str(k), "g", 0.100 + 0.0001 * k) for k in range(20)] + [Item("x", "g", 0.110)]
    assert find_stragglers(tight) == []  # 10% slower is far beyond the MAD but below the ratio
    identical = [Item(str(k), "h", 1.0) for k in range(10)] + [Item("y", "h", 1.6)]
    assert [s.item.key for s in find_stragglers(identical)] == ["y"]  # MAD = 0 leaves it to the ratio
    small = [Item("a", "s", 1.0), Item("b", "s", 1.0), Item("c", "s", 9.0)]
    assert find_stragglers(small) == []
    assert [s.item.key for s in find_stragglers(small, min_group=3)] == ["c"]


def test_an_item_under_the_floor_is_no_straggler() -> None:
    """Spark's speculation never speculates a task under 100 ms (spark.speculation.minTaskRuntime): a 90 ms task in a
    stage of 40 ms ones passes ratio and score, but is nothing to chase; a 150 ms one still is."""
    short = [Item(str(k), "g", 0.040 + 0.0001 * k) for k in range(20)]
    items = [*short, Item("90ms", "g", 0.090), Item("150ms", "g", 0.150)]
    assert {s.item.key for s in find_stragglers(items)} == {"90ms", "150ms"}
    assert [s.item.key for s in find_stragglers(items, min_duration_s=0.1)] == ["150ms"]
    assert already_slow(np.array([i.duration_s for i in short]), 0.090) is not None
    assert already_slow(np.array([i.duration_s for i in short]), 0.090, min_duration_s=0.1) is None


def test_wide_group_does_not_flag_its_upper_end() -> None:
    rng = np.random.default_rng(11)
    items = [Item(str(k), "g", float(d)) for k, d in enumerate(rng.uniform(0.2, 2.0, 200))]
    assert find_stragglers(items) == []  # the top items are 1.5x+ the median, but within the spread
    assert find_stragglers(items, min_mad_score=0.0) != []


def test_to_json_round_trips() -> None:
    items = [Item(str(k), "g", 1.0, 10.0 + k, 11.0 + k) for k in range(10)] + [Item("z", "g", 4.0, 30.0, 34.0)]
    found = find_stragglers(items)
    data = json.loads(json.dumps(stragglers_to_json(found)))
    assert data == [{
        "key": "z", "group": "g", "duration_s": 4.0, "start": 30.0, "end": 34.0, "group_median_s": 1.0,
        "median_past_warmup": True, "reference_s": 1.0, "reference": "median", "ratio": 4.0,
        "mad_score": pytest.approx(0.6745 * 3.0 / 0.01),
        "group_size": 11, "warmup": False, "warmup_reason": None,
    }]


def test_first_wave_is_capped_at_the_slots() -> None:
    # Spark launches the next task a few ms before it logs the end of the previous one: three tasks "started
    # before any ended" on two cores. With the slots known, the wave is the first two.
    rng = np.random.default_rng(5)
    durations = 0.3 * rng.lognormal(0.0, 0.1, 24)
    durations[:2] += 4.3  # cold Python workers
    items = schedule("s", durations, cores=2)
    third = items[2]
    items[2] = Item(third.key, third.group, third.duration_s, third.start - 0.05, third.end - 0.05)
    assert first_wave(items).sum() == 3 and first_wave(items, slots=2).sum() == 2
    flagged = {s.item.key for s in find_stragglers(items)}
    assert flagged == {"s.0", "s.1"}  # judged against the third, fast task of the uncapped wave
    assert find_stragglers(items, slots={"s": 2}) == []
    warm = find_stragglers(items, slots={"s": 2}, include_warmup=True)
    assert {(s.item.key, s.warmup, s.warmup_reason) for s in warm} == {("s.0", True, "first wave"),
                                                                       ("s.1", True, "first wave")}


def test_cold_items_are_warmup_and_a_lone_one_is_never_a_straggler() -> None:
    rng = np.random.default_rng(6)
    durations = 0.2 * rng.lognormal(0.0, 0.1, 30)
    durations[[4, 11]] += 2.0  # two tasks that ran cold, not in the first wave
    items = [Item(str(k), "g", float(d), cold=k in (4, 11)) for k, d in enumerate(durations)]
    assert find_stragglers(items) == []
    warm = find_stragglers(items, include_warmup=True)
    assert {(s.item.key, s.warmup_reason) for s in warm} == {("4", "cold"), ("11", "cold")}
    lone = [Item(str(k), "g", float(d), cold=k == 4) for k, d in enumerate(durations)]
    assert [s.item.key for s in find_stragglers(lone)] == ["11"]  # 11 is not known to be cold: a straggler
    assert [(s.item.key, s.warmup) for s in find_stragglers(lone, include_warmup=True)] == [("11", False),
                                                                                             ("4", True)]


def test_a_slow_first_wave_neither_shifts_the_median_nor_hides_a_straggler() -> None:
    # A real stage's shape (hunter's logs-a, stage 1): a first wave of 3.6-4.4 s on 3 cores, then tasks of ~0.6 s,
    # one of which read 30x the bytes and took 2.45 s. With the wave in the median and MAD it scored 2.97 < 3.5.
    durations = np.array([3.599, 3.559, 4.407, 0.940, 0.538, 0.595, 0.922, 2.448, 0.665, 0.453, 0.384, 0.367])
    items = schedule("s", durations, cores=3)
    assert first_wave(items, slots=3).sum() == 3
    (found,) = find_stragglers(items, slots={"s": 3})
    rest = np.sort(durations[3:])
    assert found.item.key == "s.7" and found.median_past_warmup and found.group_median_s == float(np.median(rest))
    assert found.mad_score >= 3.5 and found.to_json()["median_past_warmup"]
    # no warm-up known (no times): the median of them all, said so
    (plain,) = find_stragglers([Item(i.key, i.group, i.duration_s) for i in items[3:]])
    assert plain.item.key == "s.7" and not plain.median_past_warmup


def test_a_cold_item_is_judged_against_cold_ones_not_its_warm_wave() -> None:
    # A new executor's first task (it starts a Python worker, ~2.6 s) in a first wave whose other tasks ran on warm
    # executors (~0.35 s): against their 0.35 s it looked 8.5x slow.
    rng = np.random.default_rng(3)
    durations = 0.2 * rng.lognormal(0.0, 0.1, 12)
    durations[:3] = [2.96, 0.359, 0.349]
    items = [Item(i.key, i.group, i.duration_s, i.start, i.end, cold=i.key == "s.0")
             for i in schedule("s", durations, cores=3)]
    assert find_stragglers(items, slots={"s": 3}) == []
    warm = {s.item.key: s for s in find_stragglers(items, slots={"s": 3}, include_warmup=True)}
    assert (warm["s.0"].warmup, warm["s.0"].warmup_reason) == (True, "cold")
    # two cold items: each against the faster of them; the warm wave-mates against the wave's fastest
    durations[3] = 2.5
    two = [Item(i.key, i.group, i.duration_s, i.start, i.end, cold=i.key in ("t.0", "t.3"))
           for i in schedule("t", durations, cores=3)]
    assert find_stragglers(two, slots={"t": 3}) == []
    durations[0] = 9.0  # a cold task far slower than the other cold one is still a straggler
    slow = [Item(i.key, i.group, i.duration_s, i.start, i.end, cold=i.key in ("u.0", "u.3"))
            for i in schedule("u", durations, cores=3)]
    (found,) = find_stragglers(slow, slots={"u": 3})
    assert (found.item.key, found.reference, found.reference_s) == ("u.0", "cold", 2.5)
