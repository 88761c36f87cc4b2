"""A thread-safe, time-ordered store of stack samples, queried by time range [t0, t1).

Samples of latencymap's own flusher thread in the profiled program are left out (counted in `own_left_out`): it
waits nearly all the time, and would otherwise stand for half of every profile and halve every share. Samples are kept
as NumPy columns (time, thread, interned stack, weight), the oldest dropped past
`cap`. Per-function counts ignore line numbers: a function's *self* samples are those where it is
the leaf, its *total* samples those where it is anywhere on the stack (once per sample, however
deep the recursion). Top stacks are also per function (line numbers dropped).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from latencymap.profiling.samples import Sample, function_of, own_thread

DEFAULT_CAP = 5_000_000
Range = tuple[float, float]
_COLUMNS = ("_time", "_thread", "_stack", "_weight")


@dataclass(frozen=True, slots=True)
class FunctionStat:
    """Samples with `function` as the leaf (self) and anywhere on the stack (total)."""

    function: str
    self: int
    total: int


@dataclass(frozen=True, slots=True)
class StackStat:
    """A stack (root first) and its samples."""

    stack: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class Growth:
    """A function's share of all samples (total and self) in range A and in range B."""

    function: str
    total_a: float
    total_b: float
    self_a: float
    self_b: float

    @property
    def delta(self) -> float:
        """How much its total share grew from A to B (negative: shrank)."""
        return self.total_b - self.total_a


@dataclass(frozen=True, slots=True)
class Comparison:
    """`compare` of two ranges: sample counts and every function's change, biggest growth first."""

    samples_a: int
    samples_b: int
    growth: list[Growth]


class ProfileStore:
    """Samples of every profiled thread; `add` from any thread, queries from any other."""

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        self.cap = max(1, cap)
        self._lock = threading.Lock()
        self._time = np.zeros(0)
        self._thread = np.zeros(0, dtype=np.int32)
        self._stack = np.zeros(0, dtype=np.int32)
        self._weight = np.zeros(0)
        self._n = 0
        self._stacks: list[tuple[str, ...]] = []
        self._fstacks: list[tuple[str, ...]] = []
        self._stack_ids: dict[tuple[str, ...], int] = {}
        self._threads: list[tuple[int, int]] = []
        self._thread_ids: dict[tuple[int, int], int] = {}
        self.version = 0
        self.dropped = 0
        self.own_left_out = 0
        self._own: dict[tuple[str, ...], bool] = {}

    def __len__(self) -> int:
        return self._n

    def _intern_stack(self, stack: tuple[str, ...]) -> int:
        sid = self._stack_ids.get(stack)
        if sid is None:
            sid = self._stack_ids[stack] = len(self._stacks)
            self._stacks.append(stack)
            self._fstacks.append(tuple(function_of(f) for f in stack))
        return sid

    def _intern_thread(self, key: tuple[int, int]) -> int:
        tid = self._thread_ids.get(key)
        if tid is None:
            tid = self._thread_ids[key] = len(self._threads)
            self._threads.append(key)
        return tid

    def _room(self, k: int) -> None:
        """Capacity for `k` more samples (doubling, so appends are amortised O(1))."""
        need = self._n + k
        if need <= len(self._time):
            return
        size = max(need, 2 * len(self._time), 1024)
        for name in _COLUMNS:
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: self._n] = old[: self._n]
            setattr(self, name, new)

    def add(self, samples: Iterable[Sample]) -> int:
        """Append samples (any order) but latencymap's own thread's; returns how many were added."""
        batch = list(samples)
        with self._lock:
            kept = [s for s in batch if not self._own_stack(s.stack)]
            self.own_left_out += len(batch) - len(kept)
            batch = kept
            if not batch:
                return 0
            n, k = self._n, len(batch)
            self._room(k)
            rows = slice(n, n + k)
            self._time[rows] = [s.time for s in batch]
            self._thread[rows] = [self._intern_thread((s.pid, s.tid)) for s in batch]
            self._stack[rows] = [self._intern_stack(s.stack) for s in batch]
            self._weight[rows] = [s.weight for s in batch]
            self._n = n + k
            times = self._time[: self._n]
            if (n and times[n] < times[n - 1]) or np.any(np.diff(times[n:]) < 0):
                order = np.argsort(times, kind="stable")
                for name in _COLUMNS:
                    col = getattr(self, name)
                    col[: self._n] = col[: self._n][order]
            if self._n > self.cap:
                cut = self._n - self.cap
                self.dropped += cut
                for name in _COLUMNS:
                    col = getattr(self, name)
                    col[: self.cap] = col[cut: self._n].copy()
                self._n = self.cap
            self.version += 1
        return k

    def _own_stack(self, stack: tuple[str, ...]) -> bool:
        own = self._own.get(stack)
        if own is None:
            own = self._own[stack] = own_thread(stack)
        return own

    def span(self) -> Range | None:
        """Times of the first and last samples, or None when empty."""
        with self._lock:
            return (float(self._time[0]), float(self._time[self._n - 1])) if self._n else None

    def _window(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        a, b = np.searchsorted(self._time[: self._n], [t0, t1], side="left")
        return self._time[a:b], self._thread[a:b], self._stack[a:b], self._weight[a:b]

    def count(self, t0: float, t1: float) -> int:
        """Samples in [t0, t1)."""
        with self._lock:
            return len(self._window(t0, t1)[0])

    def _stack_counts(self, t0: float, t1: float) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], np.ndarray]:
        with self._lock:
            per_stack = np.bincount(self._window(t0, t1)[2], minlength=len(self._stacks))
            used = np.flatnonzero(per_stack)
            return [self._stacks[i] for i in used], [self._fstacks[i] for i in used], per_stack[used]

    def stack_counts(self, t0: float, t1: float) -> dict[tuple[str, ...], int]:
        """Samples per full stack (frames with line numbers) in [t0, t1)."""
        stacks, _, counts = self._stack_counts(t0, t1)
        return {s: int(c) for s, c in zip(stacks, counts, strict=True)}

    def samples(self, t0: float, t1: float) -> list[Sample]:
        """The samples in [t0, t1), time-ordered."""
        with self._lock:
            times, threads, stacks, weights = self._window(t0, t1)
            return [Sample(float(t), self._threads[th][0], self._threads[th][1], self._stacks[st], float(w))
                    for t, th, st, w in zip(times, threads, stacks, weights, strict=True)]

    def functions(self, t0: float, t1: float) -> list[FunctionStat]:
        """Per-function self and total samples in [t0, t1), most self samples first."""
        _, fstacks, counts = self._stack_counts(t0, t1)
        own: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for fstack, c in zip(fstacks, counts, strict=True):
            if not fstack:
                continue
            own[fstack[-1]] += int(c)
            for fn in set(fstack):
                total[fn] += int(c)
        stats = [FunctionStat(fn, own[fn], total[fn]) for fn in total]
        stats.sort(key=lambda s: (-s.self, -s.total, s.function))
        return stats

    def top_stacks(self, t0: float, t1: float, n: int = 10) -> list[StackStat]:
        """The `n` stacks (per function) with the most samples in [t0, t1)."""
        _, fstacks, counts = self._stack_counts(t0, t1)
        merged: Counter[tuple[str, ...]] = Counter()
        for fstack, c in zip(fstacks, counts, strict=True):
            merged[fstack] += int(c)
        return [StackStat(s, c) for s, c in sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]

    def compare(self, range_a: Range, range_b: Range) -> Comparison:
        """Each function's share of the samples in A and in B, the most grown first."""
        na, nb = self.count(*range_a), self.count(*range_b)
        fa = {f.function: f for f in self.functions(*range_a)}
        fb = {f.function: f for f in self.functions(*range_b)}
        growth = []
        for fn in fa.keys() | fb.keys():
            a, b = fa.get(fn), fb.get(fn)
            growth.append(Growth(fn, a.total / na if a else 0.0, b.total / nb if b else 0.0,
                                 a.self / na if a else 0.0, b.self / nb if b else 0.0))
        growth.sort(key=lambda g: (-g.delta, -(g.self_b - g.self_a), g.function))
        return Comparison(na, nb, growth)
