"""Numbers of the overview: per stream p50/p99 now and overall, time waited, p99 now against its peers.

Numbers are kept per stream from frame to frame and recomputed only for the streams whose columns (or window)
changed, their percentiles in one NumPy call per unit/datasource group: a thousand live streams cost a few
milliseconds per frame.

Every stream is placed on one time axis (`SharedClock`): its newest column is compared with the newest of all, and a
stream with none in its last `NOW_COLUMNS` intervals has no "now". It is stale (a hung rank) only when a peer goes on:
a stream expected to go on stopped; one without peers (a Spark stage, a phase) ended, as it does by design. "p99 all"
is the report's figure (`outputs.report.stream_total`): a rebinned stream's from its source's own buckets. Its "now"
comes from the rows (`now_rows`, as the header's "latest (rows)"), or from those buckets where the "now" columns are
the whole stream (`inspector.whole_from_source`). A figure that is a lower bound only is listed in its row's `open`
(written `≥low`): the rows' in their open top slot (`open_percentiles`) or past the events below a rebinned
column's own overflow bucket (`+Inf`: at least its bound, `StreamHistory.overflow`), a source's past its largest
finite bound (`stream_total`'s `open`, as the report).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from latencymap.analysis.peers import peer_key, ratios_to_others
from latencymap.core.accumulator import StreamHistory, Totals
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import StreamId
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES, median_of
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.outputs.report import shown_total, source_use
from latencymap.tui.estimates import bounded_estimates
from latencymap.tui.inspector import whole_from_source
from latencymap.tui.overview_axis import (
    SILENT_INTERVALS,
    allot,
    cut_runs,
    gap_cells,
    run_cell_ends,
    run_edges,
    run_widths,
    stream_runs,
)

SHOWN = (0.50, 0.99)
#: The overview's names of `_Stream.pct`'s figures, in order.
FIGURES = ("p50 now", "p99 now", "p50 all", "p99 all")
#: Sort orders the overview offers (`o` cycles): key name → what the column header says.
DIGITS = re.compile(r"(\d+)")
ORDERS = ("p99 now", "waited", "vs peers", "label")
#: A stream whose p99 now is at least this many times its peers' median stands out.
SLOW_PEER = 2.0
#: "Now" is the newest columns, this many merged (one column alone is often a handful of events).
NOW_COLUMNS = 5
#: New columns and "now" columns this close together are read from the history in one range.
READ_TOGETHER = 256
#: A stream's interval is the median length of this many of its newest columns.
INTERVAL_COLUMNS = 64


@dataclass(slots=True)
class StreamRow:
    """One stream's line of the overview."""

    index: int
    hist: StreamHistory
    label: str
    p50_now: float = math.nan
    p99_now: float = math.nan
    p50_all: float = math.nan
    p99_all: float = math.nan
    waited_s: float = 0.0
    waited_now: float = math.nan
    vs_peers: float = math.nan  # p99 now over the median of the streams of the same unit and datasource
    end_s: float = math.nan  # end time of its newest column shown
    interval_s: float = math.nan  # its typical column length
    #: When it has no column in its last `NOW_COLUMNS` intervals: how much older its newest column is than the newest
    #: of all streams (it has no "now").
    behind_s: float = math.nan
    #: ... and a peer of it goes on: it stopped where it was expected to go on.
    stopped_alone: bool = False
    #: Its p50/p99 now come from the rows while "all" comes from its source's own buckets (a rebinned stream's "now"
    #: short of the whole stream: those buckets are whole-stream sums).
    now_rows: bool = False
    #: Those of its figures (`FIGURES`: "p99 now", ...; and "vs peers") that are a lower bound only, written `≥`.
    open: frozenset[str] = frozenset()
    #: Those that are an upper bound only (`outputs.report.bounded_first_bucket`), written `≤`.
    at_most: frozenset[str] = frozenset()

    @property
    def ended(self) -> bool:
        """True when it has no column in its last `NOW_COLUMNS` intervals before the newest column of all streams."""
        return math.isfinite(self.behind_s)

    @property
    def stale(self) -> bool:
        """True when it ended while a peer (its label but for the rank, disk or instance) goes on: a hung rank."""
        return self.ended and self.stopped_alone

    @property
    def stale_s(self) -> float:
        """How long it has been stale (NaN: it is not)."""
        return self.behind_s if self.stale else math.nan

    @property
    def slow(self) -> bool:
        """True when its p99 now is `SLOW_PEER` times its peers' median or more."""
        return self.vs_peers >= SLOW_PEER


class _Stream:
    """One stream's numbers as of its last change: whole-history sums (updated with the columns added since), the
    "now" columns' sums, and their percentiles; recomputed only when the stream's columns or its window moved."""

    __slots__ = ("at_most", "counts", "dropped", "end_s", "exact_all", "exact_now", "interval_s", "key", "label",
                 "latest", "latest_t", "now_rows", "open", "over", "pct", "peers", "seen", "spent", "times",
                 "waited_now")
    pct: tuple[float, ...]
    open: tuple[bool, ...]
    at_most: tuple[bool, ...]

    def __init__(self, hist: StreamHistory) -> None:
        self.label = clean_text(hist.stream.label, 200) or "(no label)"
        found = peer_key(hist.stream.label)  # rank3/step's peers are rank*/step, not rank*/data_wait
        self.peers = (hist.stream.datasource, hist.stream.unit, found[0] if found else None)
        self.key: tuple[int, int, int] | None = None
        self.pct = (math.nan,) * 4  # p50 now, p99 now, p50 all, p99 all
        self.open = (False,) * 4  # which of them are a lower bound only
        self.at_most = (False,) * 4  # which an upper bound only (`bounded_first_bucket`)
        self.waited_now = self.end_s = self.interval_s = math.nan
        self.latest = np.zeros(NSLOTS, dtype=np.int64)
        self.latest_t = np.zeros(NSLOTS)
        self.exact_now = self.exact_all = False  # whether the times are exact: percentiles then use bucket means
        self.now_rows = False
        #: Events of the "now" columns and of every column in their sources' overflow buckets, values not known, and
        #: those buckets' smallest lower bound (s): `StreamHistory.overflow`.
        self.over = ((0.0, math.nan), (0.0, math.nan))
        self._whole(hist)

    def _whole(self, hist: StreamHistory) -> None:
        """Sums of every column seen, kept or dropped: kept chunks from their summaries (no decoding), dropped columns
        from what they left."""
        self.counts, self.times, _ = hist.slot_sums(all_seen=True)
        self.spent = float(self.times.sum())
        self.dropped, self.seen = hist.dropped, hist.n

    def refresh(self, hist: StreamHistory, stop: int) -> None:
        """Sums up to date for a history of `hist.n` columns shown up to `stop`."""
        n = hist.n
        if hist.dropped != self.dropped or n < self.seen:
            self._whole(hist)
        now = max(0, stop - NOW_COLUMNS)
        # the new columns and the "now" ones are usually the same few newest: read them together
        first = min(self.seen, now) if stop > 0 and now >= self.seen - READ_TOGETHER else self.seen
        counts, spent = hist.counts_in(slice(first, n)), hist.time_in(slice(first, n))
        if n > self.seen:
            self.counts = self.counts + counts[self.seen - first:].sum(axis=0)
            self.times = self.times + spent[self.seen - first:].sum(axis=0)
            self.spent = float(self.times.sum())
            self.seen = n
        self.exact_all = hist.exact
        if stop <= 0:
            self.latest, self.waited_now = np.zeros(NSLOTS, dtype=np.int64), math.nan
            self.latest_t, self.exact_now = np.zeros(NSLOTS), False
            self.end_s = self.interval_s = math.nan
        else:
            if first > now:
                counts, spent, first = hist.counts_in(slice(now, stop)), hist.time_in(slice(now, stop)), now
            self.latest = counts[now - first: stop - first].sum(axis=0)
            self.latest_t = spent[now - first: stop - first].sum(axis=0)
            self.exact_now = hist.exact_in(slice(now, stop))
            dur = float(hist.meta_in("dur", slice(now, stop)).sum())
            self.waited_now = float(spent[now - first: stop - first].sum()) / dur if dur > 0 else math.nan
            self.end_s = float(hist.meta_in("end", slice(stop - 1, stop))[0])
            self.interval_s = float(median_of(hist.meta_in("dur", slice(max(0, stop - INTERVAL_COLUMNS), stop))))
        self.over = (hist.overflow(slice(max(0, stop - NOW_COLUMNS), max(0, stop))),
                     hist.overflow(slice(0, n), all_seen=True))
        self.key = (n, hist.dropped, stop)

    def whole_stream(self, hist: StreamHistory, source: SourceTotals) -> None:
        """p50/p99 all as the report prints them (`stream_total`): a rebinned stream's from its source's buckets; and
        p50/p99 now as the header's latest: those buckets' where the "now" columns are the whole stream, else the
        rows' (`now_rows`)."""
        events = int(self.counts.sum())
        rows = Totals(events, self.spent, self.spent / events if events else math.nan, math.nan, self.counts,
                      {q: self.pct[2] if q == 0.50 else self.pct[3] if q == 0.99 else math.nan for q in PERCENTILES})
        own = source_use(source, events, hist.n)[0]
        total = shown_total(rows, source, hist.stream.unit, hist.n)
        p50, p99 = (math.nan if v is None else float(v) for v in (total["p50_s"], total["p99_s"]))
        o50, o99 = (f"{PERCENTILE_NAMES[q]}_s" in total.get("open", ()) for q in SHOWN)
        m50, m99 = (f"{PERCENTILE_NAMES[q]}_s" in total.get("at_most", ()) for q in SHOWN)
        stop = self.key[2] if self.key is not None else hist.n
        whole = whole_from_source(hist, max(0, stop - NOW_COLUMNS), stop, events, source)
        self.now_rows = own and not whole and stop > 0
        self.pct = (p50, p99, p50, p99) if whole else (*self.pct[:2], p50, p99)
        self.open = (o50, o99, o50, o99) if whole else (*self.open[:2], o50, o99)
        self.at_most = (m50, m99, m50, m99) if whole else (False, False, m50, m99)


class OverviewStats:
    """The overview's rows for every stream, kept up to date frame after frame: only the streams whose columns (or
    window) changed since the last frame are recomputed, their percentiles in one NumPy call per group."""

    def __init__(self) -> None:
        self._streams: dict[StreamId, _Stream] = {}

    def rows(self, histories: list[StreamHistory], stops: list[int] | None = None,
             sources: Mapping[StreamId, SourceTotals] | None = None) -> list[StreamRow]:
        """A row per history (in order); "now" is the `NOW_COLUMNS` columns before `stops[i]` (default: the newest);
        `sources`: the rebinned streams' own buckets (`Accumulator.sources`), whose "all" figures the report prints.
        A stream that ended before the newest of them all has no "now" and no comparison with its peers."""
        cached = self._streams
        changed: dict[tuple[str, str], list[tuple[StreamHistory, _Stream]]] = {}
        groups: dict[tuple[str, str, str | None], list[int]] = {}
        states = []
        for i, hist in enumerate(histories):
            state = cached.get(hist.stream)
            if state is None:
                state = cached[hist.stream] = _Stream(hist)
            stop = hist.n if stops is None else min(stops[i], hist.n)
            group = (hist.stream.datasource, hist.stream.unit)
            if state.key != (hist.n, hist.dropped, stop):
                state.refresh(hist, stop)
                changed.setdefault(group, []).append((hist, state))
            groups.setdefault(state.peers, []).append(i)
            states.append(state)
        for streams in changed.values():
            _percentiles(streams)
            for hist, state in streams:
                source = sources.get(hist.stream) if sources else None
                if source is not None:
                    state.whole_stream(hist, source)
        rows = [StreamRow(i, hist, s.label, s.pct[0], s.pct[1], s.pct[2], s.pct[3], s.spent, s.waited_now,
                          end_s=s.end_s, interval_s=s.interval_s, now_rows=s.now_rows,
                          open=frozenset(name for name, bound in zip(FIGURES, s.open, strict=True) if bound),
                          at_most=frozenset(name for name, bound in zip(FIGURES, s.at_most, strict=True) if bound))
                for i, (hist, s) in enumerate(zip(histories, states, strict=True))]
        _mark_ended(rows)
        for (_, _, key), members in groups.items():
            if key is not None:  # no rank, disk or instance in the label: `read` and `fsync` are no peers
                peers = [rows[i] for i in members]
                going = any(not r.ended for r in peers)
                for r in peers:
                    r.stopped_alone = going
                _compare_peers(peers)
        return rows


def _percentiles(members: list[tuple[StreamHistory, _Stream]]) -> None:
    """p50/p99 now and overall of streams of one unit and datasource, in one call, and which are a lower bound only
    (`bounded_estimates`)."""
    now = [(hist, state.latest[None], state.latest_t[None] if state.exact_now else None) for hist, state in members]
    whole = [(hist, state.counts[None], state.times[None] if state.exact_all else None) for hist, state in members]
    overflow = [(np.array([state.over[w][0]]), np.array([state.over[w][1]])) for w in (0, 1) for _, state in members]
    pct, bounds = bounded_estimates([*now, *whole], overflow, SHOWN)
    n = len(members)
    for k, (_, state) in enumerate(members):
        state.pct = (*pct[k].tolist(), *pct[n + k].tolist())
        state.open = tuple(bool(b) for b in (*bounds[k], *bounds[n + k]))


def _mark_ended(rows: list[StreamRow]) -> None:
    """Streams whose newest column is more than `NOW_COLUMNS` of their intervals older than the newest of all: ended,
    with no "now" (their newest columns are not now)."""
    ends = np.array([r.end_s for r in rows])
    if not np.isfinite(ends).any():
        return
    newest = float(np.nanmax(ends))
    for r in rows:
        behind = newest - r.end_s
        if math.isfinite(behind) and behind > NOW_COLUMNS * (r.interval_s if r.interval_s > 0 else 0.0):
            r.behind_s, r.p50_now, r.p99_now = behind, math.nan, math.nan


@dataclass(frozen=True, slots=True)
class SharedClock:
    """The overview's one time axis: cells of `span` seconds, the last centred on `newest` (the newest column of any
    stream); a stream's column goes in the cell its end falls in. With `oldest` (the start of the oldest column of
    all: a run that has ended), `fitted` spans the whole run over the cells; with `runs` (the times with columns,
    apart where long silences are cut out: `overview_axis.cut_runs`), each run over its `allotted` cells, a cell for
    each silence between them."""

    newest: float
    span: float
    oldest: float = math.nan
    runs: tuple[tuple[float, float], ...] = ()
    allotted: tuple[int, ...] = ()

    @staticmethod
    def of(rows: list[StreamRow], zoom: int = 1, whole: bool = False,
           stops: Mapping[int, int] | None = None) -> SharedClock | None:
        """The clock of `rows`: the newest column of all, the median interval times `zoom` (`whole`: and the start of
        the oldest column of all, for `fitted`, and the runs apart in time of the columns before each row's stop in
        `stops`, default: all); None without columns."""
        ends = np.array([r.end_s for r in rows])
        spans = np.array([r.interval_s for r in rows])
        spans = spans[np.isfinite(spans) & (spans > 0)]
        if not np.isfinite(ends).any() or not spans.size:
            return None
        interval = float(median_of(spans))
        shown = [r for r in rows if whole and r.hist.n and math.isfinite(r.end_s)]
        oldest = min((float(r.hist.meta_in("start", slice(0, 1))[0]) for r in shown), default=math.nan)
        runs = cut_runs([stream_runs(r.hist, r.hist.n if stops is None else stops.get(r.index, r.hist.n),
                                     SILENT_INTERVALS * (r.interval_s if r.interval_s > 0 else interval))
                         for r in shown], interval) if shown else ()
        return SharedClock(float(np.nanmax(ends)), interval * max(1, zoom), oldest, runs)

    def fitted(self, cells: int) -> SharedClock:
        """This clock on `cells` cells: when it knows the oldest column, the run from its start to `newest` over all
        the cells, so no part of the strip is left before its start. A run shorter than the cells: a column over
        several cells; a longer one: each cell the columns that end in it (`cells_by_time`), one or two where the
        run is a little longer than the strip (a whole number of columns per cell left up to half of it empty).
        Runs apart in time each get their cells (`overview_axis.allot`), a cell between them for the silence."""
        run = self.newest - self.oldest
        if not (math.isfinite(run) and run > 0) or cells < 2:
            return self
        runs, allotted = allot(self.runs, cells) if self.runs else ((), ())
        if len(runs) > 1:
            return SharedClock(self.newest, float(np.median(run_widths(runs, allotted))), self.oldest, runs, allotted)
        return SharedClock(self.newest, run / (cells - 0.5), self.oldest)

    def _apart(self, cells: int) -> bool:
        """Whether the cells are runs apart (`fitted` for these cells)."""
        return bool(self.allotted) and sum(self.allotted) + len(self.allotted) - 1 == cells

    def edges(self, cells: int) -> np.ndarray:
        """(cells + 1) ascending times: cell k holds the columns whose end falls in (edges[k], edges[k + 1]]."""
        if self._apart(cells):
            return run_edges(self.runs, self.allotted)
        return self.newest + self.span / 2 - self.span * np.arange(cells, -1, -1, dtype=np.float64)

    def cell_ends(self, cells: int) -> np.ndarray:
        """The time each cell stands for (the column end it is centred on; NaN in a silence cut out), for the time
        axis."""
        if self._apart(cells):
            return run_cell_ends(self.runs, self.allotted)
        return self.edges(cells)[1:] - self.span / 2

    def gaps(self, cells: int) -> list[int]:
        """The cells of the silences cut out of the axis (none unless `fitted` found runs apart)."""
        return gap_cells(self.allotted) if self._apart(cells) else []


def _compare_peers(peers: list[StreamRow]) -> None:
    """`vs_peers` of peers (one unit and datasource; one label but for its rank, disk or instance, as
    `analysis.peers`: streams whose label names none have no peers): p99 now over the median p99 now of the others
    (two or more with a p99 now), as `analysis.peers.ratios_to_others`. A p99 now that is a lower bound only gives a
    lower bound (listed in `open` as "vs peers", written `≥`) where the others' median is exact; a median that a
    lower bound among the others leaves open gives no ratio (it cannot be told)."""
    now = np.array([r.p99_now for r in peers])
    ok = np.isfinite(now) & (now > 0)
    if ok.sum() < 2:
        return
    at_least = np.array(["p99 now" in r.open for r in peers]) & ok
    ratios = ratios_to_others(np.where(ok, now, np.nan))
    if at_least.any():  # the others' median again, with every lower bound as large as it can be
        largest = np.where(at_least, float(np.nanmax(now[ok])) * 1e6, np.where(ok, now, np.nan))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            told = np.isclose(now / ratios, largest / ratios_to_others(largest), rtol=1e-12, atol=0.0)
        ratios = np.where(told, ratios, np.nan)
    for r, v, bound in zip(peers, ratios.tolist(), at_least.tolist(), strict=True):
        r.vs_peers = v
        if bound and math.isfinite(v):
            r.open |= {"vs peers"}


def natural_key(label: str) -> tuple[tuple[int, str], ...]:
    """Sort key of a label with its numbers in numeric order: rank2 before rank10."""
    return tuple((int(part), "") if k % 2 else (0, part) for k, part in enumerate(DIGITS.split(label.casefold())))


def sort_rows(rows: list[StreamRow], order: str, needle: str = "") -> list[StreamRow]:
    """Rows whose label contains `needle` (case-insensitive), slowest first by `order` (missing values last)."""
    needle = needle.casefold()
    kept = [r for r in rows if needle in r.label.casefold()] if needle else list(rows)
    if order == "label":
        return sorted(kept, key=lambda r: natural_key(r.label))
    attr = {"p99 now": "p99_now", "waited": "waited_s", "vs peers": "vs_peers"}[order]

    def key(r: StreamRow) -> tuple[bool, float]:
        v = getattr(r, attr)
        return (not math.isfinite(v), -v if math.isfinite(v) else 0.0)

    return sorted(kept, key=key)
