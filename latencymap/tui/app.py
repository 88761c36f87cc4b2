"""The Textual app: status, frequency and intensity maps, percentile strip, findings, inspector on one time axis;
an overview of every stream when there are several; `run_tui`."""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.driver import Driver

from latencymap.core import stopping
from latencymap.core.accumulator import DEFAULT_HISTORY, Accumulator, HistoryLimit, StreamHistory
from latencymap.core.at_exit import forget_at_exit, say_at_exit
from latencymap.core.model import Flow, Interval, Notice, StreamId
from latencymap.core.sanitize import clean_text
from latencymap.core.units import REAL_EPOCH
from latencymap.flow.stdin import take_terminal
from latencymap.outputs.report import Causes, analysis_causes, stream_time_words
from latencymap.tui.actions import MapActions
from latencymap.tui.axis import learn_clock, view_digits
from latencymap.tui.diffmap import DiffScreen
from latencymap.tui.driver import guarded_driver, terminal_hung_up
from latencymap.tui.findings import MAX_LINES, FindingsPanel, epoch_findings, window_findings
from latencymap.tui.footer import KeyFooter
from latencymap.tui.heatmap import CHROME_LINES, HeatMap, MapSpec, map_cells
from latencymap.tui.ingest import Ingest
from latencymap.tui.inspector import Inspector, inspect_columns
from latencymap.tui.keys import BINDINGS
from latencymap.tui.layout import CHROME_H, INSPECTOR_W, STRIP_MIN_ROWS, TALL, inspector_width, rows_per_map
from latencymap.tui.note_line import NoteLine, NoteLines
from latencymap.tui.notes import KEY, NotesScreen, NoteToasts, said_after
from latencymap.tui.overview import OverviewScreen
from latencymap.tui.palette import detect_mode
from latencymap.tui.peer_findings import PeerFindings
from latencymap.tui.percentiles import ROWS as STRIP_ROWS
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.profile_panel import PROFILE_BINDINGS, ProfileController
from latencymap.tui.replay_keys import REPLAY_BINDINGS, ReplayController
from latencymap.tui.state import ViewState
from latencymap.tui.status import StatusBar, status_lines
from latencymap.tui.stragglers import Analysis, StragglersPanel, StragglerStream
from latencymap.tui.window import Window
from latencymap.views.frame import MapFits, RowRange, edge_folds, row_range, window_sums
from latencymap.views.options import ViewOptions

if TYPE_CHECKING:
    from latencymap.flow.replay import BurstScan, ReplayClock
    from latencymap.profiling.session import ProfileSession

TICK_S = 1 / 15
PLOT_EVERY_S = 0.25
#: A live source's own analysis (Spark stragglers) is asked for at most this often, and when the input ends.
ANALYSE_EVERY_S = 5.0
#: How long the app waits, at most, for a source asked to end: it takes in what it acknowledged for DRAIN_S at most,
#: then closes its server (a loaded machine takes a second or two more: what is cut short then is lost).
STOP_WAIT_S = stopping.DRAIN_S + 5.0
#: What a terminal gone ends the app as: a hang-up (SIGTERM where there is none: Windows).
HANG_UP = int(getattr(signal, "SIGHUP", signal.SIGTERM))


class LatencyMapApp(MapActions):
    """Live dual heat maps of a flow of intervals, with an inspector for the cursor column."""

    TITLE = "latencymap"
    BINDINGS: ClassVar[list[BindingType]] = [*BINDINGS, *PROFILE_BINDINGS, *REPLAY_BINDINGS]
    CSS = """
    #body { height: 1fr; }
    #maps { width: 1fr; height: 1fr; overflow: hidden; }
    """

    def __init__(self, flow: Flow, opts: ViewOptions | None = None, *, history: HistoryLimit | int = DEFAULT_HISTORY,
                 color_mode: str | None = None, tick: float = TICK_S, profile: ProfileSession | None = None,
                 replay: ReplayClock | None = None, bursts: BurstScan | None = None,
                 analysis: Analysis | None = None, straggler_stream: StragglerStream | None = None,
                 recording: bool = False) -> None:
        super().__init__()
        self.opts = opts or ViewOptions()
        # what the accumulator says (the history limit drops columns) is kept with what reading said (`w` lists it)
        self.acc = Accumulator(cap=history, on_notice=lambda n: self.notify(
            clean_text(n.message.removeprefix("history: "), 300), title=f"history ({KEY})"))
        self.ingest = Ingest(flow)
        #: What reading says, as it comes, on the note line in the footer's place (the first few, then a count; `w`
        #: lists every one).
        self.note_lines = NoteLines()
        self.toasts = NoteToasts(self.note_lines.say)
        self.view = ViewState()
        self.ended = False
        self.saved: list[Path] = []
        self._color_mode = color_mode
        self._tick_s = tick
        self._dirty = True
        self._plots_at = 0.0
        self._listed_at = 0.0
        self._postponed = False
        self.fits: dict[StreamId, MapFits] = {}
        self.color_mode = color_mode or "truecolor"
        self.overview_offered = False
        self.interrupted = False  # set by run_tui's SIGINT handler; the next tick exits
        #: The signal (SIGTERM, SIGHUP) that ends the app at its next tick, set by run_tui's handler: one that is not
        #: only noted (`stopping`; a noted one keeps the app up while the source ends: `stopping_since`), or a
        #: hang-up, noted or not (the source's end is then waited for once the app is gone: `wait_after`).
        self.stopped_by: int | None = None
        self.wait_after = False
        self.output_failed = False  # the terminal is gone: its output failed, or it hung up (`terminal_gone`)
        #: Since when the app waits for a source asked to end (a signal only noted, or `q` with a recording).
        self.stopping_since: float | None = None
        self.recording = recording  # `q` first lets a source that ends itself take in what it acknowledged
        #: What the source said as it ended (requests it left unread), after the app was asked to stop: said on
        #: stderr once the app is gone, with what reading said before (`said_after`), though past the messages kept.
        self.last_words: list[Notice] = []
        self.profiler = ProfileController(self, profile) if profile is not None else None
        self.replay = ReplayController(self, replay, bursts) if replay is not None else None
        self.analysis = analysis
        #: The stream that counted a straggler's task (the source's `straggler_stream`): the findings of the stream
        #: shown name what made its stragglers slow (`causes`) where the analysis says.
        self.straggler_stream = straggler_stream
        self.causes: Causes = {}
        self._analysed_at = 0.0
        #: What the analysis' last failure said (said once until it fails otherwise; None: it did not fail).
        self._analysis_failed: str | None = None
        #: What the peers comparison says of the stream shown (a rank, disk or instance), as the report says it.
        self.peer_findings = PeerFindings()

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="body"):
            with Vertical(id="maps"):
                yield HeatMap("frequency", id="frequency")
                yield HeatMap("intensity", id="intensity")
                yield PercentileStrip()
                yield FindingsPanel()
                if self.analysis is not None:
                    panel = StragglersPanel()
                    panel.display = self._analysis_comes()
                    yield panel
                if self.profiler is not None:
                    yield self.profiler.panel
            yield Inspector()
        yield KeyFooter()
        yield NoteLine()

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this platform, its output guarded: a terminal gone ends the app (`terminal_gone`)."""
        return guarded_driver(super().get_driver_class(), self.terminal_gone)

    def terminal_gone(self) -> None:
        """The terminal's output failed (in Textual's output thread: attribute writes only), or it hung up while the app
        wrote nothing (`tick`): the terminal is gone, and a SIGHUP may never come (blocked, or not passed on by the
        session leader). The app ends at its next tick as a hang-up ends it (129); a source asked to end, by this
        hang-up or before it (a signal only noted, `q` with a recording), is waited for once the app is gone. After a
        signal that already ends the app, nothing changes."""
        if self.stopped_by is not None:
            return
        self.output_failed = True
        self.wait_after = stopping.noted(HANG_UP) or stopping.to_stop()
        self.stopped_by = HANG_UP

    def on_mount(self) -> None:
        mode = self._color_mode or detect_mode(self.console.color_system, self.no_color, self.opts.color)
        self.color_mode = mode
        for heatmap in self.maps.query(HeatMap):
            heatmap.mode = mode
        self.ingest.start()
        self.set_interval(self._tick_s, self.tick)
        self.refresh_view(force=True)
        # What exists now (modules, widgets) lives as long as the app: the collector's full passes skip it, which
        # keeps them short (about 40 ms down to 5 with a thousand streams: a pause keys would wait for).
        gc.freeze()

    def on_unmount(self) -> None:
        gc.unfreeze()

    @property
    def state_name(self) -> str:
        """live, paused, ended (or waiting before the first column); stopping while a source asked to end ends."""
        if self.stopping_since is not None:
            return "stopping"
        if self.view.paused:
            return "paused"
        if self.ended:
            return "ended"
        if self.replay is not None and self.acc.intervals_seen:
            return self.replay.clock.describe()
        return "live" if self.acc.intervals_seen else "waiting"

    def current(self) -> StreamHistory | None:
        """The stream shown (tab cycles)."""
        if not self.acc.streams:
            return None
        histories = list(self.acc.streams.values())
        return histories[self.view.stream % len(histories)]

    def tick(self) -> None:
        """Drain the ingest queue in bulk and repaint what changed."""
        if self.interrupted:
            self.action_interrupt()
            return
        if self.stopped_by is None and terminal_hung_up(getattr(self, "_driver", None)):
            self.terminal_gone()
        if self.stopped_by is not None:
            self.exit()
            return
        items = self.ingest.drain()
        busy = 0.0
        notices: list[Notice] = []
        if items:
            started = time.perf_counter()
            self.acc.add(items)
            busy = time.perf_counter() - started
            self._dirty = True
            for item in items:
                if isinstance(item, Interval):
                    if item.end < REAL_EPOCH and item.date:
                        learn_clock(self.acc.history(item.stream), item.end, item.date)
                elif isinstance(item, Notice):
                    notices.append(item)
            if self.stopping_since is not None:
                self.last_words += notices
        self.toasts.said(notices)
        shown = self.screen_stack  # empty while the app closes (a tick may come then)
        if shown and isinstance(shown[-1], NotesScreen):
            shown[-1].update()  # nothing to do unless something was said
            self.note_lines.clear()  # listed there
        if shown:
            self.note_lines.show_on(shown[-1])
        if self.replay is not None and (items or self.ingest.finished):
            self.replay.arrived(self.ingest.finished)
        if self.profiler is not None and self.profiler.poll():
            self._dirty = True
        if self.ingest.finished and not self.ended:
            self.ended = self._dirty = True
            if self.ingest.error is not None:
                self.exit(return_code=1)
                return
            self._analyse()
        elif self.analysis is not None and items and time.monotonic() - self._analysed_at >= ANALYSE_EVERY_S:
            self._analyse()
        if self._stopped():
            return
        if len(self.acc.streams) > 1 and not self.overview_offered:
            self.overview_offered = True  # several streams: start on the overview (once; Esc brings it back)
            if self.screen.id != "overview":
                self.show_overview()
        if self._dirty and busy > self._tick_s / 2 and not self._postponed:
            self._postponed = True  # a long append (a burst of many streams): keys pressed meanwhile go first
            return
        self._postponed = False
        if self._dirty and not self.saving:  # a frame `s` saves once it is laid out is kept as it is until then
            self._dirty = False
            try:
                self.refresh_view(status_only=self.view.paused)
            except NoMatches:  # the widgets are gone: the app is closing
                return

    def _stopped(self) -> bool:
        """Whether the app exits: a source asked to end has ended (its recording finished), or STOP_WAIT_S passed.
        A first signal only noted asks it (a SIGTERM, SIGHUP: the exit code is the signal's)."""
        since = self.stopping_since
        if since is None:
            if stopping.asked() is None:
                return False
            since = self._stopping()
        if not (self.ingest.finished or time.monotonic() - since >= STOP_WAIT_S):
            return False
        self.exit()
        return True

    def _stopping(self) -> float:
        """Wait for the source asked to end, saying so; since when."""
        since = self._stop_asked()
        self.notify("taking in what was acknowledged… (q or Ctrl-C: quit now)", title="stopping", timeout=STOP_WAIT_S)
        self._dirty = True
        return since

    def _stop_asked(self) -> float:
        """Since when a source was asked to end (now, the first time): what it says from then on is said once the
        app is gone (`said_after`), whatever the number of messages before."""
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        return self.stopping_since

    def wait_for_source(self) -> None:
        """Once the app is gone (a hang-up closed it: the terminal may be gone), what it does while STOPPING: wait for
        the source asked to end, for what is left of STOP_WAIT_S, keeping what it says."""
        self.ingest.wait(self._stop_asked() + STOP_WAIT_S - time.monotonic())
        while items := self.ingest.drain():
            notices = [item for item in items if isinstance(item, Notice)]
            self.acc.add(notices)
            self.last_words += notices

    def said_after(self) -> list[Notice]:
        """What reading said, to be said on stderr once the app is gone (`notes.said_after`)."""
        return said_after(self.acc, self.last_words)

    async def action_quit(self) -> None:
        """q: quit. With a recording, a source that ends itself (a live OTLP receiver) first takes in what it
        acknowledged, so that the recording holds it (it takes seconds only when the source was behind; a second `q`
        quits at once)."""
        if self.recording and self.stopping_since is None and stopping.source_ends_itself() \
                and not self.ingest.finished:
            stopping.stop_sources()
            self._stopping()
            return
        self.exit()

    def action_end(self) -> None:
        """End: the newest column, empty or not (the help's promise), following live data again."""
        self.view.end_key(newest=True)
        self.refresh_view(force=True)

    def _analysis_comes(self) -> bool:
        """Whether the analysis will come: the panel then waits for it from the start. One that answers None before
        anything is read (inputs that may be read through a source, or not) shows its panel with its first answer."""
        try:
            return self.analysis is not None and self.analysis() is not None
        except Exception:  # its failure is said when it is asked for again, with data
            return True

    def _analyse(self) -> None:
        """The source's own analysis (Spark stragglers) into its panel, shown from its first answer; a failure is said
        on the note line and kept with what reading said (`w`), once while it fails the same way (it is asked again
        every ANALYSE_EVERY_S)."""
        if self.analysis is None:
            return
        self._analysed_at = time.monotonic()
        try:
            found = self.analysis()
        except Exception as err:  # the maps go on without it
            said = f"analysis failed: {err}"
            if said != self._analysis_failed:
                self._analysis_failed = said
                self.say_kept(said, title="stragglers")
            return
        self._analysis_failed = None
        if found is None:
            return
        panel = self.maps.query_one(StragglersPanel)
        panel.display = True
        panel.show(found)
        self.causes = {} if self.straggler_stream is None else analysis_causes(found, self.straggler_stream)

    def map_cells(self) -> int:
        """How many cells wide the heat maps are (from the screen's width: the layout may not have caught up)."""
        inspector = inspector_width(self.size.width, self.view.inspector)
        return map_cells(self.size.width - inspector)

    def body_height(self) -> int:
        """Lines between the status bar and the footer."""
        return self.size.height - CHROME_H

    def max_rows(self, strip: bool | None = None) -> int | None:
        """Rows each shown map may have so that the maps and the panels under them fit the screen (`strip`: with the
        percentile strip or not; default: as shown)."""
        height = self.body_height()
        if height <= 0:
            return None
        if strip is None:
            strip = self.maps.query_one(PercentileStrip).display
        maps = sum(1 for m in self.maps.query(HeatMap) if self.view.show in ("both", m.kind)) or 1
        other = self._panels_height() + 1 + (MAX_LINES if height >= TALL else 1)  # the findings' lines kept
        other += STRIP_ROWS + 2 if strip else 0
        marked = any(m.marked for m in self.maps.query(HeatMap) if m.display)  # a reset/gap marks line
        return rows_per_map(height, maps, other, marked)

    def _panels_height(self) -> int:
        """Lines of the stragglers and profile panels."""
        lines = sum(panel.height_needed for panel in self.maps.query(StragglersPanel) if panel.display)
        return lines + (self.profiler.panel.outer_size.height if self.profiler is not None else 0)

    def _lay_out(self) -> None:
        """The inspector's width and the percentile strip for the screen's size (or as the user toggled them)."""
        inspector = self.maps.query_one(Inspector)
        width = inspector_width(self.size.width, self.view.inspector)
        inspector.display = width > 0
        if width:
            inspector.styles.width = width
            inspector.compact = width < INSPECTOR_W
        strip = self.maps.query_one(PercentileStrip)
        wanted = self.view.percentiles
        strip.display = wanted if wanted is not None else (self.max_rows(strip=True) or 0) >= STRIP_MIN_ROWS

    def _findings_room(self) -> int:
        """Lines left under the maps, the strip and the other panels for the findings."""
        used = sum(m.spec.rows + CHROME_LINES + m.marked for m in self.maps.query(HeatMap) if m.display and m.spec)
        used += STRIP_ROWS + 2 if self.maps.query_one(PercentileStrip).display else 0
        return self.body_height() - used - self._panels_height() - 1

    def on_resize(self) -> None:
        """Lay the screen out again for its new size (once the app has taken it: this runs first)."""
        self.call_after_refresh(self.refresh_view, force=True)

    def rows_for(self, hist: StreamHistory, win: Window, kind: str = "frequency") -> RowRange:
        """The rows the `kind` map shows: pinned by `[`/`]`, by the options, or fitted to the window's data.

        Fitted rows are the same for both maps while the data fits the screen; when it needs more rows,
        the frequency map keeps where the events are and the intensity map where the time is.
        """
        limit = self.max_rows()
        if self.view.rows is not None:
            lo, hi = self.view.rows
            rows = RowRange(lo, hi, edge_folds(window_sums(hist, win.first, win.stop)[0], lo, hi))
        else:
            fit = self.fits.setdefault(hist.stream, MapFits())
            rows = row_range(hist, self.opts.min_bucket, self.opts.max_bucket, first=win.first, stop=win.stop, fit=fit,
                             max_rows=limit, weigh="events" if kind == "frequency" else "time")
        if limit is None or rows.hi - rows.lo < limit:
            return rows
        hi = rows.lo + limit - 1  # pinned rows, or the rows before any event, taller than the screen: the top folds
        return RowRange(rows.lo, hi, None if rows.folds is None else edge_folds(
            window_sums(hist, win.first, win.stop)[0], rows.lo, hi))

    def refresh_view(self, *, force: bool = False, status_only: bool = False) -> None:
        """Push the view state into every widget (the overview's, when it is on screen)."""
        screen = self.screen
        if isinstance(screen, OverviewScreen | DiffScreen):
            now = time.monotonic()
            painted = getattr(screen, "painted", True)
            if force or (not status_only and painted and now - self._listed_at >= PLOT_EVERY_S):
                self._listed_at = now
                screen.update()
            elif not status_only:
                self._dirty = True  # new data is listed at the plots' pace (keys repaint at once)
            else:
                screen.show_notes()  # paused: the map stays, the count of notes follows (as the map screen's header)
            return
        hist = self.current()
        n = self.view.shown_n(hist) if hist else 0
        self.view.fit_window(n, self.map_cells())  # after a zoom or a resize: the cursor in view, the window full
        stop = self.view.stop(n)
        self.maps.query_one(StatusBar).update(status_lines(
            hist, n, state=self.state_name, skipped=self.acc.skipped, notes=self.acc.messages_said,
            stream_index=self.view.stream % max(1, len(self.acc.streams)), streams=len(self.acc.streams),
            ingest_rate=self.ingest.rate, source=self.acc.sources.get(hist.stream) if hist else None))
        if status_only:
            return
        for heatmap in self.maps.query(HeatMap):
            heatmap.display = self.view.show in ("both", heatmap.kind)
        self._lay_out()
        strip = self.maps.query_one(PercentileStrip)
        if hist is None:
            return
        win = Window(stop, self.map_cells(), self.view.zoom)
        if self.view.cursor is None and stop:
            filled = np.flatnonzero(hist.counts_in(slice(win.first, stop)).any(axis=1))
            self.view.auto_cursor = win.first + int(filled[-1]) if filled.size else None
        cursor = self.view.cursor_at(n)
        rows = self.rows_for(hist, win)
        source = self.acc.sources.get(hist.stream)
        words = None if source is None else stream_time_words(hist, source)
        for heatmap in self.maps.query(HeatMap):
            pinned = self.opts.frequency_maxval if heatmap.kind == "frequency" \
                else self.opts.intensity_scale(hist.stream)
            own = rows if heatmap.kind == "frequency" else self.rows_for(hist, win, heatmap.kind)
            heatmap.show(hist, MapSpec(own.lo, own.hi, stop, self.view.zoom, pinned if pinned > 0 else None,
                                       self.view.log, cursor, own.row_of(self.view.selected_slot), own.folds,
                                       words))
        if stop:  # with the maps, every time: the inspector shows the column the maps' cursor is on (it is one or
            # a few columns: cheap, and not repainted when they are the same)
            first, last = win.columns_of(win.cell_of(cursor))
            self.maps.query_one(Inspector).show(
                inspect_columns(hist, first, min(last, stop), rows.lo, rows.hi, rows.folds, view_digits(hist, win),
                                source),
                rows.row_of(self.view.selected_slot))
        now = time.monotonic()
        if stop == 0 or not (force or now - self._plots_at >= PLOT_EVERY_S):
            if stop:
                self._dirty = True  # the panels are due on a later tick
            return
        self._plots_at = now
        if strip.display:
            strip.show(hist, win, cursor, source)
        panel = self.maps.query_one(FindingsPanel)
        panel.show(window_findings(hist, win.first, stop, self.causes.get(hist.stream), source)
                   + epoch_findings(self.acc, hist, win.first, stop)
                   + self.peer_findings.items(self.acc, hist, win.first, stop), win, self.view.finding,
                   self._findings_room())
        self._dirty |= self.peer_findings.held  # kept from other columns: shown again once it is due
        if self.profiler is not None:
            self.profiler.show()


def run_tui(flow: Flow, opts: ViewOptions, *, history: HistoryLimit | int = DEFAULT_HISTORY,
            profile: ProfileSession | None = None, replay: ReplayClock | None = None,
            bursts: BurstScan | None = None, analysis: Analysis | None = None,
            straggler_stream: StragglerStream | None = None, recording: bool = False) -> int:
    """Show `flow` in the TUI until `q`; falls back to plain frames when there is no terminal.

    Signals raise nothing in the app's event loop (asyncio would swallow the exception, and the app hang): SIGINT
    ends it as Ctrl-C does; a first SIGTERM that `stopping` only notes (a source that ends itself runs) keeps it up
    until that source has taken in what it acknowledged and ended, else it ends the app at once, as a second one
    does. SIGHUP ends the app at once (the terminal may be gone), and the source's end is waited for as SIGTERM's
    is; so does a terminal gone without a SIGHUP (its output fails: `terminal_gone`). The command then ends with the
    signal's exit code (`stopping.ending`)."""
    stopping.reads_to_end()  # on a signal (the plain view: always), a source that ends itself ends the command
    restore = take_terminal()
    if restore is None:
        from latencymap.views.printer import run_plain

        return run_plain(flow, opts, once=False, screen_delay=0.1, history=history, out=sys.stdout)
    if profile is not None:
        profile.echo = False  # the panel and notices show its messages; stderr is the TUI's
    app = LatencyMapApp(flow, opts, history=history, profile=profile, replay=replay, bursts=bursts, analysis=analysis,
                        straggler_stream=straggler_stream, recording=recording)

    def on_sigint(signum: int, frame: object) -> None:
        app.interrupted = True  # asyncio would cancel the app, which then ends as if `q` was pressed

    def on_stop(signum: int, frame: object) -> None:
        hang_up = signum == getattr(signal, "SIGHUP", None)
        if hang_up:  # the terminal may be gone: the kernel sends SIGCONT with its SIGHUP, and Textual's handler of it
            # would set the screen up again on it, inside whatever the app was doing (its output thread dies of EIO,
            # a wake-up in its queue is lost, and the app hangs)
            signal.signal(signal.SIGCONT, _unheeded)
            if app.output_failed:  # the same hang-up, seen first as the terminal gone (`terminal_gone`)
                return
        noted = stopping.noted(signum)
        app.wait_after = noted and hang_up
        if hang_up or not noted:
            app.stopped_by = signum

    handlers = {signal.SIGINT: on_sigint, signal.SIGTERM: on_stop}
    if hasattr(signal, "SIGHUP"):  # not on Windows
        handlers[signal.SIGHUP] = on_stop
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()} if main_thread else {}
    say = say_at_exit(app.said_after)  # what reading said, once the app is gone, however the command ends
    try:
        app.run()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        restore()
        if app.stopped_by is not None:
            stopping.ending(app.stopped_by)  # the signal that ended the app ends the command: its exit code
    if app.wait_after:
        app.wait_for_source()
    forget_at_exit(say)
    say()  # before a failure is told: one that these messages said already is not said again
    if app.ingest.error is not None:
        raise app.ingest.error
    return app.return_code or 0


def _unheeded(signum: int, frame: object) -> None:
    """A signal let pass."""
