"""The HeatMap widget: line API, one Strip per row built once per frame from run-length merged cells."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from latencymap.analysis.findings import intensity_what
from latencymap.core.accumulator import GAP, RESET, StreamHistory
from latencymap.core.sanitize import cell_width
from latencymap.core.units import format_number
from latencymap.outputs.report import time_words
from latencymap.tui.axis import LABEL_W, axis_strip, cursor_strip
from latencymap.tui.fit import Field, fit_fields
from latencymap.tui.palette import CURSOR_CHAR, cell_char, cell_style
from latencymap.tui.window import Window, zoomed_frame
from latencymap.views.frame import LEVELS, Folds, MapFrame, row_labels

LEGEND_W = 10
#: Lines of a map besides its rows: title, cursor line, time axis.
CHROME_LINES = 3
RIGHT_W = 1 + 8 + 1 + 2 + 1 + LEGEND_W
#: The maps' titles (an intensity map's says what its stream's time is: `intensity_what`).
TITLES = {"frequency": "Frequency: events per second",
          "intensity": "Intensity: time waited per second (s/s)"}
TITLE_STYLE = Style(bold=True)
DIM = Style(dim=True)
SELECTED = Style(bold=True, reverse=True)
MARK_STYLES = {"R": Style(bold=True, color="dark_orange"), "G": Style(bold=True, color="grey50")}
PLAIN = Style()  # never None: Textual's NO_COLOR filter needs a Style on every segment


@dataclass(frozen=True, slots=True)
class MapSpec:
    """Everything a map needs besides its width: bucket range, window end, zoom, scale, cursor."""

    lo: int
    hi: int
    stop: int
    zoom: int = 1
    maxval: float | None = None
    log: bool = False
    cursor: int = -1
    selected_row: int | None = None
    folds: Folds | None = None
    #: How the stream's time is known when its source says (a rebinned stream: `report.time_words`), for the
    #: intensity map's title; None: from whether the columns shown carry their times.
    time_words: str | None = None

    @property
    def rows(self) -> int:
        return self.hi - self.lo + 1


def map_cells(width: int) -> int:
    """Cells of the shared time axis in a panel `width` wide."""
    return max(1, width - LABEL_W - 1 - RIGHT_W)


class HeatMap(Widget):
    """One heat map (frequency or intensity) of one stream."""

    DEFAULT_CSS = "HeatMap { height: auto; width: 1fr; }"

    @dataclass
    class Selected(Message):
        """A click chose history `column` and bucket `row` (0 = lowest row shown), the map's slot `slot`."""

        column: int
        row: int
        slot: int

    def __init__(self, kind: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.kind = kind
        self.mode = "truecolor"
        self.hist: StreamHistory | None = None
        self.spec: MapSpec | None = None
        self.frame: MapFrame | None = None
        self.window: Window | None = None
        self._version = 0
        self._built: tuple[int, int, str] | None = None
        self._strips: list[Strip] = []
        self.marked = False

    def show(self, hist: StreamHistory | None, spec: MapSpec | None) -> None:
        """Draw `hist` as `spec` says on the next repaint."""
        marked = hist is not None and bool((hist.flags & (RESET | GAP)).any())
        relayout = (spec.rows if spec else 0) != (self.spec.rows if self.spec else 0) or marked != self.marked
        self.hist, self.spec, self.marked = hist, spec, marked
        self._version += 1
        self.refresh(layout=relayout)

    @property
    def cells(self) -> int:
        """Map columns that fit in the widget's width."""
        return map_cells(self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.lines_wanted

    @property
    def lines_wanted(self) -> int:
        """The lines the map needs for what it shows (its height once the screen is laid out)."""
        return (self.spec.rows if self.spec else 1) + CHROME_LINES + self.marked

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        key = (self._version, width, self.mode)
        if key != self._built:
            self._strips = self.build_strips(width, self.mode)
            self._built = key
        return self._strips[y] if y < len(self._strips) else Strip.blank(width, PLAIN)

    def plain_lines(self) -> list[str]:
        """The map as text with shade characters, for the saved plain-text frame."""
        return [strip.text.rstrip() for strip in self.build_strips(self.size.width, "mono")]

    def build_strips(self, width: int, mode: str) -> list[Strip]:
        """Quantize once (NumPy) and turn each row into merged segments."""
        hist, spec = self.hist, self.spec
        title = TITLES[self.kind] if hist is None or self.kind == "frequency" else \
            f"Intensity: {intensity_what(hist.stream.datasource, hist.measures, hist.stream.label)} per second (s/s)"
        if hist is None or spec is None or hist.n == 0:
            self.frame = None
            return [_text_strip(f" {title}", width, TITLE_STYLE), _text_strip(" waiting for data…", width, DIM)]
        cells = map_cells(width)
        win = Window(spec.stop, cells, spec.zoom)
        frame = zoomed_frame(hist, self.kind, win, spec.lo, spec.hi, maxval=spec.maxval, log=spec.log,
                             folds=spec.folds)
        self.frame, self.window = frame, win
        words = "exact" if self.kind == "frequency" else spec.time_words or time_words(frame.exact, None, 0, 0)
        strips = [_text_strip(map_title(title, words, spec, width), width, TITLE_STYLE)]
        levels = frame.levels
        pad = cells - levels.shape[1]
        full = np.zeros((spec.rows, cells), dtype=np.uint8)
        full[:, pad:] = levels
        cursor = win.cell_of(spec.cursor) if spec.cursor >= 0 else -1
        shown = frame.values[:, cursor - pad] if 0 <= cursor - pad < frame.values.shape[1] else frame.latest
        labels = row_labels(hist, spec.lo, spec.hi, spec.folds, LABEL_W - 1)  # `12.7 days`, never a cut `1099512`
        for r in range(spec.rows - 1, -1, -1):
            segs = [self._label(labels[r], r == spec.selected_row)]
            segs += _row_segments(full[r], cursor, mode, self.kind)
            segs += self._right(frame, float(shown[r]), spec.rows - 1 - r, mode)
            strips.append(Strip(segs, width))
        if self.marked:
            strips.append(_marks_strip(hist, win, width))
        strips.append(cursor_strip(hist, win, spec.cursor, width))
        strips.append(axis_strip(hist, win, width))
        return strips

    def _label(self, label: str, selected: bool) -> Segment:
        text = label[: LABEL_W - 1].rjust(LABEL_W - 1) + " "
        return Segment(("▸" if selected else " ") + text, SELECTED if selected else PLAIN)

    def _right(self, frame: MapFrame, value: float, k: int, mode: str) -> list[Segment]:
        """Beside row `k` (0 = top): the cursor column's value in that row, and a line of the colour legend."""
        text = format_number(value, 4)
        if len(text) > 8:
            text = format_number(value, 3)
        segs = [Segment(f" {text[:8]:>8} ", PLAIN)]
        rows = len(frame.labels)
        if rows < LEVELS + 2:  # too few rows for a legend line per level: the levels on one line, then the max
            if k == 0:
                segs += [Segment(cell_char(mode, v), cell_style(mode, self.kind, v)) for v in range(1, LEVELS + 1)]
                return [*segs, Segment(" >0…max".ljust(LEGEND_W + 3 - LEVELS), PLAIN)]
            line = _compact_max(frame, k, bool(self.spec and self.spec.maxval))
            return [*segs, Segment(line[: LEGEND_W + 3].ljust(LEGEND_W + 3), PLAIN)]
        if k <= LEVELS:
            segs.append(Segment(cell_char(mode, k) * 2, cell_style(mode, self.kind, k)))
            legend = _legend_text(frame, k, self.spec.log if self.spec else False)
            segs.append(Segment(" " + legend[:LEGEND_W].ljust(LEGEND_W), PLAIN))
        else:
            line = f"max {format_number(frame.chart_max)}" if k == LEVELS + 1 else ""
            segs.append(Segment(line[: LEGEND_W + 3].ljust(LEGEND_W + 3), PLAIN))
        return segs

    def on_click(self, event: events.Click) -> None:
        """Select the clicked column and bucket."""
        if self.spec is None or self.window is None or self.hist is None or self.hist.n == 0:
            return
        row = self.spec.rows - event.y
        cell = event.x - LABEL_W - 1
        if not (0 <= row < self.spec.rows and 0 <= cell < self.window.cells):
            return
        a, b = self.window.columns_of(cell)
        column = min(b, self.spec.stop) - 1
        if column >= a:
            self.post_message(self.Selected(column, row, self.spec.lo + row))


#: A shorter form of `time_words`' notes, for a narrow map.
_SHORT_WORDS = {"estimated from bucket midpoints": "estimated", "the source's exact sum": "exact sum"}


def map_title(title: str, words: str, spec: MapSpec, width: int) -> str:
    """The map's title line fitted to `width`, with how its times are known (`time_words`; none when "exact"): that
    note is shortened, the scale goes, then the note, before the title is cut."""
    scale = Field(f"  [{'log' if spec.log else 'linear'}{' pinned' if spec.maxval else ''} scale · "
                  f"{spec.zoom} col/cell]", rank=5)
    notes = ("", "") if words == "exact" else (f", {words}", f", {_SHORT_WORDS.get(words, words)}")
    for note in notes:
        fields = [Field(f" {title}", rank=10), Field(note, rank=6), scale]
        if sum(cell_width(f.text) for f in fields) <= width:
            break
    return "".join(f.text for f in fit_fields(fields, width))


def cell_marks(hist: StreamHistory, win: Window) -> str:
    """One character per cell: R when a column in it saw a counter reset, G a gap (missing data), else a space."""
    first = max(0, win.base)
    flags = np.zeros(win.cells * win.zoom, dtype=np.uint8)
    flags[first - win.base:] = hist.flags[first: win.stop]
    cells = np.bitwise_or.reduce(flags.reshape(win.cells, win.zoom), axis=1)
    return "".join(np.where(cells & RESET, "R", np.where(cells & GAP, "G", " ")).tolist())


def _marks_strip(hist: StreamHistory, win: Window, width: int) -> Strip:
    """The row under a map that marks reset and gap columns."""
    segs = [Segment(" marks".rjust(LABEL_W) + " ", DIM)]
    segs += [Segment(ch * len(list(run)), MARK_STYLES.get(ch, PLAIN)) for ch, run in groupby(cell_marks(hist, win))]
    segs.append(Segment("  R reset  G gap", DIM))
    return Strip(segs).adjust_cell_length(width, PLAIN)


def _compact_max(frame: MapFrame, k: int, pinned: bool) -> str:
    """Line `k` (1, 2) under the one-line legend: a pinned scale's max, then the data's (cells above the pinned max
    take the top colour); else the data's max."""
    if not pinned:
        return f"max {format_number(frame.chart_max)}" if k == 1 else ""
    if k == 1:
        return f"pinned {format_number(frame.maxval)}"
    return f"data {format_number(frame.chart_max)}" if k == 2 else ""


def _legend_text(frame: MapFrame, level: int, log: bool) -> str:
    if level == 0:
        return "0"
    if log:
        floor = frame.maxval / 10**LEVELS
        return ">0" if level == 1 else "≥" + format_number(floor * 10 ** (level - 1))
    return ">" + format_number(frame.maxval * (level - 1) / LEVELS)


def _row_segments(row: np.ndarray, cursor: int, mode: str, kind: str) -> list[Segment]:
    """Cells of one row, equal neighbours merged into one Segment; the cursor cell drawn apart."""
    chars, styles = _level_looks(mode, kind)
    bounds = np.flatnonzero(row[1:] != row[:-1]) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(row)]
    values = row[starts].tolist()
    segs: list[Segment] = []
    add = segs.append
    for a, b, v in zip(starts, ends, values, strict=True):
        if a <= cursor < b:
            if cursor > a:
                add(Segment(chars[v] * (cursor - a), styles[v]))
            add(Segment(CURSOR_CHAR, cell_style(mode, kind, v, True)))
            if b > cursor + 1:
                add(Segment(chars[v] * (b - cursor - 1), styles[v]))
        else:
            add(Segment(chars[v] * (b - a), styles[v]))
    return segs


@lru_cache(maxsize=16)
def _level_looks(mode: str, kind: str) -> tuple[list[str], list[Style]]:
    """Character and Style of every level, looked up once per (mode, kind)."""
    levels = range(LEVELS + 1)
    return [cell_char(mode, v) for v in levels], [cell_style(mode, kind, v) for v in levels]


def _text_strip(text: str, width: int, style: Style) -> Strip:
    return Strip([Segment(text, style)]).adjust_cell_length(width, PLAIN)
