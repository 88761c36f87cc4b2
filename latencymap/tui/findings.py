"""The findings panel: the diagnosis of the columns on screen, marked on the maps' time axis and listed.

`e` / `E` select the next / previous finding that has columns and move the cursor to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from latencymap.analysis.diagnosis import diagnose
from latencymap.core.accumulator import StreamHistory
from latencymap.core.sanitize import clean_text
from latencymap.tui.axis import LABEL_W
from latencymap.tui.heatmap import map_cells
from latencymap.tui.window import Window

MAX_LINES = 3
MARKS = "123456789abcdefghijklmnopqrstuvwxyz"
HEAD = Style(bold=True, reverse=True)
MARK = Style(color="yellow", bold=True)
SELECTED = Style(bold=True, reverse=True)
DIM = Style(dim=True)
PLAIN = Style()


@dataclass(frozen=True, slots=True)
class FindingItem:
    """One line of the diagnosis, with the history columns it is about (inclusive) when it has them."""

    text: str
    first_col: int | None = None
    last_col: int | None = None


def finding_items(diag: Any) -> list[FindingItem]:
    """The diagnosis as items: the modes line, then each finding (episodes with their columns)."""
    lines = diag.summary_lines()
    if not lines or diag.events <= 0:
        return []
    head = FindingItem(lines[0].partition(" — ")[0])
    found = getattr(diag, "findings", None)
    if found is not None:  # a diagnosis that names its findings with where they are
        return [head] + [FindingItem(f.what, f.first_col, f.last_col) for f in found if f.kind != "band"]
    items = [head]
    rest = lines[1:]
    if diag.tail is not None and rest:
        items.append(FindingItem(rest.pop(0)))
    for episode, line in zip(diag.episodes, rest, strict=False):
        items.append(FindingItem(line, episode.first_col, episode.last_col))
    items += [FindingItem(line) for line in rest[len(diag.episodes):]]
    return items


def window_findings(hist: StreamHistory, first: int, stop: int) -> list[FindingItem]:
    """Findings of history columns [first, stop)."""
    if stop <= first:
        return []
    cols = slice(first, stop)
    diag = diagnose(hist.counts_in(cols), hist.time_in(cols), hist.low, hist.high, hist.start, hist.end,
                    col_range=(first, stop), rows_from=first, datasource=hist.stream.datasource)
    return finding_items(diag)


class FindingsPanel(Widget):
    """Findings of the visible window: their columns marked on the time axis, then up to three lines."""

    DEFAULT_CSS = "FindingsPanel { height: auto; background: $boost; }"

    def __init__(self) -> None:
        super().__init__(id="findings")
        self.items: list[FindingItem] = []
        self.win: Window | None = None
        self.selected: int | None = None
        self._lines = 1

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + max(1, min(MAX_LINES, len(self.items)))

    def show(self, items: list[FindingItem], win: Window | None, selected: int | None) -> None:
        """Draw `items` on the window's cells on the next repaint."""
        relayout = max(1, min(MAX_LINES, len(items))) != max(1, min(MAX_LINES, len(self.items)))
        self.items, self.win, self.selected = items, win, selected
        self.refresh(layout=relayout)

    def placed(self) -> list[int]:
        """Indexes of the items that have columns (the ones `e` selects)."""
        return [k for k, item in enumerate(self.items) if item.first_col is not None]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._marks(width)
        if not self.items:
            return Strip([Segment(" " * (LABEL_W + 1) + "none yet" if self.win is None else
                                  " " * (LABEL_W + 1) + "nothing notable", DIM)]).adjust_cell_length(width, PLAIN)
        first = 0
        if self.selected is not None and self.selected >= MAX_LINES:
            first = self.selected - MAX_LINES + 1
        k = first + y - 1
        if k >= len(self.items):
            return Strip.blank(width, PLAIN)
        item = self.items[k]
        mark = MARKS[k] if k < len(MARKS) else " "
        style = SELECTED if k == self.selected else PLAIN
        return Strip([Segment(f" {mark:>{LABEL_W - 1}} ", MARK), Segment(clean_text(item.text, 300), style)]
                     ).adjust_cell_length(width, PLAIN)

    def _marks(self, width: int) -> Strip:
        """` findings ` and each finding's mark over the cells of its columns."""
        win = self.win
        cells = map_cells(width)
        line = [" "] * cells
        styles = [PLAIN] * cells
        if win is not None:
            win = Window(win.stop, cells, win.zoom)
            for k, item in enumerate(self.items):
                if item.first_col is None or k >= len(MARKS):
                    continue
                a = max(0, win.cell_of(item.first_col))
                b = min(cells - 1, win.cell_of(item.last_col if item.last_col is not None else item.first_col))
                for c in range(a, b + 1):
                    line[c] = MARKS[k]
                    styles[c] = SELECTED if k == self.selected else MARK
        segs = [Segment(" findings".ljust(LABEL_W + 1), HEAD)]
        run_start = 0
        for c in range(1, cells + 1):
            if c == cells or styles[c] is not styles[run_start]:
                segs.append(Segment("".join(line[run_start:c]), styles[run_start]))
                run_start = c
        return Strip(segs).adjust_cell_length(width, PLAIN)

    def plain_lines(self) -> list[str]:
        """The panel as text, for the saved plain-text frame."""
        return [self.render_line(y).text.rstrip() for y in range(1 + max(1, min(MAX_LINES, len(self.items))))]
