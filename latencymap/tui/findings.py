"""The findings panel: the diagnosis of the columns on screen, marked on the maps' time axis and listed.

`e` / `E` select the next / previous finding (shown whole) and move the cursor to its columns when it has some.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from latencymap.analysis.diagnosis import diagnose
from latencymap.analysis.epochs import starts_of
from latencymap.analysis.summary import header_p50
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.sanitize import cell_width, clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.outputs.report import epoch_startups, explained, first_bucket_note
from latencymap.tui.axis import LABEL_W
from latencymap.tui.heatmap import map_cells
from latencymap.tui.window import Window

#: Finding lines the maps always leave room for (more show when there is room).
MAX_LINES = 3
MARKS = "123456789abcdefghijklmnopqrstuvwxyz"
HEAD = Style(bold=True, reverse=True)
MARK = Style(color="yellow", bold=True)
SELECTED = Style(bold=True, reverse=True)
DIM = Style(dim=True)
PLAIN = Style()


@dataclass(frozen=True, slots=True)
class FindingItem:
    """One line of the diagnosis, with the history columns it is about (inclusive) when it has them; `cols`: the
    only columns it is about between those two (a band's bursts), when they are not a run."""

    text: str
    first_col: int | None = None
    last_col: int | None = None
    cols: tuple[int, ...] = ()

    def columns(self) -> list[tuple[int, int]]:
        """The runs of history columns (first, last, inclusive) its marks cover."""
        if self.first_col is None:
            return []
        if self.cols:
            return [(c, c) for c in self.cols]
        return [(self.first_col, self.last_col if self.last_col is not None else self.first_col)]


def finding_items(diag: Any) -> list[FindingItem]:
    """The diagnosis as items, each line in the report's words (`Diagnosis.summary_lines`, `Finding.line`: what,
    then why, with its qualifiers: a band that is the two sides of a shift, the start-up's): the modes line, then each
    finding (episodes with their columns, a band that came in bursts with the columns of its bursts; a steady band is
    over every column: it has none to go to)."""
    lines = diag.summary_lines()
    if not lines or diag.events <= 0:
        return []
    head = FindingItem(lines[0])
    found = getattr(diag, "findings", None)
    if found is not None:  # a diagnosis that names its findings with where they are
        items = [head]
        for f in found:
            text = f.line()
            if f.kind != "band":
                items.append(FindingItem(text, f.first_col, f.last_col))
            elif getattr(f, "bursts", False):
                cols = _burst_columns(diag, f)
                items.append(FindingItem(text, f.first_col, f.last_col, cols))
            else:
                items.append(FindingItem(text))
        return items
    items = [head]
    rest = lines[1:]
    if diag.tail is not None and rest:
        items.append(FindingItem(rest.pop(0)))
    for episode, line in zip(diag.episodes, rest, strict=False):
        items.append(FindingItem(line, episode.first_col, episode.last_col))
    items += [FindingItem(line) for line in rest[len(diag.episodes):]]
    return items


def _burst_columns(diag: Any, finding: Any) -> tuple[int, ...]:
    """The columns of the bursts of a band finding (from the diagnosis's band of the same range); () when unknown."""
    for band in getattr(diag, "bands", []):
        if band.bursts and (band.low_s, band.high_s) == (finding.low_s, finding.high_s):
            return tuple(int(c) for c, _ in band.bursts)
    return ()


def window_findings(hist: StreamHistory, first: int, stop: int, causes: list[dict[str, Any]] | None = None,
                    source: SourceTotals | None = None) -> list[FindingItem]:
    """Findings of history columns [first, stop) in the report's words; those about stragglers of a source's analysis
    (`causes`, see `report.Causes`) naming what made them slow where it says (`report.explained`).
    `source`: the stream's own buckets, whose p50 a stall is compared with where the columns are the whole stream and
    that is the p50 the header prints (`header_p50`); a part of it, with that part's."""
    if stop <= first:
        return []
    cols = slice(first, stop)
    whole = (first, stop, hist.dropped) == (0, hist.n, 0)  # the source's buckets are whole-stream sums
    diag = diagnose(hist.counts_in(cols), hist.time_in(cols), hist.low, hist.high, hist.start, hist.end,
                    col_range=(first, stop), rows_from=first, datasource=hist.stream.datasource,
                    label=hist.stream.label, measures=hist.measures, exact=hist.exact_in(cols),
                    seen_max=(hist.seen or (None, None))[1], seen_min=(hist.seen or (None, None))[0],
                    dropped=hist.dropped,
                    median_s=header_p50(hist, source) if whole else None)
    items = finding_items(explained(diag, hist, first, stop, causes))
    note = first_bucket_note(source, hist.stream.unit) if whole else None
    return [items[0], FindingItem(note), *items[1:]] if items and note else items


def epoch_findings(acc: Accumulator, hist: StreamHistory, first: int, stop: int) -> list[FindingItem]:
    """The epoch start-up finding (analysis/epochs.py) of the `timed_iter` phase `hist` is one of (its epochs' starts,
    batch waits or ends), over the time of history columns [first, stop) (all of them: the report's, over every column
    of the three); nothing where it has none."""
    starts = acc.streams.get(key) if stop > first and (key := starts_of(hist.stream)) is not None else None
    if starts is None:
        return []
    span = None if (first, stop, hist.dropped) == (0, hist.n, 0) else \
        (float(hist.meta_in("start", slice(first, first + 1))[0]), float(hist.meta_in("end", slice(stop - 1, stop))[0]))
    return [FindingItem(e.finding.line()) for e in epoch_startups(acc, [starts], span) if e.finding is not None]


class FindingsPanel(Widget):
    """Findings of the visible window: their columns marked on the time axis, then as many lines as there is room
    for (at least `MAX_LINES` when there are that many), the selected one whole, the others cut with …"""

    DEFAULT_CSS = "FindingsPanel { height: auto; background: $boost; }"

    def __init__(self) -> None:
        super().__init__(id="findings")
        self.items: list[FindingItem] = []
        self.win: Window | None = None
        self.selected: int | None = None
        #: Lines the app leaves for the findings under the maps.
        self.room = MAX_LINES
        self._built: tuple[object, ...] | None = None
        self._rows: list[Strip] = []

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + len(self._lines(width))

    def show(self, items: list[FindingItem], win: Window | None, selected: int | None, room: int | None = None) -> None:
        """Draw `items` on the window's cells on the next repaint, in at most `room` lines."""
        before = len(self._lines(self.size.width))
        self.items, self.win, self.selected = items, win, selected
        self.room = self.room if room is None else max(1, room)
        self.refresh(layout=len(self._lines(self.size.width)) != before)

    def placed(self) -> list[int]:
        """Indexes of the items that have columns."""
        return [k for k, item in enumerate(self.items) if item.first_col is not None]

    def selectable(self) -> list[int]:
        """Indexes of the items `e` goes through: every one, the modes line first."""
        return list(range(len(self.items)))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._marks(width)
        rows = self._lines(width)
        return rows[y - 1] if y - 1 < len(rows) else Strip.blank(width, PLAIN)

    def _lines(self, width: int) -> list[Strip]:
        """The lines under the marks: the items that fit `room`, the selected one kept in view."""
        key = (width, tuple(self.items), self.selected, self.room, self.win is None)
        if key == self._built:
            return self._rows
        text_w = max(8, width - LABEL_W - 1)
        if not self.items:
            note = "none yet" if self.win is None else "nothing notable"
            rows = [Strip([Segment(" " * (LABEL_W + 1) + note, DIM)]).adjust_cell_length(width, PLAIN)]
            self._built, self._rows = key, rows
            return rows
        room = max(1, self.room)
        lines: list[tuple[int, str, bool]] = []  # (item, text, first line of the item)
        for k, item in enumerate(self.items):
            text = clean_text(item.text, 1000)
            if k != self.selected:
                lines.append((k, cut_end(text, text_w), True))
                continue
            # the selected one wraps onto the lines it needs, the others giving up theirs; cut with … (on its last
            # line) only when it needs more than the panel has
            wrapped = _wrap(text, text_w)
            if len(wrapped) > room:
                wrapped = [*wrapped[: room - 1], cut_end(" ".join(wrapped[room - 1:]), text_w)]
            lines += [(k, p, i == 0) for i, p in enumerate(wrapped)]
        start = 0
        chosen = [i for i, (k, _, _) in enumerate(lines) if k == self.selected]
        if len(lines) > room > 1 and len(chosen) < room:
            room -= 1  # the last line says how many more there are
        if len(lines) > room and chosen:
            start = max(0, min(chosen[0], chosen[-1] - room + 1))
        shown = lines[start: start + room]
        rows = []
        for k, text, first in shown:
            mark = (MARKS[k] if k < len(MARKS) else " ") if first else ""
            style = SELECTED if k == self.selected else PLAIN
            rows.append(Strip([Segment(f" {mark:>{LABEL_W - 1}} ", MARK), Segment(text, style)]
                              ).adjust_cell_length(width, PLAIN))
        if len(shown) < len(lines) and len(shown) < self.room:
            hidden = len({k for k, _, _ in lines} - {k for k, _, _ in shown})
            note = f"… {hidden} more finding{'s' if hidden != 1 else ''}: e / E go through them"
            rows.append(Strip([Segment(" " * (LABEL_W + 1) + cut_end(note, text_w), DIM)]
                              ).adjust_cell_length(width, PLAIN))
        self._built, self._rows = key, rows
        return rows

    def _marks(self, width: int) -> Strip:
        """` findings ` and each finding's mark over the cells of its columns; where findings share cells, the
        selected one's mark is drawn there (else the last one's)."""
        win = self.win
        cells = map_cells(width)
        line = [" "] * cells
        styles = [PLAIN] * cells
        if win is not None:
            win = Window(win.stop, cells, win.zoom)
            order = sorted(range(min(len(self.items), len(MARKS))), key=lambda k: k == self.selected)
            for k in order:
                item = self.items[k]
                for first, last in item.columns():  # a run of columns, or each burst on its own
                    a = max(0, win.cell_of(first))
                    b = min(cells - 1, win.cell_of(last))
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
        return [self.render_line(y).text.rstrip() for y in range(1 + len(self._lines(self.size.width)))]


def _wrap(text: str, width: int) -> list[str]:
    """`text` on lines of at most `width` terminal cells (words kept whole where they fit)."""
    out: list[str] = []
    for part in textwrap.wrap(text, width) or [""]:
        while cell_width(part) > width:  # wide characters: textwrap counts them as one cell
            head = cut_end(part, width + 1)[:-1]
            out.append(head)
            part = part[len(head):]
        out.append(part)
    return out


def cut_end(text: str, width: int) -> str:
    """`text` in at most `width` terminal cells, cut at the end with …"""
    if cell_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        used += cell_width(ch)
        if used > width - 1:
            break
        out.append(ch)
    return "".join(out) + "…"
