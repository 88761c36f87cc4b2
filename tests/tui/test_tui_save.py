"""`s`: where it saved said on the note line (in the footer's place, not a toast over the maps), why not when it could
not (the app goes on), and the screen saved once laid out (as the first column comes too)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from tui_support import example_items, gated, synthetic, wait_until
from tui_support import run_ended as run

from latencymap.tui.app import LatencyMapApp
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.note_line import NoteLine


def note_line(app: LatencyMapApp) -> str:
    """The note line of the screen on top ("" while the footer is shown)."""
    line = app.screen.query_one(NoteLine)
    return line.render().plain if line.display else ""


def test_s_says_the_files_it_saved_where_the_footer_was_with_nothing_over_the_maps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80x24 the toast `saved …` covered the maps' newest columns and legend (10 lines of 40 cells) for seconds."""
    monkeypatch.chdir(tmp_path)
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("s")
        await wait_until(pilot, lambda: bool(app.saved))
        await pilot.pause(0.1)
        svg, txt = app.saved
        assert svg.parent == tmp_path and svg.exists() and txt.exists()
        assert note_line(app) == f" saved  {svg.name} and {txt.name}", note_line(app)  # relative: as in the cwd
        assert not app._notifications and not app.screen.query("Toast")
        assert app.screen.query_one(NoteLine).region.y == 23  # the bottom line: the maps keep theirs

    run(app, scenario, size=(80, 24))


def unwritable(tmp_path: Path, how: str) -> tuple[Path, str]:
    """A current directory `s` cannot write in, and what the note line says of it."""
    if how == "removed":
        gone = tmp_path / "gone"
        gone.mkdir()
        os.chdir(gone)
        gone.rmdir()
        return tmp_path, "the current directory no longer exists"
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        return locked, f"Permission denied: cannot write in {locked}"
    if not sys.platform.startswith("linux"):
        pytest.skip("root writes anywhere but in Linux's /sys")
    return Path("/sys"), "Permission denied: cannot write in /sys"  # sysfs refuses new files, root's too


@pytest.mark.parametrize("how", ["read-only", "removed"])
def test_s_where_it_cannot_write_says_why_and_the_app_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """In a read-only directory `s` ended the app with a traceback (OSError, exit code 1): the maps were gone."""
    monkeypatch.chdir(tmp_path)
    where, why = unwritable(tmp_path, how)
    if how != "removed":
        monkeypatch.chdir(where)
    before = set(where.iterdir())
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("s")
        await wait_until(pilot, lambda: bool(note_line(app)))
        assert note_line(app).startswith(" not saved  ") and app.screen.query_one(NoteLine).note[2] == why
        assert not app.saved and set(where.iterdir()) == before  # nothing half-written left
        assert app.is_running and not app.saving
        await pilot.press("space")  # the app goes on
        await wait_until(pilot, lambda: app.state_name == "paused")

    run(app, scenario, size=(80, 24))


def map_lines(text: str) -> int:
    """Lines of map rows (their axis `│`) in a saved frame or SVG."""
    return text.count("│")


@pytest.mark.parametrize("when", ["after_the_tick", "behind_a_repaint"])
def test_s_as_the_first_column_comes_saves_the_screen_laid_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """`s` typed while the CLI waits for the pipe's first record is read by the TUI as it starts, in the turn that
    shows the first column: the SVG had the maps at the height of the "waiting for data" screen (3 rows of 6 each,
    the screen's lower half blank). `behind_a_repaint`: a repaint asked for before `s` (the start's resize) runs in
    the same turn as the save, and shows the column itself."""
    monkeypatch.chdir(tmp_path)
    gate = threading.Event()
    app = LatencyMapApp(gated(synthetic(5), 0, gate), color_mode="truecolor")
    tick = app.tick

    def arrives() -> None:
        """The first column is read, and `s` comes with it."""
        gate.set()
        started = time.monotonic()
        while app.ingest._queue.empty() and time.monotonic() - started < 10:
            time.sleep(0.01)
        time.sleep(0.05)  # the rest of the items (the gate's) are queued too
        if when == "after_the_tick":
            tick()
            app.action_save()
        else:
            app.call_after_refresh(app.refresh_view, force=True)
            app.action_save()
            tick()

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            assert app.state_name == "waiting"
            app.call_later(arrives)
            await wait_until(pilot, lambda: len(app.saved) == 2)
            svg, txt = (path.read_text() for path in app.saved)
            maps = [m for m in app.query(HeatMap) if m.display]
            assert maps and all(m.spec is not None and m.spec.rows > 3 for m in maps)
            rows = sum(m.spec.rows for m in maps if m.spec is not None)
            assert map_lines(txt) == rows and map_lines(svg) == rows, (map_lines(svg), rows)

    asyncio.run(main())
