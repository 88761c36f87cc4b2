"""The overview: every stream on one line (label, a p99 heat strip on a scale shared by all, p50/p99 now and overall,
time waited, p99 now against the peers), sorted by a metric the user picks; Enter opens a stream, Esc comes back.

The strips share one time axis (`SharedClock`): the newest column of any stream is at the right, and a stream that
stopped shows its columns where they were and its "now" empty; one that stopped while its peers go on (a hung rank)
shows `stale` in place of a comparison with them. Once the input has ended the axis spans the whole run (columns
merged as by the zoom; a run shorter than the strips stretched over them), so a stream that ended early (a Spark
stage) shows its cells too; recordings far apart in time each get a part of it, the silence between them cut out
(`overview_axis`). Names that share a long start
and end are cut around the part that tells them apart (`distinct_names`).

Only the lines on screen are drawn, so hundreds of streams stay responsive.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from latencymap.core.model import StreamId
from latencymap.core.sanitize import cell_width, clean_text, cut_middle
from latencymap.core.units import fit_duration, format_duration
from latencymap.tui.axis import runs_strip, times_strip
from latencymap.tui.fit import Field, FittedText
from latencymap.tui.footer import KeyFooter
from latencymap.tui.note_line import NoteLine
from latencymap.tui.notes import notes_field
from latencymap.tui.overview_axis import GAP
from latencymap.tui.overview_names import distinct_names
from latencymap.tui.overview_stats import (
    ORDERS,
    OverviewStats,
    SharedClock,
    StreamRow,
    sort_rows,
)
from latencymap.tui.overview_strips import StripCache, p99_levels
from latencymap.tui.palette import cell_char, cell_style
from latencymap.views.frame import LEVELS

if TYPE_CHECKING:
    from latencymap.tui.app import LatencyMapApp

MARK_W = 3
NAME_W = 26
#: The narrowest the names get on a narrow terminal, where the heat strips keep about `STRIP_W` cells.
MIN_NAME_W = 14
STRIP_W = 20
#: The fewest cells of a heat strip.
MIN_STRIP_W = 8
#: The number columns and their widths (durations as the report writes them, fitted: `12.7 days`, `1,234 days`,
#: `12,345d`; `×1.5e+09 ▲`).
COLUMNS = (("p50 now", 8), ("p99 now", 8), ("p99 all", 8), ("waited", 10), ("vs peers", 10))
#: On a terminal too narrow for them all, whole columns go in this order (a number is never cut).
DROPPED_FIRST = ("p50 now", "p99 all", "waited", "vs peers")
HEAD = Style(bold=True)
DIM = Style(dim=True)
SLOW = Style(color="red", bold=True)
STALE = Style(color="yellow", bold=True)
SELECTED = Style(reverse=True, bold=True)
MARKED = Style(color="magenta", bold=True)
PLAIN = Style()
#: A heat strip cell whose p99 is a lower bound only (coloured as that bound), as its figures are written `≥low`.
OPEN_MARK = "≥"
OPEN_INK = Style(color="black", bold=True)


def numbers_width(columns: tuple[tuple[str, int], ...]) -> int:
    """Cells of the number columns `columns`, a space after each."""
    return sum(w + 1 for _, w in columns)


def columns_shown(width: int) -> tuple[tuple[str, int], ...]:
    """The number columns a list `width` wide shows: all of them, less whole columns (`DROPPED_FIRST`) where the
    narrowest names and strips leave no room for them."""
    columns: tuple[tuple[str, int], ...] = COLUMNS
    for name in DROPPED_FIRST:
        if MARK_W + MIN_NAME_W + 1 + MIN_STRIP_W + 1 + numbers_width(columns) <= width:
            break
        columns = tuple(c for c in columns if c[0] != name)
    return columns


def strip_cells(width: int) -> int:
    """Cells of each stream's heat strip in a list `width` wide."""
    return max(MIN_STRIP_W, width - MARK_W - name_width(width) - 1 - numbers_width(columns_shown(width)) - 1)


def name_width(width: int) -> int:
    """Cells of the stream names in a list `width` wide (`NAME_W`, less on a narrow terminal)."""
    return max(MIN_NAME_W, min(NAME_W, width - MARK_W - 1 - numbers_width(columns_shown(width)) - 1 - STRIP_W))


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…" if width > 0 else ""


def scale_heading(low: float, high: float, width: int, at_least: bool = False) -> str | None:
    """What the strips' colours mean, as long as `width` allows (the scale's ends kept longest, then what the mark of
    a cell whose p99 is a lower bound only says, when `at_least`); None: not even the scale fits."""
    ends = [format_duration(v, long_units=True) for v in (low, high)]
    scale = " … ".join(ends)
    marked = (f"p99 per cell, one scale for all streams: {scale}; {OPEN_MARK} cell: at least its colour",
              f"p99 per cell, one scale: {scale}; {OPEN_MARK}: at least",
              f"p99, one scale: {scale}; {OPEN_MARK}: at least",
              f"p99 {scale}; {OPEN_MARK} at least") if at_least else ()
    return _first_fitting((*marked, f"p99 per cell, one scale for all streams: {scale}",
                           f"p99 per cell, one scale: {scale}", f"p99, one scale: {scale}", f"p99 {scale}", scale,
                           "…".join(ends)), width)


def shown_labels(rows: list[StreamRow]) -> tuple[str, ...]:
    """Each row's label, with its datasource and unit where another row has the same label (`sda [bpf, nanosec]`, as
    the report heads it): three `sda` lines could not be told apart."""
    seen: dict[str, int] = {}
    for r in rows:
        seen[r.label] = seen.get(r.label, 0) + 1
    return tuple(f"{r.label} [{r.hist.stream.datasource}, {r.hist.stream.unit}]" if seen[r.label] > 1 else r.label
                 for r in rows)


def _first_fitting(texts: tuple[str, ...], cells: int) -> str | None:
    """The first of `texts` (the longest wording first) that fits in `cells`; None when none does."""
    return next((text for text in texts if cell_width(text) <= cells), None)


def _ratio(ratio: float) -> str:
    """`1.1`, `39`, `112`, `9,876`, `1.5e+09`: two digits, whole numbers up to 10,000 (never `1.1e+02`)."""
    return f"{ratio:.2g}" if ratio < 10 else f"{ratio:,.0f}" if ratio < 9999.5 else f"{ratio:.2g}"


def _values(row: StreamRow) -> tuple[str, ...]:
    """The numbers of a line as shown (of every column in `COLUMNS`): durations as the report writes them, in their
    column's width (`fit_duration`), `≥low` where a percentile is a lower bound only (`StreamRow.open`)."""
    vs = "stale" if row.stale else "-" if not math.isfinite(row.vs_peers) else (
        "≥" if "vs peers" in row.open else "") + f"×{_ratio(row.vs_peers)}" + (" ▲" if row.slow else "")
    widths = dict(COLUMNS)
    return (*(_figure(v, widths[name], "≥" if name in row.open else "≤" if name in row.at_most else "") for name, v in
              (("p50 now", row.p50_now), ("p99 now", row.p99_now), ("p99 all", row.p99_all), ("waited", row.waited_s))),
            vs)


def _figure(value: float, width: int, bound: str) -> str:
    """A duration in `width` cells (`fit_duration`); `≥value` where it is a lower bound only, as the report writes,
    `≤value` where an upper bound only (`bound`)."""
    return bound + fit_duration(value, width - 1) if bound and math.isfinite(value) else fit_duration(value, width)


def _numbers(row: StreamRow, values: tuple[str, ...], width: int) -> list[Segment]:
    """The numbers of the columns a list `width` wide shows."""
    segs = [Segment(" ", PLAIN)]
    shown = {name for name, _ in columns_shown(width)}
    for (name, w), v in zip(COLUMNS, values, strict=True):
        if name not in shown:
            continue
        style = SLOW if (name in ("p99 now", "vs peers") and row.slow) else \
            STALE if name == "vs peers" and row.stale else PLAIN
        segs.append(Segment(f"{v:>{w}} ", style))
    return segs


class OverviewList(Widget, can_focus=True):
    """One line per stream; `selected` is the highlighted line, kept on screen."""

    DEFAULT_CSS = "OverviewList { height: 1fr; width: 1fr; }"

    def __init__(self) -> None:
        super().__init__(id="overview-list")
        self.rows: list[StreamRow] = []
        self.selected = 0
        #: Whether the user picked a line (moved or opened one): the selection then follows its stream when the rows
        #: are sorted again; until then it stays on the top line, the stream the order puts first.
        self.chosen = False
        self.top = 0
        self.mode = "truecolor"
        self.zoom = 1
        self.stops: dict[int, int] = {}
        #: The time axis every strip is placed on (None: from the rows listed)
        self.clock: SharedClock | None = None
        self.marks: dict[int, str] = {}
        self._scale = (math.nan, math.nan)
        #: whether a strip on screen has a cell whose p99 is a lower bound only (the heading then says its mark)
        self._open = False
        #: the cells of the silences cut out of the time axis (`SharedClock.gaps`)
        self._gaps = np.zeros(0, dtype=bool)
        self._strips: dict[int, Strip] = {}
        self._header: Strip | None = None
        #: what each row's name shows (by stream index), and the labels and width it was cut for
        self._names: dict[int, str] = {}
        self._named: tuple[tuple[str, ...], int] = ((), 0)
        self._p99 = StripCache()
        #: per stream on screen: what its line shows (`_key`), the line, its numbers, its strip levels and which cells
        #: are open (p99 a lower bound only)
        self._lines: dict[StreamId, tuple[tuple[object, ...], Strip, tuple[str, ...], np.ndarray, np.ndarray]] = {}

    @property
    def scale(self) -> tuple[float, float]:
        """(low, high) seconds of the p99 colour scale: the cells on screen and every stream's p99 now and overall."""
        self._ensure_built()
        return self._scale

    @property
    def lines_shown(self) -> int:
        """Stream lines that fit under the header."""
        return max(1, self.size.height - 1)

    def set_rows(self, rows: list[StreamRow], stops: dict[int, int], clock: SharedClock | None = None) -> None:
        """New numbers (sorted and filtered) and the time axis of every stream (default: of `rows`); redraws the
        lines on screen."""
        current = self.rows[self.selected].index if self.rows and self.selected < len(self.rows) else None
        self.rows, self.stops = rows, stops
        self.clock = clock if clock is not None else SharedClock.of(rows, self.zoom)
        if current is not None:
            self.selected = next((k for k, r in enumerate(rows) if r.index == current), 0) if self.chosen else 0
        self._header = None  # built once, at the next repaint (however many changes came before it)
        self.move(0)

    def move(self, step: int, absolute: int | None = None) -> None:
        """Select another line (clamped), scrolling to keep it on screen."""
        n, before, top = len(self.rows), self.selected, self.top
        self.selected = 0 if n == 0 else max(0, min(n - 1, (self.selected + step) if absolute is None else absolute))
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + self.lines_shown:
            self.top = self.selected - self.lines_shown + 1
        self.top = max(0, min(self.top, max(0, n - self.lines_shown)))
        if self.selected == before and self.top == top and self._header is not None:
            return
        if self.top == top and self._header is not None and self._restyle(before, self.selected):
            return
        self._header = None
        self.refresh()

    def _restyle(self, *lines: int) -> bool:
        """Redraw only `lines` (indexes in `rows`), whose selection mark changed; False when the whole list must be
        built again (a line not built yet, or the time axis of the selected stream under the lines)."""
        if len(self.rows) - self.top < self.lines_shown or any(k not in self._strips for k in lines):
            return False
        width = self.size.width
        for k in lines:
            row = self.rows[k]
            got = self._lines.get(row.hist.stream)
            if got is None:
                return False
            _, _, values, levels, at_least = got
            selected = k == self.selected
            strip = self._line(row, values, levels, at_least, width, selected)
            self._lines[row.hist.stream] = (self._key(row, values, levels, at_least, selected), strip, values, levels,
                                            at_least)
            self._strips[k] = strip
            self.refresh(Region(0, 1 + k - self.top, width, 1))
        return True

    def current(self) -> StreamRow | None:
        """The selected stream's row."""
        return self.rows[self.selected] if 0 <= self.selected < len(self.rows) else None

    def on_resize(self, event: events.Resize) -> None:
        self._header = None
        self.move(0)

    def _ensure_built(self) -> None:
        if self._header is None or self._header.cell_length != self.size.width:
            self._build()

    def _build(self) -> None:
        """Strips of the lines on screen only (strip percentiles of those streams, one shared scale)."""
        width = self.size.width
        cells = strip_cells(width)
        shown = self.rows[self.top: self.top + self.lines_shown]
        stops = [self.stops.get(r.index, r.hist.n) for r in shown]
        clock = self.clock.fitted(cells) if self.clock is not None else None
        self._gaps = np.zeros(cells, dtype=bool)
        if clock is not None:
            self._gaps[clock.gaps(cells)] = True
        p99 = self._p99.get([r.hist for r in shown], stops, clock.edges(cells)) if clock is not None else \
            [(np.full(cells, np.nan), np.zeros(cells, dtype=bool)) for _ in shown]
        fleet = np.array([v for r in self.rows for v in (r.p99_now, r.p99_all)], dtype=np.float64)
        levels, low, high = p99_levels([v for v, _ in p99], LEVELS, fleet)
        opens = [at_least for _, at_least in p99]
        self._scale, self._open = (low, high), any(o.any() for o in opens)
        named = (shown_labels(self.rows), name_width(width))
        if named != self._named:  # cut around what tells the names listed apart
            self._names = dict(zip((r.index for r in self.rows), distinct_names(*named), strict=True))
            self._named = named
        self._header = self._head(width, cells)
        lines = {}
        for k, (r, lv, op) in enumerate(zip(shown, levels, opens, strict=True)):
            values = _values(r)
            selected = self.top + k == self.selected
            key = self._key(r, values, lv, op, selected)
            got = self._lines.get(r.hist.stream)
            if got is None or got[0] != key:  # a line is drawn again only when what it shows changed
                got = (key, self._line(r, values, lv, op, width, selected), values, lv, op)
            lines[r.hist.stream] = got
        self._lines = lines  # the lines on screen only
        self._strips = {self.top + k: lines[r.hist.stream][1] for k, r in enumerate(shown)}
        row = self.current()
        if row is not None and clock is not None and len(shown) < self.lines_shown:  # the shared time axis
            at = MARK_W + name_width(width) + 1
            self._strips[self.top + len(shown)] = runs_strip(row.hist, clock.runs, clock.allotted, width, at) \
                if self._gaps.any() else times_strip(row.hist, clock.cell_ends(cells), clock.span, width, at)

    def _key(self, row: StreamRow, values: tuple[str, ...], levels: np.ndarray, at_least: np.ndarray,
             selected: bool) -> tuple[object, ...]:
        """Everything a stream's line shows: the line is drawn again only when this changes."""
        mark = self.marks.get(row.index, "")
        return (self._names.get(row.index, row.label), values, row.slow, row.ended, levels.tobytes(),
                at_least.tobytes(), self._gaps.tobytes(), selected, mark, self.size.width, self.mode)

    def _head(self, width: int, cells: int) -> Strip:
        low, high = self._scale
        name_w, n, shown = name_width(width), len(self.rows), min(self.lines_shown, len(self.rows) - self.top)
        # a number is never cut in its middle while a shorter wording fits
        titles = (f"streams {self.top + 1}–{self.top + shown} of {n}", f"{self.top + 1}–{self.top + shown} of {n}",
                  f"{self.top + 1}–{self.top + shown}/{n}")
        title = "stream" if n <= self.lines_shown else _first_fitting(titles, name_w) or titles[-1][:name_w]
        segs = [Segment(" " * MARK_W + title + " " * (name_w - cell_width(title)) + " ", HEAD)]
        room = cells - LEVELS - 1
        heading = scale_heading(low, high, room, self._open) if math.isfinite(low) else None
        if math.isfinite(low) and heading is None:  # no room for the swatch and the scale: the scale, never cut
            text = scale_heading(low, high, cells, self._open) or "p99"
            segs.append(Segment(_fit(text, cells).ljust(cells), DIM))
        elif heading is not None:
            segs += [Segment(cell_char(self.mode, k) or " ", cell_style(self.mode, "intensity", k))
                     for k in range(1, LEVELS + 1)]
            segs.append(Segment(" " + heading.ljust(room), DIM))
        else:
            segs.append(Segment(_fit("p99 per cell", cells).ljust(cells), DIM))
        segs.append(Segment(" " + "".join(f"{name:>{w}} " for name, w in columns_shown(width)), HEAD))
        return Strip(segs).adjust_cell_length(width, PLAIN)

    def _line(self, row: StreamRow, values: tuple[str, ...], levels: np.ndarray, at_least: np.ndarray, width: int,
              selected: bool) -> Strip:
        mark = self.marks.get(row.index, "")
        segs = [Segment(">" if selected else " ", SELECTED if selected else PLAIN),
                Segment(f"{mark:<2}", MARKED)]
        name_style = SELECTED if selected else SLOW if row.slow else DIM if row.ended else PLAIN
        name_w = name_width(width)
        name = self._names.get(row.index) or cut_middle(row.label, name_w)
        segs.append(Segment(name + " " * (name_w - cell_width(name)), name_style))
        segs.append(Segment(" ", PLAIN))
        segs += _heat(levels, self.mode, at_least, self._gaps)
        segs += _numbers(row, values, width)
        return Strip(segs).adjust_cell_length(width, PLAIN)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        self._ensure_built()
        if y == 0:
            return self._header or Strip.blank(width, PLAIN)
        return self._strips.get(self.top + y - 1) or Strip.blank(width, PLAIN)

    def plain_lines(self) -> list[str]:
        """The lines on screen as text, for the saved plain-text frame: built again with shade characters (as
        `HeatMap.plain_lines`), whose heat strips are not coloured spaces."""
        mode, self.mode, self._header = self.mode, "mono", None
        try:
            return [self.render_line(y).text.rstrip() for y in range(min(self.size.height, len(self.rows) + 2))]
        finally:
            self.mode, self._header = mode, None


def _heat(levels: np.ndarray, mode: str, at_least: np.ndarray | None = None,
          gaps: np.ndarray | None = None) -> list[Segment]:
    """A heat strip: runs of equal levels merged into one segment each; a cell `at_least` (p99 a lower bound only)
    coloured as that bound, with `OPEN_MARK` in place of its shade (bold, dark on a colour); a cell of `gaps` (a
    silence cut out of the time axis) `GAP`."""
    segs: list[Segment] = []
    if levels.size == 0:
        return segs
    open_ = np.zeros(levels.shape, dtype=bool) if at_least is None else at_least
    gap = np.zeros(levels.shape, dtype=bool) if gaps is None or gaps.shape != levels.shape else gaps
    kinds = levels.astype(np.int64) * 4 + open_ + 2 * gap
    bounds = np.flatnonzero(kinds[1:] != kinds[:-1]) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(levels)]
    for a, b in zip(starts, ends, strict=True):
        v, style = int(levels[a]), cell_style(mode, "intensity", int(levels[a]))
        if gap[a]:
            segs.append(Segment(GAP * (b - a), DIM))
        elif open_[a]:
            segs.append(Segment(OPEN_MARK * (b - a), style + (HEAD if mode == "mono" else OPEN_INK)))
        else:
            segs.append(Segment(cell_char(mode, v) * (b - a), style))
    return segs


def overview_head(state: str, streams: int, rows: list[StreamRow], needle: str, order: str,
                  skipped: int, notes: int = 0) -> list[Field]:
    """The overview's header line: state, streams, skipped records, messages reading said (`notes`), order, filter,
    whether p50/p99 now come from the rows (rebinned streams), slow streams, then key hints (the first to go when the
    line is too long)."""
    fields = [Field(f" OVERVIEW · {state.upper()} ", "bold reverse", 100), Field(f"  {streams} streams", rank=90)]
    if needle:
        fields.append(Field(f" ({len(rows)} match “{clean_text(needle, 40)}”)", rank=80))
    fields.append(Field(f"  skipped {skipped}", "bold yellow" if skipped else "", rank=85 if skipped else 5))
    fields += notes_field(notes, 95)  # kept longest but for the state: a narrow terminal still says there are notes
    fields.append(Field(f"  sorted by {order}", rank=60))
    rows_now = sum(1 for r in rows if r.now_rows and math.isfinite(r.p99_now))
    if rows_now:  # as the header's "latest (rows)": their source's buckets are whole-stream sums
        fields.append(Field("  p50/p99 now (rows)" + ("" if rows_now == len(rows) else f" of {rows_now}"), "bold",
                            rank=58))
    fields += [Field(" (o)", rank=10), Field("  filter (/)", rank=9), Field("  Enter: open", rank=8),
               Field("  a/b: mark", rank=7), Field("  d: A−B", rank=6)]
    slow = [k for k, r in enumerate(rows) if r.slow]
    stale = [k for k, r in enumerate(rows) if r.stale]
    # a name cut to fit is cut around what tells it apart from the others listed, as the list cuts them
    among = tuple(r.label for r in rows) if slow or stale else ()
    # how many, in the group's head: the names after the first go first on a narrow line, the count stays (until the
    # first name cut to its least goes: after the count of streams, which the list's title says too, before the notes)
    if stale:
        fields.append(Field(f"  stale{_how_many(stale)}:", "bold yellow", group="stale", head=True))
        fields.append(Field(f" {clean_text(among[stale[0]], 60)}", "bold yellow", 65, shrink=12, group="stale",
                            drop_at=91, among=among, named=stale[0]))
    if slow:
        fields.append(Field(f"  slow now{_how_many(slow)}:", "bold red", group="slow", head=True))
        fields.append(Field(f" {clean_text(among[slow[0]], 60)}", "bold red", 70, shrink=12, group="slow", drop_at=92,
                            among=among, named=slow[0]))
        fields += [Field(f", {clean_text(among[k], 60)}", "bold red", 50 - n, group="slow")
                   for n, k in enumerate(slow[1:3])]
        if len(slow) > 3:
            fields.append(Field(", …", "bold red", 48, group="slow"))
    return fields


def _how_many(named: list[int]) -> str:
    """` (6)` before a list of 6 names; empty for one."""
    return f" ({len(named):,})" if len(named) > 1 else ""


class OverviewScreen(Screen[None]):
    """Every stream at once; keys: ↑↓ PgUp PgDn Home End select, Enter open, o order, / filter, a b mark, d A−B."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "ends(0)", "First", show=False),
        Binding("end", "ends(1)", "Last", show=False),
        Binding("enter", "open", "Open"),
        Binding("o", "order", "Order"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("a", "mark('A')", "Mark A"),
        Binding("b", "mark('B')", "Mark B"),
        Binding("d", "difference", "A−B"),
    ]
    DEFAULT_CSS = """
    OverviewScreen #overview-head { height: 1; background: $boost; }
    OverviewScreen #overview-filter { display: none; height: 3; }
    OverviewScreen #overview-filter.shown { display: block; }
    """

    def __init__(self) -> None:
        super().__init__(id="overview")
        self.stats = OverviewStats()
        self.order = ORDERS[0]
        self.needle = ""
        self.ready = False
        #: False from leaving the screen until it is drawn again (the app lists new data only once it is)
        self.painted = True
        self._all: list[StreamRow] = []  # every stream's row, in arrival order, as of the last update
        self._stops: dict[int, int] = {}
        #: Paused: the pause whose numbers `_all` holds (`ViewState.pauses`), each stream's stop counted from its first
        #: column seen (a memory budget drops the oldest meanwhile), and whether the input had ended then
        self._frozen: tuple[int, dict[int, int], bool] | None = None
        self._clock: SharedClock | None = None  # the time axis of every stream, as of the last update
        self._rows: list[StreamRow] = []  # the rows listed, sorted and filtered

    @property
    def host(self) -> LatencyMapApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield FittedText(id="overview-head")
        yield OverviewList()
        yield Input(placeholder="filter streams by label (Enter keeps it, Esc clears it)", id="overview-filter")
        yield KeyFooter()
        yield NoteLine()

    def on_mount(self) -> None:
        self.query_one(OverviewList).mode = self.host.color_mode
        self.ready = True
        self.update()

    def on_screen_suspend(self) -> None:
        self.painted = False

    def on_screen_resume(self) -> None:
        """Back on top (Esc from a stream or from the difference map): drawn at once as it was, then with the numbers
        of every stream that changed meanwhile (a thousand of them take tens of milliseconds)."""
        if self.ready:
            self._show()
            self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.painted = True
        self.update()

    def update(self) -> None:
        """Numbers of every stream (of the streams that changed), sorted and filtered, and the lines on screen.
        Paused, those of the moment of the pause (computed once, of the streams there were then), only laid out
        again (a resize, a zoom): nothing read since shows, in the strips, "waited" or "p99 all", nor a new stream."""
        if not self.ready:
            return
        app = self.host
        view = app.view
        frozen = self._frozen if view.paused and self._frozen is not None and self._frozen[0] == view.pauses else None
        if frozen is None:
            histories = [h for h in app.acc.streams.values() if not view.paused or h.stream in view.frozen]
            stops = [view.stop(view.shown_n(h)) for h in histories]
            self._all, self._stops = self.stats.rows(histories, stops, app.acc.sources), dict(enumerate(stops))
            self._frozen = (view.pauses, {i: stop + h.dropped for i, (h, stop) in enumerate(zip(
                histories, stops, strict=True))}, app.ended) if view.paused else None
        else:
            self._stops = {r.index: max(0, min(r.hist.n, frozen[1][r.index] - r.hist.dropped)) for r in self._all}
        # A run that has ended has no "now" to follow: its whole time is on the axis, each stream's cells with it.
        ended = app.ended if self._frozen is None else self._frozen[2]
        self._clock = SharedClock.of(self._all, view.zoom, whole=ended, stops=self._stops)
        self._show()

    def _show(self) -> None:
        """The rows of the last update in the order and filter chosen (keys that change only these are instant)."""
        app = self.host
        rows = sort_rows(self._all, self.order, self.needle)
        listing = self.query_one(OverviewList)
        listing.zoom = app.view.zoom
        listing.set_rows(rows, self._stops, self._clock)
        self._rows = rows
        self.show_notes()

    def listed(self) -> list[int]:
        """The streams listed (indexes in arrival order), filtered and sorted as last shown."""
        return [r.index for r in self._rows]

    def show_notes(self) -> None:
        """The header, with the count of what reading said as it grows (paused too, the list kept as it is: as the
        map screen's header)."""
        if not self.ready:
            return
        app = self.host
        self.query_one("#overview-head", FittedText).update([overview_head(
            app.state_name, len(self._all), self._rows, self.needle, self.order, app.acc.skipped,
            app.acc.messages_said)])

    def _chosen(self) -> OverviewList:
        """The list, with the user's pick to be kept from now on."""
        listing = self.query_one(OverviewList)
        listing.chosen = True
        return listing

    def action_move(self, step: int) -> None:
        self._chosen().move(step)

    def action_page(self, direction: int) -> None:
        listing = self._chosen()
        listing.move(direction * listing.lines_shown)

    def action_ends(self, last: int) -> None:
        listing = self._chosen()
        listing.move(0, absolute=len(listing.rows) - 1 if last else 0)

    def action_open(self) -> None:
        """Open the selected stream's full view."""
        row = self._chosen().current()
        if row is not None:
            self.host.open_stream(row.index)

    def action_order(self) -> None:
        """Next sort order."""
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        self._show()

    def action_filter(self) -> None:
        box = self.query_one("#overview-filter", Input)
        box.add_class("shown")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#overview-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.needle = ""
        self.query_one(OverviewList).focus()
        self._show()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.needle = event.value.strip()
        self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("shown")
        self.query_one(OverviewList).focus()

    def action_mark(self, which: str) -> None:
        """Mark the selected stream as A or B for the difference map."""
        row = self.query_one(OverviewList).current()
        if row is None:
            return
        marks = self.query_one(OverviewList).marks
        for index, mark in list(marks.items()):
            if mark == which:
                del marks[index]
        marks[row.index] = which
        self._show()

    def action_difference(self) -> None:
        """The difference map A − B of the two marked streams."""
        marks = {m: i for i, m in self.query_one(OverviewList).marks.items()}
        if "A" not in marks or "B" not in marks:
            self.notify("mark two streams first: a on one, b on the other", title="difference map")
            return
        self.host.show_difference(marks["A"], marks["B"])

    def plain_lines(self) -> list[str]:
        """The screen as text, for the saved plain-text frame."""
        head = self.query_one("#overview-head", FittedText).render()
        return [str(head).rstrip(), *self.query_one(OverviewList).plain_lines()]
