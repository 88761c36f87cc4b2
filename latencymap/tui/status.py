"""Header lines: stream, unit, interval, columns, rates, mean, p50/p99 (latest and overall), state; each line fitted
to the screen's width, the least important fields dropped first."""

from __future__ import annotations

from rich.text import Text

from latencymap.core.accumulator import StreamHistory
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.sanitize import clean_text
from latencymap.core.units import format_duration, format_number
from latencymap.tui.fit import Field, FittedText, fit_lines

STATE_STYLES = {"live": "bold green", "paused": "bold yellow", "ended": "bold cyan", "waiting": "bold"}
P50, P99 = PERCENTILES.index(0.50), PERCENTILES.index(0.99)
#: The fewest cells the stream's label is cut to before more important fields go.
LABEL_MIN = 16


def status_lines(hist: StreamHistory | None, stop: int, *, state: str, skipped: int, stream_index: int,
                 streams: int, ingest_rate: float) -> list[list[Field]]:
    """Two lines of status fields for the stream shown, its columns up to history index `stop` (frozen when paused).

    "latest" is the newest column and "overall" every column: the stream's own numbers, whatever the view shows.
    """
    first = [Field(f" {state.upper()} ", STATE_STYLES.get(state, "bold"), 100)]
    if hist is None:
        return [[*first, Field("  waiting for data…", rank=40), Field(f"  skipped records: {skipped}", rank=70)]]
    s = hist.stream
    first.append(Field(f"  {clean_text(s.label, 1000) or '(no label)'}", "bold", 50, shrink=LABEL_MIN))
    first.append(Field(f"  [{stream_index + 1}/{streams}]", rank=60 if streams > 1 else 5))
    first += [Field(f"  {clean_text(s.datasource, 20)}", rank=20), Field(f"  unit {s.unit}", rank=30)]
    if stop == 0:
        return [[*first, Field("  waiting for the second record (the first is the baseline)", rank=40)]]
    interval = float(hist.durations[stop - 1])
    first += [Field(f"  interval {interval:.3g}s", rank=25), Field(f"  columns {hist.n + hist.dropped}", rank=15),
              Field(f"  skipped {skipped}", rank=70 if skipped else 3)]
    if state == "live":
        first.append(Field(f"  ingest {format_number(ingest_rate)}/s", rank=1))
    return [first, _numbers(hist, stop)]


def _numbers(hist: StreamHistory, stop: int) -> list[Field]:
    """The second line: the newest column's and every column's rates, mean, p50 and p99 (p99 kept longest)."""
    latest = hist.column_stats(slice(stop - 1, stop))
    total = hist.totals(slice(0, stop), fast=True)
    rate = total.events / total.duration_s if total.duration_s else float("nan")
    return [
        Field(" latest", "bold", group="latest", head=True),
        Field(f" {format_number(float(latest.events_per_s[0]))} ev/s", rank=5, group="latest"),
        Field(f"  {format_number(float(latest.time_per_s[0]))} s/s", rank=1, group="latest"),
        Field(f"  mean {format_duration(float(latest.mean_s[0]))}", rank=3, group="latest"),
        Field(f"  p50 {format_duration(float(latest.percentiles[0, P50]))}", rank=7, group="latest"),
        Field(f"  p99 {format_duration(float(latest.percentiles[0, P99]))}", rank=9, group="latest"),
        Field("   overall", "bold", group="overall", head=True),
        Field(f" {format_number(rate)} ev/s", rank=4, group="overall"),
        Field(f"  mean {format_duration(total.mean_s)}", rank=2, group="overall"),
        Field(f"  p50 {format_duration(total.percentiles[0.50])}", rank=6, group="overall"),
        Field(f"  p99 {format_duration(total.percentiles[0.99])}", rank=8, group="overall"),
    ]


def status_text(hist: StreamHistory | None, stop: int, *, state: str, skipped: int, stream_index: int,
                streams: int, ingest_rate: float, width: int = 10_000) -> Text:
    """The status lines as text, fitted to `width` cells."""
    return fit_lines(status_lines(hist, stop, state=state, skipped=skipped, stream_index=stream_index,
                                  streams=streams, ingest_rate=ingest_rate), width)


class StatusBar(FittedText):
    """The two header lines."""

    DEFAULT_CSS = "StatusBar { height: 2; background: $boost; }"
