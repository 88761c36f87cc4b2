"""Turn consecutive cumulative snapshots into Intervals: the one differ every counter source uses.

Per stream: the first snapshot is the baseline. A bucket missing from a snapshot keeps its last
value. A counter that goes down is a reset: the column is marked and that bucket counts what the
counter holds now (events since the reset), never a negative number. A snapshot without a
timestamp takes its arrival time; one whose timestamp does not increase is skipped with a notice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from latencymap.model import Interval, Notice, Snapshot, StreamId


class Differ:
    """Stateful snapshot-to-interval converter, one baseline per stream."""

    def __init__(self, clock: Callable[[], float] = time.time, name: str = "<input>") -> None:
        self._clock = clock
        self._name = name
        self._last: dict[StreamId, Snapshot] = {}

    def push(self, snap: Snapshot) -> Interval | Notice | None:
        """The interval since the stream's previous snapshot; None for a baseline."""
        if snap.timestamp is None:
            snap.timestamp = self._clock()
        prev = self._last.get(snap.stream)
        if snap.present is not None and prev is not None:
            missing = ~snap.present
            snap.counts[missing] = prev.counts[missing]
            if snap.sums is not None and prev.sums is not None:
                snap.sums[missing] = prev.sums[missing]
        if prev is None:
            self._last[snap.stream] = snap
            return None
        assert prev.timestamp is not None
        if snap.timestamp <= prev.timestamp:
            where = f"line {snap.line}: " if snap.line else ""
            return Notice(f"{self._name}: {where}timestamp {snap.timestamp:.6f} does not increase "
                          f"(previous {prev.timestamp:.6f}); record skipped")
        self._last[snap.stream] = snap
        counts = snap.counts - prev.counts
        dropped = counts < 0
        reset = bool(dropped.any())
        if reset:
            counts[dropped] = snap.counts[dropped]
        spent = None
        if snap.sums is not None:
            base = prev.sums if prev.sums is not None else np.zeros_like(snap.sums)
            spent = snap.sums - base
            lost = (spent < 0) | dropped
            if lost.any():
                reset = True
                spent[lost] = snap.sums[lost]
        exact_dt = (snap.micros - prev.micros) / 1e6 if snap.micros is not None and prev.micros is not None else 0.0
        return Interval(snap.stream, prev.timestamp, snap.timestamp, counts, spent, reset=reset, date=snap.date,
                        duration=exact_dt)

    def run(self, items: Iterable[Snapshot | Interval | Notice]) -> Iterator[Interval | Notice]:
        """Pass Intervals and Notices through; diff Snapshots."""
        for item in items:
            if isinstance(item, Snapshot):
                out = self.push(item)
                if out is not None:
                    yield out
            else:
                yield item
