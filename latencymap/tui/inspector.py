"""The inspector: the cursor column's histogram as a bar chart and a table, with its percentiles."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from latencymap.core.accumulator import StreamHistory
from latencymap.core.units import format_duration, format_number
from latencymap.views.frame import fold_rows, row_labels


@dataclass(slots=True)
class BucketRow:
    """One bucket of the inspected column(s)."""

    label: str
    count: int
    percent: float
    cumulative: float


@dataclass(slots=True)
class Inspection:
    """Histogram and statistics of history columns [first, stop) of one stream."""

    first: int
    stop: int
    start: float
    end: float
    events: int
    events_per_s: float
    mean_s: float
    percentiles: dict[float, float]
    rows: list[BucketRow] = field(default_factory=list)


def inspect_columns(hist: StreamHistory, first: int, stop: int, lo: int, hi: int) -> Inspection:
    """Read the columns straight from the accumulator (folded to the shown rows, bottom→top)."""
    cols = slice(first, stop)
    totals = hist.totals(cols)
    folded = fold_rows(hist.counts_in(cols).sum(axis=0, keepdims=True), lo, hi)[0]
    total = float(folded.sum())
    pct = folded / total * 100 if total else np.zeros_like(folded)
    cum = np.cumsum(pct)
    rows = [BucketRow(label, int(c), float(p), float(q))
            for label, c, p, q in zip(row_labels(hist, lo, hi), folded, pct, cum, strict=True)]
    rate = totals.events / totals.duration_s if totals.duration_s else float("nan")
    return Inspection(first, stop, float(hist.start[first]), float(hist.end[stop - 1]), totals.events, rate,
                      totals.mean_s, totals.percentiles, rows)


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def inspection_table(ins: Inspection, selected_row: int | None) -> Table:
    """Count, % of column and cumulative % per bucket, fastest at the top."""
    table = Table(box=None, padding=(0, 1), expand=False, show_edge=False)
    for name in ("bucket", "count", "%", "cum %"):
        table.add_column(name, justify="right")
    for i, row in enumerate(ins.rows):
        style = "reverse" if i == selected_row else None
        table.add_row(row.label, str(row.count), f"{row.percent:.1f}", f"{row.cumulative:.1f}", style=style)
    return table


def inspection_summary(ins: Inspection) -> Text:
    """Timestamp, totals and percentiles of the inspected column(s)."""
    cols = f"column {ins.first}" if ins.stop - ins.first == 1 else f"columns {ins.first}–{ins.stop - 1}"
    items = [f"p{q * 100:g} {format_duration(v)}" for q, v in ins.percentiles.items()]
    pcts = "  ".join(items[:2]) + "\n" + "  ".join(items[2:])
    return Text(f"{cols}  {_stamp(ins.start)} → {time.strftime('%H:%M:%S', time.localtime(ins.end))}\n"
                f"{ins.events} events  {format_number(ins.events_per_s)}/s  mean {format_duration(ins.mean_s)}\n"
                f"{pcts}")


class Inspector(Vertical):
    """Bar chart over a table for the column under the cursor."""

    DEFAULT_CSS = """
    Inspector { width: 48; height: 1fr; border-left: solid $primary; padding: 0 0 0 1; }
    Inspector PlotextPlot { height: 14; }
    Inspector #inspector-summary { height: auto; }
    Inspector #inspector-table { height: auto; }
    """

    def __init__(self) -> None:
        super().__init__(id="inspector")
        self.inspection: Inspection | None = None
        self._shown: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Inspector: waiting for data"), id="inspector-summary")
        yield PlotextPlot(id="inspector-plot")
        yield Static(id="inspector-table")

    def show(self, ins: Inspection | None, selected_row: int | None, kind_unit: str) -> None:
        """Update the chart and table (skipped when nothing changed)."""
        key = None if ins is None else (ins.first, ins.stop, ins.events, tuple(r.count for r in ins.rows),
                                        selected_row)
        if key == self._shown:
            return
        self._shown, self.inspection = key, ins
        if ins is None:
            return
        self.query_one("#inspector-summary", Static).update(inspection_summary(ins))
        self.query_one("#inspector-table", Static).update(inspection_table(ins, selected_row))
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        positions = list(range(len(ins.rows)))
        plt.bar(positions, [r.count for r in ins.rows], orientation="horizontal", width=0.6)
        plt.yticks([float(p) for p in positions], [r.label for r in ins.rows])
        plot.styles.height = len(ins.rows) + 5
        plt.title(f"events per bucket ({kind_unit})")
        plot.refresh()
