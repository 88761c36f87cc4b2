"""The TUI marks a restarted source's reset column under both maps, and the inspector says what it holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

from resets_support import restarted_copy
from textual.widgets import Static
from tui_support import example_items, wait_ended

from latencymap.cli.common import REGISTRY
from latencymap.flow.pipeline import input_flow
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import LABEL_W, HeatMap
from latencymap.tui.inspector import Inspector

RESTART_AFTER = 30


def _mark_lines(app: LatencyMapApp) -> list[str]:
    return [line for m in app.query(HeatMap) for line in m.plain_lines() if line.split()[:1] == ["marks"]]


def test_reset_column_is_marked_and_inspected(tmp_path: Path) -> None:
    path = tmp_path / "restarted.txt"
    path.write_text(restarted_copy(RESTART_AFTER))
    app = LatencyMapApp(input_flow([str(path)], REGISTRY), color_mode="mono")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            freq = app.query_one("#frequency", HeatMap)
            assert freq.window is not None
            cell = freq.window.cell_of(RESTART_AFTER)
            lines = _mark_lines(app)
            assert len(lines) == 2, lines
            for line in lines:
                cells = line[LABEL_W + 1: LABEL_W + 1 + freq.window.cells]
                assert [i for i, ch in enumerate(cells) if ch != " "] == [cell] and cells[cell] == "R"
            summary = app.query_one("#inspector", Static)  # the inspector: chart and summary in one
            assert "counter reset" not in str(summary.content)
            while app.view.cursor is None or app.view.cursor > RESTART_AFTER:
                await pilot.press("left")
            await pilot.pause(0.4)
            assert app.query_one(Inspector).inspection.resets == 1
            assert "counter reset" in str(summary.content)
            await pilot.press("left")
            await pilot.pause(0.4)
            assert "counter reset" not in str(summary.content)

    asyncio.run(main())


def test_no_marks_row_without_resets() -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="mono")

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_ended(pilot)
            assert _mark_lines(app) == []

    asyncio.run(main())
