"""Pick the view for a flow of intervals: the TUI on a terminal, plain ANSI frames otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from latencymap.core import stopping
from latencymap.core.accumulator import HistoryLimit
from latencymap.core.model import Flow, StreamId
from latencymap.views.options import ViewOptions
from latencymap.views.printer import run_plain

if TYPE_CHECKING:
    from latencymap.flow.replay import BurstScan, ReplayClock
    from latencymap.profiling.session import ProfileSession

def run_view(flow: Flow, opts: ViewOptions, *, plain: bool, once: bool, screen_delay: float,
             history: HistoryLimit | int, out: TextIO | None = None, profile: ProfileSession | None = None,
             replay: ReplayClock | None = None, bursts: BurstScan | None = None,
             analysis: Callable[[], dict[str, Any] | None] | None = None,
             straggler_stream: Callable[[dict[str, Any]], StreamId | None] | None = None,
             recording: bool = False) -> int:
    """Show `flow` (with the profile panel when `profile` is given, replay keys with `replay`, a stragglers panel
    with the source's `analysis`, its findings naming the stragglers' causes on the stream `straggler_stream` says
    counted them; `recording`: the run is recorded, which the TUI's `q` lets a live receiver finish); the exit
    code."""
    out = out or sys.stdout
    if not plain and out.isatty():
        try:
            from latencymap.tui.app import run_tui
        except ImportError:
            pass
        else:
            return run_tui(flow, opts, history=history, profile=profile, replay=replay, bursts=bursts,
                           analysis=analysis, straggler_stream=straggler_stream, recording=recording)
    stopping.reads_to_end()  # a source that ends itself at SIGTERM ends the view, and the command
    return run_plain(flow, opts, once=once, screen_delay=screen_delay, history=history, out=out)
