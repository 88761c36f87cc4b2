"""Header lines: stream, unit, interval, columns, rates, mean, p50/p99 (latest and overall), state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from latencymap.core.accumulator import StreamHistory
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.sanitize import clean_text, cut_middle
from latencymap.core.units import format_duration, format_number

STATE_STYLES = {"live": "bold green", "paused": "bold yellow", "ended": "bold cyan", "waiting": "bold"}
P50, P99 = PERCENTILES.index(0.50), PERCENTILES.index(0.99)


def status_text(hist: StreamHistory | None, stop: int, *, state: str, skipped: int, stream_index: int,
                streams: int, ingest_rate: float) -> Text:
    """Two lines of status for the stream shown, up to history index `stop` (frozen when paused)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {state.upper()} ", style=STATE_STYLES.get(state, "bold"))
    if hist is None:
        text.append(f"  waiting for data…  skipped records: {skipped}")
        return text
    s = hist.stream
    text.append(f"  {cut_middle(clean_text(s.label, 1000), 60) or '(no label)'}", style="bold")
    text.append(f"  [{stream_index + 1}/{streams}]  {clean_text(s.datasource, 20)}  unit {s.unit}")
    if stop == 0:
        text.append("  waiting for the second record (the first is the baseline)")
        return text
    interval = float(hist.durations[stop - 1])
    text.append(f"  interval {interval:.3g}s  columns {hist.n + hist.dropped}  skipped {skipped}")
    if state == "live":
        text.append(f"  ingest {format_number(ingest_rate)}/s")
    latest = hist.column_stats(slice(stop - 1, stop))
    total = hist.totals(slice(0, stop), fast=True)
    rate = total.events / total.duration_s if total.duration_s else float("nan")
    text.append("\n latest ", style="bold")
    text.append(f"{format_number(float(latest.events_per_s[0]))} ev/s  "
                f"{format_number(float(latest.time_per_s[0]))} s/s  mean {format_duration(float(latest.mean_s[0]))}  "
                f"p50 {format_duration(float(latest.percentiles[0, P50]))}  "
                f"p99 {format_duration(float(latest.percentiles[0, P99]))}")
    text.append("   overall ", style="bold")
    text.append(f"{format_number(rate)} ev/s  mean {format_duration(total.mean_s)}  "
                f"p50 {format_duration(total.percentiles[0.50])}  p99 {format_duration(total.percentiles[0.99])}")
    return text


class StatusBar(Static):
    """The two header lines."""

    DEFAULT_CSS = "StatusBar { height: 2; background: $boost; }"
