"""Snapshot of the main screen on the PyLatencyMap example fixture (160x50, UTC)."""

from __future__ import annotations

import time

import pytest
from tui_support import example_items, wait_ended

from latencymap.tui.app import LatencyMapApp


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_main_screen_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")
    assert snap_compare(app, terminal_size=(160, 50), run_before=wait_ended)


def test_cursor_and_log_scale_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="256")

    async def before(pilot) -> None:
        await wait_ended(pilot)
        await pilot.press("left", "left", "l", "right_square_bracket")
        await pilot.pause(0.4)

    assert snap_compare(app, terminal_size=(160, 50), run_before=before)
