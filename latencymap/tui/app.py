"""The Textual app: status, frequency and intensity maps, percentile strip, inspector; `run_tui`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from latencymap.core.accumulator import DEFAULT_HISTORY, Accumulator, HistoryLimit, StreamHistory
from latencymap.core.model import Flow
from latencymap.core.sanitize import clean_text
from latencymap.flow.stdin import take_terminal
from latencymap.tui.findings import FindingsPanel
from latencymap.tui.heatmap import HeatMap, MapSpec
from latencymap.tui.ingest import Ingest
from latencymap.tui.inspector import Inspector, inspect_columns
from latencymap.tui.keys import BINDINGS, HelpScreen
from latencymap.tui.palette import detect_mode
from latencymap.tui.percentiles import PercentileStrip
from latencymap.tui.profile_panel import PROFILE_BINDINGS, ProfileController
from latencymap.tui.replay_keys import REPLAY_BINDINGS, ReplayController
from latencymap.tui.save import save_frame
from latencymap.tui.state import ViewState
from latencymap.tui.status import StatusBar, status_text
from latencymap.tui.window import Window, bucket_range
from latencymap.views.options import ViewOptions

if TYPE_CHECKING:
    from latencymap.flow.replay import BurstScan, ReplayClock
    from latencymap.profiling.session import ProfileSession

TICK_S = 1 / 15
PLOT_EVERY_S = 0.25


class LatencyMapApp(App[int]):
    """Live dual heat maps of a flow of intervals, with an inspector for the cursor column."""

    TITLE = "latencymap"
    BINDINGS: ClassVar[list[BindingType]] = [*BINDINGS, *PROFILE_BINDINGS, *REPLAY_BINDINGS]
    CSS = """
    #body { height: 1fr; }
    #maps { width: 1fr; height: 1fr; overflow: hidden; }
    """

    def __init__(self, flow: Flow, opts: ViewOptions | None = None, *, history: HistoryLimit | int = DEFAULT_HISTORY,
                 color_mode: str | None = None, tick: float = TICK_S, profile: ProfileSession | None = None,
                 replay: ReplayClock | None = None, bursts: BurstScan | None = None) -> None:
        super().__init__()
        self.opts = opts or ViewOptions()
        self.acc = Accumulator(cap=history,
                               on_notice=lambda n: self.notify(clean_text(n.message, 300), title="history"))
        self.ingest = Ingest(flow)
        self.view = ViewState()
        self.ended = False
        self.saved: list[Path] = []
        self._color_mode = color_mode
        self._tick_s = tick
        self._dirty = True
        self._plots_at = 0.0
        self.profiler = ProfileController(self, profile) if profile is not None else None
        self.replay = ReplayController(self, replay, bursts) if replay is not None else None

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="body"):
            with Vertical(id="maps"):
                yield HeatMap("frequency", id="frequency")
                yield HeatMap("intensity", id="intensity")
                yield PercentileStrip()
                yield FindingsPanel()
                if self.profiler is not None:
                    yield self.profiler.panel
            yield Inspector()
        yield Footer()

    def on_mount(self) -> None:
        mode = self._color_mode or detect_mode(self.console.color_system, self.no_color, self.opts.color)
        for heatmap in self.query(HeatMap):
            heatmap.mode = mode
        self.ingest.start()
        self.set_interval(self._tick_s, self.tick)
        self.refresh_view(force=True)

    @property
    def state_name(self) -> str:
        """live, paused, ended (or waiting before the first column)."""
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
        items = self.ingest.drain()
        if items:
            self.acc.add(items)
            self._dirty = True
        if self.profiler is not None and self.profiler.poll():
            self._dirty = True
        if self.ingest.finished and not self.ended:
            self.ended = self._dirty = True
            if self.ingest.error is not None:
                self.exit(return_code=1)
                return
        if self._dirty:
            self._dirty = False
            self.refresh_view(status_only=self.view.paused)

    def map_cells(self) -> int:
        """How many cells wide the heat maps are."""
        shown = [m for m in self.query(HeatMap) if m.display] or list(self.query(HeatMap))
        return shown[0].cells

    def refresh_view(self, *, force: bool = False, status_only: bool = False) -> None:
        """Push the view state into every widget."""
        hist = self.current()
        n = hist.n if hist else 0
        stop = self.view.stop(n)
        self.query_one(StatusBar).update(status_text(
            hist, stop, state=self.state_name, skipped=self.acc.skipped, stream_index=self.view.stream % max(1, len(
                self.acc.streams)), streams=len(self.acc.streams), ingest_rate=self.ingest.rate))
        if status_only:
            return
        for heatmap in self.query(HeatMap):
            heatmap.display = self.view.show in ("both", heatmap.kind)
        strip = self.query_one(PercentileStrip)
        strip.display = self.view.percentiles
        if hist is None:
            return
        lo, hi = bucket_range(hist, self.opts.min_bucket, self.opts.max_bucket, self.view.shift)
        cursor = self.view.cursor_at(n)
        for heatmap in self.query(HeatMap):
            pinned = self.opts.frequency_maxval if heatmap.kind == "frequency" else self.opts.intensity_maxval
            heatmap.show(hist, MapSpec(lo, hi, stop, self.view.zoom, pinned if pinned > 0 else None, self.view.log,
                                       cursor, self.view.selected_row))
        now = time.monotonic()
        if stop == 0 or not (force or now - self._plots_at >= PLOT_EVERY_S):
            if stop:
                self._dirty = True  # plots are due on a later tick
            return
        self._plots_at = now
        win = Window(stop, self.map_cells(), self.view.zoom)
        first, last = win.columns_of(win.cell_of(cursor))
        self.query_one(Inspector).show(inspect_columns(hist, first, min(last, stop), lo, hi),
                                       self.view.selected_row, hist.stream.unit)
        if self.view.percentiles:
            strip.show(hist, max(0, win.base), stop)
        self.query_one(FindingsPanel).show(hist, max(0, win.base), stop)
        if self.profiler is not None:
            self.profiler.show()

    def _n(self) -> int:
        hist = self.current()
        return hist.n if hist else 0

    def _changed(self) -> None:
        self.refresh_view(force=True)

    def action_pause(self) -> None:
        """Freeze or unfreeze the display; ingest goes on (a replay pauses too)."""
        self.view.toggle_pause(self._n())
        if self.replay is not None:
            self.replay.toggle_pause()
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
        self.view.shift_buckets(delta)
        self._changed()

    def action_log(self) -> None:
        self.view.log = not self.view.log
        self._changed()

    def action_show(self, kind: str) -> None:
        self.view.toggle_show(kind)
        self._changed()

    def action_percentiles(self) -> None:
        self.view.percentiles = not self.view.percentiles
        self._changed()

    def action_stream(self, step: int) -> None:
        if self.acc.streams:
            self.view.stream = (self.view.stream + step) % len(self.acc.streams)
            self.view.cursor = self.view.end = None
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

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_save(self) -> None:
        """Save an SVG screenshot and a plain-text frame; say where."""
        header = str(self.query_one(StatusBar).render())
        maps = [m for m in self.query(HeatMap) if m.display]
        svg, txt = save_frame(self, maps, header)
        self.saved += [svg, txt]
        self.notify(f"saved {svg.name} and {txt.name}", title="latencymap")

    def on_heat_map_selected(self, message: HeatMap.Selected) -> None:
        """A click picked a column and a bucket."""
        n = self._n()
        self.view.end = self.view.stop(n)
        self.view.cursor = message.column
        self.view.selected_row = message.row
        self.view._settle(self.view.visible_n(n))
        self._changed()


def run_tui(flow: Flow, opts: ViewOptions, *, history: HistoryLimit | int = DEFAULT_HISTORY,
            profile: ProfileSession | None = None, replay: ReplayClock | None = None,
            bursts: BurstScan | None = None) -> int:
    """Show `flow` in the TUI until `q`; falls back to plain frames when there is no terminal."""
    restore = take_terminal()
    if restore is None:
        from latencymap.views.printer import run_plain

        return run_plain(flow, opts, once=False, screen_delay=0.1, history=history, out=sys.stdout)
    if profile is not None:
        profile.echo = False  # the panel and notices show its messages; stderr is the TUI's
    app = LatencyMapApp(flow, opts, history=history, profile=profile, replay=replay, bursts=bursts)
    try:
        app.run()
    finally:
        restore()
    if app.ingest.error is not None:
        raise app.ingest.error
    return app.return_code or 0
