"""The map screen's key actions and the moves between screens (overview, one stream, difference map), as a base
class of the app."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen

from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.model import Notice, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.tui.diffmap import DiffScreen
from latencymap.tui.findings import FindingsPanel
from latencymap.tui.heatmap import HeatMap
from latencymap.tui.inspector import Inspector
from latencymap.tui.keys import HelpScreen
from latencymap.tui.note_line import LINE_S, NoteLines
from latencymap.tui.notes import KEY as NOTES_KEY
from latencymap.tui.notes import MESSAGE_CHARS, NotesScreen
from latencymap.tui.overview import OverviewScreen
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.save import NotSaved, save_frame, saved_words
from latencymap.tui.state import ViewState
from latencymap.tui.status import StatusBar
from latencymap.tui.stragglers import StragglersPanel, finished_at
from latencymap.views.frame import MapFits

if TYPE_CHECKING:
    from latencymap.tui.profile_panel import ProfileController
    from latencymap.tui.replay_keys import ReplayController


def column_of(starts: np.ndarray, ends: np.ndarray, when: float) -> int | None:
    """The history column whose span [start, end) holds `when` (epoch seconds), or the next one after a gap; None
    outside the history's span (the history's last end counts as the last column's)."""
    if len(ends) == 0 or not starts[0] <= when <= ends[-1]:
        return None
    return min(int(np.searchsorted(ends, when, side="right")), len(ends) - 1)


#: The app's actions that also work on the overview and the difference map (they follow the pause and the zoom).
ELSEWHERE = frozenset({"quit", "interrupt", "pause", "zoom", "save", "help", "notes", "replay", "command_palette",
                       "pop_screen"})

#: The exit code of an interrupt (Ctrl-C as a key, or SIGINT), as the CLI documents it.
EXIT_INTERRUPTED = 130
#: How many repaints `s` waits at most for the screen to be laid out (`MapActions._save_shown`).
SAVE_HOPS = 5


class MapActions(App[int]):
    """What each key does; the app provides the state and the repaint."""

    view: ViewState
    acc: Accumulator
    fits: dict[StreamId, MapFits]
    saved: list[Path]
    profiler: ProfileController | None
    replay: ReplayController | None
    note_lines: NoteLines
    #: Whether `s` waits for the screen to be laid out before saving it (`action_save`).
    saving = False

    @property
    def maps(self) -> Screen[Any]:
        """The map screen (the first one), whichever screen is on top: its widgets are queried there."""
        return self.screen_stack[0] if self.screen_stack else self.screen

    @property
    def on_maps(self) -> bool:
        """True when the map screen is the one on top."""
        return self.screen is self.maps

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Say `message` on the note line of the screen shown, in the footer's place, headed by `title`, red for a
        warning or an error, for `timeout` seconds (LINE_S by default); reading's messages wait meanwhile and come
        back (`NoteLines.tell`). Not a toast: at 80x24 toasts covered the maps' newest columns and legends for
        seconds. Every notice of the app and of its screens and controllers comes here (the overview's, a replay's
        speed, the profile's). The text is shown as written (`markup` is not heeded): labels, paths and notices
        from the input hold brackets."""
        self.note_lines.tell(clean_text(message, MESSAGE_CHARS), title, severity != "information",
                             LINE_S if timeout is None else timeout)
        if self.screen_stack:
            self.note_lines.show_on(self.screen)

    def say_kept(self, message: str, *, title: str, severity: SeverityLevel = "warning") -> None:
        """Say `message` on the note line, and keep it with what reading said (`w` lists it, the header counts it,
        stderr says it once the app is gone): it matters beyond the seconds it is on the line."""
        self.acc.note(Notice(f"{title}: {message}", skipped=0))
        self.notify(message, title=f"{title} ({NOTES_KEY})", severity=severity)

    def current(self) -> StreamHistory | None:
        """The stream on screen (the app's)."""
        raise NotImplementedError

    def map_cells(self) -> int:
        """How many cells wide the heat maps are (the app's)."""
        raise NotImplementedError

    def refresh_view(self, *, force: bool = False, status_only: bool = False) -> None:
        """Repaint (the app's)."""
        raise NotImplementedError

    def open_stream(self, index: int) -> None:
        """Show stream `index` in the full view (from the overview)."""
        self.view.stream = index % max(1, len(self.acc.streams))
        self.view.end_key()
        self.view.finding = self.view.selected_slot = self.view.rows = None
        while isinstance(self.screen, OverviewScreen | DiffScreen):
            self.pop_screen()
        self.refresh_view(force=True)

    def show_overview(self) -> None:
        """Push the overview: one screen, kept installed, so its numbers, order, filter, marks and selection are
        there again after Enter and Esc."""
        if not self.is_screen_installed("overview"):
            self.install_screen(OverviewScreen(), "overview")
        self.push_screen("overview")

    def show_difference(self, a: int, b: int) -> None:
        """The difference map of streams `a` and `b` (indexes in arrival order)."""
        histories = list(self.acc.streams.values())
        ha, hb = histories[a], histories[b]
        why = not_comparable(ha.stream, hb.stream)
        if why:
            self.notify(why, title="difference map", severity="warning")
            return
        self.push_screen(DiffScreen(ha, hb))
        self.call_after_refresh(self.refresh_view, force=True)  # its window the view's: held back, or paused

    def _n(self) -> int:
        """Columns of the stream shown that the display may use (`ViewState.shown_n`)."""
        hist = self.current()
        return self.view.shown_n(hist) if hist else 0

    def _changed(self) -> None:
        self.refresh_view(force=True)

    def action_pause(self) -> None:
        """Freeze or unfreeze the display, each stream at the columns it has now; ingest goes on (a replay pauses
        too). The overview lists its numbers of this moment until the display is resumed, whichever screen is on
        top."""
        self.view.toggle_pause(self.acc.streams.values())
        if self.replay is not None:
            self.replay.toggle_pause()
        overview = self.get_screen("overview") if self.view.paused and self.is_screen_installed("overview") else None
        if isinstance(overview, OverviewScreen):
            overview.update()
        self._changed()

    def action_cursor(self, step: int) -> None:
        self.view.move_cursor(self._n(), self.map_cells(), step)
        self._changed()

    def action_home(self) -> None:
        self.view.home(self._n(), self.map_cells())
        self._changed()

    def action_end(self) -> None:
        self.view.end_key()
        self._changed()

    def action_page(self, direction: int) -> None:
        self.view.page(self._n(), self.map_cells(), direction)
        self._changed()

    def action_zoom(self, factor: int) -> None:
        self.view.zoom_by(factor)
        self._changed()

    def action_shift(self, delta: int) -> None:
        """Pin the rows shown, one bucket lower or higher."""
        spec = self.maps.query_one("#frequency", HeatMap).spec
        if spec is not None:
            self.view.shift_buckets((spec.lo, spec.hi), delta)
            self._changed()

    def action_fit(self) -> None:
        """Rows fit the data again (after `[`/`]`)."""
        self.view.fit_rows()
        hist = self.current()
        if hist is not None:
            self.fits.pop(hist.stream, None)
        self._changed()

    def action_overview(self) -> None:
        """The overview of every stream (with more than one)."""
        if len(self.acc.streams) > 1 and not isinstance(self.screen, OverviewScreen):
            self.show_overview()
        elif len(self.acc.streams) <= 1:
            self.notify("one stream only: the overview lists several", title="overview")

    def action_finding(self, step: int) -> None:
        """Select the next (previous) finding, shown whole; the cursor goes to its columns when it has some."""
        panel = self.maps.query_one(FindingsPanel)
        placed = panel.selectable()
        hist = self.current()
        if not placed or hist is None:
            self.notify("no finding in view", title="findings")
            return
        at = self.view.finding
        pos = placed.index(at) if at in placed else (-1 if step > 0 else 0)
        self.view.finding = placed[(pos + step) % len(placed)]
        item = panel.items[self.view.finding]
        if item.first_col is not None:
            self.view.goto(self._n(), self.map_cells(), item.first_col)
        self._changed()

    def action_straggler(self, step: int) -> None:
        """Select the next (previous) listed straggler and put the cursor on the column it finished in."""
        panels = list(self.maps.query(StragglersPanel))
        hist = self.current()
        placed = panels[0].placed() if panels else []
        if not placed or hist is None or hist.n == 0:
            self.notify("no straggler with a finish time listed (Spark sources list them)", title="stragglers")
            return
        panel = panels[0]
        at = panel.selected
        pos = placed.index(at) if at in placed else (-1 if step > 0 else 0)
        straggler = panel.select(placed[(pos + step) % len(placed)])
        end = finished_at(straggler or {})
        column = column_of(hist.start, hist.end, end) if end is not None else None
        if column is None:
            self.notify("the column it finished in is not in the history kept", title="stragglers")
        else:
            self.view.goto(self._n(), self.map_cells(), column)
        self._changed()

    def action_log(self) -> None:
        self.view.log = not self.view.log
        self._changed()

    def action_show(self, kind: str) -> None:
        self.view.toggle_show(kind)
        self._changed()

    def action_percentiles(self) -> None:
        """Show or hide the percentile strip (shown by default when there is room)."""
        self.view.percentiles = not self.maps.query_one(PercentileStrip).display
        self._changed()

    def action_inspector(self) -> None:
        """Show or hide the inspector (shown by default when the screen is wide enough)."""
        self.view.inspector = not self.maps.query_one(Inspector).display
        self._changed()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The map screen's keys work (and are listed) only there; the overview and the difference map keep theirs."""
        return self.on_maps or action in ELSEWHERE

    def action_stream(self, step: int) -> None:
        """The next (`step` -1: previous) stream: of the overview's list where it has one (its filter and order, as
        last shown: Tab goes where the list the stream was opened from goes), else in arrival order."""
        if self.acc.streams:
            current = self.view.stream % len(self.acc.streams)
            overview = self.get_screen("overview") if self.is_screen_installed("overview") else None
            listed = overview.listed() if isinstance(overview, OverviewScreen) else []
            if listed:
                at = listed.index(current) if current in listed else -1 if step > 0 else 0
                self.view.stream = listed[(at + step) % len(listed)]
            else:
                self.view.stream = (current + step) % len(self.acc.streams)
            self.view.end_key()
            self.view.finding = self.view.rows = None  # rows pinned for one stream are not another's
            self._changed()

    def action_profile(self, what: str) -> None:
        """Profile keys (mark, a, b, clear, export); a notice when there is no profile."""
        if self.profiler is None:
            self.notify("no profile: start with --profile PID, or open a recording made with it", title="profile")
            return
        self.profiler.act(what)

    def action_replay(self, what: str) -> None:
        """Replay keys (faster, slower, seek, burst); a notice when not replaying."""
        if self.replay is None:
            self.notify("not a replay: open a recording with `latencymap replay PATH`", title="replay")
            return
        self.replay.act(what)

    def action_interrupt(self) -> None:
        """Ctrl-C: quit as interrupted (exit code 130), like SIGINT."""
        self.exit(return_code=EXIT_INTERRUPTED)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_notes(self) -> None:
        """What reading said, every message (again: closed)."""
        if isinstance(self.screen, NotesScreen):
            self.screen.dismiss()
        else:
            self.note_lines.clear()  # the screen lists them whole
            self.push_screen(NotesScreen(self.acc))

    def action_save(self) -> None:
        """Save an SVG screenshot and a plain-text frame of the screen shown, once it is laid out (`_save_shown`); say
        where (or why not) on the note line, in the footer's place: a toast covered the maps for seconds.

        The panels (percentile strip, inspector, findings) follow the maps at most every PLOT_EVERY_S: in a fast
        replay they may be columns behind. They are brought to the maps' column first, so the saved frame agrees.
        """
        if self.saving:
            return  # the frame of the `s` before is being saved: this one would be the same
        if self.on_maps:
            self.refresh_view(force=True)
        self.saving = True  # the app repaints nothing until the frame is saved (`tick`): the text is the picture's
        self.call_after_refresh(self._save_shown)

    def _save_shown(self, hops: int = 0) -> None:
        """Save the screen shown once it is laid out: `s` pressed as the first columns came saved the maps at the
        height of the "waiting for data" screen (3 rows of 6, the screen's lower half blank). Repaints asked for
        before `s` (a resize's) run first, in the same turn, and may show the data that changes the layout: the save
        then waits for the next layout (SAVE_HOPS at most)."""
        if hops < SAVE_HOPS and not self._laid_out():
            self.call_after_refresh(self._save_shown, hops + 1)
            return
        self.saving = False
        if not self.on_maps:
            plain = getattr(self.screen, "plain_lines", None)
            lines = plain() if callable(plain) else []
        else:
            lines = [str(self.maps.query_one(StatusBar).render()).rstrip(), ""]
            maps = self.maps
            for widget in [*maps.query(HeatMap), maps.query_one(PercentileStrip), maps.query_one(FindingsPanel),
                           *maps.query(StragglersPanel), maps.query_one(Inspector)]:
                if widget.display:
                    lines += [*widget.plain_lines(), ""]
        try:
            svg, txt = save_frame(self, lines)
        except NotSaved as err:
            self.notify(str(err), title="not saved", severity="error")
        else:
            self.saved += [svg, txt]
            self.notify(saved_words((svg, txt)), title="saved")

    def _laid_out(self) -> bool:
        """Whether the maps shown are as tall as what they show needs (True on the other screens)."""
        return not self.on_maps or all(m.size.height == m.lines_wanted for m in self.maps.query(HeatMap) if m.display)

    def on_heat_map_selected(self, message: HeatMap.Selected) -> None:
        """A click picked a column and a bucket."""
        n = self._n()
        self.view.end = self.view.stop(n)
        self.view.cursor = message.column
        self.view.selected_slot = message.slot
        self.view._settle(n)
        self._changed()



def not_comparable(a: StreamId, b: StreamId) -> str | None:
    """Why the rows of two streams are not the same buckets (None when they are): the difference map subtracts rows."""
    if a.unit != b.unit:
        return f"A is in {a.unit} and B in {b.unit}: their rows are not the same buckets"
    return None
