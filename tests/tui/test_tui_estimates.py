"""Every TUI panel estimates percentiles one way (`cell_estimates`): the overview's heat strips read a bucket with its
exact time spent and the values seen in it, as its p50/p99 columns, the map's percentile strip and the report do, so
no cell's p99 is past the largest value the data holds (hunt: the strips read the log-uniform top of the bucket)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tui_support import fixture_items, run_ended

from latencymap.core.accumulator import Accumulator
from latencymap.flow.pipeline import diffed
from latencymap.outputs.report import stream_report
from latencymap.sources.spark.source import SparkSource
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.overview import OverviewList, OverviewScreen, strip_cells
from latencymap.tui.overview_strips import cells_by_time, strip_p99, strips_p99
from latencymap.tui.percentiles import cell_figures
from latencymap.tui.window import Window

ROOT = Path(__file__).resolve().parents[2]
RANKS = ROOT / "fixtures" / "training" / "ranks12.txt"
SPARK = ROOT / "fixtures" / "spark" / "plain"


def _largest_seen(hist) -> float:
    """The largest value a stream's columns say they held: the largest seen, else the largest column mean of a slot
    with a single event (an exact time)."""
    if hist.seen is not None:
        most = hist.seen[1]
        return float(np.nanmax(np.where(np.isfinite(most), most, np.nan)))
    counts, times = hist.counts, hist.time
    single = counts == 1
    return float(times[single].max())


def test_the_overview_strips_of_spark_stages_top_at_the_largest_task() -> None:
    """`spark --per-stage` at 120x40: the scale read `356ms … 4.04s`; stage 2's largest task is 2.547 s."""
    source = SparkSource(target=str(SPARK), per_stage=True)
    app = LatencyMapApp(diffed(source.items(), "spark"), color_mode="truecolor", analysis=source.analysis)

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        high = listing.scale[1]
        stage2 = next(h for h in app.acc.streams.values() if " stage 2 " in h.stream.label)
        report = stream_report(stage2, app.acc)["total"]
        assert high <= max(_largest_seen(h) for h in app.acc.streams.values())
        assert high == pytest.approx(report["p99_s"], rel=0.01)  # stage 2's whole run is in one cell or two
        assert "4.04s" not in listing.render_line(0).text

    run_ended(app, scenario, size=(120, 40))


def test_the_overview_strip_of_one_exact_event_is_that_event() -> None:
    """ranks12 at 120x40: rank4's first cell's p99 is the one event of its slowest bucket (134 ms up), 140.95 ms by
    its exact sum; the strip read 223 ms."""
    app = LatencyMapApp(iter(fixture_items(RANKS)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        listing = app.screen.query_one(OverviewList)
        cells = strip_cells(listing.size.width)
        edges = listing.clock.fitted(cells).edges(cells)
        rank4 = next(h for h in app.acc.streams.values() if h.stream.label == "train/rank4/step")
        counts, spent, _ = cells_by_time(rank4, rank4.n, edges)
        first = int(np.flatnonzero(counts.sum(axis=1))[0])
        top = int(np.flatnonzero(counts[first])[-1])  # its p99 is in its slowest bucket, which holds one event
        assert counts[first, top] == 1 and counts[first].sum() < 100
        event = float(spent[first, top])
        assert event == pytest.approx(0.14095, abs=1e-5)
        assert strips_p99([(rank4, rank4.n)], edges)[0][0][first] == pytest.approx(event)
        assert listing.scale[1] == pytest.approx(event)
        assert "223ms" not in listing.render_line(0).text and "141ms" in listing.render_line(0).text

    run_ended(app, scenario, size=(120, 40))


def test_a_strip_cell_and_the_percentile_strip_agree() -> None:
    """The overview's `strip_p99` and the map's percentile strip give one p99 for the same cells (exact times), and
    mark the same cells open."""
    acc = Accumulator()
    acc.add(fixture_items(RANKS))
    for hist in acc.streams.values():
        for cells, zoom in ((40, 1), (10, 4)):
            win = Window(hist.n, cells, zoom)
            values, at_least = cell_figures(hist, win)
            strip = strip_p99(hist, hist.n, cells, zoom)
            np.testing.assert_array_equal(strip[0], values[:, 1])
            np.testing.assert_array_equal(strip[1], at_least[:, 1])
