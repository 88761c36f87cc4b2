"""Pilot tests from the TUI hunt: zooming out while scrolled back fills the maps, the inspector is on the maps' cursor
column in every frame, every finding is selectable and shown whole (or cut with …), burst marks only on the bursts,
the difference map's saved text has its cells."""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tui_support import example_items, fixture_items, ranks, run_ended, synthetic, wait_until
from tui_support import frequency_map as freq

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, StreamId
from latencymap.core.sanitize import cell_width
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.axis import LABEL_W
from latencymap.tui.diffmap import DiffScreen
from latencymap.tui.findings import FindingItem, FindingsPanel, window_findings
from latencymap.tui.inspector import Inspector
from latencymap.tui.window import Window

JHICCUP = Path(__file__).resolve().parents[2] / "fixtures" / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog"
LONG = ("band 4.19ms–1.07s: 9% of events take 99% of the time (main band 8.19µs–1.05ms: 91%, 0.5%); 99.7% of them "
        "in cols 7, 13 and 18 (t+7.008s, t+13s, t+18s)")


def item_text(panel: FindingsPanel, index: int) -> str:
    """The text of item `index` as the panel shows it (its lines joined)."""
    lines = panel.plain_lines()[1:]
    mark = "123456789"[index]
    out: list[str] = []
    for line in lines:
        head, text = line[: LABEL_W + 1], line[LABEL_W + 1:]
        if head.strip() == mark:
            out = [text]
        elif out and not head.strip() and not text.startswith("…"):
            out.append(text)
        elif out:
            break
    return " ".join(out)


def test_zoom_out_while_scrolled_back_fills_every_cell_and_keeps_the_cursor() -> None:
    """The hunt's #3: 3,000 columns at 120x40, Home PgDn PgDn then `-` six times showed 2 cells of 40 and a blank
    time axis."""
    app = LatencyMapApp(iter(synthetic(3000)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("home", "pagedown", "pagedown")
        cursor = app.view.cursor
        await pilot.press(*["minus"] * 6)
        await pilot.pause(0.3)
        heat = freq(app)
        win = heat.window
        assert win.zoom == 64 and win.base >= 0
        assert heat.frame is not None and (heat.frame.values.sum(axis=0) > 0).all()  # every cell holds data
        assert app.view.cursor == cursor and 0 <= win.cell_of(cursor) < win.cells
        assert heat.spec.cursor == cursor
        axis = [line for line in heat.plain_lines() if "╵" in line]
        assert axis and sum(line.count("╵") for line in axis) >= 2  # the time axis has its labels

    run_ended(app, scenario, size=(120, 40))


def test_a_terminal_made_wider_while_scrolled_back_fills_the_maps() -> None:
    """Home at 80x24, then the terminal grows to 200x50: the held window reaches further forward."""
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("home")
        await pilot.pause(0.2)
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.5)
        heat = freq(app)
        assert heat.window.cells > 40 and heat.window.base == 0 and heat.spec.cursor == 0
        assert (heat.frame.values.sum(axis=0) > 0).all()

    run_ended(app, scenario, size=(80, 24))


def stepped(items: list[Interval], steps: queue.Queue) -> Iterator[Interval]:
    """Yield the items a few at a time, each batch when the test asks for it."""
    k = 0
    while k < len(items):
        count = steps.get(timeout=10)
        yield from items[k: k + count]
        k += count


def test_the_inspector_is_on_the_maps_cursor_column_in_every_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hunt's #6: the maps follow the data on every tick, the inspector used to every PLOT_EVERY_S only, so the
    cursor label and the map's values named one column and the inspector another."""
    monkeypatch.setattr("latencymap.tui.app.PLOT_EVERY_S", 3600.0)  # the strip and findings: forced repaints only
    items = synthetic(60)
    steps: queue.Queue = queue.Queue()
    app = LatencyMapApp(stepped(items, steps), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            inspector = app.query_one(Inspector)
            seen = 0
            for count in (10, 3, 1, 7, 2):
                steps.put(count)
                seen += count
                await wait_until(pilot, lambda n=seen: freq(app).spec is not None and freq(app).spec.stop == n)
                await pilot.pause(0.05)
                heat = freq(app)
                cursor = heat.spec.cursor
                assert cursor == seen - 1
                first, last = heat.window.columns_of(heat.window.cell_of(cursor))
                assert (inspector.inspection.first, inspector.inspection.stop) == (first, last)
                hist = app.current()
                rates = hist.counts[cursor].astype(float) / hist.durations[cursor]
                assert heat.frame.values[:, -1].sum() == pytest.approx(rates[heat.spec.lo: heat.spec.hi + 1].sum())
                assert inspector.inspection.events == int(hist.counts[cursor].sum())
            steps.put(len(items))
            await pilot.press("q")

    asyncio.run(main())


def test_every_finding_is_selectable_and_the_slow_band_is_listed() -> None:
    """The hunt's #7: the modes line could not be selected (so stayed cut) and the band findings were dropped."""
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        assert panel.selectable() == list(range(len(panel.items)))
        bands = [item.text for item in panel.items if item.text.startswith("band ")]
        assert any("256ms" in text and "15% of the time" in text for text in bands), bands
        await pilot.press("e")
        await pilot.pause(0.3)
        assert app.view.finding == 0
        head = panel.items[0].text
        assert "own 15% of the time" in head and item_text(panel, 0) == head  # shown whole
        slow = next(k for k, item in enumerate(panel.items) if "15% of the time" in item.text and k)
        while app.view.finding != slow:
            await pilot.press("e")
        await pilot.pause(0.3)
        assert item_text(panel, slow) == panel.items[slow].text

    run_ended(app, scenario, size=(160, 50))  # room for the band's line whole, its why too (three lines)


def test_the_selected_finding_wraps_onto_the_room_there_is_or_ends_with_an_ellipsis() -> None:
    """The hunt's #8: on a small panel the selected finding was cut mid-sentence without a …"""
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        items = [FindingItem("modes"), FindingItem(LONG, 7, 18, (7, 13, 18)), FindingItem("silence", 30, 32)]
        win = Window(71, 40, 1)
        for room in (1, 2):  # not enough room: the lines there are, the last one ending with …
            panel.show(items, win, 1, room=room)
            await pilot.pause(0.1)
            lines = panel.plain_lines()[1:]
            assert len(lines) == room and lines[-1].endswith("…")
            assert all(cell_width(line) <= panel.size.width for line in lines)
            shown = " ".join(line[LABEL_W + 1:] for line in lines)[:-1]
            assert LONG.startswith(shown.rstrip())
        panel.show(items, win, 1, room=3)  # just enough (3 lines at 80 columns): whole, the others give up theirs
        await pilot.pause(0.1)
        assert item_text(panel, 1) == LONG and len(panel.plain_lines()) == 4
        panel.show(items, win, 1, room=4)  # one more: the note says what is not shown
        await pilot.pause(0.1)
        assert item_text(panel, 1) == LONG and "2 more findings" in panel.plain_lines()[-1]
        panel.show(items, win, 1, room=8)  # room for all
        await pilot.pause(0.1)
        lines = panel.plain_lines()[1:]
        assert item_text(panel, 1) == LONG and any(line.endswith("silence") for line in lines)
        assert not any(line.endswith("…") for line in lines)

    run_ended(app, scenario, size=(80, 24))


def test_a_burst_finding_on_a_small_terminal_is_shown_whole_or_with_an_ellipsis() -> None:
    """jHiccup at 80x24, `e` to its band of bursts: its text is shown whole, or cut with … where the panel ends."""
    app = LatencyMapApp(iter(fixture_items(JHICCUP)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        band = next(k for k, item in enumerate(panel.items) if item.cols)
        while app.view.finding != band:
            await pilot.press("e")
        await pilot.pause(0.3)
        lines = [line for line in panel.plain_lines()[1:] if line.strip()]
        text = panel.items[band].text
        shown = item_text(panel, band)
        assert shown == text or (lines[-1].endswith("…") and text.startswith(shown[:-1].rstrip()))

    run_ended(app, scenario, size=(80, 24))


def test_a_band_of_bursts_is_marked_on_its_burst_columns_only() -> None:
    """The hunt's #17: a band "in cols 7, 13 and 18" was marked over every column from 7 to 18."""
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        win = Window(40, 40, 1)
        panel.show([FindingItem("modes"), FindingItem(LONG, 7, 18, (7, 13, 18)), FindingItem("episode", 30, 32)],
                   win, None, room=4)
        await pilot.pause(0.1)
        marks = panel.render_line(0).text[LABEL_W + 1:]
        assert [c for c, ch in enumerate(marks) if ch == "2"] == [7, 13, 18]
        assert [c for c, ch in enumerate(marks) if ch == "3"] == [30, 31, 32]  # a run is still a run

    run_ended(app, scenario, size=(120, 40))


def test_the_difference_maps_saved_text_has_its_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hunt's #12 (difference map): the .txt had the labels and the axis but blank cells (coloured spaces)."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("a", "down", "b", "d")
        assert isinstance(app.screen, DiffScreen)
        await pilot.pause(0.2)
        await pilot.press("s")
        await pilot.pause(0.2)
        txt = next(path for path in app.saved if path.suffix == ".txt")
        rows = [line for line in txt.read_text().splitlines() if line[:LABEL_W].strip().endswith("s")
                and len(line) > LABEL_W + 1]
        cells = "".join(line[LABEL_W + 1:] for line in rows)
        assert "+" in cells and "-" in cells  # A slower: more in the slow rows, fewer in the fast ones
        values = app.screen.query_one("#diffmap").values
        assert cells.count("+") == int((values > 0).sum()) and cells.count("-") == int((values < 0).sum())
        assert app.screen.query_one("#diffmap").mode == "truecolor"  # the screen itself keeps its colours

    run_ended(app, scenario, size=(180, 50))


def test_findings_first_line_is_selectable_in_the_panel_itself() -> None:
    panel = FindingsPanel()
    panel.items = [FindingItem("modes"), FindingItem("band"), FindingItem("episode", 3, 4)]
    assert panel.selectable() == [0, 1, 2] and panel.placed() == [2]
    assert np.array_equal(FindingItem("x", 3, 9, (3, 5, 9)).columns(), [(3, 3), (5, 5), (9, 9)])


def test_a_band_in_the_first_columns_kept_after_older_ones_were_dropped_is_no_start_up_in_the_panel() -> None:
    """A live view keeps the newest columns: its column 0 is no longer the recording's start, and a band there (cols
    20–21 of those read) is an episode, not the start-up."""
    hist = StreamHistory(StreamId("capped", "bpf", "nanosec"), 40)
    for col in range(60):
        counts = np.zeros(NSLOTS, dtype=np.int64)
        counts[15] = 500
        counts[11] = 600 if col in (20, 21) else 0
        hist.extend([Interval(hist.stream, float(col), float(col + 1), counts)])
    texts = [item.text for item in window_findings(hist, 0, hist.n)]
    assert any(text.startswith("episode cols 0–1 ") for text in texts), texts
    assert not any(text.startswith("start-up") for text in texts), texts


def test_a_stall_over_the_whole_stream_is_compared_with_the_p50_the_header_prints() -> None:
    """An HdrHistogram log whose fine buckets give the header's p50 (100 µs) where the rows would say 121 µs: over the
    whole stream, the findings panel compares its stall with that p50, as the report does; over part of it, with
    that part's own."""
    from latencymap.analysis.findings import dur
    from latencymap.core.accumulator import accumulate
    from latencymap.core.buckets import bin_values
    from latencymap.core.model import SourceBuckets

    stream = StreamId("log.hlog", "hdrhistogram", "nanosec")
    intervals = []
    for k in range(20):
        held = [0, 60, 0, 40, 0, int(k == 7)] if k != 6 else [0] * 6
        values = np.repeat(np.array([99, 100, 199, 200, 2e6 - 1, 2e6]) * 1e3, held)
        counts, sums = bin_values(values)
        own = SourceBuckets(tuple(v * 1e3 - d for v in (100, 200, 2e6) for d in (1, 0)), np.array(held), None)
        intervals.append(Interval(stream, 100.0 + k, 101.0 + k, counts, sums * 1e-9, source_buckets=own))
    acc = accumulate(iter(intervals))
    hist, source = acc.streams[stream], acc.sources[stream]
    p50 = source.percentile(0.5) * 1e-9
    (whole,) = [i.text for i in window_findings(hist, 0, hist.n, source=source) if i.text.startswith("stall ")]
    assert f"the stream's p50 ({dur(p50)})" in whole, whole
    (part,) = [i.text for i in window_findings(hist, 1, hist.n, source=source) if i.text.startswith("stall ")]
    assert f"the stream's p50 ({dur(p50)})" not in part, part
