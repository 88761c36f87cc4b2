"""Pilot tests: the replay keys steer a real paced replay (speed, pause, seek, next burst)."""

from __future__ import annotations

import asyncio

import numpy as np
from tui_support import synthetic, wait_until

from latencymap.flow.replay import BurstScan, ReplayClock, clock_text
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.keys import HELP

SIZE = (160, 50)
T0 = 1_700_000_000.0
BURST = 400


def recording() -> list:
    """600 one-second columns with a burst of slow events from column BURST on."""
    items = synthetic(600, start=T0)
    for iv in items[BURST:BURST + 10]:
        iv.counts[28:31] += 400
    return items


def newest(app: LatencyMapApp) -> float:
    hist = app.current()
    return float(hist.end[hist.n - 1]) if hist is not None and hist.n else 0.0


def replayed(items: list) -> tuple[LatencyMapApp, BurstScan]:
    """The TUI replaying `items` as fast as it can, with their bursts scanned in the background."""
    clock = ReplayClock(None)
    scan = BurstScan(lambda: iter(items)).start()
    return LatencyMapApp(clock.pace(iter(items)), color_mode="truecolor", replay=clock, bursts=scan), scan


def test_replay_keys_change_speed_pause_seek_and_jump_to_the_burst() -> None:
    items = recording()
    clock = ReplayClock(1.0)
    scan = BurstScan(lambda: iter(items)).start()
    app = LatencyMapApp(clock.pace(iter(items)), color_mode="truecolor", replay=clock, bursts=scan)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen >= 1)
            assert app.state_name == "replay ×1"
            await pilot.press("greater_than_sign")
            await pilot.press("greater_than_sign")
            assert clock.speed == 4.0 and app.state_name == "replay ×4"
            await pilot.press("less_than_sign")
            assert clock.speed == 2.0

            await pilot.press("space")  # pauses the replay itself, not only the display
            assert clock.paused
            seen = app.acc.intervals_seen
            await pilot.pause(1.5)
            assert app.acc.intervals_seen <= seen + 1
            await pilot.press("space")
            assert not clock.paused

            await pilot.press("g")  # ahead of what was read: fast-forward to it, then pace again
            for key in "200":
                await pilot.press(key)
            await pilot.press("enter")
            await wait_until(pilot, lambda: newest(app) >= T0 + 200, timeout=10)
            await pilot.pause(0.3)
            assert T0 + 200 <= newest(app) < T0 + 215  # paced again at x2 after the target

            await pilot.press("g")  # behind: the view moves there at once
            for key in "50":
                await pilot.press(key)
            await pilot.press("enter")
            await pilot.pause(0.2)
            hist = app.current()
            assert hist is not None
            assert float(hist.end[app.view.cursor_at(hist.n)]) == T0 + 50

            await wait_until(pilot, lambda: scan.bursts is not None, timeout=20)
            await pilot.press("n")  # the burst lies ahead of the replay: run to it
            await wait_until(pilot, lambda: newest(app) >= T0 + BURST + 1, timeout=10)
            await pilot.pause(0.3)
            hist = app.current()
            assert hist is not None
            big = np.flatnonzero(hist.counts[:, 28:31].sum(axis=1))
            assert big.size and float(hist.start[big[0]]) == T0 + BURST
            assert newest(app) < T0 + BURST + 20
            await pilot.press("q")

    asyncio.run(main())


def test_replay_keys_outside_a_replay_just_say_so() -> None:
    app = LatencyMapApp(iter(synthetic(5)), color_mode="truecolor")
    notes: list[str] = []
    app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ended)
            await pilot.press("n")
            await pilot.pause(0.1)

    asyncio.run(main())
    assert any("not a replay" in n for n in notes)
    assert any(key == "g" for key, _ in HELP)


def test_n_lands_on_each_bursts_first_column_and_reaches_the_last_one() -> None:
    """Bursts already read: `n` puts the cursor on each burst's first column (not the column before it, whose end is
    the burst's start), one after the other, the last one included; then says there is none after it."""
    starts = (100, 250, 400, 590)
    items = synthetic(600, start=T0)
    for s in starts:
        for iv in items[s:s + 4]:
            iv.counts[28:31] += 400
    app, scan = replayed(items)
    notes: list[str] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ended and scan.bursts is not None, timeout=20)
            assert scan.bursts == [T0 + s for s in starts]
            app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
            await pilot.press("g", "3", "0", "enter")
            await pilot.pause(0.2)
            hist = app.current()
            assert hist is not None
            landed = []
            for _ in starts:
                await pilot.press("n")
                await pilot.pause(0.1)
                landed.append(app.view.cursor_at(hist.n))
            assert landed == list(starts)
            await pilot.press("n")
            await pilot.pause(0.1)
            assert app.view.cursor_at(hist.n) == starts[-1] and notes[-1] == "no burst of synthetic after the cursor"
            await pilot.press("q")

    asyncio.run(main())


def test_n_to_a_burst_not_read_yet_puts_the_cursor_on_its_first_column_once_read() -> None:
    """A paced replay: `n` runs the replay to the burst ahead, and the cursor lands on the burst's first column when
    it is read, and stays there as the replay goes on (README: "the cursor on its first column")."""
    items = recording()
    clock = ReplayClock(1.0)
    scan = BurstScan(lambda: iter(items)).start()
    app = LatencyMapApp(clock.pace(iter(items)), color_mode="truecolor", replay=clock, bursts=scan)
    notes: list[str] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen >= 2 and scan.bursts is not None, timeout=20)
            app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
            await pilot.press("n")
            await wait_until(pilot, lambda: newest(app) >= T0 + BURST + 3, timeout=10)
            await pilot.pause(0.3)
            hist = app.current()
            assert hist is not None
            assert float(hist.start[app.view.cursor_at(hist.n)]) == T0 + BURST
            assert notes[0] == f"seeking burst of synthetic at {clock_text(T0 + BURST)}…"
            assert notes[-1] == f"burst of synthetic at {clock_text(T0 + BURST)}"
            await pilot.press("q")

    asyncio.run(main())


def test_g_before_the_start_says_where_the_cursor_went() -> None:
    """`g -5m` from 30 s in: the cursor on the first column, and the toast names that column's time and says the
    start was reached (not the time asked for, five minutes before the recording); past the end, the last column."""
    items = synthetic(600, start=T0)
    clock = ReplayClock(None)
    app = LatencyMapApp(clock.pace(iter(items)), color_mode="truecolor", replay=clock, bursts=None)
    notes: list[str] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ended, timeout=20)
            app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
            await pilot.press("g", "3", "0", "enter")
            await pilot.pause(0.2)
            assert notes[-1] == f"at {clock_text(T0 + 30)}"
            await pilot.press("g", "minus", "5", "m", "enter")
            await pilot.pause(0.2)
            hist = app.current()
            assert hist is not None and app.view.cursor_at(hist.n) == 0
            assert notes[-1] == f"at {clock_text(T0 + 1)}: the start"
            await pilot.press("g", "9", "9", "9", "enter")  # after the end: the last column
            await pilot.pause(0.3)
            assert app.view.cursor_at(hist.n) == hist.n - 1
            assert notes[-1] == f"at {clock_text(T0 + 600)}: the end of the recording"
            await pilot.press("q")

    asyncio.run(main())


def two_streams() -> list:
    """`read` with bursts from columns 14 and 60, `other` with one from column 40: 100 one-second columns each."""
    read, other = synthetic(100, "read", start=T0), synthetic(100, "other", seed=2, start=T0)
    for stream, starts in ((read, (14, 60)), (other, (40,))):
        for s in starts:
            for iv in stream[s:s + 4]:
                iv.counts[28:31] += 400
    return [iv for pair in zip(read, other, strict=True) for iv in pair]


def test_n_goes_to_the_next_burst_of_the_stream_shown_and_names_it() -> None:
    """Hunt: from stream `other`, `n` went to column 14, a burst of `read`, and the toast did not say whose. It goes
    to `other`'s own burst (the help now says: of the stream shown), says whose,
    and past `other`'s last burst names the stream whose burst comes next."""
    items = two_streams()
    app, scan = replayed(items)
    notes: list[str] = []

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ended and scan.bursts is not None, timeout=20)
            assert scan.bursts == [T0 + 14, T0 + 40, T0 + 60]
            labels = [s.label for s in app.acc.streams]
            app.open_stream(labels.index("other"))
            await pilot.pause(0.1)
            app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
            await pilot.press("g", "5", "enter")
            await pilot.pause(0.2)
            hist = app.current()
            assert hist is not None and hist.stream.label == "other"
            await pilot.press("n")
            await pilot.pause(0.1)
            assert app.view.cursor_at(hist.n) == 40 and notes[-1] == f"burst of other at {clock_text(T0 + 40)}"
            await pilot.press("n")
            await pilot.pause(0.1)
            assert app.view.cursor_at(hist.n) == 40
            assert notes[-1] == f"no burst of other after the cursor; the next is of read at {clock_text(T0 + 60)} " \
                "(tab: next stream)"
            app.open_stream(labels.index("read"))
            await pilot.press("g", "5", "enter", "n")
            await pilot.pause(0.1)
            read = app.current()
            assert read is not None and read.stream.label == "read"
            assert app.view.cursor_at(read.n) == 14 and notes[-1] == f"burst of read at {clock_text(T0 + 14)}"
            await pilot.press("q")

    asyncio.run(main())
