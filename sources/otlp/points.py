"""OTLP histogram points to Intervals: one stream per resource, scope, metric and attribute set.

Temporality:
- DELTA: each point is one column, from its `start_time_unix_nano` to its `time_unix_nano`. A point that starts after
  its series' previous one ended (by half its own span or more) follows a stretch with no event: the SDKs send no
  delta point for a collection that recorded nothing, and start the next point at the collection before it. That
  stretch is empty columns, as many as the point's span fits in it (QUIET_MAX at most), as cumulative points would
  have given, so that the rate, the silences and the maps see it. An export lost on its way (an exporter that gave
  up its retries) leaves the same hole, its events unknown; the times cannot tell it from a quiet stretch (the
  cumulative temporality loses nothing there). Not filled: a stretch longer than its series is kept without a point
  (IDLE_S, IDLE_INTERVALS: it went away and came back), nor in a series that several processes write (below).
- CUMULATIVE: consecutive points of a stream are diffed. The first point counts everything since its start
  time (OTel says when counting began, so nothing is lost or counted twice); without a start time it is only a
  baseline. A start time that changes, or a count or bucket that goes down, is a reset: the column is marked
  and counts what the point holds since its new start. Exponential points are compared at the coarser of the
  two scales (downscaling is exact). Buckets that change while the count goes on (other explicit bounds, another
  zero threshold) cannot be diffed: that column is a gap, said once per series, and the point is the new baseline;
  but a zero threshold widened over whole buckets of the earlier point (no negative values) is diffed exactly, those
  buckets moved into its zero count as the SDK moved them.
- A point flagged "no recorded value" is skipped; a point not later than its stream's previous one is skipped (a
  resent identical point silently): every one counts as skipped, the first said at once, the series' further ones
  said as a count, now and then (SAY_AGAIN_S, then at doubling spans) and when the input ends (`finish`). But a
  delta point with a start time of its own is a column of its own however late it comes: processes that share a
  resource (pre-forked workers with one service.instance.id) send one series, and the network or a shared file
  puts one's point after another's later one. Only a point of the same end time as one the series had within RESEND_S
  of its newest point (no two processes end a point at the same nanosecond) is not counted again: silently when it is
  that point resent (an exporter's retry, however many other points came between), else skipped (one instrument
  under two Views: their points' start times may differ).

Units (UCUM, case-sensitive: `MS` or `S` is no duration, `H` no hour): rows start at 1 unit of the stream, so
streams are in microseconds (nanoseconds for `ns`). `us` and `ns` streams keep the metric's unit, so exponential scales
>= 0 fold exactly; `s`, `ms`, `min`, `h` and `d` are read as microseconds, their buckets scaled and spread (in
milliseconds, ten octaves of sub-millisecond values shared one row); a histogram without a unit is read as
milliseconds (the unit the SDKs' default bounds 0, 5, 10, 25 ... 10000 are meant for); any other unit (`By`,
`{request}`, `1`; UCUM's `wk`, `mo` and `a` too) is not read and the metric is skipped with a notice. Every
interval keeps its point's own buckets (`source_buckets`): percentiles come from them, or from the rows inside a
bucket wider than they are (`SourceTotals.rows_within`).

A point's optional `min` and `max` bound its column: those of a delta point are its column's; those of a cumulative
point, the smallest and largest since its start time, bound the column diffed from it too (where the max grew, the
column holds it; where it did not, the column's values are at most it; where neither moved, its sum places its events
over no more octaves than its series' first column that held both: `_width`). They narrow the lowest and the highest
bucket holding events when spread onto the rows (one event at the min, one at the max, where the column holds them), and
the column's values seen (`Interval.extremes`) say so: in its lowest
row the smallest value at least the min, in its highest the largest at most the max (every other row its own range),
so that percentiles, from the rows or from the source's buckets, stay within them. Bounds that the buckets contradict
(a min above the lowest bucket holding events, a max below the highest; negative values) are not used.

Memory: a series with no point for IDLE_S, or four of its own intervals if longer, or IDLE_FIRST_S when it has
sent one point only, lets go of its last point; its label stays. Time is the points' own, but each sender's
(resource's) clock is aligned with the others' when it is first seen, so a host whose clock is an hour ahead is as
current as the rest; and a clock that leaps more than LEAP_S past the others' (a point from the future) has the
leap taken up into its own offset, so it moves the shared clock by LEAP_S at most, too little to idle anyone's
series (its own included), and a clock that steps back goes on from where it was. If a series comes back with
the same start time (the same cumulative counters), its first point is a baseline, so nothing is counted twice.

Labels are `service/metric{attr=value,...}` (`service.namespace/service.name`); a stream whose label another
stream already has (two processes of one service) gets the first of `service.instance.id`, `host.name`,
`process.pid` that tells it apart. Stream names come from `StreamNames`: a label longer than MAX_LABEL is cut in
the middle (the end, with the attributes and what tells streams apart, is kept), and a name another stream has
already, cut or not, gets `(2)`, `(3)`...
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import NSLOTS, TOP_SLOT, bounds_in_unit
from latencymap.core.model import Interval, Notice, SourceBuckets, StreamId, empty_counts
from latencymap.core.sanitize import StreamNames, clean_label, clean_text
from latencymap.core.units import normalize_unit, unit_seconds
from latencymap.plugins import Item
from latencymap.sources.otlp.explicit import spread_explicit
from latencymap.sources.otlp.expo import (
    downscale,
    edges,
    fold_exact,
    lower_edge,
    own_buckets,
    spread_expo,
    subtract,
)

DATASOURCE = "otlp"
DELTA, CUMULATIVE = 1, 2
FLAG_NO_RECORDED_VALUE = 1
DEFAULT_UNIT = "ms"
#: Problems listed one by one per request; the rest are counted in one notice.
MAX_PROBLEMS = 3
#: A series with no point for this long (points' clocks), or IDLE_INTERVALS of its own intervals if that is longer,
#: lets go of its last point (pods come and go in a day).
IDLE_S = 900.0
IDLE_INTERVALS = 4
#: ... and a series seen once (its interval not known yet) after this long.
IDLE_FIRST_S = 4 * 3600.0
#: Points taken in between looks for idle series.
EVICT_EVERY = 1024
#: How far one point may move a sender's aligned clock past the shared one (or past its own newest): more is a
#: clock that leapt, taken up into that sender's offset. Well under IDLE_S, so that no one point idles others.
LEAP_S = IDLE_S / 4
#: Earlier start times (restarts, or other processes with the same resource) a cumulative series keeps a point of.
MAX_WRITERS = 8
#: How long (the series' own clock: its newest point's end) a delta point's end time and content are remembered, to
#: tell a resend from a point of another process with the same resource. The SDKs' exporters send a request again
#: only within their export timeout (10 s by default: OTEL_EXPORTER_OTLP_TIMEOUT) of sending it first, blocking the
#: next export meanwhile; a Collector within its retry_on_failure.max_elapsed_time (300 s by default); a series
#: silent for IDLE_S lets go of what it kept anyway.
RESEND_S = IDLE_S
#: The most delta points of one series remembered at once (the oldest forgotten first): a bound on memory however
#: many processes share the series (65,536 in RESEND_S is 73 points a second).
RESEND_MAX = 1 << 16
#: The fewest events of a column whose min and max (both its own) tell how wide a series' columns are: a cumulative
#: column whose min and max are bounds only (since the start) has its events placed by its sum over no wider a range.
WIDTH_EVENTS = 10
#: Start times of let-go cumulative series remembered at most (their comeback is a baseline).
GONE_MAX = 100_000
#: Empty columns at most for one stretch between two delta points of a series (past it, each is wider).
QUIET_MAX = 256
#: Duration symbols, in the only case UCUM reads as durations.
_SYMBOLS = frozenset({"s", "ms", "us", "ns", "µs", "μs"})
#: Longer durations, read as microseconds: their UCUM symbols (in that case only) and their names (in any), in seconds.
_LONG_SYMBOLS = {"min": 60.0, "h": 3600.0, "d": 86400.0}
_LONG_NAMES = {"minute": 60.0, "minutes": 60.0, "hour": 3600.0, "hours": 3600.0, "day": 86400.0, "days": 86400.0}
#: What a metric's unit must be, said when it is not.
UNITS_READ = "s, ms, us, ns, min, h, d"
_SERVICE = ("service.namespace", "service.name")
_TELL_APART = ("service.instance.id", "host.name", "process.pid")
#: Longest stream name.
MAX_LABEL = 160
#: A series' points skipped for not being after the previous one, after the first: their count is said once this
#: long (the points' clock) has passed since it was last said, and since the first (doubling spans), and at the end.
SAY_AGAIN_S = 60.0

Attrs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class StreamKey:
    """What makes a stream: the resource's attributes, the scope, the metric, its kind and the point's attributes."""

    resource: Attrs
    scope: str
    metric: str
    exponential: bool
    attributes: Attrs


@dataclass(slots=True)
class Point:
    """One histogram data point; `counts` are the explicit buckets, or the positive buckets from `offset`."""

    key: StreamKey
    unit: str
    temporality: int
    start_ns: int
    time_ns: int
    count: int
    sum: float | None
    counts: np.ndarray
    bounds: tuple[float, ...] = ()
    scale: int = 0
    offset: int = 0
    zero_count: int = 0
    zero_threshold: float = 0.0
    negative: int = 0
    flags: int = 0
    #: The point's `min` and `max` (both or neither): for a cumulative point, of every value since its start time.
    least: float | None = None
    most: float | None = None
    #: Whether the point holds its min and its max, or (a diff of cumulative points) they are bounds only.
    held_ends: tuple[bool, bool] = (True, True)

    def held(self) -> int:
        """Observations the buckets hold (negative ones included)."""
        return int(self.counts.sum()) + self.zero_count + self.negative


@dataclass
class Decoded:
    """What one OTLP request (or file line) gave: points, rejected points' reasons, metrics that are no histograms."""

    points: list[Point] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ignored: dict[str, str] = field(default_factory=dict)
    signals: set[str] = field(default_factory=set)


def stream_unit(unit: str) -> tuple[str, float] | None:
    """(stream unit, factor from the metric's unit) for a metric unit; None when it is not a duration read. OTel units
    are UCUM, which is case-sensitive: `Ms` is a megasecond, `mS` a millisiemens, `S` a siemens, `H` a henry, none of
    them a latency unit (spelled-out names such as `milliseconds` are taken in any case)."""
    text = unit.strip() or DEFAULT_UNIT
    long = _long_seconds(text)
    if long is not None:
        return "microsec", long * 1e6
    if text.lower() in _SYMBOLS and text not in _SYMBOLS:
        return None
    try:
        name = normalize_unit(text)
    except ValueError:
        return None
    return {"sec": ("microsec", 1e6), "millisec": ("microsec", 1e3)}.get(name, (name, 1.0))


def _long_seconds(text: str) -> float | None:
    """Seconds in a minute, hour or day unit (`min`, `h`, `d`, `minutes` ...); None for any other."""
    return _LONG_SYMBOLS.get(text, _LONG_NAMES.get(text.lower()))


def _metric_seconds(unit: str) -> float:
    """Seconds in one of a metric's unit (one `stream_unit` reads)."""
    text = unit.strip() or DEFAULT_UNIT
    long = _long_seconds(text)
    return unit_seconds(text) if long is None else long


class PointStreams:
    """Turns decoded points into Intervals and Notices, keeping each stream's last point and label."""

    def __init__(self) -> None:
        self._last: dict[StreamKey, Point] = {}
        self._streams: dict[StreamKey, StreamId] = {}
        self._labels: dict[str, StreamKey] = {}  # whole labels, told apart by resource, of the streams named so far
        self._names = StreamNames(MAX_LABEL)
        self._said: set[tuple[str, ...]] = set()
        self._gone: dict[StreamKey, int] = {}  # let-go cumulative series: their start time
        self._every: dict[StreamKey, int] = {}  # each series' last interval (ns)
        self._writers: dict[StreamKey, dict[int, Point]] = {}  # cumulative series' earlier start times' points
        self._recent: dict[StreamKey, dict[int, int]] = {}  # delta series' last points: their end, what they hold
        self._shared: set[StreamKey] = set()  # delta series with points that overlap (several processes write them)
        self._widths: dict[StreamKey, float] = {}  # octaves: a series' first column that held its min and max
        self._seen: dict[StreamKey, int] = {}  # each series' last point on the shared (aligned) clock (ns)
        self._senders: dict[Attrs, _Sender] = {}
        self._now_ns: int | None = None  # the shared clock: the newest aligned point
        self._taken = 0
        self._late: dict[str, _Skipped] = {}  # per stream label: points skipped as not after the previous one
        self._passed_over = ""  # why the first metric (or signal) that is no latency histogram was skipped

    def feed(self, decoded: Decoded, origin: str) -> Iterator[Item]:
        """Items for one request or line; `origin` (peer or file and line) starts every message."""
        for signal in sorted(decoded.signals):
            yield from self._passing_over(("signal", signal), origin, f"{signal} are not metrics")
        for name, kind in decoded.ignored.items():
            yield from self._passing_over(("kind", name, kind), origin, f"metric {clean_text(name, 80)!r} is a {kind}, "
                                          "not a Histogram or ExponentialHistogram")
        for problem in decoded.problems[:MAX_PROBLEMS]:
            yield Notice(f"{origin}: {problem}; point skipped")
        if len(decoded.problems) > MAX_PROBLEMS:
            more = len(decoded.problems) - MAX_PROBLEMS
            yield Notice(f"{origin}: {more} more malformed points skipped", skipped=more)
        for point in decoded.points:
            yield from self._point(point, origin)
        self._taken += len(decoded.points)
        if self._taken >= EVICT_EVERY:
            self._taken = 0
            self.let_go_idle()

    def none_taken(self, name: str, where: str = "in it") -> Iterator[Notice]:
        """At the end of an input that gave no latency histogram but skipped something else: why, as one skipped
        record (so that an input with nothing readable fails as one whose every record was skipped); `where`: "in
        it" (a file), "received" (a receiver)."""
        if not self._streams and self._passed_over:
            yield Notice(f"{name}: no latency histogram {where}: {self._passed_over}; skipped")

    def finish(self) -> Iterator[Notice]:
        """At the end of the input: the count of each series' skipped points not said yet (also from another thread as
        the command ends, `say_at_exit`: the series are copied first)."""
        for label, late in list(self._late.items()):
            if late.pending:
                yield _late_notice(label, late)

    def let_go_idle(self) -> int:
        """Drop the last point of the series idle on the shared clock, each sender's aligned on it (see the module
        docstring); how many."""
        idle_ns, first_ns = int(IDLE_S * 1e9), int(IDLE_FIRST_S * 1e9)
        every, seen, senders = self._every, self._seen, self._senders
        now = self._now_ns or 0
        idle = [key for key in self._last
                if now - seen[key] > (max(idle_ns, IDLE_INTERVALS * every[key]) if key in every else first_ns)]
        for key in idle:
            last = self._last.pop(key)
            every.pop(key, None)
            seen.pop(key, None)
            self._writers.pop(key, None)
            self._recent.pop(key, None)
            self._shared.discard(key)
            self._widths.pop(key, None)
            if last.temporality != DELTA:
                self._gone[key] = last.start_ns
        if idle:
            kept = {key.resource for key in self._last}
            for resource in [r for r in senders if r not in kept]:
                del senders[resource]  # back later, it is aligned afresh
        while len(self._gone) > GONE_MAX:
            del self._gone[next(iter(self._gone))]
        return len(idle)

    def _keep(self, point: Point) -> None:
        """`point` is its series' last point now: on its sender's aligned clock, and the shared clock moved on."""
        self._last[point.key] = point
        t = point.time_ns
        sender = self._senders.get(point.key.resource)
        now = self._now_ns
        if sender is None:  # first seen: as current as the rest
            sender = self._senders[point.key.resource] = _Sender(t - (t if now is None else now))
        aligned = t - sender.offset
        leap = int(LEAP_S * 1e9)
        if now is not None and aligned > max(now, sender.aligned_ns + leap):  # leapt ahead of everyone
            aligned = max(now, sender.aligned_ns + leap)
            sender.offset = t - aligned
        elif aligned < sender.aligned_ns - leap:  # stepped back (from a leap, or NTP): it goes on from where it was
            aligned = sender.aligned_ns
            sender.offset = t - aligned
        sender.aligned_ns = max(sender.aligned_ns, aligned)
        self._seen[point.key] = aligned
        self._now_ns = aligned if now is None else max(now, aligned)

    @property
    def held(self) -> int:
        """Series whose last point is kept."""
        return len(self._last)

    def _once(self, key: tuple[str, ...], message: str, skipped: int = 0) -> Iterator[Notice]:
        if key not in self._said:
            self._said.add(key)
            yield Notice(message, skipped=skipped)

    def _passing_over(self, key: tuple[str, ...], origin: str, why: str) -> Iterator[Notice]:
        """Skip what is no latency histogram, said once; the first such reason is kept (`none_taken`)."""
        self._passed_over = self._passed_over or why
        yield from self._once(key, f"{origin}: {why}; skipped")

    def _point(self, point: Point, origin: str) -> Iterator[Item]:
        if point.flags & FLAG_NO_RECORDED_VALUE:
            return
        metric = clean_text(point.key.metric, 80)
        unit = stream_unit(point.unit)
        if unit is None:
            yield from self._passing_over(("unit", point.key.metric, point.unit), origin, f"metric {metric!r} has unit "
                                          f"{clean_text(point.unit, 40)!r}, not a time unit latencymap reads "
                                          f"({UNITS_READ})")
            return
        if not point.unit.strip():
            yield from self._once(("nounit", point.key.metric),
                                  f"{origin}: metric {metric!r} has no unit; read as {DEFAULT_UNIT}")
        stream = self._stream(point.key, unit[0])
        if point.negative:
            yield from self._once(("negative", stream.label), f"{origin}: {stream.label}: negative values are "
                                  "not latencies; their buckets are ignored, and so is the sum of a column that holds "
                                  "them (it counts them too): that column's time waited is estimated from its buckets")
        if point.held() != point.count:
            yield from self._once(("count", stream.label), f"{origin}: {stream.label}: count {point.count} but "
                                  f"the buckets hold {point.held()}; the buckets are used")
        prev = self._last.get(point.key)
        if prev is not None and point.time_ns > prev.time_ns:
            self._every[point.key] = point.time_ns - prev.time_ns
        if point.temporality == DELTA:
            yield from self._delta(point, stream, unit[1], origin)
        else:
            yield from self._cumulative(point, stream, unit[1], origin)

    def _delta(self, point: Point, stream: StreamId, factor: float, origin: str) -> Iterator[Item]:
        prev = self._last.get(point.key)
        start = point.start_ns
        late = prev is not None and point.time_ns <= prev.time_ns
        if not 0 < start < point.time_ns:
            if prev is not None and late:
                yield from self._not_after(point, prev, stream, origin)
                return
            start = prev.time_ns if prev is not None else point.time_ns - 1_000_000_000
            yield from self._once(("nostart", stream.label), f"{origin}: {stream.label}: delta point without a "
                                  "start time before its time; the column starts at the previous point (or 1 s before)")
        recent = self._recent.setdefault(point.key, {})
        what = _content(point)
        seen = recent.get(point.time_ns)
        if seen is not None:
            if seen != what:  # another point of that end time: one instrument under two Views
                yield from self._skip(point, point.time_ns, stream, origin)
            return  # else that point resent (an exporter's retry)
        _remember(recent, point.time_ns, what, point.time_ns if prev is None else max(prev.time_ns, point.time_ns))
        if late:
            self._shared.add(point.key)
            yield from self._once(("overlap", stream.label), f"{origin}: {stream.label}: delta points that overlap "
                                  "the series' later ones, each with its own start and end time: processes with the "
                                  "same resource attributes (the same service.instance.id) send this series; every "
                                  "point is counted (give each process its own service.instance.id to see them "
                                  "apart)", 0)
        else:
            if prev is not None and point.key not in self._shared:
                yield from self._quiet(point, prev.time_ns, start, stream, factor)
            self._keep(point)
        yield self._interval(stream, factor, point, start, point.time_ns, reset=False)

    def _quiet(self, point: Point, after_ns: int, start_ns: int, stream: StreamId, factor: float) -> Iterator[Interval]:
        """Empty columns from `after_ns`, where a delta series' previous point ended, to `start_ns`, where `point`
        starts: as many as `point`'s span fits in that time (none under half of it), QUIET_MAX at most; none when the
        series would have been let go meanwhile (see the module docstring)."""
        quiet, span = start_ns - after_ns, point.time_ns - start_ns
        if quiet <= 0 or span <= 0 or quiet > max(IDLE_S * 1e9, IDLE_INTERVALS * span):
            return
        n = min(round(quiet / span), QUIET_MAX)
        empty = _empty(point)
        for k in range(n):
            yield self._interval(stream, factor, empty, after_ns + quiet * k // n, after_ns + quiet * (k + 1) // n,
                                 reset=False)

    def _cumulative(self, point: Point, stream: StreamId, factor: float, origin: str) -> Iterator[Item]:
        prev = self._last.get(point.key)
        if prev is None:
            self._keep(point)
            if self._gone.pop(point.key, None) == point.start_ns:
                yield from self._once(("back", stream.label), f"{origin}: {stream.label}: back after {IDLE_S:g} s or "
                                      "more without a point; this point is the baseline for the next one", 0)
                return
            if 0 < point.start_ns < point.time_ns:
                yield self._interval(stream, factor, point, point.start_ns, point.time_ns, reset=False)
            else:
                yield from self._once(("baseline", stream.label), f"{origin}: {stream.label}: cumulative point "
                                      "without a start time; it is the baseline for the next one", 0)
            return
        others = self._writers.get(point.key)
        if point.start_ns != prev.start_ns and others is not None and point.start_ns in others:
            yield from self._second_writer(point, prev, others, stream, factor, origin)
            return
        if point.time_ns <= prev.time_ns:
            yield from self._not_after(point, prev, stream, origin)
            return
        self._keep(point)
        if point.start_ns != prev.start_ns:  # a restart, or another process with the same resource: keep the old
            others = self._writers.setdefault(point.key, {})
            others[prev.start_ns] = prev
            while len(others) > MAX_WRITERS:
                del others[next(iter(others))]
        if point.start_ns != prev.start_ns:
            yield self._interval(stream, factor, point, max(prev.time_ns, point.start_ns), point.time_ns, reset=True)
        else:
            yield from self._since(point, prev, stream, factor, origin)

    def _second_writer(self, point: Point, prev: Point, others: dict[int, Point], stream: StreamId, factor: float,
                       origin: str) -> Iterator[Item]:
        """A cumulative point whose start time is an earlier one of its series', not the latest: a restart never
        goes back to an old start time, so two processes with the same resource write this series. Each is diffed
        against its own previous point."""
        mine = others[point.start_ns]
        if point.time_ns <= mine.time_ns:
            yield from self._not_after(point, mine, stream, origin)
            return
        yield from self._once(("writers", stream.label), f"{origin}: {stream.label}: points of two start times "
                              "alternate: processes with the same resource attributes (the same service.instance.id) "
                              "send this series; each is counted against its own previous point (give each process "
                              "its own service.instance.id to see them apart)", 0)
        del others[point.start_ns]
        others[prev.start_ns] = prev
        self._keep(point)
        yield from self._since(point, mine, stream, factor, origin)

    def _since(self, point: Point, prev: Point, stream: StreamId, factor: float, origin: str) -> Iterator[Item]:
        """The column from `prev` to `point`, cumulative points of one start time: their difference; a gap, said,
        where the buckets changed while the counts went on (the events since `prev` cannot be split into the new
        buckets); else a reset, a counter having gone down, counting what `point` holds."""
        delta = _difference(point, prev)
        if delta is not None:
            yield self._interval(stream, factor, delta, prev.time_ns, point.time_ns, reset=False)
        elif _rebucketed(point, prev):
            yield from self._once(("rebucketed", stream.label), f"{origin}: {stream.label}: the buckets changed (new "
                                  "bounds or zero threshold) while the counts went on: what happened since the point "
                                  "before cannot be split into the new buckets, so that column is a gap; counting "
                                  "again from this point", 0)
            start, end = _span(prev.time_ns, point.time_ns)
            yield Interval(stream, start, end, empty_counts(), None, gap=True,
                           duration=(point.time_ns - prev.time_ns) / 1e9)
        else:
            yield self._interval(stream, factor, point, max(prev.time_ns, point.start_ns), point.time_ns, reset=True)

    def _not_after(self, point: Point, prev: Point, stream: StreamId, origin: str) -> Iterator[Notice]:
        """Skip a point not after `prev`, its series' previous one: silently when it is `prev` resent, else counted,
        the first said at once and the further ones as a count now and then (SAY_AGAIN_S, doubling) and at the end."""
        if not _resent(point, prev):
            yield from self._skip(point, prev.time_ns, stream, origin)

    def _skip(self, point: Point, prev_ns: int, stream: StreamId, origin: str) -> Iterator[Notice]:
        """Skip `point`, not after its series' previous point (at `prev_ns`): the first said, the rest counted."""
        label = stream.label
        now = self._now_ns if self._now_ns is not None else point.time_ns
        late = self._late.get(label)
        if late is None:
            self._late[label] = _Skipped(origin, now, now, 1)
            what = (f"a second point at {point.time_ns} ns, the time of the previous one (one instrument under two "
                    "Views, or two processes with the same resource?)" if point.time_ns == prev_ns else
                    f"point at {point.time_ns} ns is not after the previous one ({prev_ns} ns)")
            yield Notice(f"{origin}: {label}: {what}; further ones of this series are counted, not listed; skipped")
            return
        late.origin = origin
        late.total += 1
        late.pending += 1
        if now - late.said_ns >= max(int(SAY_AGAIN_S * 1e9), late.said_ns - late.first_ns):
            late.said_ns = now
            yield _late_notice(label, late)

    def _interval(self, stream: StreamId, factor: float, point: Point, start_ns: int, end_ns: int,
                  reset: bool) -> Interval:
        seconds = None if point.sum is None else point.sum * _metric_seconds(point.unit)
        if seconds is not None and not (math.isfinite(seconds) and seconds >= 0):
            seconds = None  # a negative or endless sum is no time spent (and no recording could hold it)
        if point.negative:
            seconds = None  # the sum counts the negative values left out: not the kept events' time
        own: SourceBuckets | None = None
        least, most = _bounds(point, factor)
        if not point.key.exponential:
            counts = spread_explicit(point.bounds, point.counts, factor, point.sum, least, most, point.held_ends,
                                     self._width(point, least, most))
            bounds = (*(b * factor for b in point.bounds), math.inf)
            own = SourceBuckets(bounds, point.counts.astype(np.int64), seconds)
        else:
            if point.scale >= 0 and factor == 1.0:  # exact rows; the buckets kept, finer than rows (or below 1 unit)
                counts = fold_exact(point.scale, point.offset, point.counts)
                counts[0] += point.zero_count
                bounds, held = own_buckets(point.scale, point.offset, point.counts, point.zero_count,
                                           point.zero_threshold, factor)
            else:
                counts, bounds, held = spread_expo(point.scale, point.offset, point.counts, point.zero_count,
                                                   point.zero_threshold, factor, least, most, point.held_ends)
            own = SourceBuckets(bounds, held, seconds)
        start, end = _span(start_ns, end_ns)
        seen = None if least is None or most is None else row_extremes(counts, least, most, stream.unit)
        return Interval(stream, start, end, counts, None, reset=reset, duration=(end_ns - start_ns) / 1e9,
                        source_buckets=own, extremes=seen)

    def _width(self, point: Point, least: float | None, most: float | None) -> float | None:
        """How wide (octaves) a range the sum may place `point`'s events over, at most, when its min and max are bounds
        only (a cumulative column's, since the start: the widest range between them averaging the column's mean
        spread a burst over the fast rows): as wide as its series' first column of WIDTH_EVENTS or more that held both
        its own (a cumulative series' first, since its start; a later one that held both widened the range seen
        since the start at both ends at once, wider than the columns it is taken for); None until one has."""
        if least is None or most is None or not least > 0:
            return None
        if point.held_ends == (True, True):
            if point.count >= WIDTH_EVENTS and not point.key.exponential:
                self._widths.setdefault(point.key, math.log2(most / least))
            return None
        return self._widths.get(point.key) if point.held_ends == (False, False) else None

    def _stream(self, key: StreamKey, unit: str) -> StreamId:
        stream = self._streams.get(key)
        if stream is not None:
            return stream
        resource = dict(key.resource)
        service = "/".join(resource[k] for k in _SERVICE if resource.get(k)) or "unknown_service"
        attrs = ",".join(f"{k}={v}" for k, v in key.attributes)
        label = clean_label(f"{service}/{key.metric}" + (f"{{{attrs}}}" if attrs else ""))
        other = self._labels.get(label)
        if other is not None:
            tell = [f"{k}={resource[k][:12]}" for k in _TELL_APART
                    if resource.get(k) and resource.get(k) != dict(other.resource).get(k)]
            kind = "exponential" if key.exponential else "explicit"
            candidates = [f"{label} [{kind}]"] if other.exponential != key.exponential else []
            candidates += [f"{label} [{clean_text(t, 40)}]" for t in tell]
            label = next((c for c in candidates if c not in self._labels), label)  # else `(2)` from the names
        self._labels.setdefault(label, key)
        stream = self._streams[key] = StreamId(self._names.name(label, key=key), DATASOURCE, unit)
        return stream


@dataclass(slots=True)
class _Skipped:
    """A series' points skipped as not after the previous one: where the last came from, when the first was said and
    the count last said (the shared clock, ns), how many in all, and how many since the count was last said."""

    origin: str
    first_ns: int
    said_ns: int
    total: int
    pending: int = 0


def _late_notice(label: str, late: _Skipped) -> Notice:
    """The count of a series' skipped points not said yet (which it now is)."""
    more, late.pending = late.pending, 0
    return Notice(f"{late.origin}: {label}: {more} more point{'s' * (more > 1)} not after the previous one "
                  f"({late.total} in all); skipped", skipped=more)


def _empty(point: Point) -> Point:
    """A point of `point`'s series and buckets that counts no event (a column of a stretch with none)."""
    counts = point.counts[:0] if point.key.exponential else np.zeros_like(point.counts)
    return Point(point.key, point.unit, DELTA, 0, 0, 0, None if point.sum is None else 0.0, counts, point.bounds,
                 point.scale, point.offset, zero_threshold=point.zero_threshold)


def _resent(point: Point, prev: Point) -> bool:
    """True when `point` is `prev` sent again (an exporter's retry): the same times, buckets, counts and sum."""
    return (point.time_ns == prev.time_ns and point.start_ns == prev.start_ns and point.count == prev.count
            and point.sum == prev.sum and point.bounds == prev.bounds and point.scale == prev.scale
            and point.offset == prev.offset and point.zero_count == prev.zero_count
            and point.zero_threshold == prev.zero_threshold and point.negative == prev.negative
            and np.array_equal(point.counts, prev.counts))


def _remember(recent: dict[int, int], end_ns: int, what: int, newest_ns: int) -> None:
    """Remember a delta point (its end time, and `what` it holds) among its series' `recent` ones, and forget those
    that ended more than RESEND_S before the series' newest point (`newest_ns`), or past RESEND_MAX: kept in the order
    they came, which is about the order of their times, so the oldest are found first."""
    horizon = newest_ns - int(RESEND_S * 1e9)
    if end_ns >= horizon:
        recent[end_ns] = what
    while recent and (len(recent) > RESEND_MAX or next(iter(recent)) < horizon):
        del recent[next(iter(recent))]


def _content(point: Point) -> int:
    """A digest of a delta point's start time and what it counts: a resend has the same."""
    return hash((point.start_ns, point.count, point.sum, point.bounds, point.scale, point.offset, point.zero_count,
                 point.zero_threshold, point.negative, point.counts.tobytes()))


@dataclass(slots=True)
class _Sender:
    """One resource's clock on the shared one: `offset` (ns) taken from its points' times, and the newest."""

    offset: int
    aligned_ns: int = -(2**63)


#: How far (relatively) a point's min or max may lie past the bucket that should hold it, as the float rounding of
#: an SDK's bucket index, before the buckets contradict it.
_BOUNDS_TOLERANCE = 1e-9


def _bounds(point: Point, factor: float) -> tuple[float | None, float | None]:
    """The point's min and max in the stream unit (`factor` from its own), clipped into its lowest and its highest
    bucket holding events where float rounding put them just outside; (None, None) when it has none, when they
    are negative (negative values are left out) or when its buckets contradict them."""
    if point.least is None or point.most is None or point.least < 0 or point.negative:
        return None, None
    held = np.flatnonzero(point.counts)
    if point.key.exponential:
        index = point.offset + held
        with np.errstate(over="ignore"):
            lows, highs = edges(point.scale, index), edges(point.scale, index + 1)
        if point.zero_count:
            lows, highs = np.concatenate([[0.0], lows]), np.concatenate([[point.zero_threshold], highs])
    else:
        uppers = np.array([*point.bounds, math.inf])
        lows, highs = np.concatenate([[-math.inf], uppers[:-1]])[held], uppers[held]
    if not len(lows):
        return None, None
    least, most = point.least * factor, point.most * factor
    low_top, high_bottom = float(highs[0]) * factor, float(lows[-1]) * factor
    slack = _BOUNDS_TOLERANCE
    if least > low_top + slack * abs(low_top) or most < high_bottom - slack * abs(high_bottom):
        return None, None
    return min(least, low_top), max(most, high_bottom)


def row_extremes(counts: np.ndarray, least: float, most: float, unit: str) -> np.ndarray:
    """(2, NSLOTS) seconds: the values seen in each row holding events of a column whose values lie within
    `[least, most]` (stream unit): its lowest row's from the larger of `least` and its low, its highest row's up to
    the smaller of `most` and its high (the open top row's up to `most`); every other row's its own range."""
    out = np.full((2, NSLOTS), np.nan)
    used = np.flatnonzero(counts)
    if not used.size:
        return out
    low, high = bounds_in_unit(DATASOURCE)
    out[0, used], out[1, used] = low[used], high[used]
    first, last = int(used[0]), int(used[-1])
    out[0, first] = min(max(least, low[first]), high[first])
    out[1, last] = max(min(most, high[last]) if last < TOP_SLOT else most, out[0, last])
    return out * unit_seconds(unit)


def _span(start_ns: int, end_ns: int) -> tuple[float, float]:
    """A column's start and end in seconds; closer than a float second can tell (about 240 ns now), the order is
    kept, not the gap."""
    start, end = start_ns / 1e9, end_ns / 1e9
    return (math.nextafter(end, -math.inf) if start >= end else start), end


def _rebucketed(point: Point, prev: Point) -> bool:
    """True when a cumulative point's buckets are not its previous point's (other explicit bounds, another zero
    threshold; a scale change is compared at the coarser scale) while its count did not go down."""
    return (point.bounds != prev.bounds or point.zero_threshold != prev.zero_threshold) and point.count >= prev.count


def _new_ends(point: Point, prev: Point) -> tuple[bool, bool]:
    """Whether the counts between two cumulative points hold the later one's min and its max: where the min went
    down and the max went up since the earlier one; else they are bounds only."""
    if point.least is None or point.most is None or prev.least is None or prev.most is None:
        return False, False
    return point.least < prev.least, point.most > prev.most


def _difference(point: Point, prev: Point) -> Point | None:
    """`point - prev` as a point of counts since `prev`; None when a counter went down or the buckets changed (a
    zero bucket widened over whole buckets of `prev` is diffed exactly: `_zero_widened`)."""
    if point.count < prev.count or point.zero_count < prev.zero_count:
        return None
    total = None if point.sum is None or prev.sum is None else point.sum - prev.sum
    if not point.key.exponential:
        if point.bounds != prev.bounds or len(point.counts) != len(prev.counts):
            return None
        counts = point.counts - prev.counts
        if (counts < 0).any():
            return None
        return Point(point.key, point.unit, DELTA, prev.time_ns, point.time_ns, point.count - prev.count, total,
                     counts, point.bounds, least=point.least, most=point.most, held_ends=_new_ends(point, prev))
    base_zero, base_counts = prev.zero_count, prev.counts
    if point.zero_threshold > prev.zero_threshold:
        widened = _zero_widened(prev, point.zero_threshold)
        if widened is None:
            return None
        base_zero, base_counts = widened
        if point.zero_count < base_zero:
            return None
    scale = min(point.scale, prev.scale)
    offset, counts = downscale(point.offset, point.counts, point.scale - scale)
    base_offset, base = downscale(prev.offset, base_counts, prev.scale - scale)
    diff = subtract(offset, counts, base_offset, base)
    if diff is None or (diff[1] < 0).any():
        return None
    offset, counts = diff
    nonzero = np.flatnonzero(counts)
    if len(nonzero):
        offset, counts = offset + int(nonzero[0]), counts[nonzero[0]: nonzero[-1] + 1]
    else:
        counts = counts[:0]
    return Point(point.key, point.unit, DELTA, prev.time_ns, point.time_ns, point.count - prev.count, total,
                 counts, scale=scale, offset=offset, zero_count=point.zero_count - base_zero,
                 zero_threshold=point.zero_threshold, negative=max(0, point.negative - prev.negative),
                 least=point.least, most=point.most, held_ends=_new_ends(point, prev))


def _zero_widened(prev: Point, threshold: float) -> tuple[int, np.ndarray] | None:
    """`prev`'s zero count and positive buckets as they read with the wider zero bucket `[0, threshold]`: its buckets
    wholly inside it moved into its zero count (as the SDK moved them); None when that bucket splits one of them
    holding events, or `prev` holds negative values (how many of them moved is not known)."""
    if prev.negative:
        return None
    counts = prev.counts.copy()
    zero = prev.zero_count
    for k in np.flatnonzero(counts):
        index = prev.offset + int(k)
        if lower_edge(prev.scale, index + 1) <= threshold:
            zero += int(counts[k])
            counts[k] = 0
        elif lower_edge(prev.scale, index) < threshold:
            return None
    return zero, counts
