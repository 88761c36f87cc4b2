"""Key-to-repaint of the real app fed live: many streams paced through the app's flow (its public input), key presses
sent through the driver as a terminal's would be, and the time from each to the first screen update drawn after its
action ran (the widget that shows the effect rendered it). Against one idle stream's, measured in the same run.

Used by bench_tui.py; `python bench/tui_live.py [live] [burst]` runs only these cases (STREAMS, BACKLOG, ROUNDS in
the environment change their size).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from bench_common import arguments, machine
from textual import events
from textual.widget import Widget

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.overview import OverviewList, OverviewScreen

T0 = 1_700_000_000.0
#: Key presses of one round on the overview: each changes what is drawn (selection, order, screen); `l` (linear/log)
#: on the map of the stream opened.
ROUND = ("down", "down", "pagedown", "up", "pageup", "end", "home", "o", "enter", "l", "escape")
GIVE_UP_S = 20.0


def stream_pool(streams: int, seed: int = 5) -> tuple[list[StreamId], list[list[np.ndarray]]]:
    """`streams` peers (bpf, µs) and, for each, 16 count vectors of ~6 adjacent slots around its own centre."""
    rng = np.random.default_rng(seed)
    ids = [StreamId(f"host{i // 8}/disk{i % 8}", "bpf", "microsec") for i in range(streams)]
    pools = []
    for i in range(streams):
        centre = 8 + (i % 5) + (6 if i % 97 == 0 else 0)  # a few slow ones
        vectors = []
        for _ in range(16):
            counts = np.zeros(NSLOTS, dtype=np.int64)
            counts[centre - 2: centre + 4] = rng.integers(0, 400, size=6)
            vectors.append(counts)
        pools.append(vectors)
    return ids, pools


@dataclass
class LiveFeed:
    """Every stream gets one one-second column per `period` of wall time (after `backlog` columns each at once);
    with `burst`, columns come `burst` at a time for every stream (a source catching up), at the same mean rate
    times `burst`."""

    streams: int
    backlog: int = 0
    period: float = 1.0
    burst: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    columns: int = 0

    def __iter__(self) -> Iterator[Interval]:
        ids, pools = stream_pool(self.streams)
        k = 0
        for _ in range(self.backlog):
            yield from self._column(ids, pools, k)
            k += 1
        self.columns = k
        t0 = time.perf_counter()
        step = self.period / self.streams  # one stream's new column every `step` seconds, round robin
        emitted = 0
        while not self.stop.is_set():
            if self.burst:
                for _ in range(self.burst):
                    yield from self._column(ids, pools, k)
                    k += 1
                self.columns = k
                self.stop.wait(self.period)
                continue
            due = int((time.perf_counter() - t0) / step)
            while emitted < due:
                i = emitted % self.streams
                col = self.backlog + emitted // self.streams
                yield Interval(ids[i], T0 + col, T0 + col + 1, pools[i][col % 16])
                emitted += 1
            self.columns = self.backlog + emitted // self.streams
            time.sleep(0.002)

    @staticmethod
    def _column(ids: list[StreamId], pools: list[list[np.ndarray]], k: int) -> Iterator[Interval]:
        for i, stream in enumerate(ids):
            yield Interval(stream, T0 + k, T0 + k + 1, pools[i][k % 16])


class RepaintProbe:
    """Times a key press to the first screen update drawn after its action ran and a watched widget then rendered
    what the key should show."""

    def __init__(self, app: LatencyMapApp) -> None:
        self.app = app
        self.want: Callable[[], bool] | None = None
        self.widget: type[Widget] = Widget
        self.handled = self.rendered = False
        self.t_key = self.t_paint = 0.0
        self._display = app._display
        app._display = self._on_display  # type: ignore[method-assign]
        run_action = app.run_action

        async def ran(*args, **kwargs) -> bool:  # type: ignore[no-untyped-def]
            done = await run_action(*args, **kwargs)
            self.handled = True
            return done

        app.run_action = ran  # type: ignore[method-assign]
        self._patched: list[tuple[type[Widget], Callable]] = []
        for cls in (OverviewList, HeatMap):
            self._patch(cls)

    def _patch(self, cls: type[Widget]) -> None:
        original = cls.render_line
        probe = self

        def render_line(widget, y: int):  # type: ignore[no-untyped-def]
            if (probe.want is not None and probe.handled and not probe.rendered and isinstance(widget, probe.widget)
                    and probe.want()):
                probe.rendered = True
            return original(widget, y)

        self._patched.append((cls, original))
        cls.render_line = render_line  # type: ignore[method-assign]

    def close(self) -> None:
        for cls, original in self._patched:
            cls.render_line = original  # type: ignore[method-assign]

    def _on_display(self, screen, renderable) -> None:  # type: ignore[no-untyped-def]
        self._display(screen, renderable)
        if self.want is not None and self.rendered and renderable is not None:
            self.t_paint = time.perf_counter()
            self.want = None

    async def press(self, key: str, want: Callable[[], bool], widget: type[Widget]) -> float:
        """Milliseconds from sending `key` to the update that drew `want()` in a `widget` (inf: never)."""
        self.want, self.widget, self.handled, self.rendered = want, widget, False, False
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(self.app)
        driver = self.app._driver
        assert driver is not None
        self.t_key = time.perf_counter()
        driver.send_message(event)
        while self.want is not None:
            if time.perf_counter() - self.t_key > GIVE_UP_S:
                self.want = None
                return float("inf")
            await asyncio.sleep(0.0005)
        return (self.t_paint - self.t_key) * 1000


def overview_expectation(app: LatencyMapApp, key: str) -> tuple[Callable[[], bool], type[Widget]]:
    """What the screen shows once `key` (pressed on the overview) took effect, and which widget draws it."""
    if key == "l":  # on the map screen
        heat = app.maps.query_one("#frequency", HeatMap)
        log = not app.view.log
        return (lambda: app.on_maps and heat.spec is not None and heat.spec.log == log), HeatMap
    if key == "escape":  # from the map screen
        def back() -> bool:
            top = app.screen
            return isinstance(top, OverviewScreen) and top.ready and top.query_one(OverviewList).rows != []

        return back, OverviewList
    screen = app.screen
    assert isinstance(screen, OverviewScreen), (key, screen)
    listing = screen.query_one(OverviewList)
    if key in ("down", "up", "pagedown", "pageup", "home", "end"):  # (a live re-sort may move the selection too)
        return (lambda: app.screen is screen), OverviewList
    if key == "o":
        before = screen.order
        return (lambda: app.screen is screen and screen.order != before), OverviewList
    if key == "enter":
        row = listing.current()
        assert row is not None
        stream = row.hist.stream
        heat = app.maps.query_one("#frequency", HeatMap)

        def opened() -> bool:
            return app.on_maps and heat.hist is not None and heat.hist.stream == stream

        return opened, HeatMap
    raise ValueError(key)


@dataclass
class Presses:
    """Milliseconds per press (by key), the CPU the process used and the wall time it took."""

    ms: dict[str, list[float]] = field(default_factory=dict)
    cpu_s: float = 0.0
    wall_s: float = 0.0
    seen: int = 0
    queued: int = 0
    streams: int = 0

    def all(self) -> list[float]:
        return [v for values in self.ms.values() for v in values]

    def summary(self) -> str:
        values = self.all()
        return (f"median {statistics.median(values):.1f} ms, p90 {p90(values):.1f} ms, max {max(values):.1f} ms "
                f"over {len(values)} presses")


def p90(values: list[float]) -> float:
    return float(np.percentile(values, 90))


async def overview_keys(feed: LiveFeed, rounds: int = 3, size: tuple[int, int] = (180, 50),
                        seed: int = 9) -> Presses:
    """Rounds of `ROUND` on the overview of the live `feed` (after its backlog is in), at random moments."""
    app = LatencyMapApp(iter(feed), color_mode="truecolor")
    rng = np.random.default_rng(seed)
    out = Presses()
    async with app.run_test(size=size) as pilot:
        started = time.perf_counter()
        while app.acc.intervals_seen < feed.backlog * feed.streams or not isinstance(app.screen, OverviewScreen):
            await pilot.pause(0.1)
            assert time.perf_counter() - started < 600, "the backlog never arrived"
        await pilot.pause(1.0)
        probe = RepaintProbe(app)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        try:
            for _ in range(rounds):
                for key in ROUND:
                    want, widget = overview_expectation(app, key)
                    out.ms.setdefault(key, []).append(await probe.press(key, want, widget))
                    await asyncio.sleep(float(rng.uniform(0.05, 0.4)))
        finally:
            probe.close()
        out.cpu_s, out.wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        out.seen, out.streams = app.acc.intervals_seen, len(app.acc.streams)
        out.queued = app.ingest._queue.qsize()
    feed.stop.set()
    return out


async def idle_keys(presses: int = 15, size: tuple[int, int] = (180, 50)) -> Presses:
    """Baseline: `l` (linear/log) on the map of one idle stream, to the repaint of the frequency map."""
    ids, pools = stream_pool(1)
    app = LatencyMapApp(iter([Interval(ids[0], T0 + k, T0 + k + 1, pools[0][k % 16]) for k in range(300)]),
                        color_mode="truecolor")
    out = Presses()
    async with app.run_test(size=size) as pilot:
        while not app.ended:
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        probe = RepaintProbe(app)
        heat = app.query_one("#frequency", HeatMap)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        try:
            for _ in range(presses):
                want = not app.view.log
                ms = await probe.press("l", lambda w=want: heat.spec is not None and heat.spec.log == w, HeatMap)
                out.ms.setdefault("l", []).append(ms)
                await asyncio.sleep(0.1)
        finally:
            probe.close()
        out.cpu_s, out.wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
        out.seen, out.streams = app.acc.intervals_seen, len(app.acc.streams)
    return out


def describe(name: str, res: Presses) -> str:
    """One figure line: the presses, per key, CPU share and what was ingested."""
    per_key = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in res.ms.items())
    return (f"{name}: {res.summary()} (median per key, ms: {per_key}); CPU {res.cpu_s:.1f} s in {res.wall_s:.1f} s "
            f"({100 * res.cpu_s / max(res.wall_s, 1e-9):.0f}%); {res.streams} streams, {res.seen} intervals in, "
            f"{res.queued} still queued")


def thousand_streams(streams: int = 1000, backlog: int = 300, rounds: int = 3,
                     cases: tuple[str, ...] = ("live", "burst")) -> None:
    """The 1,000-stream figures against the one-idle-stream baseline, measured in this run."""
    idle = asyncio.run(idle_keys())
    print(describe("baseline, one idle stream, key l", idle))
    base = statistics.median(idle.all())
    if "live" in cases:
        live = asyncio.run(overview_keys(LiveFeed(streams, backlog=backlog), rounds))
        print(describe(f"{streams} live streams (a column each per second, {streams:,} intervals/s; {backlog} "
                       "columns of history each), keys on the overview and a stream's map", live))
        print(f"  ratio to the idle baseline (medians): {statistics.median(live.all()) / base:.1f}x")
    if "burst" in cases:
        burst = asyncio.run(overview_keys(LiveFeed(streams, backlog=backlog, burst=10), rounds, seed=10))
        print(describe(f"{streams} streams in bursts (10 columns each at once every second: {10 * streams:,} "
                       "intervals/s), the same keys", burst))
        print(f"  ratio to the idle baseline (medians): {statistics.median(burst.all()) / base:.1f}x")


if __name__ == "__main__":
    cases = tuple(arguments(__doc__, ("live", "burst"), many=True))
    print(machine())
    thousand_streams(int(os.environ.get("STREAMS", "1000")), int(os.environ.get("BACKLOG", "300")),
                     int(os.environ.get("ROUNDS", "3")), cases or ("live", "burst"))
