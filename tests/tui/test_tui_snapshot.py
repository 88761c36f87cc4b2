"""Snapshots of each screen at a fixed size (TZ=UTC): single stream, cursor and log scale, inspector on an empty
column, the overview of 12 streams, and one stream opened from it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tui_support import example_items, fixture_items, wait_ended

from latencymap.tui.app import LatencyMapApp

RANKS = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "ranks12.txt"


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def ended_with_the_footer(pilot) -> None:
    """Until the flow has ended, its notes no longer said on the note line (the footer back): the sample's
    datasource note names its path, which is the checkout's (the header's count of notes stays)."""
    await wait_ended(pilot)
    pilot.app.note_lines.clear()
    pilot.app.note_lines.told.clear()
    await pilot.pause(0.2)


def test_main_screen_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")
    assert snap_compare(app, terminal_size=(160, 50), run_before=ended_with_the_footer)


def test_cursor_and_log_scale_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="256")

    async def before(pilot) -> None:
        await ended_with_the_footer(pilot)
        await pilot.press("left", "left", "l", "right_square_bracket")
        await pilot.pause(0.4)

    assert snap_compare(app, terminal_size=(160, 50), run_before=before)


def test_inspector_on_an_empty_column_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(example_items()), color_mode="truecolor")

    async def before(pilot) -> None:
        await ended_with_the_footer(pilot)
        await pilot.press("right")  # the newest columns of the fixture are empty
        await pilot.pause(0.4)
        assert app.query_one("#inspector").inspection.empty

    assert snap_compare(app, terminal_size=(160, 50), run_before=before)


def test_overview_of_12_streams_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(fixture_items(RANKS)), color_mode="truecolor")
    assert snap_compare(app, terminal_size=(180, 50), run_before=wait_ended)


def test_stream_opened_from_the_overview_snapshot(snap_compare, utc) -> None:
    app = LatencyMapApp(iter(fixture_items(RANKS)), color_mode="truecolor")

    async def before(pilot) -> None:
        await wait_ended(pilot)
        await pilot.press("enter")
        await pilot.pause(0.4)

    assert snap_compare(app, terminal_size=(180, 50), run_before=before)
