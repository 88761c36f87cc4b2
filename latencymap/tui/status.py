"""Header lines: stream, unit, interval, columns, rates, mean, p50/p99 (latest and overall), state; each line fitted
to the screen's width, the least important fields dropped first; durations as the report writes them (`12.7 days`).

"overall" is the whole stream's figures as `latencymap report` prints them (`outputs.report.stream_total`): a rebinned
stream's percentiles (and time) from its source's own buckets. Those exist for the whole stream only, so "latest" (one
column) comes from the log2 rows, and says so for a rebinned stream.
"""

from __future__ import annotations

import math
import weakref

from rich.text import Text

from latencymap.core.accumulator import StreamHistory, Totals
from latencymap.core.buckets import percentile_duration
from latencymap.core.percentiles import PERCENTILES, median_of
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_duration, format_number
from latencymap.outputs.report import percentile_text, shown_total, source_use, stream_total
from latencymap.tui.fit import Field, FittedText, fit_lines
from latencymap.tui.notes import notes_field

STATE_STYLES = {"live": "bold green", "paused": "bold yellow", "ended": "bold cyan", "waiting": "bold"}
P50, P99 = PERCENTILES.index(0.50), PERCENTILES.index(0.99)
#: The rank of the count of messages reading said: kept longer than any field but the state (the label too: a
#: terminal too narrow for both keeps the count, how a user learns that a record was skipped).
NOTES_RANK = 72
#: The fewest cells the stream's label is cut to before more important fields go; below them it goes, before the
#: count of notes.
LABEL_MIN = 16
LABEL_DROP = NOTES_RANK - 1
#: The header's interval is the median length of this many columns up to the newest shown.
INTERVAL_COLUMNS = 512
#: Per history: (columns, figures, whether from the source's buckets) as last computed over every column, kept for
#: a paused header (the source's buckets go on filling while the display is frozen).
_WHOLE: weakref.WeakKeyDictionary[StreamHistory, tuple[int, dict[str, float | None], bool]] = \
    weakref.WeakKeyDictionary()


def status_lines(hist: StreamHistory | None, stop: int, *, state: str, skipped: int, stream_index: int,
                 streams: int, ingest_rate: float, source: SourceTotals | None = None,
                 notes: int = 0) -> list[list[Field]]:
    """Two lines of status fields for the stream shown, its columns up to history index `stop` (frozen when paused);
    `notes`: the messages reading said (the key that lists them follows their count).

    "latest" is the newest column and "overall" every column: the stream's own numbers, whatever the view shows;
    `source` is the stream's own buckets when it was rebinned (`Accumulator.sources`), whose percentiles and time
    "overall" then shows, as the report does.
    """
    first = [Field(f" {state.upper()} ", STATE_STYLES.get(state, "bold"), 100)]
    if hist is None:
        return [[*first, Field("  waiting for data…", rank=40), Field(f"  skipped records: {skipped}", rank=70),
                 *notes_field(notes, NOTES_RANK)]]
    s = hist.stream
    first.append(Field(f"  {clean_text(s.label, 1000) or '(no label)'}", "bold", 50, shrink=LABEL_MIN,
                       drop_at=LABEL_DROP))
    first.append(Field(f"  [{stream_index + 1}/{streams}]", rank=60 if streams > 1 else 5))
    first += [Field(f"  {clean_text(s.datasource, 20)}", rank=20), Field(f"  unit {s.unit}", rank=30)]
    if stop == 0 and hist.dropped and not hist.n:  # an ended stream whose columns went to the --history budget
        first += [Field(f"  columns {hist.dropped}, all dropped (it ended: --history budget)", rank=40),
                  Field(f"  skipped {skipped}", rank=70 if skipped else 3), *notes_field(notes, NOTES_RANK)]
        whole = hist.totals(slice(0, 0), fast=True, all_seen=True)
        return [first, _overall_fields(hist, 0, whole, source)]
    if stop == 0:
        why = "its columns came after the pause (space: resume)" if hist.n else \
            "waiting for the second record (the first is the baseline)"
        return [[*first, Field(f"  {why}", rank=40),
                 *notes_field(notes, NOTES_RANK)]]
    first += [Field(f"  interval {format_duration(typical_interval(hist, stop), long_units=True)}", rank=25),
              Field(f"  columns {stop + hist.dropped}" + (f" ({stop} kept)" if hist.dropped else ""), rank=15),
              Field(f"  skipped {skipped}", rank=70 if skipped else 3), *notes_field(notes, NOTES_RANK)]
    if state == "live":
        first.append(Field(f"  ingest {format_number(ingest_rate)}/s", rank=1))
    return [first, _numbers(hist, stop, source)]


def typical_interval(hist: StreamHistory, stop: int) -> float:
    """The stream's interval: the median length of its columns (the last `INTERVAL_COLUMNS` up to `stop`), not the
    newest one's, which may be a sliver (a source's final flush) or a late record's long one."""
    return float(median_of(hist.meta_in("dur", slice(max(0, stop - INTERVAL_COLUMNS), stop))))


def overall(hist: StreamHistory, stop: int, total: Totals,
            source: SourceTotals | None) -> tuple[dict[str, float | None], bool]:
    """`stream_total` of columns [0, `stop`) (`total`: their totals): events, time, mean and percentiles (seconds)
    as the report prints them; and whether the percentiles come from the source's own buckets. Those hold the whole
    stream: with `stop` short of it (paused) the figures of the moment it was whole are kept, else the rows'."""
    if source is not None and stop == hist.n:
        figures = shown_total(total, source, hist.stream.unit, hist.n)
        own = source_use(source, total.events, hist.n)[0]
        _WHOLE[hist] = (stop, figures, own)
        return figures, own
    kept = _WHOLE.get(hist)
    if kept is not None and kept[0] == stop:
        return kept[1], kept[2]
    return stream_total(total, None, hist.stream.unit, stop), False


def _seconds(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _numbers(hist: StreamHistory, stop: int, source: SourceTotals | None = None) -> list[Field]:
    """The second line: the newest column's and every column's rates, mean, p50 and p99 (p99 kept longest); a
    rebinned stream's "latest" says it comes from the rows (the source's buckets are whole-stream sums)."""
    latest = hist.column_stats(slice(stop - 1, stop))
    whole = hist.totals(slice(0, stop), fast=True, all_seen=True)  # dropped columns too: `columns` counts them
    total, own = overall(hist, stop, whole, source)
    mean = float(latest.mean_s[0])
    p50, p99 = (percentile_duration(float(latest.percentiles[0, j]), bool(latest.open[0, j]), long_units=True)
                for j in (P50, P99))
    rows = own
    if own and stop == 1:  # one column: the newest is the whole stream, and its source's buckets are its own
        mean, p50, p99, rows = _seconds(total["mean_s"]), *(percentile_text(total, q) for q in (0.50, 0.99)), False
    return [
        Field(" latest (rows)" if rows else " latest", "bold", group="latest", head=True),
        Field(f" {format_number(float(latest.events_per_s[0]))} ev/s", rank=5, group="latest"),
        Field(f"  {format_number(float(latest.time_per_s[0]))} s/s", rank=1, group="latest"),
        Field(f"  mean {format_duration(mean, long_units=True)}", rank=3, group="latest"),
        Field(f"  p50 {p50}", rank=7, group="latest"),
        Field(f"  p99 {p99}", rank=9, group="latest"),
        *_overall_fields(hist, stop, whole, source, (total, own)),
    ]


def _overall_fields(hist: StreamHistory, stop: int, whole: Totals, source: SourceTotals | None,
                    figures: tuple[dict[str, float | None], bool] | None = None) -> list[Field]:
    """The "overall" fields: every column's rate, mean, p50 and p99 (`whole`: their totals, the dropped columns'
    too; `figures`: `overall`'s, when known)."""
    total, own = figures or overall(hist, stop, whole, source)
    rate = whole.events / whole.duration_s if whole.duration_s else float("nan")
    return [
        Field("   overall", "bold", group="overall", head=True),
        Field(f" {format_number(rate)} ev/s", rank=4, group="overall"),
        Field(f"  mean {format_duration(_seconds(total['mean_s']), long_units=True)}", rank=2, group="overall"),
        Field(f"  p50 {percentile_text(total, 0.50)}", rank=6, group="overall"),
        Field(f"  p99 {percentile_text(total, 0.99)}", rank=8, group="overall"),
        *([Field(" (source's buckets)", "dim", rank=0, group="overall")] if own else []),
    ]


def status_text(hist: StreamHistory | None, stop: int, *, state: str, skipped: int, stream_index: int,
                streams: int, ingest_rate: float, width: int = 10_000, source: SourceTotals | None = None,
                notes: int = 0) -> Text:
    """The status lines as text, fitted to `width` cells."""
    return fit_lines(status_lines(hist, stop, state=state, skipped=skipped, stream_index=stream_index,
                                  streams=streams, ingest_rate=ingest_rate, source=source, notes=notes), width)


class StatusBar(FittedText):
    """The two header lines."""

    DEFAULT_CSS = "StatusBar { height: 2; background: $boost; }"
