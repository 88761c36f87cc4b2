"""From inputs and sources to a flow of Intervals and Notices: diffing, limits, strict mode."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from latencymap.core import stopping
from latencymap.core.deltas import Differ
from latencymap.core.errors import NothingReadable, StrictError
from latencymap.core.lean import dataclass
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
from latencymap.core.patterns import lazy_pattern
from latencymap.core.units import plural
from latencymap.flow.inputs import NOTHING_DECOMPRESSED, CutShort, at_rest, read_input, read_once
from latencymap.plugins import Registry, TextFormat
from latencymap.protocol.reader import RecordedNotice

if TYPE_CHECKING:
    import queue

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
    columns = column_flow(paths, registry, forced_format, options, stdin, readers, gather=False)
    return Reading.along(unrolled(columns), columns)


def column_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
                options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None,
                readers: list[TextFormat] | None = None, gather: bool = True) -> ColumnFlow:
    """`input_flow` with runs of intervals kept in columns (IntervalRuns), for consumers that take them in bulk.

    With `gather`, consecutive runs of cumulative records of an input that is all there (a file: `at_rest`) are
    diffed together (`gathered`): a consumer that takes the whole flow gets them sooner. A pipe's are not: a live
    producer's records would wait for the ones after them (a report's `--count` or `--duration` would stop late).
    One that shows a live pipe as it comes (`input_flow`) passes False, since a chunk's records would wait for the
    next chunk.

    The flow says which input it reads (`Reading`, its `reading`), for `limited`.
    """
    reading = Reading()
    return Reading.along(_column_flow(paths, registry, forced_format, options, stdin, readers, gather, reading),
                         reading=reading)


def _column_flow(paths: Sequence[str], registry: Registry, forced_format: str | None, options: dict[str, Any] | None,
                 stdin: IO[bytes] | None, readers: list[TextFormat] | None, gather: bool,
                 reading: Reading) -> ColumnFlow:
    """`column_flow`, saying in `reading` which input it reads."""
    once = read_once(paths or ["-"], registry, forced_format) if stdin is None else [(p, None) for p in paths or ["-"]]
    named = [p for p, _ in once]
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
    for k, (items, path, shown_as) in enumerate(inputs):
        if (note := once[k][1]) is not None:  # the parts of one whole named: read once
            yield note
        reading.name = "<stdin>" if path in ("-", "") else path
        reading.live = not at_rest(path, stdin)
        reading.after = ["<stdin>" if p in ("-", "") else p for p in named[k + 1:]]
        tally = _Tally()
        differ = Differ(name=path)
        if before is not None:  # a log and its rotation: the interval between them is the next input's first
            differ.carry(before)
        before = differ
        counted = tally.count(items)
        flow = differ.run_columns(gathered(counted) if gather and at_rest(path, stdin) else counted)
        yield from _apart(flow, "<stdin>" if path in ("-", "") else path, seen, shown_as) if len(inputs) > 1 else flow
        why = tally.unreadable("<stdin>" if path in ("-", "") else path)
        if why is not None:
            unreadable.append(why)
    if unreadable:
        raise NothingReadable(unreadable)


def failing_if_unread(items: Iterator[Item], name: str) -> Iterator[Item]:
    """The items of a source's one input (an OTLP receiver's requests), then NothingReadable when they skipped
    something and read nothing: the rule `column_flow` applies to each input, in its words (`name` for the input's).
    Closed early, it closes `items`."""
    tally = _Tally()
    try:
        yield from tally.count(items)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    why = tally.unreadable(name)
    if why is not None:
        raise NothingReadable([why])


class Reading:
    """Which input a flow reads now: its name, whether it is `live` (it can grow while it is read: a pipe, a FIFO,
    stdin from a terminal; not `at_rest`) and the inputs after it. A flow of unknown inputs (a source's) is live."""

    def __init__(self) -> None:
        self.name = ""
        self.live = True
        self.after: list[str] = []

    @staticmethod
    def of(flow: Iterable[Any]) -> Reading | None:
        """What `flow` says of its reading (None: a flow that says nothing, such as a source's)."""
        return getattr(flow, "reading", None)

    @staticmethod
    def along(items: Iterator[_F], flow: Iterable[Any] | None = None, reading: Reading | None = None) -> Iterator[_F]:
        """`items` (a flow made from `flow`) saying what `flow` says of its reading, or `reading`."""
        reading = reading or (Reading.of(flow) if flow is not None else None)
        return items if reading is None else _Told(items, reading)


_F = TypeVar("_F")


class _Told(Iterator[_F]):
    """A flow with its `reading`."""

    def __init__(self, items: Iterator[_F], reading: Reading) -> None:
        self.items = items
        self.reading = reading

    def __next__(self) -> _F:
        return next(self.items)

    def close(self) -> None:
        close = getattr(self.items, "close", None)
        if close is not None:
            close()


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
    input it came from. A note of what a stream measures (`Notice.measures`) names the stream as it is shown: one
    that comes before such a stream's first item waits for it."""
    own: dict[StreamId, StreamId] = {}
    ends: dict[StreamId, float] = {}
    waiting: dict[StreamId, list[Notice]] = {}  # measures notes of streams an earlier input had, until they come
    for item in flow:
        if isinstance(item, Notice):
            stream = item.measures[0] if item.measures is not None else None
            if stream is not None and stream in seen and stream not in own:
                waiting.setdefault(stream, []).append(item)
            else:
                yield _measuring(item, own)
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
                for notice in waiting.pop(stream, ()):
                    yield _measuring(notice, own)
            ends[stream] = max(ends.get(stream, end), end)
        if any(own[s] is not s for s, _, _ in spans):
            item = replace(item, stream=own[item.stream]) if isinstance(item, Interval) else replace(
                item, streams=[own[s] for s in item.streams])
        yield item
    for notices in waiting.values():  # of streams that gave no item: as they came
        yield from notices
    for stream, end in ends.items():
        if own[stream] is stream:
            seen[stream] = (max(end, seen.get(stream, (end, ""))[0]), name)


def _measuring(notice: Notice, own: dict[StreamId, StreamId]) -> Notice:
    """`notice`, what it says a stream measures (`Notice.measures`) said of the stream as it is shown (`own`)."""
    shown = None if notice.measures is None else own.get(notice.measures[0])
    if shown is None or notice.measures is None or shown == notice.measures[0]:
        return notice
    return replace(notice, measures=(shown, notice.measures[1]))


class _Tally:
    """What one input's reader gave: whether it read data (`read`), records skipped (with the first message), and
    whether its compressed data ended early. An empty gap column is no data read: a reader leaves one where it could
    not decode a record (an HdrHistogram payload) or where its time line has a hole, so an input of skipped records
    and such columns read nothing."""

    def __init__(self) -> None:
        self.read = False
        self.skipped = 0
        self.first = ""
        self.cut = False

    def count(self, items: Iterable[Item]) -> Iterator[Item]:
        for item in items:
            if not isinstance(item, Notice):
                self.read = self.read or _holds_data(item)
            elif isinstance(item, CutShort):
                self.cut = True
            elif item.skipped and not isinstance(item, RecordedNotice):
                self.skipped += item.skipped
                self.first = self.first or item.message
            yield item

    def unreadable(self, name: str) -> str | None:
        """What input `name` was, when nothing in it could be read (a failure: `NothingReadable`); else None."""
        if self.cut and not self.read:  # whatever the compressor, and whether a piece of a record came out or not
            return f"{name}: {NOTHING_DECOMPRESSED}"
        if self.skipped and not self.read:
            return f"{name}: no record could be read ({self.skipped} skipped); the first: {self.first}"
        return None


def _holds_data(item: Item) -> bool:
    """Whether a reader's data item holds data: a snapshot (a baseline counts), or a column not an empty gap."""
    if isinstance(item, Interval):
        return not item.gap or bool(item.counts.any())
    if isinstance(item, IntervalRun):
        return not item.gap.all() or bool(item.counts[item.gap].any())
    return True


#: How a reader's message ends when it skipped the record and read on: not so under --strict, where it stops.
_WENT_ON = lazy_pattern(r"; (?:(?:record|row|line|point) )?skipped$|; left out$")


def strict(flow: Iterator[FlowItem]) -> Iterator[FlowItem]:
    """Raise StrictError at the first Notice that skips something (notes that skip nothing, and a recorded run's
    notes, pass), with its message less the "; record skipped" that says reading went on: it does not."""
    return Reading.along(_strict(flow), flow)


def _strict(flow: Iterator[FlowItem]) -> Iterator[FlowItem]:
    """`strict`."""
    for item in flow:
        if isinstance(item, Notice) and item.skipped and not isinstance(item, RecordedNotice):
            raise StrictError(_WENT_ON().sub("", item.message))
        yield item


def limited(flow: Iterator[FlowItem], count: int | None = None, duration: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Iterator[FlowItem]:
    """Keep `count` intervals of each stream, and stop after `duration` seconds of wall time.

    Past its `count`, a stream's intervals are left out, and the flow ends with a note per stream saying how many
    (`CountCut`). An input that is all there (a file) is read to its end, since a stream may start anywhere in it (a
    second disk's records after the first's, a later input). A live one (a pipe, a source: `Reading`) cannot be, so
    it stops when every stream seen has `count` and no new stream came for one interval: an interval began at or
    after the end of the newest stream's first one. A source that reports its streams in rounds (a disk each, a
    series each) thus gives every stream `count` columns and stops at once at the last one's `count`th (with `count`
    1, at the next round's first interval, which is not read); a stream that first comes after that is not read.

    The time runs from this call, not from the flow's first item: what the command does before it reads (the TUI
    waiting for a silent pipe) counts. A flow that `duration` ends before its own end ends with a Notice saying so
    (`DurationCut`): a report of a file read at once would otherwise show part of it as the whole."""
    return _limited(flow, count, None if duration is None else (clock() + duration, duration), clock)


@dataclass(slots=True)
class CountCut(Notice):
    """The note that `--count` left out a stream's intervals past its count (it skips no bad record)."""


def count_cut(count: int, stream: StreamId, left: int) -> CountCut:
    """What a flow says of a stream whose intervals past `count` it left out."""
    return CountCut(f"--count {count}: '{stream.label}' ({stream.datasource}, {stream.unit}) had "
                    f"{plural(left, 'more interval')} after its first {count:,}: left out", skipped=0)


def _limited(flow: Iterator[FlowItem], count: int | None, deadline: tuple[float, float] | None,
             clock: Callable[[], float]) -> Iterator[FlowItem]:
    """`limited`, its deadline set (the clock's time, and the duration it is at)."""
    if count is not None and count <= 0:
        return
    reading = Reading.of(flow)
    if deadline is not None:  # read ahead in a thread: what it says of each item's input goes along with the item
        told = None if reading is None else Reading()
        flow = _on_time(flow, *deadline, clock, reading, told)
        reading = told
    if count is None:
        yield from flow
        return
    counter = _Counter(count)
    for item in flow:
        if not isinstance(item, Interval | IntervalRun):
            yield item
            continue
        kept, stop = counter.take(item, reading is None or reading.live)
        if kept is not None:
            yield cast(FlowItem, kept)  # an IntervalRun only where the flow had them
        if stop:
            if reading is not None and reading.after:
                yield Notice(f"--count {count}: every stream of {reading.name} had {count:,} intervals and no new "
                             f"stream came for one interval, so reading stopped there: "
                             f"{', '.join(reading.after)} not read", skipped=0)
            break
    for stream, left in counter.left.items():
        yield count_cut(count, stream, left)


class _Counter:
    """`limited`'s count: intervals kept and left out per stream, and when a live flow is done."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.kept: dict[StreamId, int] = {}
        self.left: dict[StreamId, int] = {}
        self.waiting = 0  # streams seen with fewer than `count`
        self.newest_end = math.inf  # the end of the newest stream's first interval ...
        self.settled = False  # ... and whether an interval began at or after it

    def take(self, item: Interval | IntervalRun, live: bool) -> tuple[Interval | IntervalRun | None, bool]:
        """What of `item` is kept (None: nothing), and whether a `live` flow stops after it."""
        if isinstance(item, Interval):
            keep = self._row(item.stream, item.start, item.end, live)
            return (item if keep else None), keep is None or (live and self._done())
        if not live and not self.waiting and all(self.kept.get(s, 0) >= self.count for s in set(item.streams)):
            for stream, rows in rows_by_stream(item.streams).items():  # a file's runs past every count: in bulk
                self.left[stream] = self.left.get(stream, 0) + len(rows)
            return None, False
        keep_rows: list[int] = []
        stop = False
        for i, (stream, start, end) in enumerate(zip(item.streams, item.start.tolist(), item.end.tolist(),
                                                     strict=True)):
            keep = self._row(stream, start, end, live)
            if keep is None:
                stop = True
                break
            if keep:
                keep_rows.append(i)
            if live and self._done():
                stop = True
                break
        if not keep_rows:
            return None, stop
        return (item if len(keep_rows) == len(item) else _rows(item, keep_rows)), stop

    def _row(self, stream: StreamId, start: float, end: float, live: bool) -> bool | None:
        """Whether an interval is kept; None: a live flow stops before it (it is not read)."""
        n = self.kept.get(stream)
        if n is None:
            self.kept[stream] = n = 0
            self.waiting += 1
            self.newest_end, self.settled = end, False
        elif start >= self.newest_end:
            self.settled = True
        if live and self._done():
            return None
        if n >= self.count:
            self.left[stream] = self.left.get(stream, 0) + 1
            return False
        self.kept[stream] = n + 1
        self.waiting -= n + 1 == self.count
        return True

    def _done(self) -> bool:
        return self.settled and not self.waiting


def _rows(run: IntervalRun, rows: list[int]) -> IntervalRun:
    """Rows `rows` of `run` (in order)."""
    if rows == list(range(rows[-1] + 1)):
        return run.head(len(rows))
    at = np.asarray(rows)
    new = {old: k for k, old in enumerate(rows)}
    return IntervalRun([run.streams[i] for i in rows], run.start[at], run.end[at], run.duration[at], run.counts[at],
                       None if run.time is None else run.time[at], run.reset[at], run.gap[at],
                       [run.dates[i] for i in rows],
                       {new[i]: d for i, d in run.start_dates.items() if i in new},
                       None if run.extremes is None else run.extremes[at],
                       None if run.source_buckets is None else [run.source_buckets[i] for i in rows])


#: How often a flow read against a deadline looks at the clock while its source gives nothing (seconds).
WAIT_S = 0.25
#: Items a source read against a deadline may be ahead of the flow.
AHEAD = 64


@dataclass(slots=True)
class DurationCut(Notice):
    """The note that `--duration` ended reading before the input's end (it skips nothing)."""


def duration_cut(duration: float, intervals: int, drained: bool = False) -> DurationCut:
    """What a flow that `--duration` ended says: a file read at once is cut by how fast it was read; a source that
    ends itself (`drained`) took in what it had acknowledged."""
    if drained:
        return DurationCut(f"--duration {duration:g}: the source stopped taking input after {duration:g} s (wall-clock "
                           f"time) and took in what it had acknowledged, {plural(intervals, 'interval')} in all: "
                           "what came after was refused", skipped=0)
    return DurationCut(f"--duration {duration:g}: reading stopped after {duration:g} s (wall-clock time), before the "
                       f"input's end, {intervals:,} interval{'s' if intervals != 1 else ''} in: what came after is "
                       "not read (--count N stops at a number of intervals)", skipped=0)


def _on_time(flow: Iterator[FlowItem], deadline: float, duration: float, clock: Callable[[], float],
             reading: Reading | None = None, told: Reading | None = None) -> Iterator[FlowItem]:
    """`flow` until `deadline` (by `clock`), however long its source waits between items; cut there, it ends with
    `duration_cut`. What `flow`'s `reading` says as it gives each item, `told` says as that item is given.

    A live source that nothing arrives at (a listener without writers, a log nobody writes) yields nothing, so a
    deadline looked at per item would never come: the flow is read in a thread of its own, and waiting for it ends
    at the deadline. The source is then closed at its next item, or with the process. A source that ends itself
    when asked (an OTLP receiver: `stopping.ends_itself`) is asked at the deadline, as a first SIGTERM asks it: it
    refuses what comes from then on and takes in what it had acknowledged, and the flow goes on to its end (for
    ENDING_S at most), so that what it answered is in the run.
    """
    import queue  # only a flow cut at a duration is read in a thread

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
                said = None if reading is None else (reading.name, reading.live, reading.after)
                if not put((True, (item, said))):
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
    drained = False  # the source was asked to end at the deadline: the flow is read to its end, until `deadline`
    try:
        while True:
            try:
                ok, got = box.get(timeout=WAIT_S)
            except queue.Empty:
                if clock() >= deadline:
                    if not drained and stopping.source_ends_itself():
                        drained, deadline = True, _ask_to_end(clock)
                        continue
                    yield duration_cut(duration, intervals, drained)
                    return
                continue
            if ok:
                got, said = got
                if told is not None and said is not None:
                    told.name, told.live, told.after = said
                yield got
                intervals += len(got) if isinstance(got, IntervalRun) else isinstance(got, Interval)
                if clock() >= deadline:
                    if not drained and stopping.source_ends_itself():
                        drained, deadline = True, _ask_to_end(clock)
                        continue
                    if not _ends(box):
                        yield duration_cut(duration, intervals, drained)
                    return
            elif got is None:
                if drained:
                    yield duration_cut(duration, intervals, drained)
                return
            else:
                raise got
    finally:
        stop.set()


#: How long a flow whose source was asked to end at `--duration` is read on, at most, for its end: the source's
#: drain (DRAIN_S), and its closing.
ENDING_S = 2 * stopping.DRAIN_S


def _ask_to_end(clock: Callable[[], float]) -> float:
    """Ask the sources that end themselves to end (`--duration` reached); until when their flow is read on."""
    stopping.stop_sources()
    return clock() + ENDING_S


def _ends(box: queue.Queue[tuple[bool, Any]]) -> bool:
    """Whether the flow read into `box` has ended there already (its end is the next entry)."""
    import queue  # (as `_on_time` imports it)

    try:
        return box.get_nowait() == (False, None)
    except queue.Empty:
        return False
