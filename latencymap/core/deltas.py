"""Turn consecutive cumulative snapshots into Intervals: the one differ every counter source uses.

Per stream: the first snapshot is the baseline. A bucket missing from a snapshot keeps its last
value. A counter that goes down is a reset: the column is marked and that bucket counts what the
counter holds now (events since the reset), never a negative number; the other buckets count their
difference as usual. When every counter that was non-zero went down or is missing (the source
restarted: its counters start again from 0, and it may list only the buckets hit since),
the column counts the new snapshot's values and it is the new baseline, a missing bucket counting 0.
A snapshot without a timestamp takes its arrival time. A stream's first interval keeps its baseline's date text
(`start_date`), which `--compat` writes back.

Timestamps that are times of day (PyLatencyMap's Oracle scripts write microseconds since midnight) roll over: a drop
of more than 23 hours where both values are below one day is midnight passing, so a day is added to that snapshot
and the stream's later ones (said once per input). Any other timestamp that does not increase skips its own snapshot
only, with a notice that counts it: the baseline stays, so a repeated or stale snapshot costs nothing; when the next
snapshot is again not past the baseline but is past the skipped one, the clock went back and the skipped snapshot is
its baseline (one column lost, none counted twice), placed at the baseline's time and the stream's later snapshots
as far after it, with a note (`_stepped`: its columns stay in time order) -- when the skipped snapshot's counters
went on up. When some counter of it is lower than the baseline's (it counts from an earlier time: a capture joined
to itself with `cat`, old snapshots sent again), or none is higher and it is not later than the stream's first
snapshot (a run without events read again), it and the next one are another run, shown apart as `LABEL [INPUT, from
line N]` (N: the skipped snapshot's line; it is the run's baseline) with a note, as the protocol reader's `Timeline`
does for interval records; later snapshots go on in the first run whose last one they follow, and past `MAX_RUNS`
runs of a stream such a snapshot is skipped and counted. A counter that goes down while time goes forward is a
reset, as above.

A stream whose input ends before it gave a column (one record: only the baseline) was still read: when the items
run out, a note names it (`'io': 1 record, the baseline of cumulative counters; a column needs a second record`),
so that a report of it says more than "No data.".

A baseline at timestamp 0 followed by a date (PyLatencyMap's 10046 connector writes its first record at the epoch:
no time yet) has no time: the column up to the next record has no known start. It counts its events as PyLatencyMap
does, but it is given the length of the column after it (held back until that one comes, with a note naming the
line), not the decades since 1970 that would enter every rate; when the input ends first, a note says why it has
no column.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.lean import dataclass
from latencymap.core.model import (
    Interval,
    IntervalRun,
    Item,
    Notice,
    Snapshot,
    SnapshotRun,
    StreamId,
    rows_by_stream,
    unrolled,
)
from latencymap.core.sanitize import clean_text
from latencymap.core.timebase import TIME_OF_DAY_BELOW_S
from latencymap.core.units import format_duration

DAY_US = 86_400_000_000
#: A stream's first snapshot in an input continues its last one in the input before when it comes at most this
#: many of that stream's intervals later (a log and its rotation: one).
CONTINUE_STEPS = 3
#: Runs of one stream that go back into its earlier time, shown apart in one input, at most (cumulative snapshots
#: here, interval records in `latencymap.protocol.reader.Timeline`); a record that would start one more is skipped.
MAX_RUNS = 16


def apart_label(label: str, input_name: str, line: int) -> str:
    """The label of a run shown apart: `LABEL [INPUT, from line N]` (N: where the run starts)."""
    name = "<stdin>" if input_name in ("-", "") else input_name
    return f"{label} [{name}, from line {line}]"


def apart_notice(message: str, stream: StreamId, shown: StreamId, measures: dict[StreamId, str]) -> Notice:
    """The note (`message`) that a run of `stream` is shown apart, as `shown`: another run of the stream, it measures
    what the stream does, where `measures` (what notes said streams measure, `Notice.measures`) knows it."""
    what = measures.get(stream)
    return Notice(message, skipped=0, measures=None if what is None else (shown, what))


_ROLLOVER_TAIL = "a day (86400 s) added to this record and to each later one at every midnight"
#: A time of day that drops by more than a day less this has passed midnight.
ROLLOVER_SLACK_US = 3_600_000_000


def restarted(before: np.ndarray, after: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per row (the last axis): every counter non-zero `before` is lower or missing `after`, and one present is
    lower."""
    down = (after < before) & present
    return np.asarray(down.any(axis=-1) & (down | ~present | (before <= 0)).all(axis=-1))


class Differ:
    """Stateful snapshot-to-interval converter, one baseline per stream."""

    def __init__(self, clock: Callable[[], float] = time.time, name: str = "<input>") -> None:
        self._clock = clock
        self._name = name
        self._last: dict[StreamId, Snapshot] = {}
        #: Microseconds added to a stream's timestamps from a record on: a day at each midnight its times of day
        #: passed, and each step back of its clock (`_stepped`).
        self._offset: dict[StreamId, int] = {}
        self._behind: dict[StreamId, Snapshot] = {}  # the last snapshot skipped for going back in time
        #: The notice that `_behind`'s snapshot is skipped, said once its fate is known: not when it turns out the
        #: baseline of another run (a capture joined to itself: nothing skipped), else at the next record or the end.
        self._held: dict[StreamId, Notice] = {}
        self._said_rollover = False
        self._in_run = False  # within push_run, the earliest row's rollover is said (see there)
        self._pending: dict[StreamId, int] = {}  # records of the streams that have given no interval yet
        self._step: dict[StreamId, float] = {}  # each stream's last interval, in seconds
        self._carried: dict[StreamId, Snapshot] = {}  # the input before this one's last snapshots (`carry`)
        self._carried_step: dict[StreamId, float] = {}
        self._first: dict[StreamId, float] = {}  # each stream's first timestamp in this input
        self._runs: dict[StreamId, list[Snapshot]] = {}  # a stream's runs shown apart: their last snapshots
        self._measures: dict[StreamId, str] = {}  # what notes passed on said streams measure (`apart_notice`)
        self._timeless: dict[StreamId, _Timeless] = {}  # a first column from a baseline with no time (see there)

    def carry(self, before: Differ) -> None:
        """Continue the streams of the input `before` read (a log, then its rotation): a stream's first snapshot
        here is diffed against its last one there when it comes later, by at most `CONTINUE_STEPS` of its last
        intervals (anything else, another host's stream or the same run twice, starts from a baseline)."""
        self._carried, self._carried_step = dict(before._last), dict(before._step)

    def _resumed(self, stream: StreamId, t: float) -> Snapshot | None:
        """The carried snapshot of `stream` when its first snapshot here, at `t` (s), continues it (see `carry`)."""
        last = self._carried.pop(stream, None)
        step = self._carried_step.get(stream)
        if last is None or last.timestamp is None or step is None \
                or not 0 < t - last.timestamp <= CONTINUE_STEPS * step:
            return None
        self._last[stream] = last
        return last

    def push(self, snap: Snapshot) -> Interval | Notice | None:
        """The interval since the stream's previous snapshot; None for a baseline (a rollover's notice comes
        from `push_items`)."""
        out = self.push_items(snap)
        return out[-1] if out else None

    def push_items(self, snap: Snapshot) -> list[Interval | Notice]:
        """What one snapshot gives: nothing (a baseline), its interval, a notice, or a rollover notice and its
        interval."""
        prev = self._last.get(snap.stream)
        if snap.timestamp is None:
            snap.timestamp = self._clock()
        elif snap.stream in self._offset:
            _shift(snap, self._offset[snap.stream])
            if _before_midnight(snap, prev, self._first.get(snap.stream)):
                _shift(snap, -DAY_US)
        if prev is None and self._carried:
            prev = self._resumed(snap.stream, snap.timestamp)
        if prev is None or snap.stream in self._pending:
            self._pending[snap.stream] = self._pending.get(snap.stream, 0) + 1
        self._first.setdefault(snap.stream, snap.timestamp)
        if prev is None:
            self._last[snap.stream] = snap
            return []
        assert prev.timestamp is not None
        said: list[Interval | Notice] = []
        if snap.timestamp <= prev.timestamp:
            rolled = self._rollover(prev, snap)
            if rolled is None:
                return self._back(prev, snap)
            if not self._said_rollover:
                self._said_rollover = not self._in_run
                said.append(rolled)
        _fill(snap, prev)
        said[:0] = self._passed(snap.stream)
        self._last[snap.stream] = snap
        first = self._pending.pop(snap.stream, None) is not None  # the stream's first interval: from its baseline
        assert prev.timestamp is not None and snap.timestamp is not None
        if first and prev.timestamp == 0 and snap.timestamp >= TIME_OF_DAY_BELOW_S:
            self._timeless[snap.stream] = _Timeless(_diffed(prev, snap, snap.stream, False), prev.line, snap.line)
            return said
        self._step[snap.stream] = snap.timestamp - prev.timestamp
        iv = _diffed(prev, snap, snap.stream, first)
        waiting = self._timeless.pop(snap.stream, None)
        if waiting is not None:
            said.extend(self._timed(waiting, iv))
        said.append(iv)
        return said

    def _timed(self, waiting: _Timeless, after: Interval) -> list[Interval | Notice]:
        """The column from a baseline with no time, given the length of `after` (the column after it), and its
        note."""
        first = waiting.interval
        first.duration = after.duration or after.end - after.start
        first.start = first.end - first.duration
        label = clean_text(first.stream.label) or "(no label)"
        where = f"line {waiting.line}: " if waiting.line else ""
        upto = f"the next record (line {waiting.next_line})" if waiting.next_line else "the next record"
        return [Notice(f"{self._name}: {where}'{label}': timestamp 0 (the epoch: no time yet, as PyLatencyMap's "
                       f"10046 connector writes its first record) is the baseline; the {int(first.counts.sum()):,} "
                       f"events up to {upto} are given the length of the column after it ({first.duration:g} s), "
                       "not the years since 1970", skipped=0), first]

    def _back(self, prev: Snapshot, snap: Snapshot) -> list[Interval | Notice]:
        """What a snapshot not later than its stream's last one (`prev`) gives, not a rollover: it goes on in a run
        shown apart whose last snapshot it follows; or it is skipped and counted (kept as `_behind`); or, when the
        one skipped before it is earlier, it is diffed against that one: in the main run when the clock stepped
        back (that one's counters went on up), else in a run of its own shown apart (see `_another_run`)."""
        stream, ts = snap.stream, snap.timestamp
        assert ts is not None and prev.timestamp is not None
        runs = self._runs.get(stream, [])
        for k, last in enumerate(runs):
            assert last.timestamp is not None
            if ts > last.timestamp:
                _fill(snap, last)
                runs[k] = _moved(snap, last.stream)
                return [*self._passed(stream), _diffed(last, snap, last.stream, False)]
        where = f"line {snap.line}: " if snap.line else ""
        behind = self._behind.get(stream)
        if behind is None or behind.timestamp is None or ts <= behind.timestamp:
            _fill(snap, prev)
            skipped = Notice(f"{self._name}: {where}timestamp {ts:.6f} does not increase "
                             f"(previous {prev.timestamp:.6f}); record skipped")
            if ts == prev.timestamp:
                return [skipped]
            passed: list[Interval | Notice] = [*self._passed(stream)]
            self._behind[stream], self._held[stream] = snap, skipped
            return passed
        if not self._another_run(prev, behind):
            _fill(snap, prev)  # the clock went back: the skipped snapshot is the baseline
            self._step[stream] = ts - behind.timestamp
            said: list[Interval | Notice] = [*self._passed(stream), self._stepped(prev, behind, snap)]
            self._last[stream] = snap
            return [*said, _diffed(behind, snap, stream, self._pending.pop(stream, None) is not None)]
        if len(runs) >= MAX_RUNS:
            return [Notice(f"{self._name}: {where}'{stream.label}' goes back into the time of its earlier records "
                           f"again (timestamp {ts:.6f}, its last {prev.timestamp:.6f}), and {MAX_RUNS} runs of it "
                           "are shown apart already; record skipped")]
        self._behind.pop(stream, None)
        self._held.pop(stream, None)  # not skipped: the baseline of the run shown apart
        shown = StreamId(apart_label(stream.label, self._name, behind.line), stream.datasource, stream.unit)
        base = _moved(behind, shown)
        if base.present is not None:  # the first record of a run: a bucket missing from it counts 0
            base.counts[~base.present] = 0
            if base.sums is not None:
                base.sums[~base.present] = 0
        _fill(snap, base)
        runs.append(_moved(snap, shown))
        self._runs[stream] = runs
        from_line = f" (the record at line {behind.line} is its baseline)" if behind.line else ""
        return [apart_notice(f"{self._name}: {where}'{stream.label}' goes back into the time of its earlier records "
                             f"(timestamp {ts:.6f}, its last {prev.timestamp:.6f}; counters "
                             f"{'lower' if _lower(behind, prev) else 'unchanged'}): another run{from_line}, shown "
                             f"apart, as '{shown.label}'", stream, shown, self._measures),
                _diffed(base, snap, shown, True)]

    def _stepped(self, prev: Snapshot, behind: Snapshot, snap: Snapshot) -> Notice:
        """The clock of `snap`'s stream went back at `behind` (skipped), its counters on up: `behind` is placed at
        `prev`'s time and `snap` and the stream's later records as far after it, so that its columns follow its
        earlier ones (a column in the past, or a run whose time ran backwards, was what the history and a recording
        read again took for another run); the note says by how much."""
        assert prev.timestamp is not None and behind.timestamp is not None and snap.timestamp is not None
        if prev.micros is not None and behind.micros is not None:
            step = prev.micros - behind.micros
        else:
            step = round((prev.timestamp - behind.timestamp) * 1e6)
        self._offset[snap.stream] = self._offset.get(snap.stream, 0) + step
        _shift(behind, step)
        _shift(snap, step)
        where = f"line {behind.line}: " if behind.line else ""
        by = format_duration(step / 1e6, long_units=True)
        return Notice(f"{self._name}: {where}'{clean_text(snap.stream.label, 200)}': the clock went back {by} "
                      f"(timestamp {behind.timestamp - step / 1e6:.6f} after {prev.timestamp:.6f}) while its counters "
                      "went on up: a clock step, not another run; the events up to that record are lost (it is the "
                      f"next column's baseline), and its records from there are placed after the earlier ones (their "
                      f"timestamps +{by})", skipped=0)

    def _passed(self, stream: StreamId) -> list[Notice]:
        """The held notice of `stream`'s snapshot skipped for going back in time, now that a later record of the
        stream is diffed without it (it stays skipped); empty when none is held."""
        self._behind.pop(stream, None)
        held = self._held.pop(stream, None)
        return [held] if held is not None else []

    def _another_run(self, prev: Snapshot, behind: Snapshot) -> bool:
        """Whether `behind` (skipped for not being later than `prev`, the stream's last) and the snapshot after it
        come from another run (a capture joined to itself with `cat`, an old one sent again) rather than a clock
        stepped back: some counter of `behind` is lower than in `prev` (it counts from an earlier time), or none is
        higher and it is not later than the stream's first snapshot (a run without events read again)."""
        if _lower(behind, prev):
            return True
        first = self._first.get(behind.stream)
        assert behind.timestamp is not None
        return bool(first is not None and behind.timestamp <= first and not (behind.counts > prev.counts).any())

    def _rollover(self, prev: Snapshot, snap: Snapshot) -> Notice | None:
        """When `snap` is `prev`'s time of day past midnight: shift it (and the stream) by a day, and say so."""
        offset = self._offset.get(snap.stream, 0)
        if prev.micros is None or snap.micros is None:
            return None
        before, now = prev.micros - offset, snap.micros - offset
        if not (0 <= now < DAY_US and 0 <= before < DAY_US and before - now > DAY_US - ROLLOVER_SLACK_US):
            return None
        self._offset[snap.stream] = offset + DAY_US
        _shift(snap, DAY_US)
        where = f"line {snap.line}: " if snap.line else ""
        return Notice(f"{self._name}: {where}timestamp {now / 1e6:.6f} after {before / 1e6:.6f}: times of day "
                      f"(microseconds since midnight) that passed midnight; {_ROLLOVER_TAIL}", skipped=0)

    def push_run(self, run: SnapshotRun) -> list[Interval | IntervalRun | Notice]:
        """What pushing each row of `run` in turn gives, computed per stream in bulk: one IntervalRun when every
        stream's rows were diffed in bulk, else Intervals and Notices one by one."""
        out: list[Interval | Notice | None] = [None] * len(run)
        groups = rows_by_stream(run.streams)
        extra: dict[int, list[Interval | Notice]] = {}  # rollover notices, said before their row's interval
        cols = _Columns(len(run))
        self._in_run = True
        try:
            for stream, rows in groups.items():
                if not self._push_group(stream, rows, run, cols):
                    for i in rows:
                        got = self.push_items(run.snapshot(i))
                        if got:
                            out[i] = got[-1]
                            if len(got) > 1:
                                extra[i] = got[:-1]
        finally:
            self._in_run = False
        made = np.flatnonzero(cols.made)
        if not extra and all(item is None for item in out):
            return [cols.run(made, run)] if made.size else []
        for i, iv in zip(made.tolist(), cols.run(made, run).intervals(), strict=True):
            out[i] = iv
        if extra:  # streams are diffed one after the other: say the rollover of the earliest row, as one by one
            rolled = [i for i, said in extra.items() if any(_is_rollover(x) for x in said)]
            first = min(rolled) if rolled else -1
            self._said_rollover = self._said_rollover or bool(rolled)
            return [x for i, item in enumerate(out)
                    for x in (*(x for x in extra.get(i, ()) if i == first or not _is_rollover(x)), item)
                    if x is not None]
        return [item for item in out if item is not None]

    def _push_group(self, stream: StreamId, rows: list[int], run: SnapshotRun, cols: _Columns) -> bool:
        """Diff one stream's rows of a run in bulk; False (nothing done) when a row needs the one-by-one path."""
        pick = slice(rows[0], rows[-1] + 1) if len(rows) == rows[-1] - rows[0] + 1 else rows
        counts, present, micros = run.counts[pick], run.present[pick], run.micros[pick]
        if stream in self._offset:
            micros = micros + self._offset[stream]
            if micros.size and float(micros.max() - micros.min()) > DAY_US / 2:
                return False  # a time before the midnight passed, maybe (`_before_midnight`): one by one
        prev = self._last.get(stream)
        if prev is None and self._carried:
            prev = self._resumed(stream, float(micros[0]) / 1e6)
        if (prev is not None and (prev.micros is None or prev.sums is not None)) or stream in self._held:
            return False
        # a baseline at 0 before a dated record has no time (`push_items` says how its column is timed)
        dated = micros >= TIME_OF_DAY_BELOW_S * 1e6
        if stream in self._timeless or (prev.micros == 0 and dated[0] if prev is not None
                                        else micros[0] == 0 and dated[1:2].any()):
            return False
        self._first.setdefault(stream, float(micros[0]) / 1e6)
        # a missing bucket keeps its last value: only slots some row lacks, that some row or the last record held
        held = present.any(axis=0) if prev is None else present.any(axis=0) | (prev.counts != 0)
        missing = ~present.all(axis=0) & held
        if missing.any():
            slots = np.flatnonzero(missing)
            last = np.where(present[:, slots], np.arange(len(rows))[:, None], -1)
            np.maximum.accumulate(last, axis=0, out=last)
            filled = np.take_along_axis(counts[:, slots], np.maximum(last, 0), axis=0)
            if prev is not None:
                filled = np.where(last >= 0, filled, prev.counts[slots])
            counts = counts.copy()
            counts[:, slots] = filled
        if prev is not None:
            full = np.vstack((prev.counts, counts))
            times = np.concatenate((np.asarray([prev.micros], dtype=np.int64), micros))
        else:
            full, times = counts, micros
        seconds = times / 1e6
        # in seconds: past 2**53 µs two microseconds apart can be the same float
        if len(times) > 1 and not bool((seconds[1:] > seconds[:-1]).all()):
            return False
        diffs = full[1:] - full[:-1]
        dropped = diffs < 0
        resets = dropped.any(axis=1)
        if resets.any():
            # a restart (`restarted`) makes missing buckets 0 where they were carried forward: the one-by-one path
            # knows; a drop that is not one (some counter still grew) is diffed here as it would be there
            shown = present if prev is not None else present[1:]
            if restarted(full[:-1][resets], full[1:][resets], shown[resets]).any():
                return False
            diffs[dropped] = full[1:][dropped]
        self._behind.pop(stream, None)
        made = rows[0 if prev is not None else 1:]
        if prev is None and made:
            cols.start_dates[made[0]] = run.dates[rows[0]]  # the stream's first interval: from its baseline
        elif prev is not None and stream in self._pending:
            cols.start_dates[made[0]] = prev.date
        if made:
            self._pending.pop(stream, None)
        else:  # a run's only row of a new stream: its baseline
            self._pending[stream] = self._pending.get(stream, 0) + 1
        cols.start[made], cols.end[made], cols.duration[made] = seconds[:-1], seconds[1:], np.diff(times) / 1e6
        cols.counts[made], cols.reset[made], cols.made[made] = diffs, resets, True
        if len(seconds) > 1:
            self._step[stream] = float(seconds[-1] - seconds[-2])
        i = rows[-1]
        self._last[stream] = Snapshot(stream, float(seconds[-1]), counts[-1], None, run.dates[i], run.lines[i],
                                      present[-1], int(times[-1]))
        return True

    def run(self, items: Iterable[Item]) -> Iterator[Interval | Notice]:
        """Pass Intervals and Notices through; diff Snapshots."""
        return unrolled(self.run_columns(items))

    def run_columns(self, items: Iterable[Item]) -> Iterator[Interval | IntervalRun | Notice]:
        """`run`, with runs of intervals kept in columns (IntervalRuns) for consumers that take them in bulk; at the
        end, the notes of `baselines_only`."""
        for item in items:
            if isinstance(item, Snapshot):
                yield from self.push_items(item)
            elif isinstance(item, SnapshotRun):
                yield from self.push_run(item)
            else:
                if isinstance(item, Notice) and item.measures is not None:
                    self._measures[item.measures[0]] = item.measures[1]
                yield item
        yield from self.baselines_only()

    def baselines_only(self) -> list[Notice]:
        """At the input's end: the notice of each record skipped for going back in time that no later record of its
        stream followed (`_held`), then a note (skipping nothing) for each stream read that has given no interval: its
        records were only the baseline of its cumulative counters (and, when there are more, ones not later than
        it)."""
        # skipped: no later record of their stream came (in the order of their lines, however the streams were read)
        out = [self._held[stream] for stream in sorted(self._held, key=lambda stream: self._behind[stream].line or 0)]
        self._held.clear()
        self._behind.clear()
        for stream, records in self._pending.items():
            label = clean_text(stream.label) or "(no label)"
            what = ("1 record, the baseline of cumulative counters; a column needs a second record" if records == 1
                    else f"{records} records, none later than the first (the baseline of cumulative counters); a "
                         "column needs a record with a later timestamp")
            out.append(Notice(f"{self._name}: '{label}': {what}", skipped=0))
        for stream, waiting in self._timeless.items():
            label = clean_text(stream.label) or "(no label)"
            where = f"line {waiting.line}: " if waiting.line else ""
            out.append(Notice(f"{self._name}: {where}'{label}': timestamp 0 (the epoch: no time yet) is the baseline "
                              f"and the input ended after one more record, so the "
                              f"{int(waiting.interval.counts.sum()):,} events between them have no known start and "
                              "no column; a column needs a third record", skipped=0))
        return out


@dataclass(slots=True)
class _Timeless:
    """A stream's first column, from a baseline at timestamp 0 (no time) at `line` to the record at `next_line`,
    waiting for the length of the column after it."""

    interval: Interval
    line: int
    next_line: int


class _Columns:
    """The intervals a run's rows give, filled stream by stream (`made`: the rows that gave one)."""

    __slots__ = ("counts", "duration", "end", "made", "reset", "start", "start_dates")

    def __init__(self, k: int) -> None:
        self.start, self.end, self.duration = np.empty(k), np.empty(k), np.empty(k)
        self.counts = np.empty((k, NSLOTS), dtype=np.int64)
        self.reset, self.made = np.zeros(k, dtype=bool), np.zeros(k, dtype=bool)
        self.start_dates: dict[int, str] = {}  # by row: the baseline's date of a stream's first interval

    def run(self, made: np.ndarray, snaps: SnapshotRun) -> IntervalRun:
        """The rows `made` as an IntervalRun."""
        rows = made.tolist()
        firsts = {k: self.start_dates[i] for k, i in enumerate(rows) if i in self.start_dates} \
            if self.start_dates else {}
        return IntervalRun([snaps.streams[i] for i in rows], self.start[made], self.end[made], self.duration[made],
                           self.counts[made], None, self.reset[made], np.zeros(len(rows), dtype=bool),
                           [snaps.dates[i] for i in rows], firsts)


def _is_rollover(item: Interval | Notice) -> bool:
    """Whether `item` is the notice that times of day passed midnight (`Differ._rollover`)."""
    return isinstance(item, Notice) and item.message.endswith(_ROLLOVER_TAIL)


def _fill(snap: Snapshot, prev: Snapshot | None) -> None:
    """A bucket missing from `snap` keeps its value in `prev` (unless `snap` is a restart, see `restarted`)."""
    if snap.present is not None and prev is not None and not snap.restart and \
            not restarted(prev.counts, snap.counts, snap.present):
        missing = ~snap.present
        snap.counts[missing] = prev.counts[missing]
        if snap.sums is not None and prev.sums is not None:
            snap.sums[missing] = prev.sums[missing]


def _lower(snap: Snapshot, prev: Snapshot) -> bool:
    """Whether some counter (or time) of `snap` is lower than in `prev`."""
    if (snap.counts < prev.counts).any():
        return True
    return snap.sums is not None and prev.sums is not None and bool((snap.sums < prev.sums).any())


def _moved(snap: Snapshot, stream: StreamId) -> Snapshot:
    """A copy of `snap` in `stream`."""
    return Snapshot(stream, snap.timestamp, snap.counts.copy(), None if snap.sums is None else snap.sums.copy(),
                    snap.date, snap.line, snap.present, snap.micros, snap.restart)


def _diffed(prev: Snapshot, snap: Snapshot, stream: StreamId, first: bool) -> Interval:
    """The interval from `prev` to `snap`, in `stream` (`first`: the stream's first, which keeps `prev`'s date)."""
    assert prev.timestamp is not None and snap.timestamp is not None
    counts = snap.counts - prev.counts
    dropped = np.ones_like(counts, dtype=bool) if snap.restart else counts < 0  # a restart said: every counter anew
    reset = bool(dropped.any())
    if reset:
        counts[dropped] = snap.counts[dropped]
    spent = None
    if snap.sums is not None:
        base = prev.sums if prev.sums is not None else np.zeros_like(snap.sums)
        spent = snap.sums - base
        lost = (spent < 0) | dropped
        if lost.any():
            reset = True
            spent[lost] = snap.sums[lost]
    exact_dt = (snap.micros - prev.micros) / 1e6 if snap.micros is not None and prev.micros is not None else 0.0
    return Interval(stream, prev.timestamp, snap.timestamp, counts, spent, reset=reset, date=snap.date,
                    duration=exact_dt, start_date=prev.date if first else "")


def _before_midnight(snap: Snapshot, prev: Snapshot | None, first: float | None) -> bool:
    """Whether `snap`, a time of day moved past the midnight its stream passed, is more than half a day after `prev`
    there, while where it stands it falls in the time already read (from the stream's `first` record to `prev`) and
    some counter of it is lower than `prev`'s: earlier records again (a capture across midnight joined to itself read
    as a day later, with a silence of a day), not a record of the next day (a capture that paused 13 hours after
    midnight, or till the next evening: its counters went on up)."""
    if prev is None or prev.timestamp is None or snap.timestamp is None or first is None:
        return False
    before = snap.timestamp - DAY_US / 1e6
    return snap.timestamp - prev.timestamp > DAY_US / 2e6 and first <= before <= prev.timestamp and _lower(snap, prev)


def _shift(snap: Snapshot, micros: int) -> None:
    """Move a snapshot's time by `micros` (exactly, when it has integer microseconds)."""
    if snap.micros is not None:
        snap.micros += micros
        snap.timestamp = snap.micros / 1e6
    elif snap.timestamp is not None:
        snap.timestamp += micros / 1e6
