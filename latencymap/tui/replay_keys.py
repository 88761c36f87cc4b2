"""Replay controls in the TUI: speed, pause, seek to a time, jump to the next burst."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from latencymap.core.accumulator import StreamHistory
from latencymap.core.sanitize import clean_text
from latencymap.flow.replay import BurstScan, ReplayClock, clock_text, next_burst, parse_seek
from latencymap.tui.host import MapHost

REPLAY_BINDINGS: list[Binding] = [
    Binding("greater_than_sign,full_stop", "replay('faster')", "Faster", show=False),
    Binding("less_than_sign,comma", "replay('slower')", "Slower", show=False),
    Binding("g", "replay('seek')", "Seek", show=False),
    Binding("n", "replay('burst')", "Next burst", show=False),
]

REPLAY_HELP: list[tuple[str, str]] = [
    ("> / <", "replay: twice / half as fast (space pauses the replay too)"),
    ("g", "replay: go to a time (+30s, -5m, 90 = seconds from the start, 14:03:07)"),
    ("n", "replay: jump to the next burst of the stream shown after the cursor"),
]


class SeekScreen(ModalScreen[str | None]):
    """Asks where to go; Enter answers, Escape cancels."""

    DEFAULT_CSS = """
    SeekScreen { align: center middle; }
    SeekScreen > Vertical { width: 64; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Go to: +30s, -5m, 90 (seconds from the start), 14:03:07")
            yield Input(placeholder="+30s", id="seek")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ReplayController:
    """Turns replay keys into clock changes or view moves; already-read times are shown at once."""

    def __init__(self, app: MapHost, clock: ReplayClock, scan: BurstScan | None = None) -> None:
        self.app = app
        self.clock = clock
        self.scan = scan
        #: (end time, `starting`, what the note line says it is) of a seek ahead whose column is not read yet (`go`)
        self.pending: tuple[float, bool, str] | None = None

    def act(self, what: str) -> None:
        if what == "faster":
            self._say(f"speed ×{self.clock.faster(1) or 'max'}")
        elif what == "slower":
            self._say(f"speed ×{self.clock.faster(-1) or 'max'}")
        elif what == "seek":
            self.app.push_screen(SeekScreen(), self._seek_answer)
        elif what == "burst":
            self.next_burst()

    def toggle_pause(self) -> None:
        self.clock.toggle_pause()

    def _say(self, message: str, severity: str = "information") -> None:
        self.app.notify(message, title="replay", severity=severity, timeout=4)
        self.app.refresh_view(force=True)

    def _cursor_time(self, start: bool = False) -> float | None:
        """The end (`start`: the start) of the cursor's column."""
        hist = self.app.current()
        if hist is None or hist.n == 0:
            return None
        return float((hist.start if start else hist.end)[self.app.view.cursor_at(self.app.view.shown_n(hist))])

    def _seek_answer(self, text: str | None) -> None:
        if not text:
            return
        first = self.clock.first
        current = self._cursor_time()
        if first is None or current is None:
            self._say("nothing replayed yet", "warning")
            return
        try:
            target = parse_seek(text, first, current)
        except ValueError as err:
            self._say(str(err), "error")
            return
        self.go(target)

    def go(self, target: float, *, starting: bool = False, about: str = "") -> None:
        """Show the column at `target`: at once when it was read, else once the replay has run up to it (`arrived`).

        A time is the end of the column it names (`g 30`: the column that ends at 30 s, or the first one after);
        `starting`: `target` is a start time (a burst's), so the column that starts there, the first one whose end
        is past it; `about`: what the note line says it went to (`burst of read`), before its time.
        """
        hist = self.app.current()
        target_end = float(np.nextafter(target, np.inf)) if starting else target
        self.pending = None
        if hist is not None and hist.n and target_end <= float(hist.end[hist.n - 1]):
            self._show(hist, target_end, starting, about)
            return
        self.app.view.end_key()
        self.pending = (target_end, starting, about)
        self.clock.seek(target_end)
        self._say(f"seeking {about + ' at ' if about else ''}{clock_text(target)}…")

    def arrived(self, ended: bool) -> None:
        """New columns were read: a seek ahead puts the cursor on its column once that is read and a column after it
        too (on the newest column the cursor would follow the data: `ViewState._settle`); `ended`: the recording
        ended, the cursor on its column or its last one."""
        hist = self.app.current()
        if self.pending is None or hist is None or hist.n == 0:
            return
        target_end, starting, about = self.pending
        if ended or (hist.n >= 2 and target_end <= float(hist.end[hist.n - 2])):
            self.pending = None
            self._show(hist, target_end, starting, about)

    def _show(self, hist: StreamHistory, target_end: float, starting: bool, about: str = "") -> None:
        """The cursor on the first column whose end is at or after `target_end` (the last one: none), and the note line
        saying where it went: the column's start for a burst, else its end (a time names the column it ends)."""
        column = min(hist.n - 1, int(np.searchsorted(hist.end[: hist.n], target_end, side="left")))
        self.app.view.goto(self.app.view.shown_n(hist), self.app.map_cells(), column)
        at = (about + " at " if about else "at ") + clock_text(float((hist.start if starting else hist.end)[column]))
        if column == 0 and target_end < float(hist.start[0]):
            self._say(f"{at}: the {'start' if hist.dropped == 0 else 'oldest column kept'}")
        elif column == hist.n - 1 and target_end > float(hist.end[column]):
            self._say(f"{at}: the end of the recording")
        else:
            self._say(at)

    def next_burst(self) -> None:
        """The cursor on the next burst of the stream shown after the cursor; the note line names the stream, and where
        it has none left, the stream whose burst comes next (the bursts of a recording whose streams the scan could
        not tell apart: of any stream)."""
        if self.scan is None or (self.scan.bursts is None and self.scan.error is None):
            self._say("still looking for bursts in the recording…", "warning")
            return
        if self.scan.error is not None:
            self._say(f"no burst list: {self.scan.error}", "error")
            return
        after = self._cursor_time(start=True)  # a burst starts at a column's start: the next starts after the cursor's
        after = after if after is not None else float("-inf")
        hist = self.app.current()
        by_stream = self.scan.by_stream or {}
        if hist is None or hist.stream not in by_stream:
            target = next_burst(self.scan.bursts or [], after)
            if target is None:
                self._say("no burst after the cursor", "warning")
            else:
                self.go(target, starting=True, about="burst")
            return
        name = clean_text(hist.stream.label, 60)
        target = next_burst(by_stream[hist.stream], after)
        if target is not None:
            self.go(target, starting=True, about=f"burst of {name}")
            return
        later = [(t, clean_text(stream.label, 60)) for stream, starts in by_stream.items()
                 if stream != hist.stream and (t := next_burst(starts, after)) is not None]
        if not later:
            self._say(f"no burst of {name} after the cursor", "warning")
            return
        when, other = min(later)
        self._say(f"no burst of {name} after the cursor; the next is of {other} at {clock_text(when)} "
                  "(tab: next stream)", "warning")
