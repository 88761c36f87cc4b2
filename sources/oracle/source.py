"""`latencymap oracle`: wait-event histograms sampled from GV$EVENT_HISTOGRAM_MICRO (or GV$EVENT_HISTOGRAM).

Each interval the source runs one query (bind variables only, see `oracle_sql`) and gets cumulative
counts per (event, instance). It diffs them itself, per instance, with the shared `Differ`, and only
then sums instances (unless `--per-instance`), so a restarted RAC instance (its counters drop to
zero) shows as a reset column while the other instances keep counting correctly; summing first
would let one instance's growth hide another's reset. Oracle's counters only grow while an instance
runs, so one that went down means that instance restarted: the column then counts all of its new
values (its waits since the restart), also in a bucket that has already passed its old value. The
source therefore yields Intervals, not Snapshots. A lost connection is retried with exponential
backoff; the outage becomes gap columns (zero counts, `gap=True`) and sampling resumes from a
fresh baseline. A stream whose first rows come after its instance's (an event's first waits: Oracle lists an
event once it has waited) starts where watching that instance started, with empty columns (gap columns over
outages) before its first, so that its rate and timeline cover all the time it was watched (`_backfill`).
"""

from __future__ import annotations

import bisect
import contextlib
import importlib.util
import itertools
import math
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import click
import numpy as np
from click.core import ParameterSource

from latencymap.core.buckets import ORACLE_OVERFLOW
from latencymap.core.deltas import Differ
from latencymap.core.model import Interval, Notice, Snapshot, StreamId, empty_counts
from latencymap.core.sanitize import clean_text, safe_options
from latencymap.plugins import Item, Source

from .auth import DSN_ENV, Secret, check_no_inline_password, check_no_secret_parameters, resolve_password
from .errors import OracleError, describe_error, first_line, is_lost, is_transient, is_view_missing, shown_dsn
from .sql import MICRO, MILLI, VIEWS, HistogramView, Sample, histogram_query, sample_of_rows, view_for_version

DEFAULT_EVENT = "db file sequential read"
BACKOFF_START = 1.0
BACKOFF_MAX = 60.0
#: An outage longer than this many intervals is drawn as this many (wider) gap columns.
MAX_GAP_COLUMNS = 1000
#: An event that has had no row for this long (and at least 3 polls) is said once; and at the end of a limited run.
MISSING_AFTER_S = 60.0
#: Seconds a single round trip may take before the driver gives up (at least 3 intervals).
MIN_CALL_TIMEOUT = 10.0
_thick_ready = False
#: A wall clock this many seconds off the run's own time (a step: NTP, by hand) is said, once.
CLOCK_STEP_S = 1.0


def _since_boot() -> float:
    """Seconds of a clock that never steps and goes on while the machine sleeps (Linux CLOCK_BOOTTIME; elsewhere the
    monotonic clock): the database counts its waits through a suspend, and a column across one is that long."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


#: What a source built by the CLI sleeps and reads the time with (tests replace these).
default_sleep: Callable[[float], None] = time.sleep
default_clock: Callable[[], float] = time.time
default_monotonic: Callable[[], float] = _since_boot if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic


@dataclass
class _Counters:
    """What diffing needs since the last (re)connect: the differ, the (event, instance) keys it holds, and each
    instance's last poll with rows (an instance's first poll is the baseline)."""

    differ: Differ = field(default_factory=lambda: Differ(name="oracle"))
    keys: set[StreamId] = field(default_factory=set)
    instances: dict[int, float] = field(default_factory=dict)


@dataclass
class _Watched:
    """The columns yielded in this run, end to end (`edges` bound them, `gaps` flags the gap ones), and each
    instance's first poll with rows: what a stream first seen late is filled in with (`OracleSource._backfill`)."""

    edges: array[float] = field(default_factory=lambda: array("d"))
    gaps: bytearray = field(default_factory=bytearray)
    since: dict[int, float] = field(default_factory=dict)

    def add(self, start: float, end: float, gap: bool = False) -> None:
        """One more column (it starts where the last one ended)."""
        if not self.edges:
            self.edges.append(start)
        self.edges.append(end)
        self.gaps.append(gap)

    def columns_from(self, t: float) -> Iterator[tuple[float, float, bool]]:
        """The columns from time `t` on: (start, end, gap)."""
        for k in range(bisect.bisect_left(self.edges, t), len(self.gaps)):
            yield self.edges[k], self.edges[k + 1], bool(self.gaps[k])


class _ConnectionLost(Exception):
    """The session or network went away during a query."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def driver_problem() -> str | None:
    """Why python-oracledb cannot be used here, with the remedy; None when it is installed."""
    if importlib.util.find_spec("oracledb") is None:
        return "python-oracledb is not installed: pip install 'latencymap[oracle]' (or pip install oracledb)"
    return None


def connect(*, dsn: str, user: str | None, password: Secret | None, thick: bool, external_auth: bool,
            call_timeout_s: float) -> Any:
    """Open a python-oracledb connection (thick mode for --thick and --external-auth)."""
    global _thick_ready
    import oracledb

    if (thick or external_auth) and not _thick_ready:
        oracledb.init_oracle_client()
        _thick_ready = True
    kwargs: dict[str, Any] = {"dsn": dsn}
    if user:
        kwargs["user"] = user
    if external_auth:
        kwargs["externalauth"] = True
    elif password is not None:
        kwargs["password"] = password.reveal()
    conn = oracledb.connect(**kwargs)
    conn.call_timeout = int(call_timeout_s * 1000)
    return conn


def _dsn_in_argv(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--dsn`, refused when given in argv with a secret parameter (`check_no_secret_parameters`)."""
    if value is not None and param.name and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
        check_no_secret_parameters(value)
    return value


class OracleSource(Source):
    """Oracle wait-event latency histograms, sampled live from the database."""

    name: ClassVar[str] = "oracle"
    examples: ClassVar[tuple[str, ...]] = (
        "latencymap oracle --dsn dbhost:1521/ORCLPDB1 --user perfstat",
        "latencymap oracle --dsn prod --user perfstat --event 'log file sync'",
        "latencymap oracle --dsn rac-scan:1521/OLTP --user perfstat --per-instance",
    )
    own_limits: ClassVar[bool] = True  # --count columns, --duration: whole polls; the last one says what never came
    summary: ClassVar[str] = ("Oracle wait-event latency from GV$EVENT_HISTOGRAM_MICRO (or GV$EVENT_HISTOGRAM) "
                              "via python-oracledb; password from LATENCYMAP_ORACLE_PASSWORD or a prompt.")

    @classmethod
    def params(cls) -> list[click.Parameter]:
        return [
            click.Option(["--dsn"], required=True, metavar="DSN", envvar=DSN_ENV, callback=_dsn_in_argv,
                         help=f"host:port/service_name, or a tnsnames.ora alias (never user/password@...); or from "
                              f"{DSN_ENV}, which a connect string with a secret parameter (wallet_password=) needs."),
            click.Option(["--user"], default=None, metavar="USER", help="Database user (not needed with "
                         "--external-auth). The password comes from LATENCYMAP_ORACLE_PASSWORD or a prompt."),
            click.Option(["--event", "events"], multiple=True, default=(DEFAULT_EVENT,), show_default=True,
                         metavar="NAME", help="Wait event, exactly as in v$event_name; repeat for several streams."),
            click.Option(["--interval"], type=click.FloatRange(min=0.1), default=3.0, show_default=True,
                         metavar="S", help="Seconds per time column."),
            click.Option(["--instance", "instances"], type=click.IntRange(min=1), multiple=True, metavar="N",
                         help="RAC: only instance N (inst_id); repeatable. Default: all instances."),
            click.Option(["--per-instance", "per_instance"], is_flag=True,
                         help="RAC: one stream per instance instead of their sum."),
            click.Option(["--thick"], is_flag=True, help="Use Oracle Client libraries (thick mode)."),
            click.Option(["--external-auth", "external_auth"], is_flag=True,
                         help="Wallet or OS authentication, no password (implies thick mode)."),
            click.Option(["--histogram"], type=click.Choice(["auto", *VIEWS]), default="auto", show_default=True,
                         help="micro: GV$EVENT_HISTOGRAM_MICRO; milli: GV$EVENT_HISTOGRAM; auto: micro, else milli."),
        ]

    @classmethod
    def unavailable(cls) -> str | None:
        return driver_problem()

    def __init__(self, *, connect_fn: Callable[..., Any] | None = None, sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] | None = None, monotonic: Callable[[], float] | None = None,
                 environ: dict[str, str] | None = None, stdin: Any = None, prompt: Callable[[str], str] | None = None,
                 **options: Any) -> None:
        super().__init__(**options)
        self.dsn: str = options["dsn"]
        self.user: str | None = options.get("user") or None
        self.events: tuple[str, ...] = tuple(options.get("events") or (DEFAULT_EVENT,))
        self.interval = float(options.get("interval") or 3.0)
        self.instances: tuple[int, ...] = tuple(sorted(set(options.get("instances") or ())))
        self.per_instance = bool(options.get("per_instance"))
        self.thick = bool(options.get("thick"))
        self.external_auth = bool(options.get("external_auth"))
        self.histogram: str = options.get("histogram") or "auto"
        self._connect_fn = connect_fn
        self._sleep = sleep
        self._clock = clock
        self._monotonic = monotonic
        check_no_inline_password(self.dsn, self.user)
        if not self.user and not self.external_auth:
            raise OracleError("--user is required (or --external-auth for wallet or OS authentication)")
        extra = {} if prompt is None else {"prompt": prompt}
        self._password = resolve_password(self.user, self.dsn, external_auth=self.external_auth, environ=environ,
                                          stdin=stdin, **extra)
        self._secrets = [self._password] if self._password else []
        self._conn: Any = None
        self.view: HistogramView | None = VIEWS.get(self.histogram)
        self._notes: list[Notice] = []
        #: The unusable rows last said (see `_say_problems`).
        self._problems_said: frozenset[tuple[str, int, str]] = frozenset()
        count, duration = options.get("count"), options.get("duration")
        self.count = None if count is None else int(count)
        self.duration = None if duration is None else float(duration)
        #: Events that have had rows in some poll, and those said to have none (`_missing_events`).
        self._events_seen: set[str] = set()
        self._missing_said: set[str] = set()
        #: Per stream whose overflow bucket held waits, per instance: its count before the run and when last read.
        self._overflow: dict[StreamId, dict[int, list[int]]] = {}
        #: The instances that have had rows in some poll (`_say_overflow`).
        self._polled: set[int] = set()
        #: Whether a step of the wall clock has been said (`_say_clock_step`).
        self._step_said = False

    def __repr__(self) -> str:
        return f"OracleSource(dsn={self.dsn!r}, user={self.user!r})"

    def describe(self) -> dict[str, Any]:
        return {"source": self.name, **safe_options({
            "dsn": self.dsn, "user": self.user, "events": list(self.events), "interval": self.interval,
            "instances": list(self.instances), "per_instance": self.per_instance, "thick": self.thick,
            "external_auth": self.external_auth, "view": self.view.name if self.view else self.histogram})}

    # -- plumbing that tests replace -------------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """Wait (injectable)."""
        (self._sleep or default_sleep)(seconds)

    def clock(self) -> float:
        """Wall-clock epoch seconds (injectable)."""
        return (self._clock or default_clock)()

    def monotonic(self) -> float:
        """Seconds of a clock that never steps (injectable): what columns, pacing and `--duration` are measured on."""
        return (self._monotonic or default_monotonic)()

    def _open(self) -> Any:
        fn = self._connect_fn or connect
        conn = fn(dsn=self.dsn, user=self.user, password=self._password, thick=self.thick,
                  external_auth=self.external_auth, call_timeout_s=max(MIN_CALL_TIMEOUT, 3 * self.interval))
        if self.histogram == "auto" and self.view is None:
            self.view = view_for_version(getattr(conn, "version", None))
        return conn

    def _fail(self, err: BaseException, doing: str) -> OracleError:
        return OracleError(describe_error(err, user=self.user, doing=doing, secrets=self._secrets))

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # the connection is already gone: nothing to release
                conn.close()

    # -- sampling ----------------------------------------------------------------------------------------------

    def _fetch(self, view: HistogramView) -> list[Any]:
        query = histogram_query(view, self.events, self.instances)
        cursor = self._conn.cursor()
        try:
            cursor.execute(query.sql, query.binds)
            return list(cursor.fetchall())
        finally:
            with contextlib.suppress(Exception):  # a dead session's cursor fails to close; the query's error matters
                cursor.close()

    def _sample(self) -> tuple[HistogramView, Sample]:
        """One query; falls back to GV$EVENT_HISTOGRAM when the microsecond view is missing (auto mode)."""
        assert self.view is not None
        try:
            rows = self._fetch(self.view)
        except Exception as err:  # DB-API errors, whatever the driver's classes
            if is_lost(err):
                raise _ConnectionLost(err) from None
            if not (is_view_missing(err) and self.view is MICRO and self.histogram == "auto"):
                raise self._fail(err, f"cannot read {self.view.name}") from None
            self._notes.append(Notice(f"oracle: {MICRO.name} not readable ({first_line(err, self._secrets)}); "
                                      f"using {MILLI.name} (millisecond buckets)", skipped=0))
            self.view = MILLI
            try:
                rows = self._fetch(MILLI)
            except Exception as err2:
                if is_lost(err2):
                    raise _ConnectionLost(err2) from None
                raise self._fail(err2, f"cannot read {MILLI.name}") from None
        sample = sample_of_rows(rows)
        self._say_problems(sample)
        self._say_overflow(sample, self.view)
        return self.view, sample

    def _say_problems(self, sample: Sample) -> None:
        """A notice for rows that cannot be used, once while they stay the same (said again when they change). It
        skips no record (the sample's other rows count): it says which rows' waits are left out."""
        problems = sample.problems
        if not problems or problems == self._problems_said:
            return
        self._problems_said = problems
        ordered = sorted(problems)
        named = "; ".join(f"{event!r} inst {inst}: {what}" for event, inst, what in ordered[:3])
        more = f"; and {len(ordered) - 3} more" if len(ordered) > 3 else ""
        rows = f"{len(ordered)} unusable row{'s' * (len(ordered) > 1)}"
        where = self.view.name if self.view else "the view"
        self._notes.append(Notice(f"oracle: {rows} in {where} ({named}{more}): their waits are not counted (said "
                                  "again only when these rows change)", skipped=0))

    def _say_overflow(self, sample: Sample, view: HistogramView) -> None:
        """A notice, once per stream, that its overflow bucket holds waits (left out: it has no finite range), with
        their count and how many came in this run; the counts are kept for `_overflow_changes`.

        Oracle lists no row for an empty bucket: an instance polled before without this row had none there (0 before
        the run's waits); an instance's first poll gives the count from before the run.
        """
        by_stream: dict[StreamId, dict[int, int]] = {}
        for (event, inst), count in sorted(sample.overflow.items()):
            by_stream.setdefault(self.stream_of(event, inst, view.unit), {})[inst] = count
        for sid, per_inst in by_stream.items():
            held = self._overflow.setdefault(sid, {})
            said = bool(held)
            for inst, count in per_inst.items():
                held.setdefault(inst, [0 if inst in self._polled else count, count])[1] = count
            if said:
                continue
            total, before = sum(per_inst.values()), sum(held[inst][0] for inst in per_inst)
            insts = f" ({', '.join(f'inst {i}: {n:,}' for i, n in per_inst.items())})" if len(per_inst) > 1 else ""
            during = "" if total <= before else ", all of them in this run" if before == 0 else \
                f", {total - before:,} of them in this run"
            self._notes.append(Notice(f"{_overflow_left_out(sid)}: its cumulative count is {total:,}{insts}{during}; "
                                      "waits that reach it later are left out too", skipped=0))
        self._polled.update(inst for _, inst in sample.counts)

    def _overflow_changes(self) -> Iterator[Notice]:
        """At the end of a limited run, for each stream whose overflow count changed since before the run: from what
        to what."""
        for sid, held in self._overflow.items():
            first, last = sum(before for before, _ in held.values()), sum(now for _, now in held.values())
            if last != first:
                grew = f": {last - first:,} waits past the largest bucket in this run" if last > first else ""
                yield Notice(f"{_overflow_left_out(sid)}: its cumulative count went from {first:,} (first read) to "
                             f"{last:,} (last read){grew}", skipped=0)

    def stream_of(self, event: str, inst: int, unit: str) -> StreamId:
        """The output stream of one (event, instance) row group."""
        if self.per_instance:
            label = f"{event} inst {inst}"
        elif self.instances:
            label = f"{event} inst {'+'.join(str(i) for i in self.instances)}"
        else:
            label = event
        return StreamId(label, "oracle", unit)

    def items(self) -> Iterator[Item]:
        try:
            self._conn = self._open()
        except OracleError:
            raise
        except Exception as err:  # DB-API errors, whatever the driver's classes
            raise self._fail(err, f"cannot connect to {shown_dsn(self.dsn, self._secrets)}") from None
        try:
            yield from self._sampling()
        finally:
            self._close()

    def _sampling(self) -> Iterator[Item]:
        """Poll, diff and yield columns until `--count` or `--duration`. Times are the run's own: the wall clock at
        the start plus the monotonic seconds since, so that a step of the wall clock (NTP, by hand) neither stretches
        nor shrinks a column, stalls the pacing or moves the deadline (`_say_clock_step`)."""
        counters, watched = _Counters(), _Watched()
        known: list[StreamId] = []
        prev_t: float | None = None
        gap_since: float | None = None
        due: float | None = None
        columns, polls, started = 0, 0, 0.0
        if self.count is not None and self.count <= 0:
            return
        wall0, mono0 = self.clock(), self.monotonic()
        deadline = None if self.duration is None else wall0 + self.duration
        while True:
            try:
                view, sample = self._sample()
            except _ConnectionLost as lost:
                yield from self._drain_notes()
                yield from self._reconnect(lost.cause)
                counters, due = _Counters(), None
                gap_since = prev_t if gap_since is None else gap_since
                continue
            t = wall0 + (self.monotonic() - mono0)
            yield from self._drain_notes()
            yield from self._say_clock_step(t, t - wall0)
            if prev_t is not None and t <= prev_t:
                due = self._pace(due)
                continue
            polls += 1
            started = t if polls == 1 else started
            self._events_seen.update(event for event, _ in sample.counts)
            totals, resets = self._diff(counters, sample, view, t)
            # a stream whose first rows are already a column (an event's first waits), then this poll's column(s)
            yield from self._backfill(sample, view, known, watched, set(totals))
            if gap_since is not None:
                spans = self._gap_spans(gap_since, t, self._left(columns))
                columns += len(spans) if known else 0
                for a, b in spans:
                    watched.add(a, b, gap=True)
                    for sid in known:
                        yield Interval(sid, a, b, empty_counts(), gap=True)
                gap_since = None
            elif prev_t is not None:
                columns += 1
                watched.add(prev_t, t)
                for sid in known:
                    if sid.unit == view.unit:
                        yield Interval(sid, prev_t, t, totals.get(sid, empty_counts()), reset=sid in resets)
            yield from self._backfill(sample, view, known, watched)  # the streams whose first rows are a baseline
            for _, inst in sample.counts:
                watched.since.setdefault(inst, t)
            prev_t = t
            last = (self.count is not None and columns >= self.count) or (deadline is not None and t >= deadline)
            if last or polls == self._missing_after():
                yield from self._missing_events(polls, t - started)
            if last:
                yield from self._overflow_changes()
                return
            due = self._pace(due)

    def _left(self, columns: int) -> int | None:
        """Columns `--count` still allows (None: no limit)."""
        return None if self.count is None else max(0, self.count - columns)

    def _missing_after(self) -> int:
        """After how many polls an event that never had a row is said (`MISSING_AFTER_S`, at least 3 polls)."""
        return max(3, math.ceil(MISSING_AFTER_S / self.interval) + 1)

    def _diff(self, counters: _Counters, sample: Sample, view: HistogramView,
              t: float) -> tuple[dict[StreamId, np.ndarray], set[StreamId]]:
        """Diff each instance against its own last counts, then sum per output stream; (counts, reset streams).

        A counter of an instance that went down means the instance restarted (Oracle's only grow while it runs):
        all of that instance's counts now, of every event, are its waits since the restart, and they are the
        column's, also in a bucket or an event whose counters have already passed their pre-restart values; an
        event of it with no row now has not waited since, and counts from 0. A bucket whose row was unusable is not
        known this sample: it keeps its last value (`Snapshot.present`), so it fakes no restart.

        Only an instance's first poll is a baseline. Oracle shows no row for an event that has not waited yet:
        an (event, instance) whose rows first come in a later poll of an instance already polled started from
        zero after that instance's last poll, so all of its counts are this column's.
        """
        diffed: list[tuple[StreamId, int, np.ndarray, np.ndarray]] = []  # (stream, instance, new counts, delta)
        restarted: set[int] = set()
        for (event, inst), counts in sorted(sample.counts.items()):
            key = _key(event, inst, view.unit)
            since = counters.instances.get(inst)
            if key not in counters.keys and since is not None:
                counters.differ.push(Snapshot(key, since, empty_counts()))  # no row until now: no wait before
            counters.keys.add(key)
            snap = Snapshot(key, t, counts, present=sample.present((event, inst)))
            out = counters.differ.push(snap)
            if isinstance(out, Interval):
                diffed.append((self.stream_of(event, inst, view.unit), inst, snap.counts, out.counts))
                if out.reset:
                    restarted.add(inst)
        if restarted:
            now = {_key(event, inst, view.unit) for event, inst in sample.counts}
            for key in counters.keys - now:
                if int(key.label.rpartition(" ")[2]) in restarted:
                    counters.differ.push(Snapshot(key, t, empty_counts()))
        totals: dict[StreamId, np.ndarray] = {}
        resets: set[StreamId] = set()
        for sid, inst, counts, delta in diffed:  # an instance that restarted: all of its events' counts are new
            totals[sid] = totals.get(sid, empty_counts()) + (counts if inst in restarted else delta)
            if inst in restarted:
                resets.add(sid)
        counters.instances.update((inst, t) for _, inst in sample.counts)
        return totals, resets

    def _gap_spans(self, start: float, end: float, most: int | None = None) -> list[tuple[float, float]]:
        """The (start, end) of the gap columns covering an outage, about one per interval (at most `most`)."""
        n = int(min(MAX_GAP_COLUMNS, max(1, round((end - start) / self.interval))))
        edges = np.linspace(start, end, n + 1)
        return list(itertools.islice(itertools.pairwise(edges.tolist()), most))

    def _backfill(self, sample: Sample, view: HistogramView, known: list[StreamId], watched: _Watched,
                  only: set[StreamId] | None = None) -> Iterator[Interval]:
        """Make the sample's streams not yet known (of `only`, if given) known, each first given the columns since
        watching its instance began (any instance's, for a stream summing them), empty, or gap where those are.

        Oracle lists an event once it has waited: no row of it from an instance being watched means no wait there.
        A stream of an instance whose first rows come now has no columns before: its waits until now are unknown.
        """
        for event, inst in sorted(sample.counts):
            sid = self.stream_of(event, inst, view.unit)
            if sid in known or (only is not None and sid not in only):
                continue
            known.append(sid)
            since = watched.since.get(inst) if self.per_instance else min(watched.since.values(), default=None)
            if since is not None:
                for a, b, gap in watched.columns_from(since):
                    yield Interval(sid, a, b, empty_counts(), gap=gap)

    def _missing_events(self, polls: int, seconds: float) -> Iterator[Notice]:
        """A notice for each event that has had no row in any poll so far (said once)."""
        for event in self.events:
            if event not in self._events_seen and event not in self._missing_said:
                self._missing_said.add(event)
                yield Notice(f"oracle: no histogram rows for event {event!r} on the selected instances in {polls} "
                             f"poll{'s' * (polls > 1)} ({seconds:.0f}s): it has not waited there since the instance "
                             "started (Oracle lists an event once it has waited), or it is not an event name (they "
                             "are exact and case-sensitive: SELECT name FROM v$event_name)", skipped=0)

    def _drain_notes(self) -> Iterator[Notice]:
        notes, self._notes = self._notes, []
        yield from notes

    def _say_clock_step(self, t: float, elapsed: float) -> Iterator[Notice]:
        """A notice, once, that the wall clock has left the run's time `t` (it stepped): by how much, and that the
        columns keep their measured lengths, timed from the wall clock at the start."""
        step = self.clock() - t
        if self._step_said or abs(step) <= CLOCK_STEP_S:
            return
        self._step_said = True
        yield Notice(f"oracle: the system clock stepped {'back' if step < 0 else 'forward'} by {abs(step):.0f}s "
                     f"(seen {elapsed:.0f}s into the run); columns keep their measured lengths, timed from the clock "
                     "at the start, so their times no longer match the system clock's (said once)", skipped=0)

    def _pace(self, due: float | None) -> float:
        """Sleep until the next sample is due (on the monotonic clock); never bursts to catch up."""
        now = self.monotonic()
        due = now + self.interval if due is None else due + self.interval
        if due <= now:
            due = now
        else:
            self.sleep(due - now)
        return due

    def _reconnect(self, cause: BaseException) -> Iterator[Notice]:
        """Close, then reconnect with exponential backoff; OracleError when retrying cannot help."""
        self._close()
        lost_at = self.monotonic()
        yield Notice(f"oracle: connection lost ({first_line(cause, self._secrets)}); reconnecting", skipped=0)
        delay, attempts = BACKOFF_START, 0
        while True:
            self.sleep(delay)
            attempts += 1
            try:
                self._conn = self._open()
            except OracleError:
                raise
            except Exception as err:  # DB-API errors, whatever the driver's classes
                if not is_transient(err):
                    raise self._fail(err, f"reconnecting to {shown_dsn(self.dsn, self._secrets)} failed") from None
                delay = min(delay * 2, BACKOFF_MAX)
                continue
            yield Notice(f"oracle: reconnected after {attempts} attempt{'s' * (attempts > 1)} "
                         f"({self.monotonic() - lost_at:.0f}s); the outage shows as gap columns", skipped=0)
            return


def _key(event: str, inst: int, unit: str) -> StreamId:
    """What one instance's counters of one event are diffed as."""
    return StreamId(f"{event}\x1finst {inst}", "oracle", unit)


def _overflow_left_out(sid: StreamId) -> str:
    """The start of the notes on a stream's overflow bucket, as the record reader words them."""
    return (f"oracle: '{clean_text(sid.label, 200)}': Oracle's overflow bucket {ORACLE_OVERFLOW} (waits past its "
            "largest bucket: no finite range) is left out of the map and totals")
