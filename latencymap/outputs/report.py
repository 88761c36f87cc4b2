"""`latencymap report`: a whole input analysed with no UI, as JSON (a stable contract) or text."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from latencymap.analysis.diagnosis import Diagnosis
from latencymap.analysis.findings import Finding, times, why, with_cause, words_for
from latencymap.analysis.stragglers import READ_RATIO, known_cause, time_ratio
from latencymap.analysis.summary import stream_diagnosis
from latencymap.core import chunked
from latencymap.core.accumulator import GAP, MAX_MESSAGES, RESET, Accumulator, StreamHistory, Totals
from latencymap.core.buckets import NSLOTS, TOP_SLOT, percentile_duration, range_text
from latencymap.core.model import StreamId
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES
from latencymap.core.rebin import spread_matrix
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals, bound_seconds, source_use
from latencymap.core.units import format_bytes, format_duration, format_number, plural, unit_seconds

if TYPE_CHECKING:
    from latencymap.analysis.epochs import EpochStartup, PhaseSums
    from latencymap.analysis.peers import PeerGroup


#: The stragglers a source's own analysis found (and the warm-up tasks it keeps apart), by the stream that counted their
#: tasks, where it measured them by the values that stream maps (Spark: task durations): the findings about them say
#: their cause where the log gives it.
Causes = dict[StreamId, list[dict[str, Any]]]


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def duration_text(seconds: float | None) -> str:
    """A duration as the text report writes it: latency units up to seconds, then minutes, hours and days
    (`12.7µs`, `7.23ms`, `7.73h`, `116 days`); zero as `0s`."""
    return "0s" if seconds == 0 else format_duration(seconds, long_units=True)


def share_text(part: float, whole: float) -> str:
    """`part` of `whole` as a percentage 7 characters wide (`  4.58%`); a non-empty part that rounds to 0.00%
    reads ` <0.01%`. Counts (NumPy or Python integers) are divided as Python integers: exact, where `100 * part` in
    int64 would overflow past 9.2e16 events."""
    part, whole = _exact(part), _exact(whole)
    pct = 100 * part / whole if whole else 0.0
    return " <0.01%" if part > 0 and f"{pct:.2f}" == "0.00" else f"{pct:6.2f}%"


def _exact(value: float) -> float:
    """A count as a Python integer (unbounded), any other number as a float."""
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


#: A stream whose columns' counts and times fit in this many bytes as dense arrays is read from them, built once, for
#: its report (its readers go over the columns several times); a longer one is read a chunk at a time.
DENSE_BYTES = 8 << 20


def stream_report(hist: StreamHistory, acc: Accumulator, arrays: bool = False,
                  causes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON object of one stream (with `arrays`, its frequency and intensity as NumPy arrays, which
    `json_text.dumps` writes as the lists would be written; `causes`: its stragglers, see `Causes`)."""
    with _read_whole(hist):
        return _stream_report(hist, acc, arrays, causes)


def _read_whole(hist: StreamHistory) -> AbstractContextManager[StreamHistory]:
    """Within: `hist` read from dense arrays of all its columns, when they fit in `DENSE_BYTES`."""
    return hist.dense() if 16 * NSLOTS * hist.n <= DENSE_BYTES else nullcontext(hist)


def _stream_report(hist: StreamHistory, acc: Accumulator, arrays: bool,
                   causes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`stream_report`'s object, its history read as `stream_report` chose."""
    rows: Any = (lambda a: a) if arrays else np.ndarray.tolist
    used = hist.used_slots()
    lo, hi = used if used else (0, -1)
    slots = slice(lo, hi + 1)
    total = hist.totals()
    source = acc.kept_source(hist)
    start = float(hist.meta_in("start", slice(0, 1))[0]) if hist.n else None
    end = float(hist.meta_in("end", slice(hist.n - 1, None))[0]) if hist.n else None
    return {
        "stream": {"label": hist.stream.label, "datasource": hist.stream.datasource, "unit": hist.stream.unit},
        "columns": hist.n,
        **({"dropped_columns": hist.dropped} if hist.dropped else {}),
        "start": start,
        "end": end,
        "buckets": _buckets(hist, slots),
        "column_s": rows(np.round(hist.meta_in("dur", slice(0, hist.n)), 6)),  # (kept in float32: to the µs)
        "frequency": rows(hist.frequency(slots=slots)),
        "intensity": rows(hist.intensity(slots=slots)),
        "intensity_exact": hist.exact,
        "total": stream_total(total, source, hist.stream.unit, hist.n),
        "errors": stream_errors(acc),
        **explained_diagnosis(hist, causes, source).to_json(),
        **_source_buckets(source, hist),
        "resets": marked_columns(hist, RESET),
        "gaps": marked_columns(hist, GAP),
    }


def _buckets(hist: StreamHistory, slots: slice) -> list[dict[str, Any]]:
    """Each bucket's range; with `min_s` and `max_s`, the values seen in it, where the source gives them. The top
    bucket is `open`: it counts longer values too, so its `max_s` may pass its `high`."""
    out: list[dict[str, Any]] = [{"low": float(a), "high": float(b)}
                                 for a, b in zip(hist.low[slots], hist.high[slots], strict=True)]
    if out and slots.stop == TOP_SLOT + 1:
        out[-1]["open"] = True
    seen = hist.seen
    if seen is not None:
        for bucket, least, most in zip(out, seen[0][slots].tolist(), seen[1][slots].tolist(), strict=True):
            if math.isfinite(least) and math.isfinite(most):
                bucket["min_s"], bucket["max_s"] = least, most
    return out


def stream_total(total: Totals, source: SourceTotals | None, unit: str, columns: int) -> dict[str, Any]:
    """Events, time, mean and percentiles; a rebinned stream's come from its own buckets (and exact sum), or from
    the rows inside a bucket wider than they are where those place its events better (`SourceTotals.rows_within`),
    and a stream whose source folded exactly into rows takes its time from the source's sum when every column has one.
    `open` lists the percentiles that are a lower bound only (the open top bucket's low, or the largest finite bound of
    the source's own buckets: their values are not known), `from_rows` those of a rebinned stream from the rows."""
    time_s, mean_s = total.time_s, total.mean_s
    percentiles = {q: total.percentiles[q] for q in PERCENTILES}
    at_least = total.open
    from_rows: tuple[float, ...] = ()
    own_percentiles, own_time = source_use(source, total.events, columns)
    if own_percentiles:
        assert source is not None
        scale = unit_seconds(unit)
        from_rows = tuple(q for q in PERCENTILES if source.rows_within(q, percentiles[q] / scale) is not None)
        percentiles = {q: source.estimate(q, percentiles[q] / scale) * scale for q in PERCENTILES}
        at_least = tuple(q for q in source_open(source) if q not in from_rows)
    if own_time:
        assert source is not None
        time_s = source.time_s
        mean_s = time_s / total.events if total.events else math.nan
    return {"events": total.events, "time_s": time_s, "mean_s": _num(mean_s),
            **{f"{PERCENTILE_NAMES[q]}_s": _num(v) for q, v in percentiles.items()},
            **({"open": [f"{PERCENTILE_NAMES[q]}_s" for q in at_least]} if at_least else {}),
            **({"from_rows": [f"{PERCENTILE_NAMES[q]}_s" for q in from_rows]} if from_rows else {})}


def rows_words(source: SourceTotals, total: dict[str, Any], unit: str, inside: str) -> str | None:
    """Where the report line says a stream's percentiles come from when some come from the rows (`from_rows`:
    `SourceTotals.rows_within`), the others from the source's buckets (`inside` them); None when none do."""
    named = total.get("from_rows", [])
    if not named:
        return None
    to_s = unit_seconds(unit)
    wide = [source.rows_within(q, total[f"{PERCENTILE_NAMES[q]}_s"] / to_s) for q in PERCENTILES]
    buckets = ", ".join(dict.fromkeys(f"{duration_text(w[0] * to_s)}–{duration_text(w[1] * to_s)}"
                                      for w in wide if w is not None))
    names = " ".join(name.removesuffix("_s") for name in named)
    some = ("percentiles" if len(named) == len(PERCENTILES) else f"percentiles {names}" if len(named) > 1 else
            f"the percentile {names}")
    comes, them = ("comes", "it") if len(named) == 1 else ("come", "them")
    rest = "" if len(named) == len(PERCENTILES) else f"; the others from the source's buckets ({inside})"
    seen = ", between the values seen" if source.least is not None else ""
    return (f"{some} {comes} from the rows (log-uniform inside each), bounded to the source's bucket holding {them} "
            f"({buckets}{seen}), wider than the rows there: the rows place its events by each interval's exact "
            f"sum{rest}")


def source_open(source: SourceTotals) -> tuple[float, ...]:
    """The percentiles whose rank falls in the source's overflow (`+Inf`) bucket with no largest value seen to end
    it: `histogram_quantile` gives them its largest finite bound, which they are only at least."""
    bounds = source.bounds
    if len(bounds) < 2 or not math.isinf(bounds[-1]) or math.isinf(bounds[-2]):
        return ()
    if source.least is not None and source.most is not None and max(bounds[-2], source.least) <= source.most:
        return ()  # the largest value seen ends it (OpenTelemetry's max)
    below, events = int(source.counts[:-1].sum()), source.events
    return tuple(q for q in PERCENTILES if q * events > below)


def percentile_text(total: dict[str, Any], q: float, long_units: bool = True) -> str:
    """A percentile of `stream_total` as the text report writes it: `≥low` where it is a lower bound only (`open`: in
    the open top bucket, whose values are not known), `≤high` where an upper bound only (`at_most`:
    `bounded_first_bucket`); `long_units` off, as the TUI writes it."""
    key = f"{PERCENTILE_NAMES[q]}_s"
    if key in total.get("at_most", ()):
        return "≤" + format_duration(total[key], long_units=long_units)
    return percentile_duration(total[key], key in total.get("open", ()), long_units)


def shown_total(total: Totals, source: SourceTotals | None, unit: str, columns: int) -> dict[str, Any]:
    """`stream_total` as the TUI shows it: where its percentiles are the source's own buckets', those in a first
    bucket the exact sum proves faster written as its bound (`bounded_first_bucket`)."""
    figures = stream_total(total, source, unit, columns)
    return bounded_first_bucket(figures, source, unit) if source_use(source, total.events, columns)[0] else figures


def first_bucket_note(source: SourceTotals | None, unit: str) -> str | None:
    """What the report says of a first bucket that the exact sum proves faster than histogram_quantile's straight line
    from 0 draws it (`SourceTotals.first_bucket_faster`): the rows place its events by that sum. None otherwise."""
    to_s = unit_seconds(unit)
    faster = source.first_bucket_faster(to_s) if source is not None else None
    if source is None or faster is None:
        return None
    events, upper, most = faster
    return (f"the first bucket, (0, {duration_text(upper * to_s)}], holds {events / source.events:.0%} of the events, "
            f"whose mean the exact sum puts at {duration_text(most * to_s)} at most (the rows place them so); inside "
            "it, histogram_quantile draws a straight line from 0")


def bounded_first_bucket(total: dict[str, Any], source: SourceTotals | None, unit: str) -> dict[str, Any]:
    """`stream_total`'s figures (its percentiles the source's own buckets') with those that lie in a first bucket
    the exact sum proves faster than histogram_quantile's straight line from 0 (`SourceTotals.first_bucket_faster`)
    given as that bucket's bound, listed in `at_most`: an upper bound is all that is known of them. The TUI writes
    these; it has no room for the line on which the report says so beside histogram_quantile's figures."""
    scale = unit_seconds(unit)
    faster = source.first_bucket_faster(scale) if source is not None else None
    if faster is None:
        return total
    upper = bound_seconds(faster[1], scale)
    keys = [key for key in (f"{PERCENTILE_NAMES[q]}_s" for q in PERCENTILES)
            if key not in total.get("open", ()) and total.get(key) is not None and 0 < total[key] <= upper]
    return {**total, **dict.fromkeys(keys, upper), "at_most": keys} if keys else total


def time_words(exact: bool, source: SourceTotals | None, events: int, columns: int) -> str:
    """How a stream's time waited is known, as the report's header says it: "exact" (per-bucket times, whatever
    buckets of its own the source keeps: HdrHistogram logs), "estimated from bucket midpoints", or for a rebinned
    stream "the source's exact sum" (its rows fitted to it) or "estimated"; `exact` is whether the columns carry their
    times."""
    if source is not None and not exact:
        return "the source's exact sum" if source_use(source, events, columns)[1] else "estimated"
    return "exact" if exact else "estimated from bucket midpoints"


def stream_time_words(hist: StreamHistory, source: SourceTotals | None, exact: bool | None = None) -> str:
    """`time_words` of a whole stream (every column seen, dropped ones too), as its intensity map's title says it;
    `exact` when the map's columns say otherwise than the stream's (default `hist.exact`)."""
    events = 0 if source is None else int(hist.totals(slice(0, hist.n), fast=True, all_seen=True).events)
    return time_words(hist.exact if exact is None else exact, source, events, hist.n)


def folded_exactly(source: SourceTotals, rows: np.ndarray) -> bool:
    """Whether each of the source's buckets lands whole in one row (powers of two of the stream unit; `+Inf` in the
    row of its lower bound) and the stream's `rows` (counts per slot) hold them so: the rows are its buckets, nothing
    was spread (`core.rebin`). A source may spread buckets that would fold (OTLP's `min`/`max` narrow the `+Inf`
    bucket onto the rows up to the max, an exact sum places the first one): rows holding events where no bucket
    holding any lands say so, and where both count the same events, rows that differ from the buckets folded."""
    bounds = np.asarray(source.bounds, dtype=np.float64)
    positive = bounds > 0
    if not np.isfinite(bounds[positive]).any():
        return False  # `+Inf` alone, [0, inf): no row holds it
    matrix = spread_matrix(bounds[positive].tolist())
    if not ((matrix > 0).sum(axis=1) == 1).all():
        return False
    counts = np.asarray(source.counts, dtype=np.int64)
    folded = np.zeros(NSLOTS, dtype=np.int64)
    folded[0] = counts[~positive].sum()  # buckets at or below 0: the first row
    np.add.at(folded, matrix.argmax(axis=1), counts[positive])
    rows = np.asarray(rows, dtype=np.int64)
    if ((rows > 0) & (folded == 0)).any():
        return False
    return source.mixed or source.events != int(rows.sum()) or bool((folded == rows).all())


def _source_buckets(source: SourceTotals | None, hist: StreamHistory) -> dict[str, Any]:
    """`source_buckets` of a rebinned stream: its own bounds (s), counts, percentiles and exact time; else nothing.
    `events` and `time_s` are those the buckets hold (of the columns kept, `Accumulator.kept_source`, as every figure
    of the report); `whole_stream` says whether that is the whole stream (`stream_events`, kept): not when its bounds
    changed beyond adding up exactly (`mixed_bounds`)."""
    if source is None or not source.bounds:
        return {}
    scale = unit_seconds(hist.stream.unit)
    totals = hist.totals()
    stream_events = int(totals.events)
    return {"source_buckets": {
        # not where the rows carry exact times or are the buckets (folded: these kept being finer, or for `+Inf`)
        "rebinned": not hist.exact and not folded_exactly(source, totals.counts),
        "mixed_bounds": source.mixed,
        "whole_stream": not source.mixed and source.events == stream_events,
        "stream_events": stream_events,
        "bounds_s": source.bounds_seconds(scale),
        "counts": source.counts.tolist(),
        "events": source.events,
        "time_s": source.buckets_time_s,
        **{f"{PERCENTILE_NAMES[q]}_s": _num(source.percentile(q) * scale) for q in PERCENTILES},
    }}


def report_streams(acc: Accumulator) -> list[StreamHistory]:
    """The streams in report order: training streams by run and rank number, not by when their writers connected
    (analysis/peers.py `rank_order`); the others as they came."""
    hists = list(acc.streams.values())
    if sum(1 for h in hists if h.stream.datasource == "training") < 2:
        return hists
    from latencymap.analysis.peers import rank_order  # loaded only where there can be ranks

    return [hists[i] for i in rank_order([(h.stream.label, h.stream.datasource) for h in hists])]


def peer_groups(acc: Accumulator, hists: Iterable[StreamHistory] | None = None,
                span: tuple[float, float] | None = None) -> list[PeerGroup]:
    """Streams that are peers (ranks, disks, instances: see analysis/peers.py), compared interval by interval: those of
    `hists` (default: every stream), over their columns that overlap `span` (epoch seconds; default: all)."""
    shown = [h for h in (acc.streams.values() if hists is None else hists) if h.n]
    if len(shown) < 2:
        return []  # peers are two streams or more
    from latencymap.analysis.peers import PeerStream, find_peers  # loaded only where there can be peers

    peers = []
    for h in shown:
        cols = slice(None) if span is None else overlapping(h, *span)
        # the comparison reads only each column's sums: (columns, 1) arrays of them, built a chunk at a time
        events, spent = h.column_sums(cols)
        if events.size:
            peers.append(PeerStream(h.stream.label, h.stream.datasource, h.stream.unit, events[:, None],
                                    spent[:, None], h.meta_in("start", cols), h.meta_in("end", cols)))
    return find_peers(peers)


def overlapping(hist: StreamHistory, start: float, end: float) -> slice:
    """The history's columns whose span overlaps [start, end) (epoch seconds)."""
    return slice(int(np.searchsorted(hist.end, start, side="right")), int(np.searchsorted(hist.start, end)))


def epoch_startups(acc: Accumulator, hists: Iterable[StreamHistory] | None = None,
                   span: tuple[float, float] | None = None) -> list[EpochStartup]:
    """The epochs of each `timed_iter` phase among `hists` (default: every stream) whose starts were timed
    (analysis/epochs.py): their starts against their batches' waits, over their columns that overlap `span` (epoch
    seconds; default: all)."""
    chosen = [h for h in (acc.streams.values() if hists is None else hists) if h.n]
    if not any(h.stream.datasource == "training" for h in chosen):
        return []  # (no instrument's stream: the analysis is not even imported)
    from latencymap.analysis.epochs import epoch_groups, epoch_startup

    out = []
    for ids in epoch_groups(h.stream for h in chosen):
        starts, waits, ends = (_phase_sums(acc.streams.get(stream), span) for stream in ids)
        if starts is not None and starts[0].events:
            bounds = [t for sums in (starts, waits, ends) if sums is not None for t in sums[1]]
            out.append(epoch_startup(ids[1].label, starts[0], waits and waits[0], ends and ends[0],
                                     max(bounds) - min(bounds), starts[1]))
    return out


def _phase_sums(hist: StreamHistory | None, span: tuple[float, float] | None
                ) -> tuple[PhaseSums, tuple[float, float]] | None:
    """A stream's slot sums over its columns that overlap `span` (all: None), and the time they cover (epoch
    seconds); None without columns there."""
    cols = slice(0, 0) if hist is None else slice(0, hist.n) if span is None else overlapping(hist, *span)
    if hist is None or cols.stop <= cols.start:
        return None
    from latencymap.analysis.epochs import PhaseSums

    counts, spent, _ = hist.slot_sums(cols)
    return PhaseSums(counts, spent), (float(hist.meta_in("start", cols)[0]), float(hist.meta_in("end", cols)[-1]))


def epoch_lines(acc: Accumulator) -> list[str]:
    """The epoch start-up findings (analysis/epochs.py) as the text report words them: none where there are none."""
    return [clean_text(line, 2000) for e in epoch_startups(acc) if (line := e.line()) is not None]


def peer_lines(acc: Accumulator) -> list[str]:
    """The peer groups' comparison (ranks, disks, instances) as the text report words it."""
    return [clean_text(line, 2000) for group in peer_groups(acc) for line in group.lines()]


def marked_columns(hist: StreamHistory, flag: int) -> list[int]:
    """Indexes of the columns carrying `flag` (RESET: a counter went down; GAP: data is missing)."""
    return np.flatnonzero(hist.flags & flag).tolist()


def gap_count(hist: StreamHistory) -> int:
    """How many of the columns kept are gaps (data missing)."""
    return int(np.count_nonzero(hist.flags & GAP))


def intervals_words(columns: int, gaps: int) -> str:
    """`5 intervals and 1 gap`: `columns` less their `gaps`, which are no intervals of the input (a reader's column
    over a hole in its time line, or for a record it could not decode), and those apart, as the gap line lists them;
    `2 gaps` when every column is one."""
    if gaps and gaps == columns:
        return plural(gaps, "gap")
    words = plural(columns - gaps, "interval")
    return f"{words} and {plural(gaps, 'gap')}" if gaps else words


def marks_lines(hist: StreamHistory, limit: int = 20) -> list[str]:
    """What the text report and the SVG/HTML findings say about reset and gap columns (none: nothing)."""
    out = []
    for flag, what in ((RESET, "counter reset (a counter went down; the column counts from the reset)"),
                       (GAP, "gap (data missing from the column)")):
        cols = marked_columns(hist, flag)
        if cols:
            shown = ", ".join(str(c) for c in cols[:limit]) + (f", … ({len(cols)} in all)" if len(cols) > limit else "")
            out.append(f"{what}: column{'s' if len(cols) > 1 else ''} {shown}")
    return out


def build_report(acc: Accumulator, arrays: bool = False, causes: Causes | None = None) -> dict[str, Any]:
    """The whole report: one object per stream, the peer groups among them, and the epochs of each `timed_iter` phase
    where its epochs' starts were timed (`epochs`, only then: analysis/epochs.py) (`arrays`: see `stream_report`;
    `causes`: see `Causes`)."""
    return {
        "streams": [stream_report(h, acc, arrays, (causes or {}).get(h.stream)) for h in report_streams(acc)],
        "errors": read_errors(acc),
        **history_json(acc),
        "peers": {"groups": [g.to_json() for g in peer_groups(acc)]},
        **({"epochs": [e.to_json() for e in epochs]} if (epochs := epoch_startups(acc)) else {}),
    }


def history_json(acc: Accumulator) -> dict[str, Any]:
    """`history` of the JSON report when a `--history` limit dropped columns: the limit, and the columns dropped and
    read, all streams together (each stream's `dropped_columns` gives its own); nothing when none was dropped."""
    dropped = sum(h.dropped for h in acc.streams.values())
    if not dropped:
        return {}
    return {"history": {"columns_per_stream": acc.limit.columns, "budget_bytes": acc.limit.budget,
                        "dropped_columns": dropped, "columns_read": dropped + sum(h.n for h in acc.streams.values())}}


def _stream_text(hist: StreamHistory, acc: Accumulator, untimed: bool = False,
                 causes: list[dict[str, Any]] | None = None) -> list[str]:
    """The text report's lines for one stream (`untimed`: its columns carry no time of their own, so no span and
    no rate are given; `causes`: its stragglers, see `Causes`)."""
    s = hist.stream
    out = [f"== {clean_text(s.label) or '(no label)'}  [{clean_text(s.datasource)}, {s.unit}]"]
    lines, t = _summary(hist, acc, untimed, causes, table=True)
    out += [f"   {line}" for line in lines]
    if t is not None and t.events:
        out += _bucket_table(hist, t.counts)
    return out


def stream_summary(hist: StreamHistory, acc: Accumulator | None = None, untimed: bool = False,
                   causes: list[dict[str, Any]] | None = None) -> list[str]:
    """What the report says of one stream above its bucket table: columns, events, rate and time waited, how the
    source's buckets are used, mean and percentiles, the diagnosis, marked columns (the SVG and HTML reports show
    these lines, without a bucket table: so with the modes line the text leaves to a table of one or two rows; `acc`
    gives the source's own buckets and sums, as `report` reads them; `causes`: the stream's stragglers, see
    `Causes`)."""
    return _summary(hist, acc, untimed, causes)[0]


def _summary(hist: StreamHistory, acc: Accumulator | None, untimed: bool,
             causes: list[dict[str, Any]] | None = None, table: bool = False) -> tuple[list[str], Totals | None]:
    """`stream_summary`'s lines, and the stream's totals (None without columns); `table`: a bucket table follows them
    (see `Diagnosis.summary_lines`)."""
    lines, t = _kept_summary(hist, acc, untimed, causes, table)
    drop = dropped_line(hist, acc)
    return ([lines[0], drop, *lines[1:]] if drop else lines), t


def dropped_line(hist: StreamHistory, acc: Accumulator | None = None) -> str | None:
    """What a stream's summary says under its first line when `--history` dropped its oldest columns (the text, SVG
    and HTML reports alike): how many of those read, and that its figures cover the columns kept; None when none
    was dropped."""
    if not hist.dropped:
        return None
    limit = f" (the --history limit, {acc.limit})" if acc is not None else ""
    return (f"history: {plural(hist.dropped, 'column')} of the {hist.n + hist.dropped:,} read "
            f"{'was' if hist.dropped == 1 else 'were'} dropped, the oldest first{limit}; the figures here cover the "
            f"{plural(hist.n, 'column')} kept, not the whole run")


def _kept_summary(hist: StreamHistory, acc: Accumulator | None, untimed: bool,
                  causes: list[dict[str, Any]] | None = None, table: bool = False) -> tuple[list[str], Totals | None]:
    """`_summary` of the columns kept."""
    if hist.n == 0:  # all dropped: a stream that ended while others went on, under a --history budget
        return ["no columns kept" if hist.dropped else "no intervals (a single record is only a baseline)"], None
    s = hist.stream
    t = hist.totals()
    span = float(hist.meta_in("end", slice(hist.n - 1, None))[0] - hist.meta_in("start", slice(0, 1))[0])
    rate = t.events / t.duration_s if t.duration_s else float("nan")
    source = acc.kept_source(hist) if acc is not None else None
    how = time_words(hist.exact, source, t.events, hist.n)
    total = stream_total(t, source, s.unit, hist.n)
    own_percentiles = source_use(source, t.events, hist.n)[0]
    counted = intervals_words(hist.n, gap_count(hist))
    columns = f"{counted} by arrival (no timestamps: rates are not known)" if untimed else \
        f"{counted} over {duration_text(span)}"
    if not t.events:
        what = "no events" if t.duration_s else "no data (every column is a gap: data missing)"
        return [f"{columns}: {what}", *marks_lines(hist)], t
    per_s = "" if untimed else f" ({format_number(rate)}/s)"
    counted = f"{int(t.events):,} event{'s' * (int(t.events) != 1)}"
    words = words_for(s.datasource, hist.measures)
    note = why("waited note", words)
    out = [f"{columns}: {counted}{per_s}, {duration_text(total['time_s'])} {why('waited', words, s.label)} ({how})"
           + (f", {note}" if note else "")]
    if source is not None and source.bounds:
        held = f"they hold {source.events:,} of the {int(t.events):,} events"
        inside = "linear inside each" if hist.exact else "as histogram_quantile"
        where = (rows_words(source, total, s.unit, inside) or f"percentiles come from the source's buckets ({inside})"
                 if own_percentiles else
                 f"the source's bounds changed between intervals and do not nest ({held}), so percentiles come from "
                 "the rows (log-uniform inside each)" if source.mixed else
                 f"{held}, so percentiles come from the rows (log-uniform inside each)")
        n = len(source.bounds)
        if hist.exact:  # the rows are the source's buckets folded exactly (exact times): these are kept, being finer
            out.append(f"finer buckets: the source's own {n:,} ({np.count_nonzero(source.counts):,} holding events) "
                       f"are kept beside the rows below; {where}")
        elif folded_exactly(source, t.counts):  # kept for what they tell beyond the rows: `+Inf`, finer buckets
            overflow = " (+Inf in the row of its lower bound)" if math.isinf(source.bounds[-1]) else ""
            out.append(f"the source's {n} bucket{'s' if n != 1 else ''} fold onto the rows below, one row each"
                       f"{overflow}, and are kept beside them; {where}")
        else:
            out.append(f"rebinned: the source's {n} bucket{'s are' if n != 1 else ' is'} kept beside the rows below; "
                       f"{where}")
        first_note = first_bucket_note(source, s.unit)
        if first_note is not None:
            out.append(first_note)
    pcts = "  ".join(f"{PERCENTILE_NAMES[q]} {percentile_text(total, q)}" for q in PERCENTILES)
    out.append(f"mean {format_duration(total['mean_s'], long_units=True)}  {pcts}")
    out += explained_diagnosis(hist, causes, source).summary_lines(table)
    out += marks_lines(hist)
    return out, t


def report_text(acc: Accumulator, untimed: Collection[StreamId] = (), causes: Causes | None = None) -> str:
    """A short human summary of every stream (`untimed`: streams whose columns carry no time of their own, such as
    raw values read without timestamps: their rates are not known, and the report says so instead of giving any;
    `causes`: see `Causes`)."""
    out: list[str] = [] if acc.streams else ["No data."]
    for hist in report_streams(acc):
        with _read_whole(hist):
            out += _stream_text(hist, acc, hist.stream in untimed, (causes or {}).get(hist.stream))
    out += peer_lines(acc)
    out += epoch_lines(acc)
    messages = acc.messages
    if any(h.dropped for h in acc.streams.values()):  # each stream's summary says what was dropped, with the counts
        messages = [m for m in messages if not (m.startswith("history: ") and m.endswith("dropped from now on"))]
    out += read_notes(acc.skipped, messages, left_out=acc.messages_said - len(acc.messages))
    return "\n".join(out) + "\n"


#: Messages a text report prints; the rest are counted.
SHOWN_MESSAGES = 10


def read_errors(acc: Accumulator) -> dict[str, Any]:
    """What reading skipped and said, as the JSON documents give it."""
    left_out = acc.messages_said - len(acc.messages)
    return {"skipped_records": acc.skipped, "messages": list(acc.messages),
            **({"messages_left_out": left_out} if left_out else {})}


def stream_errors(acc: Accumulator) -> dict[str, Any]:
    """A stream's `errors`: what reading skipped and said of this stream. Readers name a skipped record by its file
    and line, not by its stream (a record too broken to read may not say whose it is), so nothing is tied to one
    stream: the report's `errors` holds them all, once, and `report_skipped_records` says how many there are (any
    of them may have been this stream's). Each stream used to repeat the report's count and messages."""
    return {"skipped_records": 0, "messages": [], "report_skipped_records": acc.skipped}


def read_notes(skipped: int, messages: list[str], whose: str = "", left_out: int = 0) -> list[str]:
    """A text report's closing lines: records skipped, and what reading said (`left_out`: messages said past those
    `messages` kept; `whose`: which input, where there are two). Columns a `--history` limit dropped are said by
    each stream's summary (`dropped_line`), where no number of messages can hide them."""
    out: list[str] = []
    said = [f"   {clean_text(m, 600)}" for m in messages[:SHOWN_MESSAGES]]
    if len(messages) + left_out > SHOWN_MESSAGES:
        more = len(messages) + left_out - min(len(messages), SHOWN_MESSAGES)
        said.append(f"   ... and {more} more (--format json lists up to {MAX_MESSAGES})")
    if skipped:
        out.append(f"Skipped records{whose}: {skipped}")
        out += said
    elif said:  # what the reading had to assume or leave aside (a unit, a datasource, a fold) is part of the report
        out += [f"Notes{whose}:", *said]
    return out


#: Characters of a bucket table's row range: `1.59 days–3.18 days` fits (a longer range widens the column).
_ROW_WIDTH = 20
#: A run of more empty buckets than this is one line of the bucket table (a value far from the rest, or past the
#: top bucket, would leave a wall of empty rows); the JSON keeps every bucket.
MAX_EMPTY_ROWS = 16


def _bucket_table(hist: StreamHistory, counts: np.ndarray) -> list[str]:
    used = hist.used_slots()
    if used is None:
        return []
    lo, hi = used
    total_time = chunked.slot_sums((hist.time_in(cols) for cols in chunked.spans(hist.n)), NSLOTS)
    events, spent = sum(counts.tolist()), total_time.sum()  # Python integers: no int64 wrap past 2**63
    lines: list[tuple[str, int, str]] = []  # (range, first slot, what follows the shares)
    s = lo
    while s <= hi:
        stop = s
        while stop <= hi and not counts[stop]:
            stop += 1
        if stop - s > MAX_EMPTY_ROWS:
            lines.append((range_text(float(hist.low[s]), float(hist.high[stop - 1]), stop - 1, long_units=True), s,
                          f"  ({stop - s} empty buckets in one line)"))
            s = stop
            continue
        lines.append((range_text(float(hist.low[s]), float(hist.high[s]), s, long_units=True), s, ""))
        s += 1
    width = max(_ROW_WIDTH, *(len(rng) for rng, _, _ in lines))
    wide = max(10, len(f"{int(counts[lo: hi + 1].max()):,}"))  # the events column fits the largest count
    rows = [f"   {'bucket':<{width}} {'events':>{wide}}   %events    %time"]
    for rng, s, more in lines:
        n, t = (0, 0.0) if more else (counts[s], total_time[s])
        rows.append(f"   {rng:<{width}} {int(n):>{wide},}   {share_text(n, events)}  {share_text(t, spent)}{more}")
    return rows


#: Stragglers the text report lists; the rest are counted (`--format json` lists them all).
SHOWN_STRAGGLERS = 20


def straggler_lines(stragglers: list[dict[str, Any]], by: str = "") -> list[str]:
    """Text lines for straggler findings: the stragglers API's form or a source's own (Spark tasks); `by` says
    what they are measured by when the maps show something else."""
    if not stragglers:
        return []
    out = [f"Stragglers{by}: {len(stragglers)}"]
    for s in stragglers[:SHOWN_STRAGGLERS]:
        out.append(f"   {_straggler_text(s)}")
    if len(stragglers) > SHOWN_STRAGGLERS:
        out.append(f"   … {len(stragglers) - SHOWN_STRAGGLERS} more (--format json lists them all)")
    return out


def _straggler_text(s: dict[str, Any]) -> str:
    """One straggler: which, how slow against which reference, and what became of a task attempt."""
    warm = f" (warm-up: {s.get('warmup_reason') or 'first wave'})" if s.get("warmup") else ""
    fate = "; ".join(f"{flag} attempt" for flag in ("failed", "killed", "speculative") if s.get(flag))
    if fate and s.get("end_reason") and (s.get("failed") or s.get("killed")):
        fate += f" ({s['end_reason']})"
    said = "; ".join(part for part in (_straggler_cause(s), fate) if part)
    return clean_text(f"{straggler_head(s)}{warm}{' — ' + said if said else ''}", 600)


def straggler_head(s: dict[str, Any], sign: str = "x") -> str:
    """`task 5 (id 9) in stage 2.0: 2.55s, 7.5x the stage median (340ms)`: which straggler, how long (a task still
    running: so far, to the log's last event or to the clock), how many times (`sign`) which reference; the words
    every view of a straggler uses."""
    spark = s.get("key") is None and "task_id" in s
    name, group = _task_name(s).split(" in ", 1) if spark else (str(s.get("key")), str(s.get("group")))
    median = s.get("group_median_s", s.get("stage_median_s"))
    reference = s.get("reference_s") if s.get("reference_s") is not None else median
    if s.get("reference") == "wave":
        against = "its warm-up wave's fastest"
    elif s.get("reference") == "cold":
        against = "its stage's fastest cold task" if spark else "its group's fastest cold item"
    elif s.get("reference") == "median" or reference == median:
        against = ("the stage median" if spark else "the group median") + \
            (" without warm-up" if s.get("median_past_warmup") else "")
    else:
        against = "the reference"
    ratio = s.get("ratio") or float("inf")
    return clean_text(f"{name} in {group}: {duration_text(s.get('duration_s'))}{_so_far(s)}, {ratio:.1f}{sign} "
                      f"{against} ({duration_text(reference)})", 600)


def _so_far(s: dict[str, Any]) -> str:
    """` so far, still running (...)` for a task with no end logged: its time to the log's last event, or, when the
    log is followed live, to the clock now."""
    if not s.get("running"):
        return ""
    return " so far, still running (by the clock)" if s.get("so_far_to") == "clock" else \
        " so far, still running (no end logged)"


def _task_name(s: dict[str, Any]) -> str:
    """`task 7 (id 16, attempt 1) in stage 1.0`: a Spark task attempt of a source's analysis."""
    again = f", attempt {s['task_attempt']}" if s.get("task_attempt") else ""
    return f"task {s.get('index')} (id {s.get('task_id')}{again}) in stage {s.get('stage')}.{s.get('attempt', 0)}"


#: The stage with the most core-s wasted is marked when it wasted at least this share of its available core time.
WORTH_MARKING = 0.10


def _straggler_cause(s: dict[str, Any]) -> str:
    """What the log says of a Spark straggler's cause: the executor it ran on was slow in its stage, or it read more
    bytes (input and shuffle) than its stage's median task, enough to explain its time; or read more, too little to
    explain it; or read about as much (its input does not explain it)."""
    known = known_cause(s)
    if known == "executor":
        return f"on executor {s.get('executor')}, slow in this stage (see Stages)"
    ratio, read = s.get("read_ratio"), s.get("read_bytes")
    if ratio is None or not read:
        return ""
    usual = format_bytes(int(read / ratio))
    if known == "input":
        return f"read {ratio:.1f}x its stage's median bytes ({format_bytes(int(read))} vs {usual}): a larger partition"
    took = time_ratio(s)
    if ratio >= READ_RATIO and took is not None:
        took_text = f"{took:.1f}x" if math.isfinite(took) else "many times"
        return (f"read {ratio:.1f}x its stage's median bytes ({format_bytes(int(read))} vs {usual}), which explains "
                f"little of its {took_text} the stage median's time")
    return f"read {ratio:.1f}x its stage's median bytes ({usual}): not a larger input"


def measures_mapped(found: dict[str, Any]) -> bool:
    """Whether a source's analysis measured what its streams map (`analysed` and `metric` the same, or not said):
    Spark's measures task durations, whatever task metric `--metric` maps."""
    analysed, mapped = found.get("analysed"), found.get("metric")
    return not analysed or not mapped or analysed == mapped


def analysis_causes(found: dict[str, Any], stream_of: Callable[[dict[str, Any]], StreamId | None]) -> Causes:
    """The stragglers and warm-up tasks of a source's analysis (`found`, as the report's "source": its `stragglers`
    and the `warmup` it keeps apart, each once) by the stream that counted their tasks (`stream_of`; those of none
    left out), where it measured the values those streams map: see `Causes`."""
    causes: Causes = {}
    if measures_mapped(found):
        stragglers = found.get("stragglers") or []
        listed = {_task_key(s) for s in stragglers if s.get("warmup")}  # --include-warmup lists them there too
        for task in [*stragglers, *(w for w in found.get("warmup") or [] if _task_key(w) not in listed)]:
            stream = stream_of(task)
            if stream is not None:
                causes.setdefault(stream, []).append(task)
    return causes


def _task_key(s: dict[str, Any]) -> tuple[Any, ...]:
    """Which task attempt of which input a task of a source's analysis is (`group` names the input where several
    inputs' analyses are one)."""
    return s.get("group"), s.get("stage"), s.get("attempt"), s.get("task_id"), s.get("task_attempt")


def explained_diagnosis(hist: StreamHistory, causes: list[dict[str, Any]] | None = None,
                        source: SourceTotals | None = None) -> Diagnosis:
    """`stream_diagnosis` of `hist` (`source`: its own buckets, `Accumulator.sources`), its findings about stragglers
    naming what made them slow where the log says it (`finding_causes`), instead of the causes such tasks usually
    have."""
    return explained(stream_diagnosis(hist, source), hist, 0, hist.n, causes)


def explained(diag: Diagnosis, hist: StreamHistory, first: int, stop: int,
              causes: list[dict[str, Any]] | None) -> Diagnosis:
    """`diag`, the diagnosis of columns [first, stop) of `hist`, its findings about stragglers naming what made them
    slow where the log says it (`finding_causes`, `with_cause`): the whys the report writes (the TUI's findings panel
    says the same of the columns on screen)."""
    said = finding_causes(diag, hist, first, stop, causes)
    if not any(said):
        return diag
    datasource = hist.stream.datasource
    return replace(diag, findings=[with_cause(f, cause, datasource) if cause else f
                                   for f, cause in zip(diag.findings, said, strict=True)])


def finding_causes(diag: Diagnosis, hist: StreamHistory, first: int, stop: int,
                   causes: list[dict[str, Any]] | None) -> list[str | None]:
    """Per finding of `diag`, the diagnosis of columns [first, stop) of `hist`: what the log says made the stragglers
    and warm-up tasks among its events slow (`findings_cause`; of `causes`, see `Causes`: those that ended in these
    columns), where its why may name it (`with_cause`); None elsewhere. A finding whose tasks of the analysis are all
    warm-up also names the stream's stragglers that no finding is about (`_unfound`): past the warm-up, those are
    the tasks to chase."""
    none: list[str | None] = [None] * len(diag.findings)
    if not causes or stop <= first:
        return none
    start = float(hist.meta_in("start", slice(first, first + 1))[0])
    end = float(hist.meta_in("end", slice(stop - 1, stop))[0])
    ended = [s for s in causes if s.get("end") is not None and s.get("duration_s") is not None and
             start <= s["end"] <= end]  # of the columns kept (a --history limit drops the oldest)
    if not ended:
        return none
    datasource = hist.stream.datasource
    unfound = _unfound(diag.findings, ended)
    out: list[str | None] = []
    for f in diag.findings:
        found = _found(f, ended)
        cause = findings_cause(found, round(f.events)) if found else None
        if cause and unfound and all(s.get("warmup") for s in found):
            cause += f"; {unfound}"
        out.append(cause if cause and with_cause(f, cause, datasource) is not f else None)
    return out


def _found(f: Finding, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks of a source's analysis (stragglers, warm-up) among `f`'s events, where its why may name their cause
    (`Finding.key`)."""
    return [s for s in tasks if f.holds(s["duration_s"], s["end"])] if f.key else []


def _unfound(findings: list[Finding], tasks: list[dict[str, Any]]) -> str:
    """`the stream's 2 stragglers are in no finding (...), the slowest task 7 (id 16) in stage 1.0 (5.54s)`: the
    stragglers among `tasks` (warm-up left out) that none of `findings` is about; "" where there are none."""
    left = [s for s in tasks if not s.get("warmup") and not any(f.holds(s["duration_s"], s["end"]) for f in findings)]
    if not left:
        return ""
    slowest = max(left, key=lambda s: s["duration_s"])
    named = f"{_task_name(slowest)} ({duration_text(slowest['duration_s'])})"
    why_none = "too few to shape the stream; see Stragglers"
    if len(left) == 1:
        return f"the stream's straggler, {named}, is in no finding ({why_none})"
    return f"the stream's {len(left)} stragglers are in no finding ({why_none}), the slowest {named}"


def findings_cause(found: list[dict[str, Any]], events: int) -> str | None:
    """What a finding about `events` tasks says of the stragglers and warm-up tasks among them (`found`): which are,
    then what made them slow (`_known`), `all 4 are stragglers on executor 1, slow in their stage (see Stragglers and
    Stages)`, `all 3 are warm-up tasks, the first on their executors' slots: ...`; failed or killed attempts of no
    other cause by their end reason, the rest as of no cause the log gives. None where the log gives no cause of
    their slowness for any (a failed attempt's end says what became of it, not what made it slow)."""
    known = [_known(s) for s in found]
    if not any(known):
        return None
    k = len(found)
    warm = [s for s, c in zip(found, known, strict=True) if c == "warmup"]
    slow = [s for s, c in zip(found, known, strict=True) if c == "executor"]
    larger = [s for s, c in zip(found, known, strict=True) if c == "input"]
    if len(warm) == k:
        return f"{_subject(k, events, 'a warm-up task', 'warm-up tasks')}, {_warmup_said(warm)}: start-up, not the " \
            "run's work"
    noun = ("a warm-up task or straggler", "warm-up tasks or stragglers") if warm else ("a straggler", "stragglers")
    subject = _subject(k, events, *noun)
    if len(slow) == k:
        return f"{subject} on {_slow_executors(slow)} (see Stragglers and Stages)"
    if len(larger) == k:
        return f"{subject} that read {_read_more(larger)} (see Stragglers)"
    rest = [s for s, c in zip(found, known, strict=True) if c is None]
    unknown = [s for s in rest if not s.get("failed") and not s.get("killed")]
    parts = [f"{len(warm)} warm-up ({_warmup_said(warm, why_too=False)})" if warm else "",
             f"{len(slow)} on {_slow_executors(slow)}" if slow else "",
             f"{len(larger)} read {_read_more(larger)}" if larger else "",
             _ended("failed", [s for s in rest if s.get("failed")]),
             _ended("killed", [s for s in rest if s.get("killed") and not s.get("failed")]),
             f"{len(unknown)} of no cause the log gives" if unknown else ""]
    return f"{subject} (see Stragglers and Stages): {'; '.join(p for p in parts if p)}"


def _ended(fate: str, attempts: list[dict[str, Any]]) -> str:
    """`2 failed attempts (ExceptionFailure, FetchFailed)`: attempts that failed or were killed (`fate`), by the end
    reasons the log gives them; "" for none."""
    if not attempts:
        return ""
    reasons = sorted({str(s.get("end_reason") or "no reason logged") for s in attempts})
    return f"{plural(len(attempts), f'{fate} attempt')} ({', '.join(reasons)})"


def _known(s: dict[str, Any]) -> str | None:
    """What the log says made a task of a source's analysis slow: "warmup" (the analysis keeps it apart as warm-up:
    slow only against its stage's median, not against its warm-up wave), else its straggler cause (`known_cause`)."""
    return "warmup" if s.get("warmup") else known_cause(s)


def _subject(k: int, events: int, one: str, several: str) -> str:
    """`it is a straggler`, `both are ...`, `all 4 are ...`, `3 of these 12 tasks are ...`: `k` of a finding's
    `events` tasks."""
    if k < events:
        return f"{k} of these {events:,} tasks {'is ' + one if k == 1 else 'are ' + several}"
    return f"it is {one}" if k == 1 else f"both are {several}" if k == 2 else f"all {k} are {several}"


#: What warm-up tasks paid, by why the analysis calls them warm-up (`warmup_reason`): where they ran, then what slowed
#: them (a finding's why says both; a part of its why, among other causes, only where).
WARMUP_PAID = {
    "cold": (("the first on its executor's slot", "the first on their executors' slots"),
             ("the executor's start", "the executors' start"),
             "the JVM's JIT, Python workers starting, the first deserialisation"),
    "first wave": (("in its stage's first wave", "in their stage's first wave"),
                   ("the stage's start on its executor", "the stage's start on each executor"),
                   "its code deserialised and first run: class loading, JIT, broadcasts fetched"),
}


def _warmup_said(found: list[dict[str, Any]], why_too: bool = True) -> str:
    """Where the warm-up tasks `found` ran (`WARMUP_PAID`, by their `warmup_reason`: cold executor slots, their
    stage's first wave, or both), and (`why_too`) what slowed them."""
    reasons = {s.get("warmup_reason") or "first wave" for s in found}
    several = len(found) != 1
    if len(reasons) == 1 and (paid := WARMUP_PAID.get(next(iter(reasons)))):
        where, start, what = paid[0][several], paid[1][several], paid[2]
    else:
        where = "the first on their executors' slots or in their stage's first wave"
        start, what = "the executors' or the stages' start", "the JVM's JIT, Python workers starting, the first " \
            "deserialisation"
    return f"{where}, slowed by {start} ({what})" if why_too else where


def _slow_executors(found: list[dict[str, Any]]) -> str:
    """`executor 1, slow in its stage` (`their stages`: of several stragglers in several), `executors 1 and 2, each
    slow in its stage`: where stragglers ran."""
    names = sorted({str(s.get("executor")) for s in found}, key=lambda n: (len(n), n))
    if len(names) > 1:
        return f"executors {', '.join(names[:-1])} and {names[-1]}, each slow in its stage"
    several = len({(s.get("stage"), s.get("attempt")) for s in found}) > 1
    return f"executor {names[0]}, slow in {'its' if len(found) == 1 else 'their'} stage{'s' if several else ''}"


def _read_more(found: list[dict[str, Any]]) -> str:
    """`40× its stage's median task's bytes: a skewed, larger partition`, or of several stragglers their least and
    most `8.51×–40× their ...: skewed, larger partitions`."""
    ratios = sorted(float(s["read_ratio"]) for s in found)
    low, high = times(ratios[0]), times(ratios[-1])
    one = len(found) == 1
    return (f"{low if low == high else f'{low}–{high}'} {'its' if one else 'their'} stage's median task's bytes: "
            f"{'a skewed, larger partition' if one else 'skewed, larger partitions'}")


def _stage_counts(st: dict[str, Any]) -> str:
    """`8 tasks, 2 failed attempts`: tasks that succeeded (of how many, when not all did), then the attempts that
    failed, were killed or ran speculatively."""
    if st.get("succeeded") is None:
        return plural(st["tasks"], "task")
    done, planned = st["succeeded"], st.get("num_tasks")
    parts = [f"{done:,} of {plural(planned, 'task')}" if planned is not None and planned != done else
             plural(done, "task")]
    for key in ("failed", "killed", "speculative"):
        n = st.get(key) or 0
        if n:
            parts.append(plural(n, f"{key} attempt"))
    if st.get("running"):
        parts.append(f"{st['running']} still running (the longest {duration_text(st['running_max_s'])} so far)")
    return ", ".join(parts)


def _stage_end(st: dict[str, Any]) -> str:
    """`; did not complete: ...` for a stage attempt that failed or has no end; nothing otherwise."""
    if st.get("status") == "failed":
        return f"; did not complete: failed ({st.get('failure') or 'no reason given'})"
    if st.get("status") == "unfinished":
        why = st.get("unfinished_because") or "still running, or the log is cut short"
        return f"; did not complete: no end logged ({why})"
    return ""


def _core_s(value: float) -> str:
    """Core-seconds in three significant digits; under a microsecond (float error: times are ms or µs) as 0."""
    return "0" if abs(value) < 1e-6 else f"{value:.3g}"


def _warmup_hides(st: dict[str, Any]) -> bool:
    """True when a stage's slowest task is warm-up and its skew reads otherwise without it (by 10% or more)."""
    after, skew = st.get("skew_after_warmup"), st.get("skew")
    return after is not None and skew is not None and st["max_after_warmup_s"] < st["max_s"] and after <= 0.9 * skew


def skew_read(st: dict[str, Any]) -> float | None:
    """A stage's skew as the report reads it: without its warm-up tasks where they hide it (`_warmup_hides`)."""
    return st["skew_after_warmup"] if _warmup_hides(st) else st.get("skew")


def without_warmup(st: dict[str, Any], sign: str = "x") -> str:
    """`; without its 3 warm-up tasks: skew 1.6x, max 420ms` where warm-up hides a stage's skew; nothing otherwise."""
    if not _warmup_hides(st):
        return ""
    n = st["warmup_tasks"]
    return (f"; without its {n} warm-up task{'s' if n != 1 else ''}: skew {st['skew_after_warmup']:.1f}{sign}, "
            f"max {duration_text(st['max_after_warmup_s'])}")


def source_lines(extra: dict[str, Any]) -> list[str]:
    """Text lines for what a source adds to the report: the application's time, stragglers, warm-up kept apart, stage
    skew."""
    return application_line(extra) + straggler_lines(extra.get("stragglers", []), _measured_by(extra)) + \
        _stage_notes(extra)


def source_notes(extra: dict[str, Any]) -> list[str]:
    """`source_lines` but the stragglers: the application's time, warm-up kept apart, stage skew (SVG and HTML
    reports list the stragglers under their streams, these after the streams)."""
    return application_line(extra) + _stage_notes(extra)


def _measured_by(extra: dict[str, Any]) -> str:
    """` (by task duration; the maps show run)` where the analysis measures another metric than the maps show."""
    analysed, mapped = extra.get("analysed"), extra.get("metric")
    return f" (by task {analysed}; the maps show {mapped})" if analysed and mapped and analysed != mapped else ""


def application_line(extra: dict[str, Any]) -> list[str]:
    """`Application: 26.6s; 5 jobs ran 9.98s (38%); no job running 16.6s (62%): ...`: the application's time in and
    outside jobs (Sparklens' driver time), where the source says it."""
    t = extra.get("application_time")
    if not t or not t.get("duration_s"):
        return []
    whole = t["duration_s"]
    so_far = "" if t.get("ended", True) else " so far (no end logged)"
    parts = [f"{duration_text(t['before_jobs_s'])} before the first job (start-up)"]
    if t.get("between_jobs_s"):
        parts.append(f"{duration_text(t['between_jobs_s'])} between jobs (the longest "
                     f"{duration_text(t['longest_between_s'])}, before job {t['longest_before_job']})")
    parts.append(f"{duration_text(t['after_jobs_s'])} after the last")
    return [clean_text(f"Application: {duration_text(whole)}{so_far}; {plural(t['jobs'], 'job')} ran "
                       f"{duration_text(t['in_jobs_s'])} ({100 * t['in_jobs_s'] / whole:.0f}%); no job running "
                       f"{duration_text(t['outside_jobs_s'])} ({100 * t['outside_jobs_s'] / whole:.0f}%: the driver's "
                       f"own work, planning, Python code, collecting results): {', '.join(parts)}", 1000)]


def _stage_notes(extra: dict[str, Any]) -> list[str]:
    """The warm-up tasks kept apart and the stages' skew, executors slow in a stage under their stage."""
    by = _measured_by(extra)
    out: list[str] = []
    listed = {(w.get("stage"), w.get("task_id")) for w in extra.get("stragglers", []) if w.get("warmup")}
    apart = [w for w in extra.get("warmup", []) if (w.get("stage"), w.get("task_id")) not in listed]
    if apart:
        out.append(f"Warm-up tasks kept apart: {len(apart)} (slow only against the median: cold executor slots or a "
                   "stage's first wave; --include-warmup lists them)")
    stages = [st for st in extra.get("stages", []) if st.get("tasks", 0) >= 2 or st.get("status") in
              ("failed", "unfinished")]
    if stages:
        out.append(f"Stages{by}: skew = max/median; max/wall = the slowest task's share of the stage's wall time; "
                   "wasted = cores x wall - task time")
    costliest = max(stages, key=lambda st: st.get("wasted_core_s") or 0.0, default=None) if len(stages) > 1 else None
    if costliest is not None and not 1 - (costliest.get("utilisation") or 1.0) >= WORTH_MARKING:
        costliest = None  # a few % idle cores is how stages end: marking the largest such would be trivia
    for st in stages:
        end = _stage_end(st)
        named = f" ({st['name']})" if st.get("name") else ""
        line = (f"   stage {st['stage']}.{st['attempt']}{named}: {_stage_counts(st)}{end}{'; ' if end else ', '}"
                f"median {duration_text(st['median_s'])}, max {duration_text(st['max_s'])}")
        if st.get("skew") is not None:
            line += f" (skew {st['skew']:.1f}x"
            line += f", {100 * st['max_over_wall']:.0f}% of the wall {duration_text(st['wall_s'])})" \
                if st.get("max_over_wall") is not None else ")"
        line += without_warmup(st)
        if st.get("wasted_core_s") is not None:
            line += f"; {plural(st['cores'], 'core')}{_cores_there(st)}, {_waste(st)}"
        if st is costliest:
            line += " ◀ the most core-s wasted"
        out.append(clean_text(line, 1000))
        out += [clean_text(_slow_executor(st, e), 1000) for e in st.get("slow_executors") or ()]
    return out


def _cores_there(st: dict[str, Any]) -> str:
    """` (there 17.5 of the 22 core-s of its wall: executors added or removed in it)` where the stage's executors were
    not all there all along (their cores are counted only while they were); empty otherwise."""
    whole, there = st["cores"] * st["wall_s"], st.get("available_core_s")
    if there is None or whole - there < 1e-6:
        return ""
    return f" (there {_core_s(there)} of the {_core_s(whole)} core-s of its wall: executors added or removed in it)"


def _waste(st: dict[str, Any]) -> str:
    """`0.544 core-s wasted (8%)`; where task time passes cores x wall (Spark's task times include the lag before a
    task's end is logged, so an executor's tasks overlap past its cores), that, and by how much they overlap."""
    use = st.get("utilisation")
    there = st.get("available_core_s")
    there = st["cores"] * st["wall_s"] if there is None else there
    if use is None or use <= 1 or (st.get("task_time_s") or 0) - there < 1e-6:
        share = max(0.0, 100 * (1 - use)) if use is not None else 0.0
        return f"{_core_s(st['wasted_core_s'])} core-s wasted ({share:.0f}%)"
    over = st.get("overlap_core_s")
    by = f" past their executor's cores for {_core_s(over)} core-s" if over else ""
    share = f"{100 * use:.0f}" if use >= 1.01 else f"{100 * use:.1f}"
    return (f"task time {share}% of cores x wall, so no waste is measured: tasks overlap{by} (Spark counts in "
            "a task's time the lag before its end is logged)")


def _slow_executor(st: dict[str, Any], e: dict[str, Any]) -> str:
    """`executor 1 slow in stage 3.0: median 850ms vs 236ms on the others (4 tasks vs 12; 4 of its stragglers)`."""
    n = e.get("stragglers") or 0
    held = f"; {n} of the stage's stragglers" if n else ""
    return (f"      executor {e['executor']} slow in stage {st['stage']}.{st['attempt']}: median "
            f"{duration_text(e['median_s'])} vs {duration_text(e['others_median_s'])} on the others "
            f"({plural(e['tasks'], 'task')} vs {e['others_tasks']:,}{held})")
