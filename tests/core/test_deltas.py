from __future__ import annotations

import numpy as np

from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot, StreamId

S = StreamId("s", "bpf", "microsec")


def snap(ts: float | None, values: list[int], sums: list[float] | None = None) -> Snapshot:
    counts = np.zeros(64, dtype=np.int64)
    counts[: len(values)] = values
    s = None
    if sums is not None:
        s = np.zeros(64)
        s[: len(sums)] = sums
    return Snapshot(S, ts, counts, s)


def test_first_snapshot_is_baseline_then_deltas() -> None:
    d = Differ()
    assert d.push(snap(1.0, [5, 5])) is None
    iv = d.push(snap(3.0, [7, 9]))
    assert isinstance(iv, Interval)
    assert (iv.start, iv.end) == (1.0, 3.0)
    assert iv.counts[:2].tolist() == [2, 4]
    assert not iv.reset


def test_counter_going_down_is_a_reset_never_negative() -> None:
    d = Differ()
    d.push(snap(1.0, [100, 50]))
    iv = d.push(snap(2.0, [3, 60]))
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:2].tolist() == [3, 10]
    assert (iv.counts >= 0).all()


def test_missing_timestamp_uses_arrival_time() -> None:
    times = iter([10.0, 12.5])
    d = Differ(clock=lambda: next(times))
    d.push(snap(None, [1]))
    iv = d.push(snap(None, [4]))
    assert isinstance(iv, Interval) and (iv.start, iv.end) == (10.0, 12.5)


def test_timestamp_not_increasing_skips_with_warning_and_keeps_baseline() -> None:
    d = Differ(name="f.txt")
    d.push(snap(5.0, [1]))
    note = d.push(snap(5.0, [3]))
    assert isinstance(note, Notice) and "does not increase" in note.message and "f.txt" in note.message
    note = d.push(snap(4.0, [3]))
    assert isinstance(note, Notice)
    iv = d.push(snap(6.0, [4]))
    assert isinstance(iv, Interval) and iv.counts[0] == 3 and iv.start == 5.0


def test_sums_are_diffed_too() -> None:
    d = Differ()
    d.push(snap(1.0, [1, 1], [0.5, 1.0]))
    iv = d.push(snap(2.0, [2, 3], [0.75, 4.0]))
    assert isinstance(iv, Interval) and iv.time is not None
    assert np.allclose(iv.time[:2], [0.25, 3.0])


def test_streams_are_diffed_separately() -> None:
    d = Differ()
    other = StreamId("t", "bpf", "microsec")
    d.push(snap(1.0, [1]))
    assert d.push(Snapshot(other, 1.5, np.ones(64, dtype=np.int64))) is None
    iv = d.push(snap(2.0, [4]))
    assert isinstance(iv, Interval) and iv.counts[0] == 3


def _partial(ts: float, values: dict[int, int]) -> Snapshot:
    """A snapshot that lists only some buckets (a restarted Oracle instance lists only those hit since)."""
    counts = np.zeros(64, dtype=np.int64)
    present = np.zeros(64, dtype=bool)
    for slot, value in values.items():
        counts[slot], present[slot] = value, True
    return Snapshot(S, ts, counts, present=present)


def test_restart_counts_the_new_record_and_restarts_the_baseline() -> None:
    d = Differ()
    d.push(_partial(1.0, {0: 100, 1: 50, 2: 7}))
    iv = d.push(_partial(2.0, {0: 3, 1: 4}))  # every counter that was non-zero went down (bucket 2 not hit yet)
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:3].tolist() == [3, 4, 0]
    iv = d.push(_partial(3.0, {0: 5, 1: 6, 2: 9}))  # bucket 2 counts from 0 since the restart, not from 7
    assert isinstance(iv, Interval) and not iv.reset
    assert iv.counts[:3].tolist() == [2, 2, 9]


def test_partial_reset_is_per_bucket() -> None:
    d = Differ()
    d.push(_partial(1.0, {0: 100, 1: 50}))
    iv = d.push(_partial(2.0, {0: 3, 1: 60}))  # one counter went down, one went on: no restart
    assert isinstance(iv, Interval) and iv.reset
    assert iv.counts[:2].tolist() == [3, 10]
    iv = d.push(_partial(3.0, {0: 4}))  # a bucket missing from a record keeps its last value
    assert isinstance(iv, Interval) and not iv.reset and iv.counts[:2].tolist() == [1, 0]
