"""The plain view's loop: a frame per interval as the flow arrives (PyLatencyMap style), or only the last one."""

from __future__ import annotations

import codecs
import contextlib
import os
import time
from typing import TextIO

from latencymap.core.accumulator import Accumulator, HistoryLimit, accumulate
from latencymap.core.at_exit import say_notice
from latencymap.core.model import Flow, Interval, Notice
from latencymap.views.options import ViewOptions, color_enabled
from latencymap.views.plain import CLEAR, PlainRenderer

#: How long an interrupted replay still writes the frames it has drawn (a stopped reader must not hold it).
INTERRUPTED_WRITES_S = 1.0


def run_plain(flow: Flow, opts: ViewOptions, *, once: bool, screen_delay: float, history: HistoryLimit | int,
              out: TextIO) -> int:
    """A frame per interval (like PyLatencyMap), or only the last one with `once`."""
    opts.color = opts.color and color_enabled()
    acc = Accumulator(cap=history, on_notice=say_notice)
    renderer = PlainRenderer(opts)
    render = renderer.render
    clear = CLEAR if out.isatty() else ""
    stale = False  # a record was skipped after the last frame: the input's end draws one more, with the final count
    failed = False  # the source or the view failed: with nothing drawn yet, its error comes alone, no "no data yet"
    waiting = bool(clear) and not once  # a terminal sees "no data yet" at once, as PyLatencyMap draws an empty frame
    if waiting:
        out.write(clear + render(acc))
        out.flush()
    try:
        if once:
            accumulate(flow, acc, on_notice=say_notice)
        elif screen_delay <= 0:
            stale = _frames_in_bulk(flow, acc, renderer, out, clear)
        else:
            for item in flow:
                if isinstance(item, Notice):
                    say_notice(item)
                    acc.add([item])
                    stale = stale or item.skipped > 0
                    continue
                acc.add([item])
                out.write(clear + render(acc))
                out.flush()
                stale = False
                time.sleep(screen_delay)
        if stale and acc.intervals_seen:
            out.write(clear + render(acc))
    except Exception:
        failed = True
        raise
    finally:
        if waiting and not acc.intervals_seen:  # the frame drawn first, replaced (by nothing when the source failed)
            out.write(CLEAR if failed else clear + render(acc))
        elif (once or not acc.intervals_seen) and not (failed and not acc.intervals_seen):
            out.write(render(acc))
        elif opts.color and clear:
            out.write("\x1b[0m")
        out.flush()
    return 0


def _frames_in_bulk(flow: Flow, acc: Accumulator, renderer: PlainRenderer, out: TextIO, clear: str) -> bool:
    """Every frame, as fast as the input comes: what a reader thread has read when a frame is due is appended at
    once and drawn as many frames per NumPy pass (`BulkFrames`), the same bytes as frame after frame; a writer
    thread gathers one batch into the output while the next is composed. Whether a record was skipped after the
    last frame."""
    stale = False
    from latencymap.flow.batches import ready_batches  # only this way of drawing needs them
    from latencymap.views.plain_bulk import MAX_FRAMES, BulkFrames
    from latencymap.views.scatter import PieceWriter

    errors = getattr(out, "errors", None) or "strict"
    fd = _scatter_fd(out)
    bulk = BulkFrames(renderer, clear, errors)
    writer = None
    if fd is not None:
        out.flush()
        writer = PieceWriter(fd, name=getattr(out, "name", ""))
    try:
        for batch in ready_batches(flow):
            at, size = 0, len(batch)
            while at < size:
                item = batch[at]
                if isinstance(item, Notice):
                    say_notice(item)
                    acc.add([item])
                    stale = stale or item.skipped > 0
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
                        pieces = bulk.draw(acc, run[done: done + count])
                        if writer is None:
                            out.write(pieces.tobytes().decode("utf-8", errors))
                        else:
                            writer.put(pieces)
                        done += count
                        stale = False
                    else:
                        acc.add([run[done]])
                        if writer is not None:
                            writer.drain()
                        out.write(clear + renderer.render(acc))
                        out.flush()
                        done += 1
                        stale = False
    except BaseException as err:
        if writer is not None:
            with contextlib.suppress(Exception):  # what stopped the frames is what the caller hears of
                writer.close(None if isinstance(err, Exception) else INTERRUPTED_WRITES_S)
        raise
    if writer is not None:
        writer.close()
    out.flush()
    return stale


def _scatter_fd(out: TextIO) -> int | None:
    """The file descriptor bulk frames can be written to directly: where the text stream writes UTF-8 as is."""
    try:
        utf8 = codecs.lookup(getattr(out, "encoding", None) or "").name == "utf-8"
        fd = out.fileno()
    except (LookupError, OSError, AttributeError, ValueError):
        return None
    from latencymap.views.scatter import can_scatter

    return fd if utf8 and os.linesep == "\n" and can_scatter() else None

