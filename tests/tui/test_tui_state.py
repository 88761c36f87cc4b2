"""ViewState navigation without Textual, and the stdin hook the TUI uses."""

from __future__ import annotations

import io

from tui_support import synthetic

from latencymap.core.accumulator import Accumulator, HistoryLimit
from latencymap.core.model import StreamId
from latencymap.flow.inputs import open_text, set_stdin_data
from latencymap.tui.state import ViewState
from latencymap.tui.window import Window


def test_cursor_scrolls_the_window_and_returns_to_live() -> None:
    view = ViewState()
    view.move_cursor(n=100, cells=10, step=-1)
    assert view.cursor == 98 and view.end == 100
    for _ in range(12):
        view.move_cursor(100, 10, -1)
    assert view.cursor == 86 and view.stop(100) == 96
    view.end_key()
    assert view.cursor is None and view.stop(150) == 150


def test_pause_freezes_the_visible_columns() -> None:
    view = ViewState()
    view.toggle_pause([])
    assert view.stop(40) == 40 and view.cursor_at(40) == 39
    view.toggle_pause([])
    assert view.stop(90) == 90


def test_pause_freezes_each_stream_at_its_own_columns() -> None:
    """Streams do not share column indexes: one that stopped at column 20 of 60 freezes none of the others there;
    columns dropped meanwhile (a column limit) do not let newer ones in; a stream that came after shows none."""
    acc = Accumulator(cap=HistoryLimit(columns=50))
    acc.add([*synthetic(60, "long"), *synthetic(20, "short")])
    long, short = acc.streams.values()
    view = ViewState()
    view.toggle_pause(acc.streams.values())
    assert view.paused and (view.shown_n(long), view.shown_n(short)) == (50, 20)
    acc.add([*synthetic(70, "long")[60:], *synthetic(25, "short")[20:], *synthetic(5, "late")])
    assert (long.n, long.dropped, short.n) == (50, 20, 25)
    late = acc.streams[StreamId("late", "bpf", "microsec")]
    assert (view.shown_n(long), view.shown_n(short), view.shown_n(late)) == (40, 20, 0)
    assert view.cursor_at(view.shown_n(long)) == 39
    view.toggle_pause(acc.streams.values())
    assert not view.paused and (view.shown_n(long), view.shown_n(short), view.shown_n(late)) == (50, 25, 5)


def test_zoom_and_window_cells() -> None:
    view = ViewState()
    view.zoom_by(1)
    view.zoom_by(1)
    assert view.zoom == 4
    view.zoom_by(-1)
    assert view.zoom == 2
    win = Window(stop=100, cells=10, zoom=4)
    assert win.base == 60 and win.cell_of(99) == 9 and win.columns_of(9) == (96, 100)


def test_stdin_hook_redirects_dash() -> None:
    set_stdin_data(io.BytesIO(b"hello\n"))
    try:
        stream, name = open_text("-")
        assert stream.read() == "hello\n" and name == "<stdin>"
    finally:
        set_stdin_data(None)


def test_right_onto_the_newest_column_stays_there_empty_or_not() -> None:
    view = ViewState(auto_cursor=97)  # the newest non-empty column: the newest ones are empty
    view.move_cursor(100, 10, 1)
    assert view.cursor_at(100) == 98
    view.move_cursor(100, 10, 1)
    assert view.cursor_at(100) == 99 and view.end is None  # on the newest column, following live data
    view.move_cursor(100, 10, 1)
    assert view.cursor_at(100) == 99
    assert view.cursor_at(120) == 119  # it stays on the newest column as columns come
    view.move_cursor(120, 10, -1)
    assert view.cursor_at(120) == 118
    view.end_key()
    assert view.cursor_at(120) == 97  # End: the newest non-empty column again


def test_a_jump_off_screen_puts_the_column_in_the_middle_and_one_on_screen_does_not_scroll() -> None:
    """`e`/`t`/`g` jump to a column: off screen, it comes to the middle of the window (the time before it shows
    too), not to the left edge; already on screen, the window stays."""
    view = ViewState()
    view.goto(n=200, cells=20, column=50)
    assert view.cursor_at(200) == 50 and view.stop(200) == 60  # cells 40..59: the column is the 11th of 20
    view.goto(200, 20, 45)
    assert view.cursor_at(200) == 45 and view.stop(200) == 60  # on screen: no scroll
    view.goto(200, 20, 3)
    assert view.cursor_at(200) == 3 and view.stop(200) == 20  # near the start: the window cannot go further back
    view.goto(200, 20, 195)
    assert view.cursor_at(200) == 195 and view.stop(200) == 200  # near the end: the window ends with the history


def test_zooming_out_while_scrolled_back_keeps_the_cursor_in_view_and_the_window_full() -> None:
    """3,000 columns, 40 cells: Home, PgDn, PgDn, then `-` (zoom_by(1)) six times (64 columns a cell). The window
    used to keep its end (column 120) and so showed two cells of data and 38 empty ones left of column 0."""
    n, cells = 3000, 40
    view = ViewState()
    view.home(n, cells)
    view.page(n, cells, 1)
    view.page(n, cells, 1)
    assert view.cursor == 80 and view.stop(n) == 120
    for _ in range(6):
        view.zoom_by(1)
        view.fit_window(n, cells)
        win = Window(view.stop(n), cells, view.zoom)
        assert win.base >= 0  # every cell holds columns: none left of column 0
        assert 0 <= win.cell_of(view.cursor_at(n)) < cells  # the cursor in view
        assert win.cell_of(view.cursor_at(n)) == 0  # where it was: in the first cell
    assert view.zoom == 64 and view.cursor == 80
    for _ in range(6):  # `+` back: the cursor stays in its cell
        view.zoom_by(-1)
        view.fit_window(n, cells)
        win = Window(view.stop(n), cells, view.zoom)
        assert win.base >= 0 and win.cell_of(80) == 0
    assert view.zoom == 1 and view.stop(n) == 120


def test_fit_window_clamps_to_the_history_and_returns_to_live() -> None:
    view = ViewState()
    view.goto(100, 10, 95)  # near the end, window held
    view.zoom_by(1)
    view.zoom_by(1)
    view.fit_window(100, 10)  # 40 columns a window: clamped to the newest column, the cursor in view
    assert view.stop(100) == 100 and view.cursor_at(100) == 95
    view = ViewState()
    view.home(30, 10)
    view.zoom_by(1)
    view.zoom_by(1)
    view.fit_window(30, 10)  # the whole history fits: live again, the cursor kept on column 0
    win = Window(view.stop(30), 10, view.zoom)
    assert view.cursor_at(30) == 0 and win.cell_of(0) >= 0 and view.stop(30) == 30


def test_end_key_goes_to_the_newest_column_and_follows_it() -> None:
    view = ViewState()
    view.move_cursor(100, 10, -5)
    view.end_key(newest=True)
    view.auto_cursor = 90  # the newest column holding events: not where End goes
    assert view.end is None and view.cursor_at(100) == 99 and view.cursor_at(120) == 119
    view.end_key()  # a fresh view (a stream opened): the newest column holding events
    assert view.cursor_at(100) == 90


def test_a_wider_window_held_back_fills_with_history() -> None:
    """After Home on a narrow terminal made wider (10 cells to 40), the window reaches further forward instead of
    drawing empty cells left of column 0; made narrower, it keeps the cursor in view."""
    view = ViewState()
    view.home(100, 10)
    view.fit_window(100, 40)
    assert view.stop(100) == 40 and Window(40, 40, 1).base == 0 and view.cursor_at(100) == 0
    view.goto(100, 40, 5)
    view.fit_window(100, 4)  # 4 cells: the cursor (column 5) back in view
    win = Window(view.stop(100), 4, 1)
    assert 0 <= win.cell_of(5) < 4
