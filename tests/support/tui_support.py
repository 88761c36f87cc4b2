"""Shared helpers for the TUI tests: fixture flows, synthetic intervals, waiting for the app."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import numpy as np

from latencymap.cli.common import REGISTRY
from latencymap.cli.main import main
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingItem, FindingsPanel
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.note_line import NoteLine

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "pylatencymap" / "example_latency_data.txt"


def example_items() -> list[Interval | Notice]:
    """Every item of the PyLatencyMap example fixture."""
    return list(input_flow([str(EXAMPLE)], REGISTRY))


def fixture_items(path: Path) -> list[Interval | Notice]:
    """Every item of an input file."""
    return list(input_flow([str(path)], REGISTRY))


def synthetic(n: int, label: str = "synthetic", seed: int = 1, start: float = 1_700_000_000.0) -> list[Interval]:
    """`n` one-second intervals of random counts in slots 8..20 (bpf, microsec)."""
    rng = np.random.default_rng(seed)
    stream = StreamId(label, "bpf", "microsec")
    out = []
    for k in range(n):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[8:20] = rng.integers(0, 50, size=12)
        out.append(Interval(stream, start + k, start + k + 1, counts))
    return out


def ranks(streams: int = 12, columns: int = 60, slow: int = 7, seed: int = 4,
          start: float = 1_700_000_000.0) -> list[Interval]:
    """`streams` peers `rank<i>/step` (bpf, µs) with one-second columns in slots 10..12, interleaved in time;
    rank `slow` moves to slots 14..15 for the last third."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(columns):
        for i in range(streams):
            counts = np.zeros(NSLOTS, dtype=np.int64)
            counts[10:13] = rng.integers(20, 60, size=3)
            if i == slow and k >= columns * 2 // 3:
                counts[14:16] = rng.integers(20, 60, size=2)
            out.append(Interval(StreamId(f"rank{i}/step", "bpf", "microsec"), start + k, start + k + 1, counts))
    return out


def episode_items(n: int = 120) -> list[Interval]:
    """One stream (bpf, µs) in slots 8..10 with a slow band (slots 15..16) appearing in columns 90..99."""
    rng = np.random.default_rng(3)
    stream = StreamId("episodes", "bpf", "microsec")
    out = []
    for k in range(n):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[8:11] = rng.integers(80, 120, 3)
        if 90 <= k < 100:
            counts[15:17] = rng.integers(60, 90, 2)
        out.append(Interval(stream, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts))
    return out


def gated(items: list, first: int, gate: threading.Event) -> Iterator:
    """Yield `first` items, wait for `gate`, then the rest."""
    yield from items[:first]
    gate.wait(10)
    yield from items[first:]


async def wait_until(pilot, condition, timeout: float = 10.0) -> None:
    """Let the app run until `condition()` holds."""
    waited = 0.0
    while not condition():
        await pilot.pause(0.05)
        waited += 0.05
        assert waited < timeout, "timed out waiting for the app"


async def wait_ended(pilot) -> None:
    """Until the flow has ended and the plots are drawn."""
    app: LatencyMapApp = pilot.app
    await wait_until(pilot, lambda: app.ended)
    await pilot.pause(0.4)


def run_ended(app: LatencyMapApp, scenario, size: tuple[int, int] = (160, 50)) -> None:
    """Run `app` headless at `size` until its flow has ended, then play `scenario(pilot)`."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await wait_ended(pilot)
            await scenario(pilot)

    asyncio.run(main())


def panel_items(app: LatencyMapApp) -> dict[str, list[FindingItem]]:
    """Each stream's findings panel items once the flow has ended, by label."""
    seen: dict[str, list[FindingItem]] = {}

    async def scenario(pilot) -> None:
        for k, hist in enumerate(app.acc.streams.values()):
            app.open_stream(k)
            await pilot.pause()
            seen[hist.stream.label] = list(app.query_one(FindingsPanel).items)

    run_ended(app, scenario, size=(160, 50))
    return seen


def note_line(app: LatencyMapApp) -> str:
    """What the screen on top says on its note line, in the footer's place ("" while its footer is shown)."""
    line = app.screen.query_one(NoteLine)
    return line.render().plain if line.display else ""


def told(app: LatencyMapApp) -> list[str]:
    """What the app told on the note line that is still due, head and message as the line says them, the newest
    (the one shown) last; none was a toast: toasts covered the maps and their legends for seconds at 80x24."""
    assert not app._notifications and not app.screen.query("Toast"), [n.message for n in app._notifications]
    return [f"{head} {message}" for (head, _, message), _ in app.note_lines.told]


def frequency_map(app: LatencyMapApp) -> HeatMap:
    """The stream view's frequency map."""
    return app.query_one("#frequency", HeatMap)


class _Terminal(io.StringIO):
    """A stdout that says it is a terminal: the commands then show the TUI."""

    def isatty(self) -> bool:
        return True


def command_tui(args: list[str], scenario: Callable[[LatencyMapApp, object], Awaitable[None]],
                monkeypatch, size: tuple[int, int] = (160, 50)) -> int | None:
    """Run `latencymap ARGS` as on a terminal, the TUI it opens (with what the command hands it: the flow, the
    source's analysis, ...) headless until its flow has ended, then `scenario(app, pilot)`; the exit code."""

    def run_tui(flow, opts, **kw) -> int:
        app = LatencyMapApp(flow, opts, color_mode="truecolor", **kw)
        run_ended(app, lambda pilot: scenario(app, pilot), size)
        return 0

    monkeypatch.setattr("latencymap.tui.app.run_tui", run_tui)
    monkeypatch.setattr(sys, "stdout", _Terminal())
    try:
        main.main(args, prog_name="latencymap", standalone_mode=False)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else None
    return 0


def analysis_shown(args: list[str], monkeypatch, size: tuple[int, int] = (160, 50)) -> dict[str, object]:
    """What the TUI of `latencymap ARGS` shows of a source's analysis once its flow has ended: the stragglers panel
    (None when there is none, else whether it is displayed, the analysis it lists and its lines) and each stream's
    findings over the columns on screen (by label: the panel's items, which name their stragglers' causes after
    ` — `), on a terminal of `size`."""
    from latencymap.tui.findings import FindingsPanel
    from latencymap.tui.stragglers import StragglersPanel

    seen: dict[str, object] = {}

    async def scenario(app: LatencyMapApp, pilot) -> None:
        panels = list(app.query(StragglersPanel))
        seen["stragglers"] = None if not panels else (panels[0].display, panels[0].found, panels[0].plain_lines())
        for k, hist in enumerate(app.acc.streams.values()):
            app.open_stream(k)
            await pilot.pause()
            seen[hist.stream.label] = [item.text for item in app.query_one(FindingsPanel).items]

    assert command_tui(args, scenario, monkeypatch, size) == 0
    return seen
