"""The inspector: the cursor column's histogram, one line per map row (aligned with the map), and its statistics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from rich.text import Text
from textual.widgets import Static

from latencymap.core.accumulator import GAP, RESET, StreamHistory, Totals
from latencymap.core.buckets import percentile_duration
from latencymap.core.percentiles import PERCENTILE_NAMES, PERCENTILES
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_duration, format_number, unit_seconds
from latencymap.outputs.report import shown_total, source_use
from latencymap.tui.axis import column_time, telling_digits, time_of_day
from latencymap.views.frame import Folds, fold_rows, row_labels

#: Cells of a bucket's label (`fit_duration`: `13 days`, `≥12.7d`).
LABEL_W = 7

BAR_W = 12
#: The compact inspector's bar (a narrow terminal), and its count and % columns.
COMPACT_BAR_W = 8
COUNT_W = 7
EIGHTHS = " ▏▎▍▌▋▊▉█"


@dataclass(slots=True)
class BucketRow:
    """One bucket of the inspected column(s)."""

    label: str
    count: int
    percent: float
    cumulative: float


@dataclass(slots=True)
class Inspection:
    """Histogram and statistics of history columns [first, stop) of one stream; rows bottom (fastest) → top."""

    first: int
    stop: int
    start: float
    end: float
    events: int
    events_per_s: float
    mean_s: float
    percentiles: dict[float, float]
    rows: list[BucketRow] = field(default_factory=list)
    start_text: str = ""
    end_text: str = ""
    resets: int = 0
    gaps: int = 0
    #: The percentiles that are a lower bound only (`Totals.open`), written `≥low`.
    open: tuple[float, ...] = ()
    #: Those that are an upper bound only (`outputs.report.bounded_first_bucket`), written `≤high`.
    at_most: tuple[float, ...] = ()
    #: The top of the source's first bucket (s) when the figures are the rows', which the exact sum placed inside it
    #: (`SourceTotals.first_bucket_faster`): the source says no more of them than that bucket.
    placed_below: float | None = None

    @property
    def empty(self) -> bool:
        """True when the columns hold no event."""
        return self.events == 0


def inspect_columns(hist: StreamHistory, first: int, stop: int, lo: int, hi: int,
                    folds: Folds | None = None, digits: int = 0, source: SourceTotals | None = None) -> Inspection:
    """Read the columns straight from the accumulator (folded to the shown rows, bottom→top); times with `digits`
    decimals of a second (the view's: `view_digits`); `source`, the stream's own buckets where its source keeps them
    (`Accumulator.sources`: `own_figures`)."""
    cols = slice(first, stop)
    totals = hist.totals(cols)
    folded = fold_rows(hist.counts_in(cols).sum(axis=0, keepdims=True), lo, hi)[0]
    total = float(folded.sum())
    pct = folded / total * 100 if total else np.zeros_like(folded)
    cum = np.cumsum(pct)
    rows = [BucketRow(label, int(c), float(p), float(q))
            for label, c, p, q in zip(row_labels(hist, lo, hi, folds, LABEL_W), folded, pct, cum, strict=True)]
    rate = totals.events / totals.duration_s if totals.duration_s else float("nan")
    start, end = float(hist.start[first]), float(hist.end[stop - 1])
    flags = hist.flags[cols]
    mean, percentiles, at_least, at_most = own_figures(hist, first, stop, totals, source)
    return Inspection(first, stop, start, end, totals.events, rate, mean, percentiles, rows,
                      *time_texts(hist, start, end, digits), int(np.count_nonzero(flags & RESET)),
                      int(np.count_nonzero(flags & GAP)), at_least, at_most,
                      None if at_most else placed_below(hist, source, percentiles))


def placed_below(hist: StreamHistory, source: SourceTotals | None, percentiles: dict[float, float]) -> float | None:
    """The top (s) of the source's first bucket when the exact sum placed the rows' events inside it
    (`SourceTotals.first_bucket_faster`) and every one of the rows' `percentiles` lies there; else None."""
    to_s = unit_seconds(hist.stream.unit)
    faster = source.first_bucket_faster(to_s) if source is not None else None
    if faster is None:
        return None
    top = faster[1] * to_s
    return top if all(math.isfinite(v) and v <= top for v in percentiles.values()) else None


def own_figures(hist: StreamHistory, first: int, stop: int, totals: Totals, source: SourceTotals | None,
                ) -> tuple[float, dict[float, float], tuple[float, ...], tuple[float, ...]]:
    """Mean, percentiles, those a lower bound only (`Totals.open`) and those an upper bound only of columns
    [first, stop) (`totals`): where they are the whole stream and it has its source's own buckets (a rebinned or
    HdrHistogram stream), those buckets' as the header's overall gives them (`stream_total`, in a first bucket the
    exact sum proves faster its bound: `bounded_first_bucket`); else the rows'. The source's buckets are sums over
    the whole stream only."""
    if source is None or not whole_from_source(hist, first, stop, totals.events, source):
        return totals.mean_s, totals.percentiles, totals.open, ()
    whole = shown_total(totals, source, hist.stream.unit, hist.n)
    mean, *figures = (math.nan if v is None else float(v) for v in
                      (whole["mean_s"], *(whole[f"{PERCENTILE_NAMES[q]}_s"] for q in PERCENTILES)))
    bounds = [tuple(q for q in PERCENTILES if f"{PERCENTILE_NAMES[q]}_s" in whole.get(key, ()))
              for key in ("open", "at_most")]
    return mean, dict(zip(PERCENTILES, figures, strict=True)), bounds[0], bounds[1]


def whole_from_source(hist: StreamHistory, first: int, stop: int, events: int, source: SourceTotals | None) -> bool:
    """Whether columns [first, stop) (`events` events) are the whole stream and its source's own buckets hold them
    all: their figures are then those buckets' (`stream_total`), else the rows'."""
    return (first, stop, hist.dropped) == (0, hist.n, 0) and source_use(source, events, hist.n)[0]


def time_texts(hist: StreamHistory, start: float, end: float, digits: int = 0) -> tuple[str, str]:
    """The inspector's `start → end` (the end's time of day only), with the view's `digits` decimals of a second
    (`view_digits`: the same for every column), or more for a column too short to tell its start from its end that
    way (`telling_digits`), so that it does not read as none."""
    places = telling_digits(hist, start, end, digits)
    return column_time(hist, start, places), time_of_day(hist, end, places)


def bar(share: float, width: int = BAR_W) -> str:
    """A horizontal bar of `share` (0..1) of `width` cells, in eighths of a cell."""
    eighths = round(max(0.0, min(1.0, share)) * width * 8)
    if eighths == 0 and share > 0:
        eighths = 1
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width)


def inspection_chart(ins: Inspection, selected_row: int | None, compact: bool = False) -> Text:
    """A header line, then one line per map row, slowest first (as the map draws them): bar, count, %, cum %.

    `compact` (30 cells): a shorter bar, no cum %.
    """
    text = Text(no_wrap=True, overflow="crop")
    width = COMPACT_BAR_W if compact else BAR_W
    head = f"{'bucket':>7} {'events':<{width}} " + (f"{'count':>{COUNT_W}} {'%':>5}" if compact else
                                                      f"{'count':>8} {'%':>6} {'cum %':>6}")
    text.append(head, style="bold")
    top = max((r.count for r in ins.rows), default=0)
    for i in range(len(ins.rows) - 1, -1, -1):
        row = ins.rows[i]
        style = "reverse" if i == selected_row else ""
        text.append("\n")
        text.append(f"{row.label[:LABEL_W]:>{LABEL_W}} ", style=style)
        text.append(bar(row.count / top if top else 0.0, width), style=style or "cyan")
        share = percent_text(row.percent, row.count > 0)
        if compact:
            count = str(row.count) if len(str(row.count)) <= COUNT_W else format_number(row.count)
            text.append(f" {count:>{COUNT_W}} {share:>5}", style=style)
        else:
            cumulative = percent_text(row.cumulative, row.cumulative > 0)
            text.append(f" {row.count:>8} {share:>6} {cumulative:>6}", style=style)
    return text


def percent_text(percent: float, held: bool) -> str:
    """`percent` to one decimal; a share that holds events (`held`) never reads `0.0`, but `<0.1`."""
    return "<0.1" if held and percent < 0.05 else f"{percent:.1f}"


def inspection_summary(ins: Inspection) -> Text:
    """Column, time, totals and percentiles of the inspected column(s); says so when they hold no event."""
    cols = f"column {ins.first}" if ins.stop - ins.first == 1 else f"columns {ins.first}–{ins.stop - 1}"
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{cols}\n", style="bold")
    text.append(f"{ins.start_text} → {ins.end_text}\n")
    if ins.empty:
        text.append("empty column: no events in it", style="bold yellow")
        _flag_notes(text, ins)
        return text
    noun = "event" if ins.events == 1 else "events"
    mean = format_duration(ins.mean_s, long_units=True)
    text.append(f"{ins.events} {noun}  {format_number(ins.events_per_s)}/s  mean {mean}\n")
    items = [f"p{q * 100:g} " + ("≤" + format_duration(v, long_units=True) if q in ins.at_most else
                                 percentile_duration(v, q in ins.open, long_units=True))
             for q, v in ins.percentiles.items()]
    text.append("  ".join(items[:2]) + "\n" + "  ".join(items[2:]))
    if ins.placed_below is not None:
        text.append(f"\nin the source's first bucket (0, {format_duration(ins.placed_below)}]:\n"
                    "figures placed by its exact sum", style="dim")
    _flag_notes(text, ins)
    return text


def _flag_notes(text: Text, ins: Inspection) -> None:
    """Say when the inspected columns count from a counter reset or miss data (a gap)."""
    one = ins.stop - ins.first == 1
    if ins.resets:
        text.append("\ncounter reset: " + ("a counter went down; this column counts from the reset" if one
                                           else f"{ins.resets} of these columns count from a reset"),
                    style="bold dark_orange")
    if ins.gaps:
        text.append("\ngap: " + ("data is missing from this column" if one
                                 else f"data is missing from {ins.gaps} of these columns"), style="bold")


class Inspector(Static):
    """The column under the cursor: its histogram row by row beside the map's rows, then its numbers."""

    DEFAULT_CSS = """
    Inspector { width: 48; height: 1fr; border-left: solid $primary; padding: 0 0 0 1; }
    """

    def __init__(self) -> None:
        self._text = Text("Inspector: waiting for data")
        super().__init__(self._text, id="inspector")
        self.inspection: Inspection | None = None
        self.compact = False
        self._shown: tuple | None = None

    def show(self, ins: Inspection | None, selected_row: int | None, gap: int = 2) -> None:
        """Draw `ins`; `gap` lines between the chart and the summary (the map's cursor line and axis)."""
        key = None if ins is None else (ins.first, ins.stop, ins.start_text, ins.end_text, ins.events,
                                        tuple(r.count for r in ins.rows),
                                        tuple(r.label for r in ins.rows), selected_row, gap, self.compact)
        if key == self._shown:
            return
        self._shown, self.inspection = key, ins
        if ins is None:
            return
        text = inspection_chart(ins, selected_row, self.compact)
        text.append("\n" * (gap + 1))
        text.append_text(inspection_summary(ins))
        self._text = text
        self.update(text)

    def plain_lines(self) -> list[str]:
        """The inspector as text, for the saved plain-text frame."""
        return [line.rstrip() for line in self._text.plain.splitlines()]
