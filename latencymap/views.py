"""Pick and run a view for a flow of intervals: the TUI on a terminal, plain ANSI frames otherwise."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from latencymap.accumulator import Accumulator
from latencymap.model import Notice
from latencymap.pipeline import Flow
from latencymap.plain import CLEAR, PlainOptions, PlainRenderer, color_enabled

if TYPE_CHECKING:
    from latencymap.profiling.session import ProfileSession
    from latencymap.replay import BurstScan, ReplayClock

BATCH = 4096


def run_view(flow: Flow, opts: PlainOptions, *, plain: bool, once: bool, screen_delay: float,
             history: int, out: TextIO | None = None, profile: ProfileSession | None = None,
             replay: ReplayClock | None = None, bursts: BurstScan | None = None) -> int:
    """Show `flow` (with the profile panel when `profile` is given, replay keys with `replay`); the exit code."""
    out = out or sys.stdout
    if not plain and out.isatty():
        try:
            from latencymap.tui.app import run_tui
        except ImportError:
            pass
        else:
            return run_tui(flow, opts, history=history, profile=profile, replay=replay, bursts=bursts)
    return run_plain(flow, opts, once=once, screen_delay=screen_delay, history=history, out=out)


def run_plain(flow: Flow, opts: PlainOptions, *, once: bool, screen_delay: float, history: int,
              out: TextIO) -> int:
    """A frame per interval (like PyLatencyMap), or only the last one with `once`."""
    opts.color = opts.color and color_enabled()
    acc = Accumulator(cap=history)
    render = PlainRenderer(opts).render
    clear = CLEAR if out.isatty() else ""
    try:
        if once:
            batch: list = []
            for item in flow:
                if isinstance(item, Notice):
                    print(f"latencymap: {item.message}", file=sys.stderr)
                batch.append(item)
                if len(batch) >= BATCH:
                    acc.add(batch)
                    batch.clear()
            acc.add(batch)
        else:
            for item in flow:
                if isinstance(item, Notice):
                    print(f"latencymap: {item.message}", file=sys.stderr)
                    acc.add([item])
                    continue
                acc.add([item])
                out.write(clear + render(acc))
                out.flush()
                if screen_delay > 0:
                    time.sleep(screen_delay)
    finally:
        if once or not acc.intervals_seen:
            out.write(render(acc))
        elif opts.color and clear:
            out.write("\x1b[0m")
        out.flush()
    return 0
