"""The difference map of two streams: events per second of A minus B in each (bucket, time cell), on A's time axis.

B's columns are matched to A's cells by time (a B column belongs to the A cell its end falls in), so two streams
read at different moments still compare like for like. Yellow to red: A has more; blue: B has more; `·`: only one
of them has a column in that cell (nothing to compare there, which is no zero difference).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from latencymap.core.accumulator import StreamHistory
from latencymap.core.columns import observed
from latencymap.core.sanitize import clean_text
from latencymap.core.units import format_number
from latencymap.tui.axis import LABEL_W, axis_strip
from latencymap.tui.fit import Field, FittedText
from latencymap.tui.footer import KeyFooter
from latencymap.tui.heatmap import RIGHT_W, map_cells
from latencymap.tui.note_line import NoteLine
from latencymap.tui.notes import notes_field
from latencymap.tui.palette import cell_style
from latencymap.tui.window import Window
from latencymap.views.frame import LEVELS, edge_folds, fit_rows, fold_rows, row_labels

if TYPE_CHECKING:
    from latencymap.tui.app import LatencyMapApp

PLAIN = Style()
DIM = Style(dim=True)
TITLE = Style(bold=True)
#: Which of the two streams has a column in a cell (`difference`).
ONLY_A, ONLY_B, BOTH = 1, 2, 3
#: The mark of a cell where only one of the two streams has a column: nothing to compare there.
MISSING = "·"


def rates_by_time(hist: StreamHistory, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Events per second per (cell, slot) of the columns whose end falls in (edges[k], edges[k+1]]; the seconds they
    cover with data (`observed`: a column of no events counts, an empty gap column does not: its data is missing)."""
    idx = np.searchsorted(hist.end, edges, side="right")
    first, stop = int(idx.min()), int(idx.max())  # only the columns on screen are read (whole counts are exact)
    cols = slice(first, stop)
    window = hist.counts_in(cols)
    cum = np.zeros((stop - first + 1, window.shape[1]))
    np.cumsum(window, axis=0, out=cum[1:])
    seen = observed(hist.meta_in("dur", cols), hist.meta_in("flags", cols), window)
    dur = np.concatenate(([0.0], np.cumsum(seen)))
    counts = cum[idx[1:] - first] - cum[idx[:-1] - first]
    seconds = dur[idx[1:] - first] - dur[idx[:-1] - first]
    rates = np.divide(counts, seconds[:, None], out=np.zeros_like(counts), where=seconds[:, None] > 0)
    return rates, seconds


def difference(a: StreamHistory, b: StreamHistory, win: Window
               ) -> tuple[np.ndarray, int, int, tuple[bool, bool], np.ndarray]:
    """(rows, cells) A − B events/s on A's window (NaN in a cell where A or B has no column: nothing to compare, not
    no difference; a column of no events is data, a rate of 0), the rows (lo, hi) fitted to both, their folds, and
    per cell which of them has a column there (`ONLY_A`, `ONLY_B`, `BOTH`; 0: neither)."""
    first, last = win.cell_bounds()
    ok = last > first
    edges = np.full(win.cells + 1, -np.inf)
    ends = win.cell_ends(a)
    edges[1:] = np.where(ok, ends, -np.inf)
    if ok.any():
        k = int(np.argmax(ok))
        edges[k] = a.end[first[k] - 1] if first[k] > 0 else a.start[0] - 1e-9
    ra, sa = rates_by_time(a, edges)
    rb, sb = rates_by_time(b, edges)
    counts = ra.sum(axis=0) + rb.sum(axis=0)
    got = fit_rows(counts, counts * a.high)
    lo, hi = got if got is not None else (0, 7)
    diff = fold_rows(ra, lo, hi) - fold_rows(rb, lo, hi)
    sides = (sa > 0) * ONLY_A + (sb > 0) * ONLY_B
    diff[sides != BOTH] = np.nan
    return diff.T, lo, hi, edge_folds(counts, lo, hi), sides


def missing_legend(sides: np.ndarray) -> str:
    """What the mark of a cell where one stream has no column says: which of them has none there ("" where none
    lacks one)."""
    lacking = {int(s) for s in np.unique(sides)} & {ONLY_A, ONLY_B}
    if not lacking:
        return ""
    who = "one" if len(lacking) == 2 else "B" if ONLY_A in lacking else "A"
    return f"  {MISSING} {who} has no column"


class DiffMap(Widget):
    """A − B per cell; levels of |A − B| against the largest difference on screen."""

    DEFAULT_CSS = "DiffMap { height: auto; width: 1fr; }"

    def __init__(self, a: StreamHistory, b: StreamHistory) -> None:
        super().__init__(id="diffmap")
        self.a, self.b = a, b
        self.mode = "truecolor"
        self.stop = a.n
        self.zoom = 1
        self.rows = 8
        self.values: np.ndarray | None = None
        self._key: tuple | None = None
        self._lines: list[Strip] = []

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.rows + 2

    def render_lines_all(self, width: int, mode: str | None = None) -> list[Strip]:
        """Every line: title, rows (slowest on top), time axis; in `mode` (default: the screen's; "mono": `+` where
        A has more, `-` where B has more, for text). A cell where only one of them has a column is marked `MISSING`
        (nothing to compare), one where neither has any is left blank; the largest difference is of the cells where
        both have one."""
        mode = self.mode if mode is None else mode
        win = Window(min(self.stop, self.a.n), map_cells(width), self.zoom)
        diff, lo, hi, folds, sides = difference(self.a, self.b, win)
        self.values, self.rows = diff, hi - lo + 1
        both = bool((sides == BOTH).any())
        top = float(np.nanmax(np.abs(diff))) if both and diff.size else 0.0
        labels = row_labels(self.a, lo, hi, folds, LABEL_W - 1)
        title = " A − B: events per second (yellow to red: A has more; blue: B has more)"
        one = (sides == ONLY_A) | (sides == ONLY_B)
        legends = [f"  max |A−B| {format_number(top)}/s" if both else "  no cell with both",
                   *(["  (where both have one)"] if both and one.any() else []), missing_legend(sides)]
        out = [Strip([Segment(title, TITLE)]).adjust_cell_length(width, PLAIN)]
        for r in range(hi - lo, -1, -1):
            row = np.nan_to_num(diff[r], nan=0.0)
            level = np.zeros(row.shape, dtype=np.int64)
            if top > 0:
                level = np.where(row != 0, np.clip(1 + (np.abs(row) * LEVELS / top).astype(np.int64), 1, LEVELS), 0)
            segs = [Segment(" " + labels[r][: LABEL_W - 1].rjust(LABEL_W - 1) + " ", PLAIN)]
            for v, sign, lone in zip(level.tolist(), np.sign(row).tolist(), one.tolist(), strict=True):
                if lone:
                    segs.append(Segment(MISSING, DIM))
                    continue
                kind = "intensity" if sign > 0 else "frequency"
                char = (" " if mode != "mono" else "+" if sign > 0 else "-" if sign < 0 else " ")
                segs.append(Segment(char, cell_style(mode, kind, v)))
            legend = legends[hi - lo - r] if hi - lo - r < len(legends) else ""
            segs.append(Segment(legend[:RIGHT_W].ljust(RIGHT_W), DIM))
            out.append(Strip(Segment.simplify(segs)).adjust_cell_length(width, PLAIN))
        out.append(axis_strip(self.a, win, width))
        return out

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        key = (self.stop, self.zoom, width, self.mode, self.a.n, self.b.n)
        if key != self._key:
            rows = self.rows
            self._lines, self._key = self.render_lines_all(width), key
            if self.rows != rows:
                self.refresh(layout=True)
        return self._lines[y] if y < len(self._lines) else Strip.blank(width, PLAIN)


def diff_head(a: StreamHistory, b: StreamHistory, notes: int) -> list[list[Field]]:
    """The difference screen's two header lines: the streams, with the count of what reading said (`notes`: kept
    longest but for the title, as on the other screens), then what the map is."""
    return [[Field(" DIFFERENCE ", "bold reverse", 100),
             Field(f"  A: {clean_text(a.stream.label, 200)}", "bold red", 50, shrink=12),
             Field(f"   B: {clean_text(b.stream.label, 200)}", "bold blue", 50, shrink=12),
             *notes_field(notes, 95)],
            [Field(f" unit {a.stream.unit};", rank=20),
             Field(" B's columns matched to A's cells by time;", rank=10), Field(" Esc: back", rank=30)]]


class DiffScreen(Screen[None]):
    """A − B of two streams marked in the overview; Esc goes back. As the other screens, it counts what reading said
    in its header and says each message on its note line (the app's tick); `w` lists them."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]
    DEFAULT_CSS = "DiffScreen #diff-head { height: 2; background: $boost; }"

    def __init__(self, a: StreamHistory, b: StreamHistory) -> None:
        super().__init__(id="difference")
        self.a, self.b = a, b

    @property
    def host(self) -> LatencyMapApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield FittedText(diff_head(self.a, self.b, self.host.acc.messages_said), id="diff-head")
        yield DiffMap(self.a, self.b)
        yield KeyFooter()
        yield NoteLine()

    def on_mount(self) -> None:
        self.query_one(DiffMap).mode = self.host.color_mode

    def show_notes(self) -> None:
        """The header's count of what reading said, as it grows (paused too, as the map screen's header)."""
        if self.is_mounted:
            self.query_one("#diff-head", FittedText).update(diff_head(self.a, self.b, self.host.acc.messages_said))

    def plain_lines(self) -> list[str]:
        """The screen as text, for the saved plain-text frame: the cells drawn as in mono (`+` A has more, `-` B has
        more), as the map screen's frame draws its cells with shade characters."""
        head = str(self.query_one("#diff-head", FittedText).render()).splitlines()
        diffmap = self.query_one(DiffMap)
        return [*head, *(strip.text.rstrip() for strip in diffmap.render_lines_all(diffmap.size.width, "mono"))]

    def update(self) -> None:
        """Follow the data (and the app's zoom) as the map screen does: a window held back in the history grows
        with the data while it is shorter than the window (`ViewState.fit_window`, on a copy: the map screen keeps
        its own), and stays still when paused."""
        if not self.is_mounted:
            return
        diffmap = self.query_one(DiffMap)
        view = replace(self.host.view)
        n = view.shown_n(self.a)
        view.fit_window(n, map_cells(diffmap.size.width or self.host.size.width))
        diffmap.stop = view.stop(n)
        diffmap.zoom = self.host.view.zoom
        diffmap.refresh()
        self.show_notes()
