"""What the user is looking at: window, cursor, zoom, rows (fitted or pinned), scale, visible maps, pause."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from latencymap.core.history import StreamHistory
    from latencymap.core.model import StreamId

SHOW_CYCLE = ("both", "frequency", "intensity")
MAX_ZOOM = 64


@dataclass
class ViewState:
    """Navigation state, independent of Textual; every key handler edits one of these fields.

    `end` is the history index one past the last column shown (None: follow the newest);
    `cursor` the history index of the inspected column (None: the newest non-empty column shown, `auto_cursor`, or
    the newest column when `newest`: the cursor was moved there, and stays on it as columns come);
    `rows` the slots shown when the user pinned them with `[`/`]` (None: rows fit the data);
    `percentiles` and `inspector` whether the user wants the strip and the inspector (None: when there is room);
    `frozen`, while `paused`, the columns each stream had seen at the pause (dropped ones too: a memory budget or a
    column limit drops the oldest meanwhile); `pauses` counts the pauses, so that a screen tells this one's numbers.

    Every method that takes `n` takes the columns the display may use of the stream shown (`shown_n`).
    """

    end: int | None = None
    cursor: int | None = None
    zoom: int = 1
    rows: tuple[int, int] | None = None
    auto_cursor: int | None = None
    newest: bool = False
    finding: int | None = None
    log: bool = False
    show: str = "both"
    paused: bool = False
    frozen: dict[StreamId, int] = field(default_factory=dict)
    pauses: int = 0
    stream: int = 0
    percentiles: bool | None = None
    inspector: bool | None = None
    selected_slot: int | None = None  # the bucket picked by a click (a slot: the maps may show different rows)

    def shown_n(self, hist: StreamHistory) -> int:
        """Columns of `hist` the display may use: all of them, or, paused, those it had at the pause (each stream its
        own: streams do not share column indexes; none of a stream that came after it)."""
        if not self.paused:
            return hist.n
        return max(0, min(hist.n, self.frozen.get(hist.stream, 0) - hist.dropped))

    def stop(self, n: int) -> int:
        """History index one past the last column shown."""
        return n if self.end is None else max(0, min(self.end, n))

    def cursor_at(self, n: int) -> int:
        """The inspected column (clamped), or -1 with no data."""
        stop = self.stop(n)
        if stop == 0:
            return -1
        if self.cursor is None:
            auto = None if self.newest else self.auto_cursor
            return auto if auto is not None and 0 <= auto < stop else stop - 1
        return max(0, min(self.cursor, stop - 1))

    def toggle_pause(self, histories: Iterable[StreamHistory]) -> None:
        """Pause (each stream frozen at the columns it has, `histories`: every stream), or resume."""
        self.paused = not self.paused
        self.frozen = {h.stream: h.n + h.dropped for h in histories} if self.paused else {}
        self.pauses += self.paused

    def move_cursor(self, n: int, cells: int, step: int) -> None:
        """Move the cursor by `step` cells, scrolling the window to keep it visible."""
        if n == 0:
            return
        target = max(0, min(n - 1, self.cursor_at(n) + step * self.zoom))
        self.cursor = target
        self._reveal(n, cells)

    def home(self, n: int, cells: int) -> None:
        """Oldest column of the history."""
        if n == 0:
            return
        self.cursor = 0
        self.end = min(n, max(1, cells) * self.zoom)
        self._settle(n)

    def goto(self, n: int, cells: int, column: int) -> None:
        """Put the cursor on history column `column` (clamped); a column off screen comes to the middle of the
        window, so the time before it shows too."""
        if n == 0:
            return
        cursor = self.cursor = max(0, min(n - 1, column))
        span = max(1, cells) * self.zoom
        stop = self.stop(n)
        if not stop - span <= cursor < stop:
            self.end = min(n, max(cursor + 1, cursor + (span + 1) // 2, span))
        self._reveal(n, cells)

    def end_key(self, newest: bool = False) -> None:
        """Follow live data again, the cursor on the newest column holding events (a fresh view: a stream opened or
        switched to, a seek), or on the newest column, empty or not, when `newest` (the End key)."""
        self.cursor = None
        self.end = None
        self.newest = newest

    def page(self, n: int, cells: int, direction: int) -> None:
        """Scroll one page (the width of the map) back (-1) or forward (+1)."""
        if n == 0:
            return
        span = max(1, cells) * self.zoom
        stop = self.stop(n)
        new_stop = max(min(n, span), min(n, stop + direction * span))
        self.cursor = max(0, min(n - 1, self.cursor_at(n) + (new_stop - stop)))
        self.end = new_stop
        self._settle(n)

    def zoom_by(self, factor: int) -> None:
        """`+` merges fewer columns per cell (factor 1/2 as -1), `-` more.

        A window held back in the history keeps the cursor in the same cell from its right edge (the window's end
        moves with the zoom); `fit_window` then fills the window with history, its start clamped to column 0."""
        zoom = max(1, min(MAX_ZOOM, self.zoom * 2 if factor > 0 else self.zoom // 2))
        if self.end is not None and self.cursor is not None and zoom != self.zoom:
            cells_right = max(1, -(-(self.end - self.cursor) // self.zoom))  # the cursor's cell, from the right
            self.end = self.cursor + 1 + (cells_right - 1) * zoom
        self.zoom = zoom

    def fit_window(self, n: int, cells: int) -> None:
        """A window held back in the history, fitted to `cells` cells of the current zoom (after `+`/`-` or a
        resize): the cursor in view, and no empty cells left of column 0 while there are columns to show there."""
        if self.end is None:
            return
        if n == 0:
            return
        span = max(1, cells) * self.zoom
        stop = min(self.end, n)
        cursor = self.cursor
        if cursor is not None and not stop - span <= cursor < stop:
            stop = cursor + (span + 1) // 2  # back in view, in the middle of the window
        self.end = max(1, min(n, max(stop, span)))
        self._settle(n)

    def shift_buckets(self, shown: tuple[int, int], delta: int, nslots: int = 64) -> None:
        """Pin the rows shown, moved by `delta` slots (kept inside the scale)."""
        lo, hi = shown
        delta = max(-lo, min(nslots - 1 - hi, delta))
        self.rows = (lo + delta, hi + delta)
        self.selected_slot = None

    def fit_rows(self) -> None:
        """Rows fit the data again."""
        self.rows = None
        self.selected_slot = None

    def toggle_show(self, kind: str) -> None:
        """`f`/`i`: show only that map, or both again when it is already alone."""
        self.show = "both" if self.show == kind else kind

    def _reveal(self, n: int, cells: int) -> None:
        span = max(1, cells) * self.zoom
        stop = n if self.end is None else min(self.end, n)
        cursor = self.cursor if self.cursor is not None else stop - 1
        if cursor >= stop:
            stop = cursor + 1
        elif cursor < stop - span:
            stop = cursor + span
        self.end = min(n, max(stop, 1))
        self._settle(n)

    def _settle(self, n: int) -> None:
        """Back to following live data when the window reaches the newest column (a cursor put on the newest column
        stays on it, empty or not)."""
        if self.end is not None and self.end >= n and not self.paused and (
                self.cursor is None or self.cursor >= n - 1):
            self.newest = self.cursor is not None
            self.end = None
            self.cursor = None
