"""What reading said, in the TUI: a note line in the footer's place as each message comes (the first few, then a
count), the status line's count and its key, the messages screen (`w`) listing them in order with the records
skipped, and stderr once the app is gone; text from the input never reaches the screen or stderr with its control
characters."""

from __future__ import annotations

import asyncio
import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Footer, Static
from tui_support import EXAMPLE, example_items, fixture_items, ranks, synthetic, wait_ended, wait_until
from tui_support import run_ended as run

from latencymap.core.accumulator import MAX_MESSAGES, Accumulator
from latencymap.core.model import Interval, Notice
from latencymap.tui.app import LatencyMapApp
from latencymap.tui.fit import fit_line
from latencymap.tui.keys import HELP
from latencymap.tui.note_line import BUSY_LINE_S, HEAD, HEAD_STYLES, LINE_S, TOLD_STYLES, WAITING, NoteLine, NoteLines
from latencymap.tui.notes import TOASTS, NotesScreen, NoteToasts
from latencymap.tui.overview import OverviewList, OverviewScreen, overview_head
from latencymap.tui.status import StatusBar, status_lines, status_text

RANKS = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "ranks12.txt"
README = Path(__file__).resolve().parents[2] / "README.md"
BAD = Notice("in.txt: line 218: expected an integer of microseconds, got 'x\x1b[2J\x07y'; record skipped")
CUT = Notice("--duration 0.3: reading stopped after 0.3 s (wall-clock time), before the input's end, 30 intervals in: "
             "what came after is not read", skipped=0)


def recorded(app: LatencyMapApp) -> list[str]:
    """The messages `app` says on its note line from now on, in order (as said, not as they fit the line)."""
    said: list[str] = []
    say = app.note_lines.say

    def keep(message: str, warning: bool) -> None:
        said.append(message)
        say(message, warning)

    app.toasts = NoteToasts(keep)
    return said


def note_line(app: LatencyMapApp) -> str:
    """What the screen on top shows in its footer's place: the note line's text, or "" with the footer shown."""
    line, footer = app.screen.query_one(NoteLine), app.screen.query_one(Footer)
    assert line.display != footer.display
    return line.render().plain if line.display else ""


def shown(app: LatencyMapApp) -> str:
    """What the messages screen on top shows, as text (its widgets' content, not the accumulator's)."""
    screen = app.screen
    assert isinstance(screen, NotesScreen)
    console = Console(width=200, record=True, file=io.StringIO())
    for static in screen.query(Static):
        console.print(static.content)
    return console.export_text()


def noted_flow() -> list[Interval | Notice]:
    items: list[Interval | Notice] = list(synthetic(30))
    return [*items[:5], BAD, *items[5:], CUT]


def test_each_message_is_said_on_the_note_line_and_the_status_line_counts_them_with_their_key() -> None:
    app = LatencyMapApp(iter(noted_flow()), color_mode="truecolor")
    said = recorded(app)

    async def scenario(pilot) -> None:
        assert note_line(app).startswith(" reading (w)  in.txt: line 218: expected an integer"), note_line(app)
        assert any("line 218" in m and "x?[2J?y" in m for m in said), said
        assert any("reading stopped after 0.3 s" in m for m in said), said
        assert not any("\x1b" in m or "\x07" in m for m in said)
        status = str(app.query_one(StatusBar).render())
        assert "2 notes (w)" in status and "skipped 1" in status, status

    run(app, scenario)


def test_on_a_small_terminal_a_note_hides_no_data_and_goes_when_w_opens() -> None:
    """At 80x24 the maps span the screen: a toast of the sample's datasource note hid 15 lines of 40 cells of them
    (the newest columns and the legend) for 10 s, and the first toasts covered the `w` list for seconds. A note is
    said in the footer's place, and opening `w`, which lists them whole, clears it."""
    app = LatencyMapApp(iter([*example_items(), BAD, CUT]), color_mode="truecolor")

    def over_data() -> list[str]:
        """The widgets showing data that a toast covers (toasts drawn, as in a terminal)."""
        toasts = [t.region for t in app.screen.query("Toast")]
        data = [w for w in app.screen.query("StatusBar, HeatMap, PercentileStrip, FindingsPanel, Inspector, "
                                            "#notes-list") if w.display]
        assert data
        return [str(w) for w in data for t in toasts if w.region.overlaps(t)]

    async def main() -> None:
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await wait_ended(pilot)
            assert not over_data()
            line = app.screen.query_one(NoteLine)
            assert line.display and line.region.y == 23 and line.region.height == 1, line.region
            assert "has no 'datasource' line: read as bpf" in app.note_lines.current[0]  # the first one first,
            assert note_line(app).startswith(" reading (w)  example_latency_data.txt: 'db file"), note_line(app)
            await pilot.press("w")
            await pilot.pause(0.2)
            assert isinstance(app.screen, NotesScreen) and not over_data()
            await pilot.press("w")
            await pilot.pause(0.2)
            assert note_line(app) == ""  # the footer is back: the list said them all
            assert app.note_lines.current is None and not app.note_lines.waiting

    asyncio.run(main())


def test_the_note_line_says_each_message_in_turn_then_gives_the_footer_back() -> None:
    lines = NoteLines()
    lines.say("first", False)
    lines.say("second", True)
    assert lines.due(0.0) == ("first", False)
    assert lines.due(BUSY_LINE_S - 0.1) == ("first", False)  # another waits: shorter, but long enough to read
    assert lines.due(BUSY_LINE_S) == ("second", True)
    assert lines.due(BUSY_LINE_S + LINE_S - 0.1) == ("second", True)
    assert lines.due(BUSY_LINE_S + LINE_S) is None
    for k in range(2 * WAITING):
        lines.say(f"m{k}", True)
    assert len(lines.waiting) == WAITING  # the oldest go: `w` lists every one


def test_on_a_narrow_terminal_the_count_of_notes_outlasts_the_other_fields() -> None:
    acc = Accumulator()
    acc.add(synthetic(3))
    hist = next(iter(acc.streams.values()))
    text = status_text(hist, hist.n, state="ended", skipped=1, stream_index=0, streams=1, ingest_rate=0.0, notes=2,
                       width=60)
    first = text.plain.split("\n")[0]
    assert "2 notes (w)" in first and "skipped 1" in first and "interval" not in first, first
    assert "note" not in status_text(hist, hist.n, state="ended", skipped=0, stream_index=0, streams=1,
                                     ingest_rate=0.0).plain


def test_the_count_of_notes_stays_at_every_width_on_the_maps_and_the_overview() -> None:
    """At 50 columns the overview's header kept its slow stream's name (a label cut, never dropped) and dropped
    `1 note (w)`, how a user learns that a record was skipped; the stream view's header lost it under 37 columns. The
    count goes last, before the state only."""
    items: list = [*ranks(), Notice("in.txt: line 9: expected integers, got 'x'; record skipped")]
    app = LatencyMapApp(iter(items), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert isinstance(app.screen, OverviewScreen)
        listing = app.screen.query_one(OverviewList)
        assert any(r.slow for r in listing.rows)
        for needle, stale in (("", False), ("rank", False), ("", True)):
            rows = [replace(r, behind_s=30.0, stopped_alone=True) if stale and r.index == 3 else r
                    for r in listing.rows]
            fields = overview_head("ended", 12, rows, needle, "p99 now", skipped=1, notes=1)
            for width in range(30, 200):
                assert "1 note (w)" in fit_line(fields, width).plain, (width, fit_line(fields, width).plain)
        at_60 = fit_line(overview_head("ended", 12, listing.rows, "", "p99 now", skipped=1, notes=1), 60).plain
        assert "1 note (w)  slow now: rank7/step" in at_60, at_60  # the slow one outlasts the count of streams
        await pilot.resize_terminal(50, 24)
        await pilot.pause(0.3)
        assert "1 note (w)" in app.screen.plain_lines()[0], app.screen.plain_lines()[0]
        await pilot.press("enter")
        await pilot.pause(0.3)
        for streams in (1, 12):
            for skipped in (0, 1):
                hist = app.current()
                first = status_lines(hist, hist.n, state="ended", skipped=skipped, stream_index=0, streams=streams,
                                     ingest_rate=0.0, notes=1)[0]
                for width in range(20, 200):
                    assert "1 note (w)" in fit_line(first, width).plain, (width, fit_line(first, width).plain)

    run(app, scenario, size=(120, 40))


def test_w_lists_every_message_in_order_with_the_records_skipped_and_closes_again() -> None:
    app = LatencyMapApp(iter(noted_flow()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await pilot.press("w")
        assert isinstance(app.screen, NotesScreen)
        text = shown(app)
        assert "2 messages" in text and "1 record skipped" in text, text
        assert text.index("line 218") < text.index("reading stopped"), text
        assert "x?[2J?y" in text and "\x1b" not in text
        await pilot.press("w")
        assert not isinstance(app.screen, NotesScreen)
        await pilot.press("w", "escape")
        assert not isinstance(app.screen, NotesScreen)

    run(app, scenario)


def test_the_key_is_in_the_help_and_the_readme() -> None:
    assert any(key == "w" and "reading said" in what for key, what in HELP)
    assert "| w | what reading said" in README.read_text()


def test_a_flood_of_bad_records_is_a_few_toasts_then_a_count_and_the_screen_keeps_the_first() -> None:
    bad = [Notice(f"in.txt: line {k}: expected integers, got 'x'; record skipped") for k in range(1, 501)]
    app = LatencyMapApp(iter([*synthetic(10), *bad]), color_mode="truecolor")

    noted = recorded(app)

    async def scenario(pilot) -> None:
        said = [m for m in noted if "in.txt" in m or "more message" in m]
        assert len(said) <= TOASTS + 1, said
        assert said[:TOASTS] == [f"in.txt: line {k}: expected integers, got 'x'; record skipped"
                                 for k in range(1, TOASTS + 1)], said
        assert "more message" in said[-1] and "w lists what was said" in said[-1], said
        assert "500 notes (w)" in str(app.query_one(StatusBar).render())
        await pilot.press("w")
        text = shown(app)
        assert "500 messages" in text and "500 records skipped" in text, text
        assert "line 100:" in text and "line 101:" not in text, text
        assert f"… and 400 more (the first {MAX_MESSAGES} are kept" in text, text

    run(app, scenario)


def test_the_count_held_back_is_said_later_though_nothing_else_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages held back in a flood are said once the window has passed, even when the input has gone quiet."""
    monkeypatch.setattr("latencymap.tui.notes.TOAST_WINDOW_S", 0.5)
    bad = [Notice(f"in.txt: line {k}: bad; record skipped") for k in range(1, 21)]
    app = LatencyMapApp(iter([*synthetic(10), *bad[:10], *synthetic(5, start=1_700_000_010.0), *bad[10:]]),
                        color_mode="truecolor")
    noted = recorded(app)

    async def scenario(pilot) -> None:
        def said() -> int:  # each message shown or counted
            return sum(int(m.split()[0]) if "more message" in m else "in.txt" in m for m in noted)

        await wait_until(pilot, lambda: said() == 20, timeout=5)
        assert any("more message" in m for m in noted)

    run(app, scenario)


def test_the_overview_counts_the_messages_and_w_opens_them_there() -> None:
    app = LatencyMapApp(iter([*fixture_items(RANKS), CUT]), color_mode="truecolor")

    async def scenario(pilot) -> None:
        assert app.screen.id == "overview"
        assert "1 note (w)" in app.screen.plain_lines()[0]
        assert "reading stopped after 0.3 s" in note_line(app)  # said on the overview too
        await pilot.press("w")
        assert isinstance(app.screen, NotesScreen) and "reading stopped" in shown(app)
        await pilot.press("escape")
        assert app.screen.id == "overview"

    run(app, scenario, size=(180, 50))


def test_the_difference_screen_counts_the_notes_says_them_and_w_lists_them() -> None:
    """The A − B screen had no count of notes (the overview and the map screen have one): a record skipped while it
    was open was said on its note line and nowhere else once that went. It counts them too, paused as well."""
    import threading

    gate = threading.Event()

    def flow():
        yield from ranks(streams=3, columns=20)
        yield BAD
        gate.wait(10)
        yield CUT

    app = LatencyMapApp(flow(), color_mode="truecolor")

    def head() -> str:
        return str(app.screen.query_one("#diff-head").render()).splitlines()[0]

    async def scenario(pilot) -> None:
        await wait_until(pilot, lambda: app.screen.id == "overview" and app.acc.messages_said == 1)
        await pilot.press("a", "down", "b", "d")
        await wait_until(pilot, lambda: app.screen.id == "difference")
        assert head().endswith("1 note (w)"), head()
        assert "in.txt: line 218" in note_line(app)  # said there too
        await pilot.press("space")
        gate.set()
        await wait_until(pilot, lambda: "2 notes (w)" in head())  # paused: the count follows still
        await wait_until(pilot, lambda: "reading stopped" in note_line(app))
        await pilot.press("w")
        assert isinstance(app.screen, NotesScreen) and "reading stopped" in shown(app)
        await pilot.press("w")
        assert app.screen.id == "difference"

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await scenario(pilot)

    asyncio.run(main())


def test_w_pressed_as_the_app_ticks_opens_the_list() -> None:
    """In a terminal `w` ended the app (NoMatches: '#notes-heading'): the tick that came between the key and the
    messages screen's widgets updated a list not there yet."""
    app = LatencyMapApp(iter(noted_flow()), color_mode="truecolor")

    async def scenario(pilot) -> None:
        def press_then_tick() -> None:
            app.action_notes()
            app.tick()

        app.call_later(press_then_tick)
        await wait_until(pilot, lambda: isinstance(app.screen, NotesScreen) and "line 218" in shown(app))
        assert app.is_running

    run(app, scenario)


def test_what_the_app_tells_goes_first_and_reading_says_its_message_after() -> None:
    """`s` says where it saved at once (a reading message on the line waits, and comes back first); the messages
    screen, which lists reading's messages, leaves it."""
    lines = NoteLines()
    lines.say("first", False)
    lines.say("second", True)
    assert lines.shown(0.0) == (HEAD, HEAD_STYLES[False], "first")
    lines.tell("a.svg and a.txt", "saved", now=1.0)
    assert lines.shown(1.0) == (" saved ", TOLD_STYLES[False], "a.svg and a.txt")
    assert lines.shown(1.0 + LINE_S - 0.1) == (" saved ", TOLD_STYLES[False], "a.svg and a.txt")
    assert lines.shown(1.0 + LINE_S) == (HEAD, HEAD_STYLES[False], "first")  # back, whole
    lines.tell("Permission denied: cannot write in here", "not saved", warning=True, now=10.0)
    lines.clear()  # `w` opened: its list says reading's messages
    denied = "Permission denied: cannot write in here"
    assert lines.shown(10.0 + LINE_S - 0.1) == (" not saved ", TOLD_STYLES[True], denied)
    assert lines.shown(10.0 + LINE_S) is None


def test_the_messages_screen_follows_messages_as_they_come() -> None:
    import threading

    gate = threading.Event()

    def flow():
        yield from synthetic(10)
        yield BAD
        gate.wait(10)
        yield CUT

    app = LatencyMapApp(flow(), color_mode="truecolor")

    async def scenario(pilot) -> None:
        await wait_until(pilot, lambda: app.acc.messages_said == 1)
        await pilot.press("w")
        assert "reading stopped" not in shown(app)
        gate.set()
        await wait_until(pilot, lambda: "reading stopped" in shown(app))
        assert "2 messages" in shown(app)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await scenario(pilot)

    asyncio.run(main())


def quit_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_tui` as on a terminal, its app headless: `q` once its flow has ended."""

    def run_app(self: LatencyMapApp) -> None:
        async def main() -> None:
            async with self.run_test(size=(160, 50)) as pilot:
                await wait_ended(pilot)
                await pilot.press("q")
                await pilot.pause(0.1)

        asyncio.run(main())

    class Terminal:
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr("latencymap.tui.app.take_terminal", lambda: lambda: None)
    monkeypatch.setattr(LatencyMapApp, "run", run_app)
    monkeypatch.setattr(sys, "stdout", Terminal())


def test_after_q_the_messages_are_said_on_stderr_once_as_the_plain_view_says_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from latencymap.cli.main import main

    quit_at_once(monkeypatch)
    with pytest.raises(SystemExit) as done:
        main.main([str(EXAMPLE)], prog_name="latencymap")
    assert done.value.code == 0
    err = capsys.readouterr().err
    monkeypatch.undo()
    with pytest.raises(SystemExit):
        main.main(["--plain", str(EXAMPLE)], prog_name="latencymap")
    plain = capsys.readouterr().err
    assert "has no 'datasource' line: read as bpf" in plain
    assert err == plain, (err, plain)


def test_after_q_a_skipped_record_is_said_cleaned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from latencymap.cli.main import main

    data = tmp_path / "bad.txt"
    rows = {k: "64, a\x1b[2Jb" if k == 3 else "64, 5" for k in range(1, 7)}
    data.write_text("".join(f"<begin record>\ntimestamp, microsec, {k * 1_000_000}, x\nlabel, a\n{row}\n"
                            "<end record>\n" for k, row in rows.items()))
    quit_at_once(monkeypatch)
    with pytest.raises(SystemExit) as done:
        main.main([str(data)], prog_name="latencymap")
    assert done.value.code == 0
    err = capsys.readouterr().err
    assert "line 14" in err and "a?[2Jb" in err and "\x1b" not in err, err
    assert err.count("record skipped") == 1, err
