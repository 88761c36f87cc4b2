"""The p50/p99 strip under the maps, drawn on the maps' own cells (one cell per map cell, braille dots, log scale)."""

from __future__ import annotations

import math

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import percentile_duration
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import fit_duration
from latencymap.tui.axis import LABEL_W, axis_strip
from latencymap.tui.estimates import bounded_estimates
from latencymap.tui.heatmap import RIGHT_W, map_cells
from latencymap.tui.inspector import own_figures
from latencymap.tui.window import Window

SHOWN = (0.50, 0.99)
ROWS = 5
DOTS = 4  # braille dots per character, bottom to top
#: Braille bits of dot row k (0 = bottom) in both dot columns.
ROW_BITS = np.array([0x40 | 0x80, 0x04 | 0x20, 0x02 | 0x10, 0x01 | 0x08], dtype=np.int64)
P50_STYLE = Style(color="cyan", bold=True)
P99_STYLE = Style(color="red", bold=True)
BOTH_STYLE = Style(color="magenta", bold=True)
CURSOR_BG = Style(bgcolor="grey23")
DIM = Style(dim=True)
TITLE = Style(bold=True)
PLAIN = Style()


def percentile_series(hist: StreamHistory, first: int, stop: int) -> dict[float, np.ndarray]:
    """p50 and p99 (seconds) of each column in [first, stop), from the accumulator's estimates."""
    pct = hist.column_stats(slice(first, stop)).percentiles
    return {q: pct[:, PERCENTILES.index(q)] for q in SHOWN}


def cell_percentiles(hist: StreamHistory, win: Window, source: SourceTotals | None = None) -> np.ndarray:
    """(cells, 2): p50 and p99 (seconds) of each cell's merged columns; NaN for a cell without events. A cell that
    holds the whole stream gives the figures the inspector gives it (`own_figures`: with `source`, the stream's own
    buckets, as the report and the header)."""
    return cell_figures(hist, win, source)[0]


def cell_figures(hist: StreamHistory, win: Window,
                 source: SourceTotals | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`cell_percentiles`, and which of them are a lower bound only (bool, same shape: `bounded_estimates`)."""
    values, at_least = bounded_estimates([(hist, win.cell_counts(hist), win.cell_means(hist))],
                                         [win.cell_overflow(hist)], SHOWN)
    if source is not None:
        first, stop = win.cell_bounds()
        for cell in np.flatnonzero((first == 0) & (np.minimum(stop, win.stop) >= hist.n)).tolist():
            _, figures, whole_open, _ = own_figures(hist, 0, hist.n, hist.totals(slice(0, hist.n)), source)
            values[cell] = [figures[q] for q in SHOWN]
            at_least[cell] = [q in whole_open for q in SHOWN]
    return values, at_least


def dot_levels(values: np.ndarray, rows: int = ROWS) -> tuple[np.ndarray, float, float]:
    """Dot level (0..rows*DOTS-1, -1 for none) of each value on a log scale; the scale's (low, high) in seconds."""
    ok = np.isfinite(values) & (values > 0)
    levels = np.full(values.shape, -1, dtype=np.int64)
    if not ok.any():
        return levels, math.nan, math.nan
    logs = np.log10(values[ok])
    low, high = float(logs.min()), float(logs.max())
    if high - low < 0.3:  # a flat line sits in the middle of a 2x range
        mid = (high + low) / 2
        low, high = mid - 0.15, mid + 0.15
    top = rows * DOTS - 1
    levels[ok] = np.rint((logs - low) / (high - low) * top).astype(np.int64)
    return levels, 10**low, 10**high


class PercentileStrip(Widget):
    """p50 (cyan) and p99 (red) of every map cell, on the maps' time axis; `p` hides it."""

    DEFAULT_CSS = f"PercentileStrip {{ height: {ROWS + 2}; width: 1fr; }}"

    def __init__(self) -> None:
        super().__init__(id="percentiles")
        self.hist: StreamHistory | None = None
        self.win: Window | None = None
        self.cursor = -1
        self.source: SourceTotals | None = None
        self.values: np.ndarray | None = None
        self._key: tuple | None = None
        self._strips: list[Strip] = []

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return ROWS + 2

    def show(self, hist: StreamHistory | None, win: Window | None, cursor: int = -1,
             source: SourceTotals | None = None) -> None:
        """Draw the cells of `win` (the maps' window) on the next repaint; `source`: the stream's own buckets
        (`Accumulator.sources`), whose figures a cell of the whole stream gives (`cell_percentiles`)."""
        self.hist, self.win, self.cursor, self.source = hist, win, cursor, source
        self._key = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        key = (id(self.hist), self.hist.n if self.hist else 0, self.win and (self.win.stop, self.win.zoom),
               self.cursor, width)
        if key != self._key:
            self._strips = self.build_strips(width)
            self._key = key
        return self._strips[y] if y < len(self._strips) else Strip.blank(width, PLAIN)

    def build_strips(self, width: int) -> list[Strip]:
        """Title, `ROWS` rows of braille dots (p50 and p99 per cell) and the time axis."""
        hist, spec_win = self.hist, self.win
        title = [Segment(" Percentiles per cell: ", TITLE), Segment("p50", P50_STYLE), Segment(" · ", TITLE),
                 Segment("p99", P99_STYLE), Segment(" (log scale; the lower dot is p50)", DIM)]
        if hist is None or spec_win is None or hist.n == 0:
            return [Strip(title).adjust_cell_length(width, PLAIN),
                    Strip([Segment(" waiting for data…", DIM)]).adjust_cell_length(width, PLAIN)]
        win = Window(spec_win.stop, map_cells(width), spec_win.zoom)
        values, at_least = cell_figures(hist, win, self.source)
        self.values = values
        levels, low, high = dot_levels(values)
        cursor_cell = win.cell_of(self.cursor) if self.cursor >= 0 else -1
        strips = [Strip(title).adjust_cell_length(width, PLAIN)]
        for r in range(ROWS - 1, -1, -1):
            label = _row_label(r, low, high)
            segs = [Segment(" " + label[: LABEL_W - 1].rjust(LABEL_W - 1) + " ", DIM)]
            segs += _dot_row(levels, r, cursor_cell)
            segs += _right(values, at_least, cursor_cell, ROWS - 1 - r)
            strips.append(Strip(segs).adjust_cell_length(width, PLAIN))
        strips.append(axis_strip(hist, win, width))
        return strips

    def plain_lines(self) -> list[str]:
        """The strip as text, for the saved plain-text frame."""
        return [s.text.rstrip() for s in self.build_strips(self.size.width)]


def _row_label(r: int, low: float, high: float) -> str:
    """The latency at the middle of character row `r` (0 = bottom)."""
    if not math.isfinite(low):
        return ""
    top = ROWS * DOTS - 1
    mid = (r * DOTS + (DOTS - 1) / 2) / top
    return fit_duration(10 ** (math.log10(low) + mid * (math.log10(high) - math.log10(low))), LABEL_W - 1)


def _dot_row(levels: np.ndarray, r: int, cursor_cell: int) -> list[Segment]:
    """One character row: braille cells with the dots of p50 and p99 that fall in it, coloured by which."""
    lo = r * DOTS
    bits = np.zeros(levels.shape[0], dtype=np.int64)
    kind = np.zeros(levels.shape[0], dtype=np.int64)  # 1 p50, 2 p99, 3 both
    for j in range(2):
        lv = levels[:, j]
        inside = (lv >= lo) & (lv < lo + DOTS)
        bits[inside] |= ROW_BITS[lv[inside] - lo]
        kind[inside] |= 1 << j
    chars = np.where(bits > 0, 0x2800 + bits, 0x20)
    text = "".join(map(chr, chars.tolist()))
    styles = (PLAIN, P50_STYLE, P99_STYLE, BOTH_STYLE)
    segs: list[Segment] = []
    bounds = np.flatnonzero(kind[1:] != kind[:-1]) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(kind)]
    for a, b in zip(starts, ends, strict=True):
        style = styles[int(kind[a])]
        if a <= cursor_cell < b:
            if cursor_cell > a:
                segs.append(Segment(text[a:cursor_cell], style))
            segs.append(Segment(text[cursor_cell], style + CURSOR_BG))
            if b > cursor_cell + 1:
                segs.append(Segment(text[cursor_cell + 1: b], style))
        else:
            segs.append(Segment(text[a:b], style))
    return segs


def _right(values: np.ndarray, at_least: np.ndarray, cursor_cell: int, line: int) -> list[Segment]:
    """The cursor cell's p99 (first line) and p50 (second line) beside the strip (`≥low` where `at_least`)."""
    if not 0 <= cursor_cell < values.shape[0] or line > 1:
        return [Segment(" " * RIGHT_W, PLAIN)]
    q, style = ((1, P99_STYLE), (0, P50_STYLE))[line]
    name = ("p50", "p99")[q]
    text = percentile_duration(float(values[cursor_cell, q]), bool(at_least[cursor_cell, q]), long_units=True)
    return [Segment(f"  ▲ {name} ", DIM), Segment(f"{text:<12}", style)]
