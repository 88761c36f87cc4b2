"""ViewState navigation without Textual, and the stdin hook the TUI uses."""

from __future__ import annotations

import io

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
    view.toggle_pause(40)
    assert view.stop(90) == 40 and view.cursor_at(90) == 39
    view.toggle_pause(90)
    assert view.stop(90) == 90


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
