"""TUI benchmarks: frame render time of two 40x200 heat maps (line API vs a rich Text per cell), a frame of the
overview of 256 streams after a new column of every stream (vs recomputing every stream's numbers from its whole
history), key-to-repaint latency while ingesting 10k intervals/s (vs idle), and key-to-repaint on the overview of
1,000 live streams (vs one idle stream; `tui_live.py`). Prints ratios; no thresholds.

Run: python bench/bench_tui.py        (python bench/tui_live.py [live] [burst]: the 1,000-stream cases only)
"""

from __future__ import annotations

import asyncio
import io
import statistics
import threading
import time
from collections.abc import Iterator

import numpy as np
from bench_common import arguments, machine
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual import events
from tui_live import thousand_streams

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import LABEL_W, RIGHT_W, HeatMap, MapSpec
from latencymap.tui.overview import OverviewList, OverviewScreen
from latencymap.views.frame import build_frame
from latencymap.views.options import BLUES, REDS

ROWS, COLS = 40, 200
STREAM = StreamId("bench", "bpf", "nanosec")


def intervals(n: int, seed: int = 0, start: float = 1_700_000_000.0) -> list[Interval]:
    """`n` one-second intervals with random counts in the lowest 40 slots."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n, NSLOTS), dtype=np.int64)
    counts[:, :ROWS] = rng.integers(0, 1000, size=(n, ROWS)) * (rng.random((n, ROWS)) < 0.6)
    return [Interval(STREAM, start + k, start + k + 1, counts[k]) for k in range(n)]


def history(n: int = 1000) -> StreamHistory:
    acc = Accumulator()
    acc.add(intervals(n))
    return acc.streams[STREAM]


def line_api_frame(maps: list[HeatMap], width: int) -> None:
    for heatmap in maps:
        heatmap.build_strips(width, "truecolor")


def naive_frame(hist: StreamHistory, console: Console) -> None:
    """Baseline: one rich Text per row with a new Style per cell, rendered to segments."""
    for kind, palette in (("frequency", BLUES), ("intensity", REDS)):
        frame = build_frame(hist, kind, COLS, 0, ROWS - 1)
        text = Text()
        for r in range(ROWS - 1, -1, -1):
            for level in frame.levels[r].tolist():
                text.append(" ", style=Style(bgcolor=f"color({palette[level]})"))
            text.append("\n")
        list(console.render(text))


def timed(fn, repeat: int) -> float:
    """Median milliseconds of `repeat` calls."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def bench_render() -> tuple[float, float]:
    hist = history()
    width = COLS + LABEL_W + 1 + RIGHT_W
    maps = [HeatMap("frequency"), HeatMap("intensity")]
    for heatmap in maps:  # no app: set the inputs directly
        heatmap.hist, heatmap.spec = hist, MapSpec(0, ROWS - 1, hist.n, cursor=hist.n - 5)
    console = Console(width=COLS + 10, force_terminal=True, color_system="truecolor", file=io.StringIO())
    line = timed(lambda: line_api_frame(maps, width), 30)
    naive = timed(lambda: naive_frame(hist, console), 5)
    return line, naive


def many_streams(streams: int = 256, columns: int = 600) -> list[Interval]:
    """`streams` peers with `columns` one-second columns each, interleaved in time."""
    rng = np.random.default_rng(2)
    out = []
    for k in range(columns):
        counts = np.zeros((streams, NSLOTS), dtype=np.int64)
        counts[:, 12:20] = rng.integers(0, 200, size=(streams, 8))
        for i in range(streams):
            out.append(Interval(StreamId(f"rank{i}/step", "bpf", "nanosec"), 1e9 + k, 1e9 + k + 1, counts[i]))
    return out


def naive_overview(app: LatencyMapApp) -> None:
    """Baseline: every stream's numbers recomputed from its whole history, one stream at a time."""
    for hist in app.acc.streams.values():
        hist.totals()
        hist.column_stats(slice(max(0, hist.n - 5), hist.n))


async def overview_frame() -> tuple[float, float, int]:
    """Median ms of an overview frame after a new column of every stream (numbers of every stream, lines on screen
    drawn) at 180x50, and the baseline."""
    items = many_streams(columns=620)
    app = LatencyMapApp(iter(items[: 256 * 600]), color_mode="truecolor")
    async with app.run_test(size=(180, 50)) as pilot:
        while not app.ended:
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        listing = screen.query_one(OverviewList)
        samples = []
        for k in range(600, 620):  # every stream changed since the last frame: nothing kept is reused as is
            app.acc.add(items[256 * k: 256 * (k + 1)])
            t0 = time.perf_counter()
            screen.update()
            for y in range(listing.size.height):
                listing.render_line(y)
            samples.append((time.perf_counter() - t0) * 1000)
        ours = statistics.median(samples)
        naive = timed(lambda: naive_overview(app), 5)
        return ours, naive, len(app.acc.streams)


def paced(rate: int, stop: threading.Event) -> Iterator[Interval]:
    """About `rate` intervals per second until `stop`."""
    pool = intervals(2000, seed=1)
    k, t0 = 0, time.perf_counter()
    while not stop.is_set():
        due = int((time.perf_counter() - t0) * rate)
        while k < due:
            item = pool[k % len(pool)]
            yield Interval(STREAM, 1e9 + k, 1e9 + k + 1, item.counts)
            k += 1
        time.sleep(0.001)


async def key_latency(rate: int, presses: int = 15) -> tuple[float, int]:
    """Median ms from a key press to the repaint of the frequency map that shows its effect."""
    stop = threading.Event()
    flow = paced(rate, stop) if rate else iter(intervals(300))
    app = LatencyMapApp(flow, color_mode="truecolor")
    painted: list[bool] = []
    samples = []
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(1.0)
        heat = app.query_one("#frequency", HeatMap)
        original = heat.build_strips

        def spy(width: int, mode: str) -> list:
            strips = original(width, mode)
            painted.append(bool(heat.spec and heat.spec.log))
            return strips

        heat.build_strips = spy  # type: ignore[method-assign]
        for _ in range(presses):
            want = not app.view.log
            painted.clear()
            t0 = time.perf_counter()
            app.post_message(events.Key("l", "l"))
            while want not in painted:
                await asyncio.sleep(0.0005)
            samples.append((time.perf_counter() - t0) * 1000)
            await pilot.pause(0.05)
        seen = app.acc.intervals_seen
    stop.set()
    return statistics.median(samples), seen


def main() -> None:
    print(machine())
    line, naive = bench_render()
    print(f"frame render, two {ROWS}x{COLS} maps: line API {line:.2f} ms, "
          f"rich Text per cell {naive:.1f} ms, ratio {naive / line:.1f}x faster")
    ours, naive, streams = asyncio.run(overview_frame())
    print(f"overview frame, {streams} streams x 600 columns (180x50): {ours:.2f} ms, "
          f"recomputing from whole histories {naive:.1f} ms, ratio {naive / ours:.1f}x faster")
    idle, _ = asyncio.run(key_latency(0))
    t0 = time.perf_counter()
    busy, seen = asyncio.run(key_latency(10_000))
    wall = time.perf_counter() - t0
    print(f"key-to-repaint: idle {idle:.1f} ms, while ingesting ~10k intervals/s {busy:.1f} ms "
          f"(ratio {busy / idle:.2f}); {seen} intervals ingested in ~{wall:.1f} s")
    thousand_streams()


if __name__ == "__main__":
    arguments(__doc__)
    main()
