"""Pilot tests: every key changes the view state as specified."""

from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import numpy as np
import pytest
from tui_support import example_items, gated, ranks, synthetic, wait_until
from tui_support import frequency_map as freq
from tui_support import run_ended as run

from latencymap.core.model import Interval, StreamId
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.inspector import Inspector
from latencymap.tui.keys import HelpScreen
from latencymap.tui.note_line import NoteLine
from latencymap.tui.overview import OverviewList, OverviewScreen, _values
from latencymap.tui.percentiles import PercentileStrip
from latencymap.views.options import ViewOptions

SIZE = (160, 50)

def test_space_freezes_display_while_ingest_continues() -> None:
    items = [i for i in example_items() if isinstance(i, Interval)]  # the sample's datasource note aside
    gate = threading.Event()
    app = LatencyMapApp(gated(items, 20, gate), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen == 20 and freq(app).spec is not None
                             and freq(app).spec.stop == 20)
            await pilot.press("space")
            assert app.state_name == "paused"
            gate.set()
            await wait_until(pilot, lambda: app.ended)
            await pilot.pause(0.2)
            assert app.acc.intervals_seen == len(items)
            assert freq(app).spec.stop == 20
            assert app.state_name == "paused"
            await pilot.press("space")
            assert freq(app).spec.stop == len(items)
            assert app.state_name == "ended"

    asyncio.run(main())


def hung_rank(columns: int = 60, stopped: int = 3, stop_at: int = 20) -> list[Interval]:
    """Six peers `rank<i>/step`, `columns` one-second columns, rank `stopped` silent after its first `stop_at`."""
    return [item for k, item in enumerate(ranks(streams=6, columns=columns, slow=-1))
            if item.stream.label != f"rank{stopped}/step" or k // 6 < stop_at]


def test_space_freezes_every_stream_at_its_own_columns() -> None:
    """Paused after a look at a rank that stopped at column 20 of 60: every other rank keeps its 60 columns (streams
    do not share column indexes), in the overview (its "now", no `stale`) and in its map (the cursor goes to 59)."""
    app = LatencyMapApp(iter(hung_rank()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        overview = app.screen
        assert isinstance(overview, OverviewScreen)
        app.open_stream(3)
        await pilot.pause()
        assert freq(app).hist.stream.label == "rank3/step" and freq(app).spec.stop == 20
        await pilot.press("escape", "space")
        await pilot.pause(0.2)
        assert app.screen is overview and app.state_name == "paused"
        listing = overview.query_one(OverviewList)
        assert listing.stops == {r.index: r.hist.n for r in listing.rows} and len(listing.rows) == 6
        assert [r.label for r in listing.rows if r.stale] == ["rank3/step"]
        assert all(math.isfinite(r.p99_now) for r in listing.rows if r.label != "rank3/step")
        app.open_stream(0)
        await pilot.pause()
        assert freq(app).spec.stop == 60 and "columns 60" in str(app.query_one("#status").render())
        await pilot.press("home", "end")
        assert freq(app).spec.cursor == 59
        await pilot.press("left")
        assert app.view.cursor == 58

    run(app, scenario)


def test_paused_overview_stays_the_moment_of_the_pause() -> None:
    """Paused on the overview while columns (and a new stream) go on arriving: a resize, a stream opened and left
    lay the numbers of the pause out again, never live ones ("waited" and "p99 all" included); the stream's map
    counts the columns it had then; resumed, the overview follows the data again."""
    items = [*ranks(streams=6, columns=40, slow=-1), *synthetic(10, "late/step")]
    gate = threading.Event()
    app = LatencyMapApp(gated(items, 6 * 20, gate), color_mode="truecolor")

    def seen(listing: OverviewList) -> list[tuple[str, tuple[str, ...]]]:
        return [(r.label, _values(r)) for r in listing.rows]

    def drawn(listing: OverviewList) -> list[list[object]]:
        return [list(listing.render_line(y)) for y in range(len(listing.rows) + 2)]

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.acc.intervals_seen == 6 * 20 and isinstance(app.screen, OverviewScreen))
            await pilot.pause(0.4)
            overview = app.screen
            listing = overview.query_one(OverviewList)
            await pilot.press("space")
            await pilot.pause(0.1)
            numbers, lines = seen(listing), drawn(listing)
            assert len(numbers) == 6 and listing.stops == dict.fromkeys(range(6), 20)
            gate.set()
            await wait_until(pilot, lambda: app.ended)
            await pilot.pause(0.3)
            await pilot.resize_terminal(120, 40)
            await pilot.pause(0.3)
            assert seen(listing) == numbers and listing.stops == dict.fromkeys(range(6), 20)
            await pilot.resize_terminal(*SIZE)
            await pilot.pause(0.3)
            assert drawn(listing) == lines
            assert "6 streams" in str(overview.query_one("#overview-head").render())
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert freq(app).hist.n == 40 and freq(app).spec.stop == 20
            assert "columns 20" in str(app.query_one("#status").render())
            await pilot.press("escape")
            await pilot.pause(0.3)
            assert app.screen is overview and seen(listing) == numbers and drawn(listing) == lines
            await pilot.press("space")
            await pilot.pause(0.3)
            assert len(listing.rows) == 7 and listing.stops[0] == 40
            now = dict(seen(listing))
            assert all(now[label] != values for label, values in numbers)  # "waited" grew at least

    asyncio.run(main())


def test_arrows_home_end_move_the_cursor_and_the_inspector() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        hist = app.current()
        n = hist.n
        last = int(np.flatnonzero(hist.counts.any(axis=1))[-1])
        assert last < n - 1  # the fixture ends on empty columns: the cursor starts on the newest non-empty one
        assert app.view.cursor_at(n) == last
        assert app.query_one(Inspector).inspection.first == last
        await pilot.press("left", "left")
        assert app.view.cursor == last - 2
        assert app.query_one(Inspector).inspection.first == last - 2
        await pilot.press("right")
        assert app.view.cursor == last - 1
        await pilot.press("home")
        assert app.view.cursor == 0
        assert app.query_one(Inspector).inspection.first == 0
        await pilot.press("end")  # the newest column, as the help says, though it is empty; following live data
        assert app.view.cursor is None and app.view.end is None and app.view.cursor_at(n) == n - 1
        assert app.query_one(Inspector).inspection.first == n - 1 and app.query_one(Inspector).inspection.empty
        assert freq(app).spec.cursor == n - 1

    run(app, scenario)


def test_pageup_pagedown_scroll_through_history() -> None:
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        cells = freq(app).cells
        assert freq(app).spec.stop == 300
        await pilot.press("pageup")
        assert freq(app).spec.stop == 300 - cells
        await pilot.press("pageup")
        assert freq(app).spec.stop == 300 - 2 * cells
        await pilot.press("pagedown", "pagedown")
        assert app.view.end is None and freq(app).spec.stop == 300

    run(app, scenario)


def test_plus_minus_zoom_merges_columns() -> None:
    app = LatencyMapApp(iter(synthetic(300)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        cells = freq(app).cells
        assert freq(app).frame.levels.shape[1] == cells
        await pilot.press("minus")
        assert app.view.zoom == 2 and freq(app).spec.zoom == 2
        await pilot.pause()
        assert freq(app).frame.values.shape[1] == min(cells, 150)
        await pilot.press("minus", "plus")
        assert app.view.zoom == 2
        await pilot.press("plus", "plus")
        assert app.view.zoom == 1

    run(app, scenario)


def test_brackets_shift_the_bucket_range() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        lo, hi = freq(app).spec.lo, freq(app).spec.hi
        await pilot.press("right_square_bracket")
        assert (freq(app).spec.lo, freq(app).spec.hi) == (lo + 1, hi + 1)
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert (freq(app).spec.lo, freq(app).spec.hi) == (lo - 1, hi - 1)

    run(app, scenario)


def test_l_toggles_log_scale() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        linear = freq(app).frame.levels.copy()
        await pilot.press("l")
        await pilot.pause()
        assert app.view.log and freq(app).spec.log
        assert (freq(app).frame.levels >= linear).all() and (freq(app).frame.levels != linear).any()
        await pilot.press("l")
        assert not freq(app).spec.log

    run(app, scenario)


def test_f_and_i_choose_the_maps() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        inten = app.query_one("#intensity", HeatMap)
        await pilot.press("f")
        assert freq(app).display and not inten.display
        await pilot.press("i")
        assert inten.display and not freq(app).display
        await pilot.press("i")
        assert inten.display and freq(app).display

    run(app, scenario)


def test_p_toggles_the_percentile_strip_and_question_mark_shows_help() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("p")
        assert not app.query_one(PercentileStrip).display
        await pilot.press("p")
        assert app.query_one(PercentileStrip).display
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("x", "down")  # other keys leave it open (the arrows scroll it)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

    run(app, scenario)


def test_s_saves_svg_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("s")
        await pilot.pause()
        svg, txt = app.saved
        assert svg.parent == tmp_path and svg.suffix == ".svg" and "<svg" in svg.read_text()
        text = txt.read_text()
        assert "Frequency" in text and "Intensity" in text and "█" in text
        said = app.screen.query_one(NoteLine).render().plain  # where the footer was: no toast over the maps
        assert said == f" saved  {svg.name} and {txt.name}" and not app._notifications, said

    run(app, scenario)


def test_s_on_the_help_saves_it_and_its_footer_offers_only_what_works_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The footer under the help offered `s Save` (and `space Pause`, `q Quit`) where `s` did nothing: a modal
    screen passes no key on to the app. The help saves itself, and its footer lists its own keys."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        offered = {key: bound.binding.action for key, bound in app.screen.active_bindings.items()
                   if bound.binding.show and bound.enabled}
        assert offered.get("s") == "app.save" and offered.get("q") == "close" and "space" not in offered, offered
        footers = list(app.screen.query("Footer"))
        assert len(footers) == 1 and footers[0].screen is app.screen
        await pilot.press("s")
        await pilot.pause()
        svg, txt = app.saved
        assert svg.parent == tmp_path and "<svg" in svg.read_text()
        text = txt.read_text()
        assert text.startswith("latencymap keys") and "save an SVG screenshot" in text, text
        assert isinstance(app.screen, HelpScreen)  # still open

    run(app, scenario, size=(100, 30))


def test_s_brings_the_panels_to_the_maps_before_saving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The strip and the findings repaint at most every PLOT_EVERY_S (the inspector with the maps, every time); a
    frame saved in between still shows one column everywhere."""
    monkeypatch.chdir(tmp_path)
    items = synthetic(40)
    gate = threading.Event()
    app = LatencyMapApp(gated(items, 20, gate), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            panel = app.query_one(Inspector)
            await wait_until(pilot, lambda: panel.inspection is not None and panel.inspection.first == 19)
            monkeypatch.setattr("latencymap.tui.app.PLOT_EVERY_S", 3600.0)  # from now on, only forced repaints
            gate.set()
            await wait_until(pilot, lambda: app.ended and freq(app).spec.stop == 40)
            await pilot.pause(0.2)
            strip = app.query_one(PercentileStrip)
            assert strip.cursor == 19  # the set-up holds: the maps moved on, the strip did not
            assert panel.inspection.first == 39  # the inspector is on the maps' cursor column in every frame
            await pilot.press("s")
            await pilot.pause()
            assert panel.inspection.first == 39 and strip.cursor == 39
            svg, txt = app.saved
            text = txt.read_text()
            assert "column 39" in text and "column 19" not in text
            assert "column 39" in svg.read_text().replace("&#160;", " ")

    asyncio.run(main())


@pytest.mark.parametrize(("key", "code"), [("q", 0), ("ctrl+c", 130)])
def test_q_quits_with_zero_and_ctrl_c_as_interrupted(key: str, code: int) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press(key)

    run(app, scenario)
    assert app.return_code == code


def test_tab_switches_streams() -> None:
    items = [x for pair in zip(synthetic(30, "alpha"), synthetic(30, "beta", seed=2), strict=True) for x in pair]
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)  # two streams: the overview first
        await pilot.press("o", "o", "o", "home")  # sorted by label, the first one
        await pilot.press("enter")
        assert not isinstance(app.screen, OverviewScreen)
        assert freq(app).hist.stream.label == "alpha"
        await pilot.press("tab")
        assert freq(app).hist.stream.label == "beta"
        assert "beta" in str(app.query_one("#status").render())
        await pilot.press("tab")
        assert freq(app).hist.stream.label == "alpha"
        await pilot.press("shift+tab")
        assert freq(app).hist.stream.label == "beta"
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)

    run(app, scenario)


def test_tab_goes_through_the_overviews_list_its_filter_and_order() -> None:
    """The hunt's names.txt: with `/write` filtering the overview, Tab from the last stream listed
    (host019/nvme1n1/write) opened host000/nvme0n1/read, the next in arrival order, outside the filter. Tab and
    shift+tab now go through the list as the overview shows it: filtered, sorted (slowest first)."""
    labels = [f"host{h:03d}/nvme{d}n1/{op}" for h in range(4) for d in (0, 1) for op in ("read", "write")]
    items = []
    for k in range(20):
        for label in labels:
            counts = np.zeros(64, dtype=np.int64)
            counts[14 if label == "host002/nvme1n1/write" else 6] = 100
            items.append(Interval(StreamId(label, "bpf", "microsec"), 1000.0 + k, 1001.0 + k, counts))
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("slash", *"write", "enter", "end")
        listed = [row.label for row in app.screen.query_one(OverviewList).rows]
        assert len(listed) == 8 and all(label.endswith("/write") for label in listed)
        assert listed[0] == "host002/nvme1n1/write"  # the slowest first
        await pilot.press("enter")
        shown = [freq(app).hist.stream.label]
        for _ in range(len(listed)):
            await pilot.press("tab")
            shown.append(freq(app).hist.stream.label)
        assert shown == [*listed[-1:], *listed], shown  # from the last one listed round to it again
        await pilot.press("shift+tab", "shift+tab")
        assert freq(app).hist.stream.label == listed[-3]

    run(app, scenario)


def test_click_selects_column_and_bucket() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        heat = freq(app)
        win = heat.window
        cell = win.cell_of(10)
        rows = heat.spec.rows
        await pilot.click("#frequency", offset=(8 + 1 + cell, 1 + (rows - 1 - 3)))
        assert app.view.cursor == 10 and app.view.selected_slot == heat.spec.lo + 3
        assert app.query_one(Inspector).inspection.first == 10

    run(app, scenario)


def test_pinned_scales_come_from_the_options() -> None:
    """--intensity_maxval is in the stream's unit per second, as PyLatencyMap's: 500 on millisec records is 0.5 s/s."""
    opts = ViewOptions(frequency_maxval=100.0, intensity_maxval=500.0)
    app = LatencyMapApp(iter(example_items()), opts, color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert freq(app).frame.maxval == 100.0
        assert app.query_one("#intensity", HeatMap).frame.maxval == 0.5

    run(app, scenario)
