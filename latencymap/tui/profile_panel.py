"""The profile panel: what the profiled code was doing in the cursor's column(s) or a marked range.

Shown only when the command has a profile (`--profile PID`, or a recording that holds samples).
It lists the top functions (self and total samples), the top stacks, and a compact flame view
(one line per depth) for the selection; with ranges A and B marked it lists, past a rule, what grew and what shrank
or vanished from A to B. latencymap's own flush thread is left out (see profiling/store.py).
Ranges are kept as epoch times, so they survive history trimming and stream changes.
"""

from __future__ import annotations

import io
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from latencymap.core.accumulator import StreamHistory
from latencymap.core.sanitize import clean_text
from latencymap.profiling.export import write_export
from latencymap.profiling.flame import flame
from latencymap.profiling.samples import function_of, short_frame, split_frame
from latencymap.profiling.store import ProfileStore, Range
from latencymap.tui.host import MapHost
from latencymap.tui.window import Window

if TYPE_CHECKING:
    from latencymap.profiling.session import ProfileSession

PROFILE_BINDINGS: list[Binding] = [
    Binding("m", "profile('mark')", "Mark range", show=False),
    Binding("a", "profile('a')", "Range A", show=False),
    Binding("b", "profile('b')", "Range B", show=False),
    Binding("c", "profile('clear')", "Clear A/B", show=False),
    Binding("x", "profile('export')", "Export profile", show=False),
]

PROFILE_HELP: list[tuple[str, str]] = [
    ("m", "profile: mark the cursor column; selection = mark…cursor (m: unmark)"),
    ("a / b", "profile: the selection becomes range A / B; with both: what grew and what shrank"),
    ("c", "profile: clear ranges A and B"),
    ("x", "profile: export the selection (collapsed stacks, speedscope JSON)"),
]

TOP_N = 6
FLAME_DEPTH = 4
PALETTE = ("on dark_blue", "on dark_green", "on dark_magenta", "on dark_cyan", "on grey30", "on dark_red")


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch)) + f".{int(epoch * 10) % 10}"


def _range_label(r: Range) -> str:
    return f"{_clock(r[0])}–{_clock(r[1])}"


def _fn_label(function: str) -> str:
    return clean_text(short_frame(function), 80)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole * 100:5.1f}" if whole else "    -"


def functions_table(store: ProfileStore, r: Range, n: int = TOP_N) -> Table:
    """Top functions of a range: self and total samples (and % of the range's samples)."""
    total = store.count(*r)
    table = Table(box=None, padding=(0, 1), show_edge=False, expand=False)
    for name, width in (("self", 4), ("self%", 5), ("total%", 6)):  # numbers keep their width; names shrink
        table.add_column(name, justify="right", no_wrap=True, min_width=width)
    table.add_column("function", no_wrap=True, overflow="ellipsis", min_width=6)
    for stat in store.functions(*r)[:n]:
        table.add_row(str(stat.self), _pct(stat.self, total), _pct(stat.total, total), _fn_label(stat.function))
    return table


def stacks_table(store: ProfileStore, r: Range, n: int = TOP_N) -> Table:
    """Top stacks of a range (per function, leaf last)."""
    total = store.count(*r)
    table = Table(box=None, padding=(0, 1), show_edge=False, expand=False)
    table.add_column("%", justify="right", no_wrap=True, min_width=5)
    table.add_column("top stacks (root › leaf)", no_wrap=True, overflow="ellipsis", min_width=6)
    for stat in store.top_stacks(*r, n=n):
        names = [split_frame(f)[0] for f in stat.stack]
        table.add_row(_pct(stat.count, total), clean_text(" › ".join(names[-5:]), 200))
    return table


def growth_table(store: ProfileStore, a: Range, b: Range, n: int = TOP_N) -> Table:
    """What grew and what shrank (or vanished) from range A to range B, as shares of each range's samples."""
    cmp = store.compare(a, b)
    grew = [g for g in cmp.growth if g.delta > 0]
    shrank = sorted((g for g in cmp.growth if g.delta < 0), key=lambda g: (g.delta, g.function))
    up = grew[: max(n - min(len(shrank), n // 2), n // 2)]
    down = shrank[: n - len(up)]
    table = Table(box=None, padding=(0, 1), show_edge=False, expand=False)
    for name in ("A %", "B %", "Δ"):  # numbers keep their width; names shrink
        table.add_column(name, justify="right", no_wrap=True, min_width=6)
    table.add_column("A→B", no_wrap=True, min_width=6)
    table.add_column(f"{cmp.samples_a} → {cmp.samples_b} samples", no_wrap=True, overflow="ellipsis", min_width=6)
    for rows, verb in ((up, "grew"), (down, "shrank")):
        for i, g in enumerate(rows):
            tag = " (new)" if g.total_a == 0 else " (gone)" if g.total_b == 0 else ""
            table.add_row(f"{g.total_a * 100:.1f}", f"{g.total_b * 100:.1f}", f"{g.delta * 100:+.1f}",
                          verb if i == 0 else "", f"{_fn_label(g.function)}{tag}", end_section=i == len(rows) - 1)
    return table


def flame_text(store: ProfileStore, r: Range, width: int, depth: int = FLAME_DEPTH) -> Text:
    """The compact flame view of a range: the common root, then one line per depth."""
    counts: dict[tuple[str, ...], int] = {}
    for stack, c in store.stack_counts(*r).items():
        key = tuple(function_of(f) for f in stack)
        counts[key] = counts.get(key, 0) + c
    fl = flame(counts, max(10, width), depth)
    text = Text(no_wrap=True, overflow="crop")
    root = " › ".join(split_frame(f)[0] for f in fl.root) or "(no common root)"
    text.append("flame ", style="bold")
    text.append(clean_text(root, 200))
    for row in fl.rows:
        line = Text("\n", no_wrap=True)
        x = 0
        for i, block in enumerate(row):
            if block.start > x:
                line.append(" " * (block.start - x))
            w = block.stop - block.start
            label = clean_text(split_frame(block.name)[0], 200)
            cell = (label + " " * w)[: w - 1] + "▏" if w > 1 else "▏"
            line.append(cell, style=PALETTE[(zlib.crc32(block.name.encode()) + i) % len(PALETTE)])
            x = block.stop
        text.append_text(line)
    return text


@dataclass
class ProfileMarks:
    """The range mark (`m`) and ranges A and B, in epoch seconds."""

    anchor: Range | None = None
    a: Range | None = None
    b: Range | None = None


class ProfilePanel(Static):
    """The panel under the maps; `ProfileController` fills it."""

    DEFAULT_CSS = "ProfilePanel { height: 14; border-top: solid $primary; }"

    def __init__(self) -> None:
        super().__init__(id="profile")
        self.status = ""
        self.selection: Range | None = None
        self.shown: Group | None = None

    def show(self, group: Group) -> None:
        """Display `group` (kept for `plain_text`)."""
        self.shown = group
        self.update(group)

    def plain_text(self, width: int | None = None) -> str:
        """What the panel shows, as plain text."""
        if self.shown is None:
            return ""
        console = Console(width=width or self.size.width or 120, no_color=True, record=True, file=io.StringIO())
        console.print(self.shown)
        return console.export_text()


class ProfileController:
    """Marks, key actions, message polling and panel updates for one app and its profile session."""

    def __init__(self, app: MapHost, session: ProfileSession) -> None:
        self.app = app
        self.session = session
        self.store = session.store
        self.marks = ProfileMarks()
        self.panel = ProfilePanel()
        self._seen_messages = 0
        self._seen_version = -1
        self._shown: tuple | None = None
        self.exported: list[Path] = []

    def poll(self) -> bool:
        """Surface new session messages as notices; True when new samples arrived (repaint due)."""
        for message in self.session.messages(self._seen_messages):
            self._seen_messages += 1
            self.panel.status = message
            self.app.notify(message, title="profile", severity="warning", timeout=8)
            self._shown = None
        if self.store.version != self._seen_version:
            self._seen_version = self.store.version
            return True
        return False

    def cursor_range(self, hist: StreamHistory, first: int, stop: int) -> Range:
        """Times of history columns [first, stop)."""
        return float(hist.start[first]), float(hist.end[stop - 1])

    def selection(self) -> Range | None:
        """The cursor's column(s), widened to the mark when one is set; None without data."""
        app = self.app
        hist = app.current()
        if hist is None:
            return None
        n = app.view.shown_n(hist)
        stop = app.view.stop(n)
        cursor = app.view.cursor_at(n)
        if cursor < 0:
            return None
        win = Window(stop, app.map_cells(), app.view.zoom)
        first, last = win.columns_of(win.cell_of(cursor))
        cur = self.cursor_range(hist, first, max(first + 1, min(last, stop)))
        if self.marks.anchor is None:
            return cur
        return min(cur[0], self.marks.anchor[0]), max(cur[1], self.marks.anchor[1])

    def act(self, what: str) -> None:
        """A profile key: mark, a, b, clear, export."""
        sel = self.selection()
        if what == "clear":
            self.marks.a = self.marks.b = None
        elif what == "export":
            self.export(sel)
        elif sel is None:
            self.app.notify("no columns yet", title="profile")
            return
        elif what == "mark":
            self.marks.anchor = None if self.marks.anchor is not None else sel
        elif what in ("a", "b"):
            setattr(self.marks, what, sel)
            self.marks.anchor = None
        self._shown = None
        self.app.refresh_view(force=True)

    def export(self, sel: Range | None, directory: Path | None = None) -> list[Path]:
        """Write the selection as `.collapsed.txt` and `.speedscope.json`; say where."""
        if sel is None or not self.store.count(*sel):
            self.app.notify("no profile samples in the selection", title="profile", severity="warning")
            return []
        directory = directory or Path.cwd()
        stem = time.strftime("latencymap-profile-%Y%m%d-%H%M%S")
        base, n = stem, 0
        while (directory / f"{stem}.collapsed.txt").exists() or (directory / f"{stem}.speedscope.json").exists():
            n += 1
            stem = f"{base}.{n}"
        name = f"latencymap {_range_label(sel)}"
        paths = [write_export(self.store, *sel, "collapsed", directory / f"{stem}.collapsed.txt", name),
                 write_export(self.store, *sel, "speedscope", directory / f"{stem}.speedscope.json", name)]
        self.exported += paths
        self.app.notify(f"saved {paths[0].name} and {paths[1].name}", title="profile")
        return paths

    def show(self) -> None:
        """Redraw the panel for the current selection (skipped when nothing changed)."""
        sel = self.selection()
        width = max(20, self.panel.size.width or 100)
        key = (sel, self.store.version, self.marks.anchor, self.marks.a, self.marks.b, width, self.panel.status)
        if key == self._shown:
            return
        self._shown = key
        self.panel.selection = sel
        self.panel.show(self.render(sel, width))

    def render(self, sel: Range | None, width: int) -> Group:
        """Header, functions beside stacks (or growth A→B), flame lines."""
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(" profile ", style="bold reverse")
        live = self.session.live
        if self.session.pid is not None:
            head.append(f"  PID {self.session.pid} {'sampling' if live else 'stopped'} @{self.session.rate} Hz")
        if sel is None:
            head.append("  waiting for columns")
        else:
            head.append(f"  {'marked ' if self.marks.anchor else ''}{_range_label(sel)}  "
                        f"{self.store.count(*sel)} samples")
            if self.store.own_left_out:
                head.append("  (latencymap's flush thread left out)", style="dim")
            span = self.store.span()
            if live and (span is None or span[1] < sel[1]):
                head.append("  (samples come ≈2 s late)", style="dim")
        for label, r in (("A", self.marks.a), ("B", self.marks.b)):
            if r is not None:
                head.append(f"  {label} {_range_label(r)}", style="bold")
        if self.panel.status:
            head.append(f"  {clean_text(self.panel.status, 300)}", style="yellow")
        if sel is None:
            return Group(head)
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(ratio=1, overflow="ellipsis")
        grid.add_column(width=1)
        grid.add_column(ratio=1, overflow="ellipsis")
        right = (growth_table(self.store, self.marks.a, self.marks.b)
                 if self.marks.a is not None and self.marks.b is not None else stacks_table(self.store, sel))
        grid.add_row(functions_table(self.store, sel), Text("│\n" * (TOP_N + 1), style="dim"), right)
        return Group(head, grid, flame_text(self.store, sel, width))
