"""Pilot tests: rows fitted to the data ([ ] pin them, r fits again), findings on the time axis (e / E), the
inspector on an empty column, the shared time axis and the percentile strip on the maps' cells."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
from tui_support import episode_items, example_items, fixture_items, gated, ranks, synthetic, told, wait_until
from tui_support import frequency_map as freq
from tui_support import run_ended as run

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.core.percentiles import percentile_estimates
from latencymap.flow.pipeline import input_flow
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.axis import CURSOR, LABEL_W, TICK
from latencymap.tui.findings import FindingsPanel
from latencymap.tui.inspector import Inspector
from latencymap.tui.percentiles import PercentileStrip
from latencymap.views.frame import row_range


def moving(first: int, then: int) -> list[Interval]:
    """`first` columns in slots 4..6 (bpf µs), then `then` columns in slots 20..22."""
    stream = StreamId("moving", "bpf", "microsec")
    out = []
    for k in range(first + then):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[4:7] = 100 if k < first else 0
        counts[20:23] = 0 if k < first else 100
        out.append(Interval(stream, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts))
    return out


def test_rows_fit_the_window_and_follow_data_that_moves_out_of_view() -> None:
    items = moving(30, 30)
    gate = threading.Event()
    app = LatencyMapApp(gated(items, 30, gate), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(160, 70)) as pilot:  # room for 19 rows a map
            await wait_until(pilot, lambda: freq(app).spec is not None and freq(app).spec.stop == 30)
            await pilot.pause(0.2)  # painted
            spec = freq(app).spec
            assert spec.lo <= 4 and 6 <= spec.hi < 20  # the fast slots, labelled with their own buckets
            assert not any(label.startswith(("<", "≥")) for label in freq(app).frame.labels)
            gate.set()
            await wait_until(pilot, lambda: app.ended)
            await pilot.pause(0.3)
            spec = freq(app).spec
            assert spec.lo <= 4 and spec.hi >= 22  # re-fitted: both bands are in the window
            labels = freq(app).frame.labels
            assert labels[4 - spec.lo] == "8µs" and labels[20 - spec.lo] == "524ms"

    asyncio.run(main())


def test_brackets_pin_the_rows_and_r_fits_them_again() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        fitted = (freq(app).spec.lo, freq(app).spec.hi)
        hist = app.current()
        rows = row_range(hist, first=freq(app).window.first, stop=hist.n)
        assert fitted == (rows.lo, rows.hi)
        await pilot.press("left_square_bracket")
        assert app.view.rows == (fitted[0] - 1, fitted[1] - 1)
        assert (freq(app).spec.lo, freq(app).spec.hi) == app.view.rows
        await pilot.press("r")
        assert app.view.rows is None and (freq(app).spec.lo, freq(app).spec.hi) == fitted

    run(app, scenario)


def test_rows_fit_the_screen() -> None:
    stream = StreamId("wide", "bpf", "nanosec")
    rng = np.random.default_rng(0)
    items = []
    for k in range(100):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[2:42] = rng.integers(1, 1000, 40)
        items.append(Interval(stream, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts))
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        spec = freq(app).spec
        assert spec.rows <= app.max_rows() < 40
        findings = app.query_one(FindingsPanel)
        assert findings.region.bottom <= app.query_one("#maps").region.bottom  # every panel on screen

    run(app, scenario, size=(160, 50))


def test_when_rows_run_short_each_map_keeps_its_own_population() -> None:
    """jHiccup's log spans 17 octaves: 91% of the events below 1 ms, hiccups up to 1 s owning 99% of the time."""
    path = Path(__file__).resolve().parents[2] / "fixtures" / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog"
    app = LatencyMapApp(input_flow([str(path)], REGISTRY), color_mode="truecolor")

    async def scenario(pilot) -> None:
        counts, spent = (a.sum(axis=0) for a in (app.current().counts_in(slice(None)), app.current().time_in(
            slice(None))))
        events_top, time_top = int(np.argmax(counts)), int(np.argmax(spent))
        frequency, intensity = freq(app).spec, app.query_one("#intensity").spec
        held = np.flatnonzero(counts)
        assert frequency.rows == intensity.rows < held[-1] - held[0] + 1  # the data does not fit a map's rows
        assert frequency.lo < events_top < frequency.hi  # the events' own bucket is a row, not a folded edge
        assert intensity.lo < time_top <= intensity.hi  # and the time's
        assert frequency.hi < time_top and (intensity.lo > events_top or intensity.folds[0])  # each folds the other
        cell = freq(app).window.cell_of(10)
        await pilot.click("#intensity", offset=(9 + cell, 1 + (intensity.rows - 1 - (time_top - intensity.lo))))
        assert app.view.selected_slot == time_top  # a click picks a bucket; the frequency map has no row of it
        await pilot.pause(0.2)
        assert freq(app).spec.selected_row is None and app.query_one("#intensity").spec.selected_row == (
            time_top - intensity.lo)

    run(app, scenario, size=(160, 45))


def test_time_axis_labels_and_cursor_line_are_apart() -> None:
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        heat = freq(app)
        strips = heat.build_strips(heat.size.width, "mono")
        cursor_line, axis_line = strips[-2].text, strips[-1].text
        assert cursor_line.count(CURSOR) == 1 and TICK not in cursor_line
        assert CURSOR not in axis_line and axis_line.count(TICK) >= 4
        assert len(axis_line.rstrip()) <= 9 + heat.window.cells  # no label past the last cell
        cell = axis_line.index(TICK) - 9  # labels start at their cell, past the 9 label columns
        ends = heat.window.cell_ends(heat.hist)
        assert 0 <= cell < heat.window.cells and np.isfinite(ends[cell])
        strip = app.query_one(PercentileStrip)
        assert strip.build_strips(strip.size.width)[-1].text == axis_line  # one time axis for both

    run(app, scenario)


def test_percentile_strip_cells_are_the_maps_cells() -> None:
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        heat = freq(app)
        strip = app.query_one(PercentileStrip)
        strip.build_strips(strip.size.width)
        win = heat.window
        hist = app.current()
        a, b = win.columns_of(win.cells - 1)
        expected = percentile_estimates(hist.counts[a:b].sum(axis=0), hist.low, hist.high, (0.50, 0.99))
        np.testing.assert_allclose(strip.values[-1], expected)
        assert strip.values.shape[0] == win.cells

    run(app, scenario)


def test_e_selects_findings_and_moves_the_cursor_to_their_columns() -> None:
    app = LatencyMapApp(iter(episode_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        placed = panel.placed()
        assert placed, panel.items
        item = panel.items[placed[0]]
        assert item.first_col == 90 and item.last_col == 99
        while app.view.finding != placed[0]:  # the modes line (and any finding without columns) first
            assert app.view.cursor is None
            await pilot.press("e")
        await pilot.pause(0.3)
        assert app.view.finding == placed[0] and app.view.cursor == 90
        assert app.query_one(Inspector).inspection.first == 90
        marks = panel.render_line(0).text
        win = freq(app).window
        assert set(marks[9 + win.cell_of(90): 9 + win.cell_of(99) + 1]) == {"123456789"[placed[0]]}
        await pilot.press("E")
        assert app.view.finding == (placed[0] - 1) % len(panel.items)

    run(app, scenario, size=(200, 50))


def test_a_finding_without_columns_is_selected_and_the_cursor_stays() -> None:
    """A steady stream: no episode, stall or silence to jump to (the example data ends in a silence now said); `e`
    selects the modes line, shown whole, and leaves the cursor where it is. (A stream spread evenly over 12 octaves
    is no such stream: its slowest octave, 8% of the events, holds half of the time, and says so over its columns.)"""
    app = LatencyMapApp(iter(ranks(streams=1, slow=-1)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        assert panel.items and not panel.placed()
        await pilot.press("e")
        await pilot.pause(0.3)
        assert app.view.finding == 0 and app.view.cursor is None
        assert not any("no finding" in m for m in told(app))
        assert panel.items[0].text in " ".join(line[LABEL_W + 1:] for line in panel.plain_lines()[1:])

    run(app, scenario)


def test_inspector_starts_on_the_newest_nonempty_column_and_says_when_one_is_empty() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")
    ref = Accumulator()
    ref.add(example_items())
    hist = next(iter(ref.streams.values()))
    last = int(np.flatnonzero(hist.counts.any(axis=1))[-1])

    async def scenario(pilot) -> None:
        inspector = app.query_one(Inspector)
        assert inspector.inspection.first == last and not inspector.inspection.empty
        lines = str(inspector.render()).splitlines()
        rows = freq(app).spec.rows
        assert [line.split()[0] for line in lines[1: rows + 1]] == freq(app).frame.labels[::-1]  # the map's rows
        await pilot.press("right")
        assert inspector.inspection.first == last + 1 and inspector.inspection.empty
        assert "empty column" in str(inspector.render())

    run(app, scenario)


def test_the_strip_cells_percentiles_are_the_inspectors_for_exact_times() -> None:
    """Columns with exact times (BPF sums): the strip's p50/p99 of a cell of 3 merged columns are the inspector's
    (`totals` of those columns), which use the buckets' exact means, so the two panels agree."""
    from latencymap.core.accumulator import Accumulator
    from latencymap.core.buckets import bin_values
    from latencymap.core.model import Interval, StreamId
    from latencymap.tui.percentiles import cell_percentiles
    from latencymap.tui.window import Window

    rng = np.random.default_rng(5)
    stream = StreamId("disk", "bpf", "nanosec")
    acc = Accumulator()
    for k in range(12):
        counts, sums = bin_values(np.r_[rng.normal(27e3, 3e3, 500), rng.normal(300e3, 20e3, 8)])
        acc.add([Interval(stream, 100.0 + k, 101.0 + k, counts, sums * 1e-9)])
    hist = acc.streams[stream]
    win = Window(hist.n, 4, 3)
    a, b = win.cell_bounds()
    strip = cell_percentiles(hist, win)
    inspector = hist.totals(slice(int(a[-1]), int(b[-1]))).percentiles
    np.testing.assert_allclose(strip[-1], [inspector[0.50], inspector[0.99]])
    plain = percentile_estimates(hist.counts[a[-1]:b[-1]].sum(axis=0), hist.low, hist.high, (0.50, 0.99))
    assert not np.allclose(strip[-1], plain)  # the means moved them: the test would pass on counts alone otherwise


def test_a_band_that_came_in_bursts_is_a_finding_with_its_columns() -> None:
    """The modes line says a steady band; a band of bursts (GC pauses at cols 30, 60 and 90) has columns to go to."""
    from latencymap.analysis.diagnosis import diagnose
    from latencymap.core.buckets import bin_values, bounds_seconds
    from latencymap.tui.findings import finding_items

    rng = np.random.default_rng(3)
    counts, times = [], []
    for j in range(120):
        values = rng.lognormal(np.log(1e6), 0.3, 200)
        if j in (30, 60, 90):
            values = np.r_[values, rng.uniform(10e6, 500e6, 100)]
        c, t = bin_values(values)
        counts.append(c)
        times.append(t * 1e-9)
    starts = 1_700_000_000.0 + np.arange(120, dtype=np.float64)
    low, high = bounds_seconds("bpf", "nanosec")
    items = finding_items(diagnose(np.array(counts), np.array(times), low, high, starts, starts + 1.0))
    assert [(i.first_col, i.last_col) for i in items if "cols 30, 60 and 90" in i.text] == [(30, 90)]
    assert [i.cols for i in items if "cols 30, 60 and 90" in i.text] == [(30, 60, 90)]


def test_row_labels_of_very_slow_buckets_keep_their_unit_as_the_report_writes_them() -> None:
    """A bucket at 2^40 µs was labelled `1099512` (its `s` cut by the 7-cell label) and the others raw seconds: each
    label now fits and names its unit, in the report's days and hours (`13 days`, `≥12.7d`, `19.1h`)."""
    stream = StreamId("slow disk", "bpf", "microsec")
    items = []
    for k in range(30):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[34:42] = 5
        items.append(Interval(stream, 1_700_000_000.0 + k, 1_700_000_001.0 + k, counts))
    app = LatencyMapApp(iter(items), color_mode="mono")

    async def scenario(pilot) -> None:
        fmap = freq(app)
        labels = [fmap.render_line(y).text[1:LABEL_W].strip() for y in range(1, 1 + fmap.spec.rows)]
        assert labels and all(label.endswith(("ns", "µs", "ms", "s", "min", "h", "days", "d")) for label in labels)
        assert any("days" in label for label in labels) and any(label.endswith("h") for label in labels), labels
        assert not any(label.rstrip("s").isdigit() and len(label) > 5 for label in labels), labels

    run(app, scenario)


def test_a_single_column_hgrm_cells_percentiles_are_the_inspectors_and_the_headers(fixtures: Path) -> None:
    """The only cell of an `.hgrm` is the whole stream: beside the strip, its p99 is the header's and the
    inspector's (10.5 ms, from the file's own buckets), not its log2 rows' (12.6 ms)."""
    app = LatencyMapApp(iter(fixture_items(fixtures / "hdrhistogram" / "service_ms.hgrm")), color_mode="mono")

    async def scenario(pilot) -> None:
        strip = app.query_one(PercentileStrip)
        if not strip.display:
            await pilot.press("p")
        await wait_until(pilot, lambda: strip.values is not None)
        ins = app.query_one(Inspector).inspection
        assert ins is not None and (ins.first, ins.stop) == (0, 1)
        filled = np.flatnonzero(np.isfinite(strip.values[:, 1]))
        assert len(filled) == 1
        assert tuple(strip.values[filled[0]]) == (ins.percentiles[0.50], ins.percentiles[0.99])
        text = "\n".join(strip.plain_lines())
        assert "p99 10.5ms" in text and "p50 312µs" in text and "12.6ms" not in text.split("▲ p99", 1)[1], text

    run(app, scenario)
