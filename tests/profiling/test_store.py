"""ProfileStore: time-range queries, self/total per function, top stacks, compare, cap, threads."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading

import pytest
from profiling_support import HERE, frame, needs_pyspy, phase_samples
from rich.console import Console

from latencymap.profiling.pyspy import Chunk, locate_pyspy, record_argv
from latencymap.profiling.samples import Sample, function_of, own_thread, short_frame, split_frame
from latencymap.profiling.store import ProfileStore
from latencymap.tui.profile_panel import growth_table

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


@needs_pyspy
@pytest.mark.slow
def test_latencymap_s_own_flush_thread_is_left_out_of_a_real_profile(tmp_path) -> None:
    # A program timed with latencymap.instrument, profiled by real py-spy: its flusher thread, idle in select(), was
    # half of every sample and halved every share (a function busy 82% of the main thread read 41%).
    phase = 1.5
    proc = subprocess.Popen([sys.executable, str(HERE / "flush_child.py"), str(phase), str(tmp_path / "run.txt")],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        words = proc.stdout.readline().split()
        assert words[:1] == ["ready"]
        t0 = float(words[1])
        exe = locate_pyspy()
        assert exe is not None
        out = tmp_path / "trace.json"
        chunk = Chunk(record_argv(exe, proc.pid, str(out), duration=3, rate=100, subprocesses=False), out,
                      tmp_path / "pyspy.err", 100, proc.pid)
        chunk.start()
        assert chunk.done.wait(40)
        samples = chunk.result().samples
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    flusher = [s for s in samples if own_thread(s.stack)]
    assert flusher and len({s.tid for s in flusher}) == 1  # it is there, in its own thread
    store = ProfileStore()
    store.add(samples)
    assert store.own_left_out == len(flusher) and len(store) == len(samples) - len(flusher)
    b = (t0 + phase + 0.2, t0 + 2 * phase - 0.2)
    stats = {function_of(f.function).split(" (")[0]: f for f in store.functions(*b)}
    assert "_flush_on_time" not in stats
    assert stats["busy"].total / store.count(*b) > 0.7  # of the main thread, the only one left
    # A to B: what grew (func_b, new) and what shrank (func_a, gone), each on its own row, names before numbers.
    a = (t0 + 0.2, t0 + phase - 0.2)
    console = Console(width=100, no_color=True, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(growth_table(store, a, b))
    rows = console.export_text().splitlines()
    grew = next(r for r in rows if "func_b" in r).split()
    gone = next(r for r in rows if "func_a" in r).split()
    assert grew[2].startswith("+") and grew[3:5] == ["grew", "func_b"] and grew[-1] == "(new)"
    assert gone[2].startswith("-") and gone[3:5] == ["shrank", "func_a"] and gone[-1] == "(gone)"
