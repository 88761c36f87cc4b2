"""Cumulative or per-interval: how the printed counts of one map (bpftrace, bcc) become Intervals or Snapshots.

The mode is a property of a map, shared by all its keys (`@usecs[sda]`, `@usecs[vdb]`: one `clear()` clears
them all), declared with `--cumulative` / `--per-interval` (over everything else), else known from the program that
printed it where the input shows which (`known`: the banner of a bcc tool that clears its map after each print, see
`bcc_tools`; each map not decided by then is read so, with a note saying why), else detected from evidence:

- per-interval, certainly: a count goes down between two prints of one stream, or a stream printed once is
  missing from a later print group (after the next time line): `clear()` empties a map, and bpftrace and bcc
  print nothing for an empty one, while a cumulative map, once it has data, is printed every time. In an input
  timed by time lines, a group that no time line closes is no evidence (`absent(evidence=False)`): the last
  periodic print, cut by Ctrl-C, is followed by the print at exit, which lists the keys in another order.
- cumulative is never certain: counts that keep growing are also what a cleared map prints while its load
  rises. A map whose first `DETECT_PRINTS` print groups show neither sign is read as cumulative, and the note
  says that it was undecided and which option forces the mode (and the format's `hint`: what its producers do).
  Should it go missing later, it was cleared: a note says so, and it is read as per-interval from there on.

Per-interval: a print is an Interval; a print group without it is an empty Interval (an idle second that was
observed), written when the stream prints again or the input ends (a run of more than `MAX_EMPTY_COLUMNS` as one
column, as the 10046 and raw readers do: a key that never comes back costs one column, not one per group).

Cumulative: a print is a Snapshot for the shared differ. A key whose map started empty holds only new events in
its first print, so that print gets a zero baseline at its start: a key first printed after its map's first print
group (or after a group that did not print it), and every key when the input shows the program started (bpftrace's
`Attaching N probes...` banner, `attached_probes` in JSON: its maps were created empty then). Otherwise (a snippet,
output joined mid-run) the map's first print may hold events from before reading started: it is the baseline. The
banner again (two runs joined, `restart`) empties the maps again: a stream's first print after it is a Snapshot that
says so (`Snapshot.restart`): its column counts that print, marked as a reset; counts that go down across it are no
sign of a cleared map. A map printed again at the time of its print before (`again`) adds no column: cumulative,
the next print counts its events; per-interval, they are added to its next column (or, at the end, one as long after
it). A bucket whose row was not read is absent from its Snapshot (its last count holds: no reset, no jump); one the
baseline print left unread counts from its first count read (what it held before is unknown).

A print may come with the exact time of its events (`total`: bcc's summary line `avg = ..., total: ..., count: ...`)
and its counts as that time places them (`placed`). Per-interval, its column counts those and keeps the time as a
source's sum (`SourceBuckets.sum_only`, as a Prometheus column whose buckets fold onto the rows keeps its `_sum`), and
so do, as 0, the empty columns of a stream that had one; cumulative, the columns are differences of prints, and the
totals are not used (said once per stream): detection and Snapshots read `counts`, whose buckets only grow as a
cumulative map does (placed ones need not).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.model import Interval, Notice, Snapshot, SourceBuckets, StreamId, empty_counts

#: Print groups per map looked at before deciding, without evidence, that its counts are cumulative.
DETECT_PRINTS = 10
#: Longest run of empty columns written one by one; a longer idle stretch becomes one empty column.
MAX_EMPTY_COLUMNS = 1000


@dataclass(slots=True)
class _Print:
    stream: StreamId
    start: float
    end: float
    counts: np.ndarray
    line: int
    from_zero: bool = False  # first print of a key whose map started empty: its events are all new
    unknown: np.ndarray | None = None  # slots whose row was cut short (count unknown: 0 here, absent from a Snapshot)
    again: bool = False  # printed again at the same time line as the print before it
    total: float | None = None  # the exact seconds of its events, when the source printed them
    placed: np.ndarray | None = None  # its counts as `total` places them, read per-interval (else `counts`)


    @property
    def interval_counts(self) -> np.ndarray:
        """Its counts as its column counts them, read per-interval."""
        return self.counts if self.placed is None else self.placed


@dataclass(slots=True)
class _Gap:
    stream: StreamId
    start: float
    end: float


@dataclass
class _Family:
    """One map: its mode (None while detecting), how it was decided, and what is held until then."""

    mode: bool | None = None
    undecided: bool = False  # read as cumulative for want of evidence (a later gap turns it per-interval)
    pending: list[_Print | _Gap] = field(default_factory=list)
    groups: int = 0  # print groups holding a print of this map
    last_group: int | None = None
    last: dict[StreamId, np.ndarray] = field(default_factory=dict)


class PrintedHistograms:
    """Printed histograms → Intervals (per-interval counts) or Snapshots (cumulative counts), per map."""

    def __init__(self, cumulative: bool | None, name: str, window: int = DETECT_PRINTS, hint: str = "") -> None:
        self.declared = cumulative
        self.name = name
        #: the mode the input's program is known to print its maps in (its banner) and why, once the input shows it
        self.known: tuple[bool, str] | None = None
        self.hint = hint  # what the note on an undecided map adds: what the format's producers do
        self.window = max(2, window)
        self.started = False  # the input showed the program start before any print: every key counts from zero
        self._families: dict[Hashable, _Family] = {}
        self._idle: dict[StreamId, list[tuple[float, float]]] = {}  # per-interval streams' empty groups, held
        self._merged: set[StreamId] = set()  # streams whose held run became one column
        #: cumulative streams read so far: the buckets their baseline print left unread (still unread, and the counts
        #: they count from once read), None when it read them all
        self._rebase: dict[StreamId, tuple[np.ndarray, np.ndarray] | None] = {}
        self._carried: dict[StreamId, _Print] = {}  # per-interval streams' prints `again`: counts for their next column
        self._summed: set[StreamId] = set()  # per-interval streams a print of which gave its exact time
        self._unsummed: set[StreamId] = set()  # cumulative streams whose totals were said to be left unused

    def restart(self) -> None:
        """The program started again (its banner mid-input), its maps empty: counts that go down from a print before
        to one after are no sign of a cleared map."""
        for fam in self._families.values():
            fam.last.clear()

    def add(self, stream: StreamId, start: float, end: float, counts: np.ndarray, line: int = 0, *,
            family: Hashable | None = None, group: int = 0, from_zero: bool = False,
            unknown: np.ndarray | None = None, again: bool = False,
            total: float | None = None, placed: np.ndarray | None = None) -> list[Interval | Snapshot | Notice]:
        """Items for one printed histogram of `stream` (a key of map `family`) in print group `group`; none while
        the map's mode is still being detected. `from_zero`: the key's first print since its map started empty
        (counted from zero if cumulative). `unknown`: slots whose count was not read (their row was cut). `again`:
        printed again at the time line of its print before. `total`: the exact seconds of its events, if known, and
        `placed` its counts as that places them (per-interval)."""
        fam = self._family(stream if family is None else family)
        item = _Print(stream, start, end, counts, line, from_zero, unknown, again, total, placed)
        if fam.last_group != group:
            fam.last_group = group
            fam.groups += 1
        before = fam.last.get(stream)
        if unknown is not None and before is not None:
            counts = np.where(unknown, before, counts)  # compare what was read; keep the last known value
        fam.last[stream] = counts
        mode = self.declared if self.declared is not None else fam.mode
        if mode is not None:
            return self._items(item, mode)
        fam.pending.append(item)
        if self.known is not None:
            return self._release(fam, stream, *self.known)
        if before is not None and (counts < before).any():
            return self._release(fam, stream, False, f"per-interval: counts go down between prints (line {line})")
        if fam.groups >= self.window:
            return self._release(fam, stream, True, None)
        return []

    def absent(self, stream: StreamId, start: float, end: float, line: int, *,
               family: Hashable | None = None, evidence: bool = True) -> list[Interval | Snapshot | Notice]:
        """Items for a print group `[start, end]` (closed at line `line`) that did not print `stream`; not
        `evidence` of a cleared map when the group may have been cut."""
        fam = self._family(stream if family is None else family)
        gap = _Gap(stream, start, end)
        if self.declared is not None:
            return [] if self.declared else self._items(gap, False)
        if not evidence:
            if fam.mode is None:
                fam.pending.append(gap)
            return [] if fam.mode is not False else self._items(gap, False)
        why = (f"per-interval: {stream.label} is missing from the print group that ends at line {line} after it had "
               "been printed (a cleared map prints nothing while empty; a cumulative one is printed every time)")
        if fam.mode is None:
            fam.pending.append(gap)
            return self._release(fam, stream, False, why)
        if fam.mode and fam.undecided:
            fam.mode, fam.undecided = False, False
            return [Notice(f"{self.name}: {stream.label}: {why}: read as per-interval from here on; it was read as "
                           "cumulative before, so its earlier columns are wrong (read it again with --per-interval)",
                           skipped=0), *self._items(gap, False)]
        return [] if fam.mode else self._items(gap, False)

    def finish(self) -> list[Interval | Snapshot | Notice]:
        """Items still held for detection at the end of the input."""
        out: list[Interval | Snapshot | Notice] = []
        for fam in self._families.values():
            if fam.mode is not None or not fam.pending:
                continue
            first = next(p.stream for p in fam.pending if isinstance(p, _Print))
            if fam.groups <= 1:
                out += self._release(fam, first, False, "per-interval: a single print")
            elif not any(p.counts.any() for p in fam.pending if isinstance(p, _Print)):
                out += self._release(fam, first, False, "per-interval: every print is empty")
            else:
                out += self._release(fam, first, True, None)
        for p in self._carried.values():
            out += [*self._flush(p.stream), Interval(p.stream, p.end, 2 * p.end - p.start, p.counts,
                                                     source_buckets=_sum(p.total))]
        self._carried = {}
        for stream in list(self._idle):
            out += self._flush(stream)
        return out

    def _family(self, key: Hashable) -> _Family:
        fam = self._families.get(key)
        if fam is None:
            fam = self._families[key] = _Family()
        return fam

    def _release(self, fam: _Family, stream: StreamId, cumulative: bool,
                 how: str | None) -> list[Interval | Snapshot | Notice]:
        fam.mode, fam.undecided = cumulative, how is None
        label = stream.label.split("[", 1)[0] if "[" in stream.label else stream.label
        if how is None:
            since = "counted from the program's start" if self.started else "the first print is the baseline"
            note = (f"{self.name}: {label}: undecided whether counts are cumulative or per-interval: no count went "
                    f"down and the map was never missing over {fam.groups} print(s); read as cumulative ({since}), as "
                    "a map cleared after each print under rising load would print the same — say --per-interval or "
                    f"--cumulative{self.hint}")
        else:
            note = f"{self.name}: {label}: counts read as {how} (declare with --cumulative or --per-interval)"
        out: list[Interval | Snapshot | Notice] = [Notice(note, skipped=0)]
        for held in fam.pending:
            out += self._items(held, cumulative)
        fam.pending = []
        return out

    def _items(self, p: _Print | _Gap, cumulative: bool) -> list[Interval | Snapshot | Notice]:
        if not cumulative and isinstance(p, _Print) and p.again:
            held = self._carried.setdefault(p.stream, _Print(p.stream, p.start, p.end, empty_counts(), p.line,
                                                             total=0.0))
            held.counts = held.counts + p.interval_counts
            held.total = _added(held.total, p.total)
            return []
        carried = None if cumulative else self._carried.pop(p.stream, None)
        if isinstance(p, _Gap):
            if carried is not None:
                return [*self._flush(p.stream), Interval(p.stream, p.start, p.end, carried.counts,
                                                         source_buckets=_sum(carried.total))]
            if not cumulative:
                self._hold(p)
            return []
        if not cumulative:
            counts, total = (p.interval_counts, p.total) if carried is None else (
                p.interval_counts + carried.counts, _added(p.total, carried.total))
            if total is not None:
                self._summed.add(p.stream)
            return [*self._flush(p.stream), Interval(p.stream, p.start, p.end, counts, source_buckets=_sum(total))]
        unused = self._unused_totals(p)
        if p.again:  # at the time of the Snapshot before: the next one counts its events
            return unused
        present = None if p.unknown is None else ~p.unknown
        # a stream with a baseline already (it gave a Snapshot) starting from zero: the program started again, a reset
        restarted = p.from_zero and p.stream in self._rebase
        if restarted:
            del self._rebase[p.stream]
        last = Snapshot(p.stream, p.end, self._rebased(p), line=p.line, present=present, restart=restarted)
        if p.from_zero and not restarted:
            return [*unused, Snapshot(p.stream, p.start, empty_counts(), line=p.line), last]
        return [*unused, last]

    def _unused_totals(self, p: _Print) -> list[Interval | Snapshot | Notice]:
        """The note, once per stream, that a cumulative print's exact total is not used: its column is the difference
        of two prints."""
        if p.total is None or p.stream in self._unsummed:
            return []
        self._unsummed.add(p.stream)
        return [Notice(f"{self.name}: {p.stream.label}: its counts are cumulative: the exact totals printed with its "
                       "histograms are not used", skipped=0)]

    def _rebased(self, p: _Print) -> np.ndarray:
        """The counts of a cumulative print, each bucket its stream's baseline print left unread (a row skipped)
        counted from its first count read: what it held before that is unknown, not events of the print reading it."""
        if p.stream not in self._rebase:  # the baseline (one from zero is known: its unread rows held 0)
            unread = None if p.unknown is None or p.from_zero else p.unknown.copy()
            self._rebase[p.stream] = None if unread is None else (unread, empty_counts())
            return p.counts
        rebase = self._rebase[p.stream]
        if rebase is None:
            return p.counts
        unread, base = rebase
        found = unread if p.unknown is None else unread & ~p.unknown
        base[found] = p.counts[found]
        unread &= ~found
        return np.maximum(p.counts - base, 0)

    def _hold(self, gap: _Gap) -> None:
        """Hold an empty group of a per-interval stream until it prints again (or the input ends)."""
        run = self._idle.setdefault(gap.stream, [])
        if gap.stream in self._merged:
            run[0] = (run[0][0], gap.end)
            return
        run.append((gap.start, gap.end))
        if len(run) > MAX_EMPTY_COLUMNS:
            run[:] = [(run[0][0], gap.end)]
            self._merged.add(gap.stream)

    def _flush(self, stream: StreamId) -> list[Interval | Snapshot | Notice]:
        """The held empty columns of `stream`."""
        self._merged.discard(stream)
        idle = _sum(0.0) if stream in self._summed else None  # an empty column of a stream that gives its time
        return [Interval(stream, start, end, empty_counts(), source_buckets=idle)
                for start, end in self._idle.pop(stream, [])]


def _sum(total: float | None) -> SourceBuckets | None:
    """A column's exact seconds as a source's sum (its rows are the source's buckets), None when not known."""
    return None if total is None else SourceBuckets.sum_only(total)


def _added(a: float | None, b: float | None) -> float | None:
    """Two prints' exact seconds added; None unless both are known."""
    return None if a is None or b is None else a + b
