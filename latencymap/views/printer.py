"""The plain view's loop: a frame per interval as the flow arrives (PyLatencyMap style), or only the last one."""

from __future__ import annotations

import codecs
import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from latencymap.core.accumulator import Accumulator, HistoryLimit, accumulate
from latencymap.core.model import Flow, Interval, Notice
from latencymap.flow.batches import ready_batches
from latencymap.views.options import ViewOptions, color_enabled
from latencymap.views.plain import CLEAR, PlainRenderer
from latencymap.views.plain_bulk import MAX_FRAMES, BulkFrames


def run_plain(flow: Flow, opts: ViewOptions, *, once: bool, screen_delay: float, history: HistoryLimit | int,
              out: TextIO) -> int:
    """A frame per interval (like PyLatencyMap), or only the last one with `once`."""
    opts.color = opts.color and color_enabled()
    acc = Accumulator(cap=history, on_notice=_say)
    renderer = PlainRenderer(opts)
    render = renderer.render
    clear = CLEAR if out.isatty() else ""
    try:
        if once:
            accumulate(flow, acc, on_notice=_say)
        elif screen_delay <= 0:
            _frames_in_bulk(flow, acc, renderer, out, clear)
        else:
            for item in flow:
                if isinstance(item, Notice):
                    _say(item)
                    acc.add([item])
                    continue
                acc.add([item])
                out.write(clear + render(acc))
                out.flush()
                time.sleep(screen_delay)
    finally:
        if once or not acc.intervals_seen:
            out.write(render(acc))
        elif opts.color and clear:
            out.write("\x1b[0m")
        out.flush()
    return 0


def _frames_in_bulk(flow: Flow, acc: Accumulator, renderer: PlainRenderer, out: TextIO, clear: str) -> None:
    """Every frame, as fast as the input comes: what a reader thread has read when a frame is due is appended at
    once and drawn as many frames per NumPy pass (`BulkFrames`), the same bytes as frame after frame."""
    write, errors = _byte_writer(out)
    bulk = BulkFrames(renderer, clear, errors)
    for batch in ready_batches(flow):
        at, size = 0, len(batch)
        while at < size:
            item = batch[at]
            if isinstance(item, Notice):
                _say(item)
                acc.add([item])
                at += 1
                continue
            run: list[Interval] = []
            while at < size and len(run) < MAX_FRAMES and isinstance(batch[at], Interval):
                run.append(batch[at])  # type: ignore[arg-type]
                at += 1
            done = 0
            while done < len(run):
                count = bulk.ready(acc, run[done:])
                if count:
                    write(bulk.draw(acc, run[done: done + count]))
                    done += count
                else:
                    acc.add([run[done]])
                    write((clear + renderer.render(acc)).encode("utf-8", errors))
                    done += 1
        out.flush()


def _byte_writer(out: TextIO) -> tuple[Callable[[bytes], object], str]:
    """Where frames' UTF-8 bytes go (the text stream's buffer when it writes UTF-8 as is), and the encoding errors
    the text stream would use."""
    errors = getattr(out, "errors", None) or "strict"
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None) or ""
    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if buffer is not None and utf8 and os.linesep == "\n":
        out.flush()

        def write(data: bytes) -> object:
            return buffer.write(data)

        return write, errors
    return (lambda data: out.write(data.decode("utf-8", errors))), errors


def _say(notice: Notice) -> None:
    print(f"latencymap: {notice.message}", file=sys.stderr)
