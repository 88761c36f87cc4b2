"""Pilot tests: the panels and screens on small terminals: findings (room, …, `e` through all), the help screen
(fits, scrolls, closes on Esc/q/?), the overview's header (fitted, skipped records), the difference map's footer,
the cursor on the newest column, the value column beside the maps, natural label order."""

from __future__ import annotations

import numpy as np
import pytest
from test_tui_layout import screen_lines
from tui_support import example_items, ranks, run_ended, synthetic
from tui_support import frequency_map as freq

from latencymap.core.model import Notice
from latencymap.core.sanitize import cell_width
from latencymap.core.units import format_duration
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.findings import FindingItem, FindingsPanel
from latencymap.tui.inspector import Inspector
from latencymap.tui.keys import HelpScreen
from latencymap.tui.overview import OverviewList, OverviewScreen
from latencymap.tui.overview_stats import natural_key
from latencymap.tui.window import Window

LONG = "episode cols 90–99 (t+90s–t+100s): a band appeared at 16.4ms–65.5ms (34% of events, 98% of the time)"


def test_findings_take_the_room_there_is_and_cut_long_lines() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        panel = app.query_one(FindingsPanel)
        items = [FindingItem("modes")] + [FindingItem(f"{k} {LONG}", 10 * k, 10 * k + 3) for k in range(1, 7)]
        panel.show(items, Window(71, 40, 1), None, room=8)
        await pilot.pause(0.1)
        lines = panel.plain_lines()
        assert len(lines) == 1 + len(items)  # more than 3 when there is room
        assert all(cell_width(line) <= panel.size.width for line in lines)
        assert lines[2].endswith("…") and lines[2].split()[1] == "1"
        panel.show(items, Window(71, 40, 1), 5, room=4)
        await pilot.pause(0.1)
        lines = panel.plain_lines()
        assert len(lines) == 1 + 4 and "more finding" in lines[-1]
        assert any(line.split()[1:2] == ["5"] for line in lines)  # the selected one is in view, whole
        assert sum(1 for line in lines if "98% of the time" in line) == 1

    run_ended(app, scenario, size=(120, 40))


def test_e_goes_through_every_finding_the_modes_line_first(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [FindingItem("modes"), FindingItem("tail, no columns"), FindingItem("episode", 30, 32)]
    monkeypatch.setattr("latencymap.tui.app.window_findings", lambda hist, first, stop, causes=None, source=None: items)
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("e")
        assert app.view.finding == 0 and app.view.cursor is None  # the modes line: no columns to go to
        await pilot.press("e")
        assert app.view.finding == 1
        await pilot.press("e")
        assert app.view.finding == 2 and app.view.cursor == 30
        await pilot.press("e")
        assert app.view.finding == 0
        await pilot.press("E")
        assert app.view.finding == 2

    run_ended(app, scenario, size=(160, 50))


def test_help_fits_small_terminals_scrolls_and_closes_on_esc_q_or_question_mark() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        for close in ("escape", "q", "question_mark"):
            await pilot.press("question_mark")
            await pilot.pause(0.2)
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            box = help_screen.query_one("VerticalScroll")
            assert box.region.right <= 80 and box.region.bottom <= 24
            assert box.max_scroll_y > 0
            await pilot.press("pagedown", "down")
            await pilot.pause(0.2)
            assert box.scroll_y > 0 and isinstance(app.screen, HelpScreen)
            await pilot.press(close)
            assert not isinstance(app.screen, HelpScreen)
        assert app.is_running  # q closed the help, not the app

    run_ended(app, scenario, size=(80, 24))


def test_overview_header_is_fitted_and_counts_skipped_records() -> None:
    items: list = [*ranks(), Notice("a malformed record", skipped=3)]
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        head, columns = screen_lines(app)[:2]
        assert "skipped 3" in head and head.rstrip().endswith("slow now: rank7/step")
        low, high = app.screen.query_one(OverviewList).scale
        assert f"{format_duration(low)} … {format_duration(high)}" in columns  # the strips' scale, both ends

    run_ended(app, scenario, size=(120, 40))


def test_difference_map_footer_lists_only_its_keys() -> None:
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("a", "down", "b", "d")
        await pilot.pause(0.3)
        footer = screen_lines(app)[-1]
        assert "Quit" in footer and "Save" in footer
        for key in ("Lin/log", "Freq", "Intens", "Pctl", "Stream", "Inspector"):
            assert key not in footer, key
        await pilot.press("l")
        assert not app.view.log  # the map screen's keys do nothing here

    run_ended(app, scenario, size=(160, 40))


def test_right_moves_the_cursor_onto_an_empty_newest_column_and_it_stays() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        n = app.current().n
        inspector = app.query_one(Inspector)
        for _ in range(n - app.view.cursor_at(n) + 2):
            await pilot.press("right")
        await pilot.pause(0.3)
        assert app.view.cursor_at(n) == n - 1 and app.view.end is None
        assert inspector.inspection.first == n - 1 and inspector.inspection.empty
        await pilot.press("left")
        assert app.view.cursor_at(n) == n - 2

    run_ended(app, scenario, size=(160, 50))


def test_the_value_column_beside_the_map_is_the_cursors() -> None:
    app = LatencyMapApp(iter(synthetic(100)), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("home")
        await pilot.pause(0.3)
        heat = freq(app)
        frame, rows = heat.frame, heat.spec.rows
        column = heat.window.cell_of(0) - (heat.window.cells - frame.values.shape[1])
        assert not np.allclose(frame.values[:, column], frame.latest)
        for r in range(rows):
            line = heat.render_line(1 + rows - 1 - r).text
            assert float(line[9 + heat.window.cells:].split()[0]) == float(f"{frame.values[r, column]:.4g}")

    run_ended(app, scenario, size=(160, 50))


def test_labels_sort_naturally() -> None:
    labels = ["rank10/step", "rank2/step", "Rank1/step", "rank2/a"]
    assert sorted(labels, key=natural_key) == ["Rank1/step", "rank2/a", "rank2/step", "rank10/step"]


def test_narrow_overview_keeps_the_numbers() -> None:
    app = LatencyMapApp(iter(ranks()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        lines = screen_lines(app)
        assert "vs peers" in lines[1] and "×" in lines[2] and "rank7/step" in lines[2]

    run_ended(app, scenario, size=(80, 24))
