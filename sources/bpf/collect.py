"""From cumulative in-kernel map readings to Intervals, the same way for both backends.

Read-and-clear without loss: the BPF programs never clear their maps. Every counter (events per
slot, nanoseconds per slot) only grows, updated with atomic adds, and each reading copies the
maps. An event is therefore in every reading taken after it and in none before it; the interval
between two readings is their difference (`latencymap.core.deltas.Differ`), so no event is lost or
counted twice, whatever the timing of reads against updates. The count and the sum of one slot are
two map entries read microseconds apart: an event landing between the two reads shows in the
count of one interval and the time of the next, never lost. A stream first seen in a reading gets a
zero baseline at the previous reading (its map keys did not exist then), so its first events count.
What the programs never saw is said: the kernel skips a BPF program that fires while another runs on the same
CPU (its recursion protection), and counts these runs per program; a reading carries the new ones.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot

from .spec import TraceSpec

NS = 1e-9
StreamKey = tuple[int, int]


@dataclass
class Reading:
    """One copy of the cumulative maps: per `(group, op)` key, counts and nanoseconds per slot."""

    timestamp: float
    counts: dict[StreamKey, np.ndarray] = field(default_factory=dict)
    sums_ns: dict[StreamKey, np.ndarray] = field(default_factory=dict)
    missed: int = 0  # probe runs the kernel skipped since the previous reading (see `recursion_misses`)

    def add(self, key: StreamKey, slot: int, count: int = 0, sum_ns: int = 0) -> None:
        """Add a map entry (count and/or sum of one slot) to this reading."""
        slot = min(max(slot, 0), NSLOTS - 1)
        if key not in self.counts:
            self.counts[key] = np.zeros(NSLOTS, dtype=np.int64)
            self.sums_ns[key] = np.zeros(NSLOTS, dtype=np.int64)
        self.counts[key][slot] += count
        self.sums_ns[key][slot] += sum_ns


def intervals(spec: TraceSpec, readings: Iterable[Reading], attached_at: float) -> Iterator[Interval | Notice]:
    """Intervals between consecutive readings, one per stream per reading (zero columns included)."""
    differ = Differ(name="bpf")
    seen: set[StreamKey] = set()
    previous = attached_at

    def baseline(key: StreamKey, at: float) -> None:
        seen.add(key)
        differ.push(Snapshot(spec.stream(*key), at, np.zeros(NSLOTS, dtype=np.int64), np.zeros(NSLOTS)))

    for key in spec.fixed_streams():
        baseline(key, attached_at)
    for reading in readings:
        for key in reading.counts:
            if key not in seen:
                baseline(key, previous)
        for key in sorted(seen):
            counts = reading.counts.get(key)
            if counts is None:
                counts = np.zeros(NSLOTS, dtype=np.int64)
                sums = np.zeros(NSLOTS)
            else:
                sums = reading.sums_ns[key].astype(np.float64) * NS
            out = differ.push(Snapshot(spec.stream(*key), reading.timestamp, counts.copy(), sums,
                                       present=None if key in reading.counts else np.zeros(NSLOTS, dtype=bool)))
            if out is not None:
                yield out
        if reading.missed:
            when = datetime.fromtimestamp(reading.timestamp).strftime("%H:%M:%S")
            yield Notice(f"bpf: the kernel skipped {reading.missed} run(s) of the BPF programs before {when} (a "
                         "probe fired while a BPF program ran on the same CPU: recursion misses): up to that many "
                         "events are missing from the counts", skipped=0)
        previous = reading.timestamp


def recursion_misses(pid: int, proc: str = "/proc", fds: list[str] | None = None) -> int:
    """Runs of process `pid`'s BPF programs (those of its file descriptors `fds`, default all) that the kernel
    skipped to avoid recursion (0 when unreadable)."""
    base = os.path.join(proc, str(pid), "fdinfo")
    total = 0
    for name in program_fds(pid, proc) if fds is None else fds:
        try:
            with open(os.path.join(base, name)) as f:
                for line in f:
                    if line.startswith("recursion_misses:"):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total


def program_fds(pid: int, proc: str = "/proc") -> list[str]:
    """The file descriptors of process `pid` that hold BPF programs."""
    base = os.path.join(proc, str(pid), "fdinfo")
    try:
        names = os.listdir(base)
    except OSError:
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(base, name)) as f:
                if "prog_type:" in f.read():
                    out.append(name)
        except OSError:
            continue
    return out


def watched(readings: Iterable[Reading], pid: int) -> Generator[Reading, None, None]:
    """`readings`, each with the recursion misses of `pid`'s programs since the previous one (counted from now)."""
    fds = program_fds(pid)
    return _watch(readings, pid, fds, recursion_misses(pid, fds=fds))


def _watch(readings: Iterable[Reading], pid: int, fds: list[str], last: int) -> Generator[Reading, None, None]:
    for reading in readings:
        now = recursion_misses(pid, fds=fds)
        reading.missed, last = max(0, now - last), now
        yield reading
