"""From inputs and sources to a flow of Intervals and Notices: diffing, limits, strict mode."""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import IO, Any

import numpy as np

from latencymap.core.deltas import Differ
from latencymap.core.errors import NothingReadable, StrictError
from latencymap.core.model import (
    ColumnFlow,
    Flow,
    FlowItem,
    Interval,
    IntervalRun,
    Item,
    Notice,
    SnapshotRun,
    StreamId,
    rows_by_stream,
    unrolled,
)
from latencymap.flow.inputs import NOTHING_DECOMPRESSED, CutShort, at_rest, read_input
from latencymap.plugins import Registry, TextFormat
from latencymap.protocol.reader import RecordedNotice

#: Inputs up to this many stay open from their identification to their reading; more are opened again when read.
KEPT_OPEN = 32
#: `column_flow` hands the differ runs of cumulative records gathered across the reader's chunks until they hold
#: this many records of each stream in them (a chunk of 1,000 interleaved streams holds two or three of each, and
#: the differ and the history pay per stream per run) ...
GATHER_PER_STREAM = 32
#: ... or this many records in all.
GATHER_ROWS = 32_768


def diffed(items: Iterable[Item], name: str) -> Flow:
    """Snapshots diffed into Intervals (one differ per input)."""
    return Differ(name=name).run(items)


def input_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
               options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None,
               readers: list[TextFormat] | None = None) -> Flow:
    """Intervals of every input in turn. Opening/identifying errors raise InputError up front; the formats that
    read them are appended to `readers`.

    When every record of an input was skipped, NothingReadable is raised after the last input (with each such
    input's first error), so what the others gave is shown first.
    """
    return unrolled(column_flow(paths, registry, forced_format, options, stdin, readers, gather=False))


def column_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
                options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None,
                readers: list[TextFormat] | None = None, gather: bool = True) -> ColumnFlow:
    """`input_flow` with runs of intervals kept in columns (IntervalRuns), for consumers that take them in bulk.

    With `gather`, consecutive runs of cumulative records of an input that is all there (a file: `at_rest`) are
    diffed together (`gathered`): a consumer that takes the whole flow gets them sooner. A pipe's are not: a live
    producer's records would wait for the ones after them (a report's `--count` or `--duration` would stop late).
    One that shows a live pipe as it comes (`input_flow`) passes False, since a chunk's records would wait for the
    next chunk.
    """
    named = paths or ["-"]
    readers = readers if readers is not None else []
    inputs = []
    for p in named:
        had = len(readers)
        items = read_input(p, registry, forced_format, options, stdin, runs=True, readers=readers,
                           keep_open=len(named) <= KEPT_OPEN)
        inputs.append((items, p, readers[had].shown_as if len(readers) > had else {}))
    unreadable = []
    seen: dict[StreamId, tuple[float, str]] = {}
    before: Differ | None = None
    for items, path, shown_as in inputs:
        tally = _Tally()
        differ = Differ(name=path)
        if before is not None:  # a log and its rotation: the interval between them is the next input's first
            differ.carry(before)
        before = differ
        counted = tally.count(items)
        flow = differ.run_columns(gathered(counted) if gather and at_rest(path, stdin) else counted)
        yield from _apart(flow, "<stdin>" if path in ("-", "") else path, seen, shown_as) if len(inputs) > 1 else flow
        name = "<stdin>" if path in ("-", "") else path
        if tally.cut and not tally.read:  # whatever the compressor, and whether a piece of a record came out or not
            unreadable.append(f"{name}: {NOTHING_DECOMPRESSED}")
        elif tally.skipped and not tally.read:
            unreadable.append(f"{name}: no record could be read ({tally.skipped} skipped); the first: {tally.first}")
    if unreadable:
        raise NothingReadable(unreadable)


def gathered(items: Iterable[Item], per_stream: int = GATHER_PER_STREAM, most: int = GATHER_ROWS) -> Iterator[Item]:
    """`items` with consecutive SnapshotRuns joined into one until it holds `per_stream` records of each stream in
    it, or `most` records (anything else between two runs ends the one before). The differ gives the same intervals
    and notices for a run as for its pieces, in the same order. When reading fails, the records held come first."""
    held: list[SnapshotRun] = []
    rows = 0
    streams: set[int] = set()
    source = iter(items)
    while True:
        try:
            item = next(source)
        except StopIteration:
            break
        except BaseException:  # what was read before the failure still counts (a report of an interrupted pipe)
            if held:
                yield joined(held)
            raise
        if isinstance(item, SnapshotRun):
            held.append(item)
            rows += len(item)
            streams.update(map(id, item.streams))  # each stream is one object (the reader's cache): a cheap count
            if rows >= most or rows >= per_stream * len(streams):
                yield joined(held)
                held, rows = [], 0
                streams.clear()
            continue
        if held:
            yield joined(held)
            held, rows = [], 0
            streams.clear()
        yield item
    if held:
        yield joined(held)


def joined(runs: list[SnapshotRun]) -> SnapshotRun:
    """Consecutive SnapshotRuns as one."""
    if len(runs) == 1:
        return runs[0]
    return SnapshotRun([s for run in runs for s in run.streams], np.concatenate([run.micros for run in runs]),
                       np.concatenate([run.counts for run in runs]), np.concatenate([run.present for run in runs]),
                       [d for run in runs for d in run.dates], [n for run in runs for n in run.lines])


def _apart(flow: ColumnFlow, name: str, seen: dict[StreamId, tuple[float, str]],
           shown_as: dict[StreamId, StreamId]) -> ColumnFlow:
    """One of several inputs' flow. A stream that an earlier input had too continues it when it starts where that
    one ended, or later (a log and its rotation); one that goes back into that time (another host's `sda`, the same
    run twice) would mix two histories in one, so it becomes a stream of its own, named after its input, with a
    notice, and is put in `shown_as` (its input's reader's). `seen` holds each stream's last end so far, and the
    input it came from."""
    own: dict[StreamId, StreamId] = {}
    ends: dict[StreamId, float] = {}
    for item in flow:
        if isinstance(item, Notice):
            yield item
            continue
        spans = [(item.stream, item.start, item.end)] if isinstance(item, Interval) else [
            (stream, float(item.start[rows[0]]), float(item.end[rows].max()))
            for stream, rows in rows_by_stream(item.streams).items()]
        for stream, start, end in spans:
            if stream not in own:
                before = seen.get(stream)
                own[stream] = stream
                if before is not None and start < before[0]:
                    own[stream] = shown_as[stream] = StreamId(f"{stream.label} [{name}]", stream.datasource,
                                                               stream.unit)
                    yield Notice(f"{name}: '{stream.label}' goes back into the time of the same stream from "
                                 f"{before[1]}: shown apart, as '{own[stream].label}'", skipped=0)
            ends[stream] = max(ends.get(stream, end), end)
        if any(own[s] is not s for s, _, _ in spans):
            item = replace(item, stream=own[item.stream]) if isinstance(item, Interval) else replace(
                item, streams=[own[s] for s in item.streams])
        yield item
    for stream, end in ends.items():
        if own[stream] is stream:
            seen[stream] = (max(end, seen.get(stream, (end, ""))[0]), name)


class _Tally:
    """What one input's reader gave: data items, records skipped (with the first message), and whether its
    compressed data ended early."""

    def __init__(self) -> None:
        self.read = 0
        self.skipped = 0
        self.first = ""
        self.cut = False

    def count(self, items: Iterable[Item]) -> Iterator[Item]:
        for item in items:
            if not isinstance(item, Notice):
                self.read += 1
            elif isinstance(item, CutShort):
                self.cut = True
            elif item.skipped and not isinstance(item, RecordedNotice):
                self.skipped += item.skipped
                self.first = self.first or item.message
            yield item


#: How a reader's message ends when it skipped the record and read on: not so under --strict, where it stops.
_WENT_ON = re.compile(r"; (?:(?:record|row|line|point) )?skipped$|; left out$")


def strict(flow: Iterator[FlowItem]) -> Iterator[FlowItem]:
    """Raise StrictError at the first Notice that skips something (notes that skip nothing, and a recorded run's
    notes, pass), with its message less the "; record skipped" that says reading went on: it does not."""
    for item in flow:
        if isinstance(item, Notice) and item.skipped and not isinstance(item, RecordedNotice):
            raise StrictError(_WENT_ON.sub("", item.message))
        yield item


def limited(flow: Iterator[FlowItem], count: int | None = None, duration: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Iterator[FlowItem]:
    """Stop after `count` intervals of each stream, or after `duration` seconds of wall time, whichever comes first.

    A source that reports its streams in rounds (a disk each, a series each) gives every stream `count` columns: the
    flow stops at the first interval past `count` of its stream, or at once when every stream seen has `count`, which
    a stream's second interval shows to be a whole round (so one stream stops at its `count`th, not waiting for more;
    with `count` 1 that is only known from the next round's first interval).

    The time runs from this call, not from the flow's first item: what the command does before it reads (the TUI
    waiting for a silent pipe) counts. A flow that `duration` ends before its own end ends with a Notice saying so
    (`DurationCut`): a report of a file read at once would otherwise show part of it as the whole."""
    return _limited(flow, count, None if duration is None else (clock() + duration, duration), clock)


def _limited(flow: Iterator[FlowItem], count: int | None, deadline: tuple[float, float] | None,
             clock: Callable[[], float]) -> Iterator[FlowItem]:
    """`limited`, its deadline set (the clock's time, and the duration it is at)."""
    seen: dict[StreamId, int] = {}
    full = 0
    if count is not None and count <= 0:
        return
    for item in flow if deadline is None else _on_time(flow, *deadline, clock):
        if count is not None and isinstance(item, Interval | IntervalRun):
            streams = [item.stream] if isinstance(item, Interval) else item.streams
            for k, stream in enumerate(streams):
                n = seen.get(stream, 0)
                if n < count:
                    seen[stream] = n = n + 1
                    full += n == count
                    if count == 1 or full < len(seen):
                        continue
                    k += 1
                if k and isinstance(item, IntervalRun):
                    yield item.head(k)
                elif k:
                    yield item
                return
        yield item


#: How often a flow read against a deadline looks at the clock while its source gives nothing (seconds).
WAIT_S = 0.25
#: Items a source read against a deadline may be ahead of the flow.
AHEAD = 64


@dataclass(slots=True)
class DurationCut(Notice):
    """The note that `--duration` ended reading before the input's end (it skips nothing)."""


def duration_cut(duration: float, intervals: int) -> DurationCut:
    """What a flow that `--duration` ended says: a file read at once is cut by how fast it was read."""
    return DurationCut(f"--duration {duration:g}: reading stopped after {duration:g} s (wall-clock time), before the "
                       f"input's end, {intervals:,} interval{'s' if intervals != 1 else ''} in: what came after is "
                       "not read (--count N stops at a number of intervals)", skipped=0)


def _on_time(flow: Iterator[FlowItem], deadline: float, duration: float,
             clock: Callable[[], float]) -> Iterator[FlowItem]:
    """`flow` until `deadline` (by `clock`), however long its source waits between items; cut there, it ends with
    `duration_cut`.

    A live source that nothing arrives at (a listener without writers, a log nobody writes) yields nothing, so a
    deadline looked at per item would never come: the flow is read in a thread of its own, and waiting for it ends
    at the deadline. The source is then closed at its next item, or with the process.
    """
    box: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=AHEAD)
    stop = threading.Event()

    def put(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                box.put(entry, timeout=WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def pump() -> None:
        try:
            for item in flow:
                if not put((True, item)):
                    break
            else:
                put((False, None))
        except BaseException as err:  # raised again where the flow is read
            put((False, err))
        finally:
            if stop.is_set() and hasattr(flow, "close"):
                flow.close()

    threading.Thread(target=pump, name="latencymap-duration", daemon=True).start()
    intervals = 0
    try:
        while True:
            try:
                ok, got = box.get(timeout=WAIT_S)
            except queue.Empty:
                if clock() >= deadline:
                    yield duration_cut(duration, intervals)
                    return
                continue
            if ok:
                yield got
                intervals += len(got) if isinstance(got, IntervalRun) else isinstance(got, Interval)
                if clock() >= deadline:
                    if not _ends(box):
                        yield duration_cut(duration, intervals)
                    return
            elif got is None:
                return
            else:
                raise got
    finally:
        stop.set()


def _ends(box: queue.Queue[tuple[bool, Any]]) -> bool:
    """Whether the flow read into `box` has ended there already (its end is the next entry)."""
    try:
        return box.get_nowait() == (False, None)
    except queue.Empty:
        return False
