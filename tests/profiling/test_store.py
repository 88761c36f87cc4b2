"""ProfileStore: time-range queries, self/total per function, top stacks, compare, cap, threads."""

from __future__ import annotations

import random
import threading

import pytest
from profiling_support import frame, phase_samples

from latencymap.profiling.samples import Sample, function_of, short_frame, split_frame
from latencymap.profiling.store import ProfileStore

T0 = 1_700_000_000.0


def two_phases() -> ProfileStore:
    store = ProfileStore()
    store.add(phase_samples(T0, 1.0, "fast_phase"))
    store.add(phase_samples(T0 + 1.0, 1.0, "slow_phase"))
    return store


def test_frame_strings_split_and_lose_their_line_for_function_counts() -> None:
    assert split_frame("f (/a/b.py:12)") == ("f", "/a/b.py", 12)
    assert split_frame("f (/a/b.py)") == ("f", "/a/b.py", None)
    assert split_frame("<module>") == ("<module>", "", None)
    assert function_of("f (/a/b.py:12)") == function_of("f (/a/b.py:99)") == "f (/a/b.py)"
    assert short_frame("f (/a/b.py:12)") == "f (b.py:12)"


def test_range_queries_are_half_open_and_per_phase() -> None:
    store = two_phases()
    assert len(store) == 200 and store.span() == (T0, pytest.approx(T0 + 1.99))
    assert store.count(T0, T0 + 1.0) == 100 and store.count(T0 + 1.0, T0 + 2.0) == 100
    assert store.count(T0 + 0.5, T0 + 0.5) == 0
    top = store.functions(T0, T0 + 1.0)[0]
    assert top.function == function_of(frame("fast_phase")) and top.self == top.total == 100
    assert store.functions(T0 + 1.0, T0 + 2.0)[0].function.startswith("slow_phase")
    mixed = {f.function.split(" ")[0]: f for f in store.functions(T0 + 0.5, T0 + 1.5)}
    assert mixed["fast_phase"].self == mixed["slow_phase"].self == 50
    assert mixed["main"].self == 0 and mixed["main"].total == 100


def test_recursion_counts_once_in_total() -> None:
    store = ProfileStore()
    stack = (frame("main"), frame("walk", 3), frame("walk", 5), frame("walk", 5))
    store.add([Sample(T0 + k / 100, 1, 1, stack) for k in range(10)])
    (walk,) = [f for f in store.functions(T0, T0 + 1) if f.function.startswith("walk")]
    assert walk.self == walk.total == 10


def test_top_stacks_merge_line_numbers_and_rank_by_samples() -> None:
    store = ProfileStore()
    a = (frame("main", 1), frame("f", 1))
    a2 = (frame("main", 2), frame("f", 7))
    b = (frame("main", 1), frame("g", 1))
    store.add([Sample(T0 + k / 100, 1, 1, a if k < 30 else a2 if k < 60 else b) for k in range(80)])
    top = store.top_stacks(T0, T0 + 1, n=5)
    assert [(tuple(split_frame(f)[0] for f in s.stack), s.count) for s in top] == [(("main", "f"), 60),
                                                                                  (("main", "g"), 20)]
    assert store.stack_counts(T0, T0 + 1) == {a: 30, a2: 30, b: 20}


def test_compare_normalises_by_each_ranges_samples() -> None:
    store = ProfileStore()
    store.add(phase_samples(T0, 1.0, "steady") + phase_samples(T0 + 1.0, 0.2, "steady"))
    store.add(phase_samples(T0 + 1.2, 0.2, "grower", tid=2))
    cmp = store.compare((T0, T0 + 1.0), (T0 + 1.0, T0 + 1.4))
    assert (cmp.samples_a, cmp.samples_b) == (100, 40)
    first = cmp.growth[0]
    assert first.function.startswith("grower") and first.total_a == 0 and first.total_b == pytest.approx(0.5)
    steady = next(g for g in cmp.growth if g.function.startswith("steady"))
    assert steady.delta == pytest.approx(-0.5) and steady.self_a == 1.0
    assert cmp.growth[-1].function.startswith("steady")


def test_out_of_order_batches_are_sorted_and_the_cap_drops_the_oldest() -> None:
    samples = phase_samples(T0, 3.0, "f")
    shuffled = samples[:]
    random.Random(3).shuffle(shuffled)
    store = ProfileStore(cap=250)
    for k in range(0, 300, 70):
        store.add(shuffled[k: k + 70])
    assert len(store) == 250 and store.dropped == 50
    kept = [s.time for s in store.samples(T0, T0 + 10)]
    assert kept == sorted(kept)
    assert store.add([]) == 0


def test_samples_round_trip_with_threads() -> None:
    store = ProfileStore()
    original = phase_samples(T0, 0.1, "f", tid=7) + phase_samples(T0 + 0.005, 0.1, "g", tid=8)
    store.add(original)
    assert sorted(store.samples(T0, T0 + 1), key=lambda s: (s.time, s.tid)) == sorted(
        original, key=lambda s: (s.time, s.tid))


def test_concurrent_adds_and_queries() -> None:
    store = ProfileStore()
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for j in range(50):
                store.add(phase_samples(T0 + j, 0.1, f"f{k}", tid=k))
        except BaseException as err:
            errors.append(err)

    def reader() -> None:
        try:
            for _ in range(200):
                store.functions(T0, T0 + 100)
                store.top_stacks(T0, T0 + 100)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store) == 4 * 50 * 10
    times = [s.time for s in store.samples(T0, T0 + 100)]
    assert times == sorted(times)
