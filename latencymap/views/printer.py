"""The plain view's loop: a frame per interval as the flow arrives (PyLatencyMap style), or only the last one."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from latencymap.core.accumulator import Accumulator, HistoryLimit, accumulate
from latencymap.core.model import Flow, Notice
from latencymap.views.options import ViewOptions, color_enabled
from latencymap.views.plain import CLEAR, PlainRenderer


def run_plain(flow: Flow, opts: ViewOptions, *, once: bool, screen_delay: float, history: HistoryLimit | int,
              out: TextIO) -> int:
    """A frame per interval (like PyLatencyMap), or only the last one with `once`."""
    opts.color = opts.color and color_enabled()
    acc = Accumulator(cap=history, on_notice=_say)
    render = PlainRenderer(opts).render
    clear = CLEAR if out.isatty() else ""
    try:
        if once:
            accumulate(flow, acc, on_notice=_say)
        else:
            for item in flow:
                if isinstance(item, Notice):
                    _say(item)
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


def _say(notice: Notice) -> None:
    print(f"latencymap: {notice.message}", file=sys.stderr)
