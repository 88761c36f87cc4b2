"""Replay pacing under control: speed, pause, seek ahead; seek times; where the bursts are."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import column_flow, input_flow
from latencymap.flow.recording import Recorder
from latencymap.flow.replay import FASTEST, SLOWEST, BurstScan, ReplayClock, burst_starts, next_burst, parse_seek
from latencymap.plugins import load_registry

S = StreamId("io", "bpf", "microsec")


def intervals(n: int, start: float = 10.0, step: float = 2.0) -> list[Interval]:
    return [Interval(S, start + step * i, start + step * (i + 1), np.ones(64, dtype=np.int64)) for i in range(n)]


class FakeTime:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_pace_scales_the_recorded_timing() -> None:
    fake = FakeTime()
    clock = ReplayClock(4.0, sleep=fake.sleep, clock=fake.clock)
    assert len(list(clock.pace(iter(intervals(4))))) == 4
    assert fake.now == pytest.approx(3 * 2.0 / 4.0)  # three gaps of 2 s at 4x
    assert max(fake.sleeps) <= 0.05 + 1e-12  # in slices, so a change of speed takes effect soon


def test_as_fast_as_possible_never_sleeps() -> None:
    fake = FakeTime()
    assert len(list(ReplayClock(None, sleep=fake.sleep, clock=fake.clock).pace(iter(intervals(5))))) == 5
    assert fake.sleeps == []


def test_speed_change_takes_effect_mid_gap() -> None:
    fake = FakeTime()
    clock = ReplayClock(1.0, sleep=fake.sleep, clock=fake.clock)

    def sleep(seconds: float) -> None:
        fake.sleep(seconds)
        if fake.now >= 0.5 and clock.speed == 1.0:
            clock.set_speed(10.0)  # 0.5 s of the 2 s gap done at 1x; the other 1.5 s at 10x

    clock._sleep = sleep
    list(clock.pace(iter(intervals(2))))
    assert fake.now == pytest.approx(0.5 + 1.5 / 10, abs=0.051)


def test_faster_and_slower_double_and_halve() -> None:
    clock = ReplayClock(1.0)
    assert clock.faster(1) == 2.0 and clock.faster(1) == 4.0
    assert clock.faster(-1) == 2.0 and clock.faster(-1) == 1.0 and clock.faster(-1) == 0.5
    assert ReplayClock(None).faster(1) is None


def test_speed_keys_keep_the_users_own_speed() -> None:
    """`--speed 5`, then `>` twice: ×10, ×20 (as the README says), not a ladder's ×8, ×16; and back to ×5."""
    clock = ReplayClock(5.0)
    assert [clock.faster(1) for _ in range(2)] == [10.0, 20.0]
    assert [clock.faster(-1) for _ in range(3)] == [10.0, 5.0, 2.5]
    assert "×2.5" in clock.describe()


def test_speed_keys_stop_at_the_bounds() -> None:
    """Doubling stops short of passing FASTEST (×160 from ×5), halving of passing SLOWEST; a `--speed` outside them
    moves toward them only."""
    clock = ReplayClock(5.0)
    assert [clock.faster(1) for _ in range(7)] == [10.0, 20.0, 40.0, 80.0, 160.0, 160.0, 160.0]
    assert ReplayClock(FASTEST).faster(1) == FASTEST and ReplayClock(SLOWEST).faster(-1) == SLOWEST
    assert ReplayClock(0.2).faster(-1) == 0.2 and ReplayClock(0.2).faster(1) == 0.4
    fast = ReplayClock(1000.0)
    assert fast.faster(1) == 1000.0 and fast.faster(-1) == 500.0 and fast.faster(-1) == 250.0
    slow = ReplayClock(0.01)
    assert slow.faster(-1) == 0.01 and slow.faster(1) == 0.02


def test_seek_ahead_runs_unpaced_then_paces_again() -> None:
    fake = FakeTime()
    clock = ReplayClock(1.0, sleep=fake.sleep, clock=fake.clock)
    clock.seek(10.0 + 2.0 * 50)  # interval 49 ends there
    out = list(clock.pace(iter(intervals(53))))
    assert len(out) == 53
    assert fake.now == pytest.approx(3 * 2.0)  # only the three intervals after the target were paced
    assert clock.target is None and "×1" in clock.describe()


def test_pause_holds_the_flow_until_resumed() -> None:
    clock = ReplayClock(1000.0)
    got: list[Interval] = []
    clock.toggle_pause()
    worker = threading.Thread(target=lambda: got.extend(clock.pace(iter(intervals(5)))))
    worker.start()
    time.sleep(0.3)
    assert len(got) <= 1  # the first interval needs no waiting; the rest wait for the resume
    assert clock.describe() == "replay paused"
    clock.toggle_pause()
    worker.join(5)
    assert len(got) == 5


def test_seek_texts() -> None:
    first, current = 1_700_000_000.0, 1_700_000_500.0
    assert parse_seek("+30s", first, current) == current + 30
    assert parse_seek("-5m", first, current) == current - 300
    assert parse_seek("90", first, current) == first + 90
    assert parse_seek("2h", first, current) == first + 7200
    day = datetime.fromtimestamp(current)
    want = day.replace(hour=14, minute=3, second=7, microsecond=0).timestamp()
    assert parse_seek("14:03:07", first, current) == want
    assert parse_seek("2024-05-01T14:03:07+00:00", first, current) == 1714572187.0
    with pytest.raises(ValueError, match="cannot read 'soon' as a time"):
        parse_seek("soon", first, current)


def bursty(n: int = 200, at: tuple[int, ...] = (60, 150)) -> Accumulator:
    """One stream at a steady ~100 µs, with 8-column bursts of slow (~30 ms) events."""
    rng = np.random.default_rng(7)
    acc = Accumulator()
    items = []
    for i in range(n):
        counts = np.zeros(64, dtype=np.int64)
        counts[7:9] = rng.poisson(500, 2)
        if any(a <= i < a + 8 for a in at):
            counts[15:17] = rng.poisson(300, 2)
        items.append(Interval(S, 1000.0 + i, 1001.0 + i, counts))
    acc.add(items)
    return acc


def test_bursts_are_found_where_they_start() -> None:
    starts = burst_starts(bursty())
    assert len(starts) == 2
    assert abs(starts[0] - 1060.0) <= 1 and abs(starts[1] - 1150.0) <= 1
    assert next_burst(starts, 1000.0) == starts[0]
    assert next_burst(starts, starts[0]) == starts[1]
    assert next_burst(starts, starts[1]) is None


def test_burst_scan_runs_in_the_background() -> None:
    acc = bursty()
    hist = next(iter(acc.streams.values()))
    items = [Interval(S, float(s), float(e), c.copy()) for s, e, c in zip(hist.start, hist.end, hist.counts,
                                                                          strict=True)]
    scan = BurstScan(lambda: iter(items)).start()
    scan.join(30)
    assert scan.error is None and scan.bursts == burst_starts(acc)
    broken = BurstScan(lambda: (_ for _ in ()).throw(OSError("gone"))).start()
    broken.join(5)
    assert broken.bursts is None and broken.error == "OSError: gone"


def test_burst_scan_of_a_recording_read_in_columns_finds_the_same_bursts(tmp_path: Path) -> None:
    acc = bursty()
    hist = next(iter(acc.streams.values()))
    path = tmp_path / "bursty.zst"
    rec = Recorder(str(path))
    for s, e, c in zip(hist.start, hist.end, hist.counts, strict=True):
        rec.write(Interval(S, float(s), float(e), c.copy()))
    rec.close()
    registry = load_registry()
    found = []
    for flow in (lambda: column_flow([str(path)], registry), lambda: input_flow([str(path)], registry)):
        scan = BurstScan(flow).start()
        scan.join(30)
        assert scan.error is None
        found.append(scan.bursts)
    assert found[0] == found[1] == burst_starts(acc) and len(found[0] or []) == 2
