"""What the app tells (`MapActions.notify`: a key that cannot do its work, the history limit dropping columns, a
failed analysis, a replay's speed, where `s` saved): said on the note line in the footer's place, on every screen,
never in a toast (toasts covered the maps and their legends for seconds at 80x24); what matters beyond seconds is
listed by `w` too; reading's messages wait and come back."""

from __future__ import annotations

import asyncio
import threading

import pytest
from tui_support import note_line, ranks, synthetic, told, wait_ended, wait_until
from tui_support import run_ended as run

from latencymap.core.model import Notice
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.note_line import LINE_S, TOLD_STYLES, NoteLine, NoteLines
from latencymap.tui.notes import NotesScreen
from latencymap.tui.overview import OverviewScreen

BAD = Notice("in.txt: line 218: expected an integer of microseconds, got 'x'; record skipped")


@pytest.mark.parametrize(("items", "keys", "said"), [
    (synthetic(30), ["escape"], " overview  one stream only: the overview lists several"),
    ([], ["e"], " findings  no finding in view"),
    (synthetic(30), ["t"], " stragglers  no straggler with a finish time listed (Spark sources list them)"),
    (synthetic(30), ["m"], " profile  no profile: start with --profile PID, or open a recording made with it"),
    (synthetic(30), ["full_stop"], " replay  not a replay: open a recording with `latencymap replay PATH`"),
    (ranks(streams=3, columns=20), ["d"], " difference map  mark two streams first: a on one, b on the other"),
])
def test_a_key_that_cannot_do_its_work_says_why_on_the_bottom_line_not_in_a_toast(
        items: list, keys: list[str], said: str) -> None:
    """At 80x24 each of these toasts covered the maps' newest columns and legends (or the overview's numbers)."""
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press(*keys)
        await pilot.pause(0.2)
        assert told(app) == [said]  # and no toast
        assert note_line(app) == (said[:79] + "…" if len(said) > 80 else said), note_line(app)
        line = app.screen.query_one(NoteLine)
        assert line.region.y == 23 and line.note[1] == TOLD_STYLES[False]

    run(app, scenario, size=(80, 24))


def test_the_history_limit_dropping_columns_is_said_on_the_line_and_listed_by_w() -> None:
    app = LatencyMapApp(iter(synthetic(60)), history=20, color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert told(app) == [" history (w)  each stream keeps its newest 20 columns (--history 20); older ones are "
                             "dropped from now on"]
        assert "1 note (w)" in str(app.screen.query("StatusBar").first().render())
        await pilot.press("w")
        assert isinstance(app.screen, NotesScreen)
        assert any("newest 20 columns" in line for line in app.screen.plain_lines())
        assert note_line(app).startswith(" history (w)  each stream keeps")  # on the list's screen too

    run(app, scenario)


def test_a_failed_analysis_is_said_once_in_red_and_listed_by_w() -> None:
    """A failure that said "analysis failed" in a toast was gone for good after 5 s; asked again every few seconds,
    it said it again each time."""
    asked = []

    def broken() -> dict:
        asked.append(1)
        raise RuntimeError("boom")

    app = LatencyMapApp(iter(synthetic(30)), color_mode="truecolor", analysis=broken)

    async def scenario(pilot) -> None:
        assert told(app) == [" stragglers (w)  analysis failed: boom"]
        assert app.screen.query_one(NoteLine).note[1] == TOLD_STYLES[True]
        app._analyse()  # asked again: it fails the same way
        assert len(asked) >= 2 and app.acc.messages == ["stragglers: analysis failed: boom"]
        await pilot.press("w")
        assert "stragglers: analysis failed: boom" in app.screen.plain_lines()[1]

    run(app, scenario)


def test_what_is_told_for_longer_comes_back_after_what_was_told_since() -> None:
    """`stopping` is said until the source has ended (STOP_WAIT_S at most): a key's answer meanwhile (`s` saved) is
    said at once, then the line says it is stopping again; reading's message waits for both."""
    lines = NoteLines()
    lines.say("in.txt: line 3: bad", True)
    lines.tell("taking in what was acknowledged", "stopping", seconds=3 * LINE_S, now=0.0)
    lines.tell("a.svg and a.txt", "saved", now=1.0)
    assert lines.shown(1.0)[2] == "a.svg and a.txt"
    assert lines.shown(1.0 + LINE_S)[2] == "taking in what was acknowledged"
    assert lines.shown(3 * LINE_S)[2] == "in.txt: line 3: bad"


def test_the_overview_counts_the_notes_while_paused() -> None:
    """Paused on the overview, its header kept the count of notes as it was (the map screen's and the difference
    screen's follow it): a record skipped then was counted nowhere on screen."""
    gate = threading.Event()

    def flow():
        yield from ranks(streams=3, columns=20)
        gate.wait(10)
        yield BAD

    app = LatencyMapApp(flow(), color_mode="truecolor")

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.acc.intervals_seen == 60)
            await pilot.press("space")
            assert "PAUSED" in app.screen.plain_lines()[0] and "note" not in app.screen.plain_lines()[0]
            gate.set()
            await wait_until(pilot, lambda: app.acc.messages_said == 1)
            await wait_until(pilot, lambda: "1 note (w)" in app.screen.plain_lines()[0], timeout=3)
            assert "PAUSED" in app.screen.plain_lines()[0]
            await wait_ended(pilot)

    asyncio.run(main())
