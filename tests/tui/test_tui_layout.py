"""Pilot tests: the map screen degrades gracefully on small terminals (inspector narrower or hidden, `v` and `p`
toggle it and the strip, rows folded so both maps fit), and every header line is fitted to the width."""

from __future__ import annotations

import numpy as np
from tui_support import example_items, synthetic
from tui_support import frequency_map as freq
from tui_support import run_ended as run

from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.core.sanitize import cell_width
from latencymap.core.units import format_duration
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingsPanel
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.inspector import Inspector
from latencymap.tui.layout import COMPACT_W, INSPECTOR_W
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.status import status_text


def screen_lines(app: LatencyMapApp) -> list[str]:
    """The screen as the terminal shows it, one string per line."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def fits(app: LatencyMapApp) -> None:
    """Both maps and every panel under them lie inside the body."""
    bottom = app.query_one("#maps").region.bottom
    for widget in [*app.query(HeatMap), app.query_one(PercentileStrip), app.query_one(FindingsPanel)]:
        if widget.display:
            assert widget.region.bottom <= bottom, widget


def test_at_80x24_the_inspector_hides_and_both_maps_fit() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert not app.query_one(Inspector).display
        assert freq(app).size.width == 80 and freq(app).cells >= 40  # the maps keep the screen's width
        assert not app.query_one(PercentileStrip).display  # no room for it: the maps keep their rows
        titles = [line for line in screen_lines(app) if line.startswith((" Frequency:", " Intensity:"))]
        assert len(titles) == 2 and all(line.rstrip().endswith("col/cell]") for line in titles)  # fitted
        assert all(m.spec.rows >= 5 for m in app.query(HeatMap))
        for heat in app.query(HeatMap):  # few rows: the legend on one line, then the maximum
            assert any(s.text.rstrip().endswith(">0…max") for s in heat.build_strips(80, "mono"))
            assert any("max " in s.text for s in heat.build_strips(80, "mono"))
        fits(app)
        await pilot.press("v")
        await pilot.pause(0.3)
        inspector = app.query_one(Inspector)
        assert inspector.display and inspector.compact and inspector.outer_size.width == COMPACT_W
        assert all(len(line) <= COMPACT_W - 2 for line in inspector.plain_lines()[:freq(app).spec.rows + 1])
        await pilot.press("p")
        await pilot.pause(0.3)
        assert app.query_one(PercentileStrip).display
        fits(app)
        await pilot.press("v", "p")
        await pilot.pause(0.3)
        assert not app.query_one(Inspector).display and not app.query_one(PercentileStrip).display

    run(app, scenario, size=(80, 24))


def test_the_inspector_is_compact_on_a_middling_terminal_and_full_on_a_wide_one() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        inspector = app.query_one(Inspector)
        assert inspector.display and inspector.compact and inspector.outer_size.width == COMPACT_W
        await pilot.resize_terminal(130, 40)
        await pilot.pause(0.4)
        assert inspector.display and not inspector.compact and inspector.outer_size.width == INSPECTOR_W
        assert freq(app).cells == 130 - INSPECTOR_W - 9 - 23
        fits(app)

    run(app, scenario, size=(100, 30))


def test_rows_before_any_event_in_the_window_are_folded_to_fit() -> None:
    """A window of empty columns shows the 12 rows of PyLatencyMap's autotune: folded to what the screen holds."""
    stream = StreamId("quiet", "bpf", "microsec")
    items = []
    for k in range(90):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        if k < 10:
            counts[8:12] = 5
        items.append(Interval(stream, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts))
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert freq(app).window.first >= 10  # nothing but empty columns on screen
        assert all(m.spec.rows <= app.max_rows() for m in app.query(HeatMap))
        fits(app)

    run(app, scenario, size=(80, 24))


def test_status_lines_fit_the_width_and_keep_whole_numbers() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        hist = app.current()
        p99 = f"p99 {format_duration(hist.totals(slice(0, hist.n), fast=True).percentiles[0.99])}"
        for width in (200, 120, 80):
            await pilot.resize_terminal(width, 40)
            await pilot.pause(0.3)
            first, second = screen_lines(app)[:2]
            assert cell_width(first.rstrip()) <= width and "ENDED" in first and "db file" in first
            assert second.startswith(" latest ") and "overall" in second and second.rstrip().endswith(p99)
            assert "…" not in second  # fields are dropped whole, never cut

    run(app, scenario, size=(200, 40))


def test_the_header_numbers_are_the_streams_whatever_the_view_shows() -> None:
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        status = app.query_one("#status")
        before = str(status.render())
        await pilot.press("home")
        await pilot.pause(0.3)
        assert freq(app).spec.stop < 300 and str(status.render()) == before
        await pilot.press("pageup", "left")
        assert str(status.render()) == before

    run(app, scenario, size=(160, 50))


def test_status_fits_in_cells_with_a_wide_label() -> None:
    stream = StreamId("磁盘读取延迟" * 8, "bpf", "microsec")
    counts = np.zeros(NSLOTS, dtype=np.int64)
    counts[8:12] = 7
    acc = Accumulator()
    acc.add([Interval(stream, 0.0, 1.0, counts), Interval(stream, 1.0, 2.0, counts)])
    hist = acc.streams[stream]
    for width in (120, 80, 50):
        text = status_text(hist, hist.n, state="live", skipped=4, stream_index=0, streams=1, ingest_rate=9.0,
                           width=width)
        first, second = text.plain.split("\n")
        assert cell_width(first) <= width and cell_width(second) <= width
        assert "LIVE" in first and "磁盘" in first and "skipped 4" in first
        assert ("…" in first) == (width < 100)  # the label is cut once the less important fields are gone
        assert second.startswith(" latest ") and "p99" in second
