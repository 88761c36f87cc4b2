"""PyLatencyMap-style ANSI frames: frequency map in blues, intensity in reds, latest values, legend, footer."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from latencymap.accumulator import Accumulator, StreamHistory
from latencymap.estimates import PERCENTILES
from latencymap.frame import AUTO, AUTO_MAX, LEVELS, MapFrame, build_frame, display_range
from latencymap.sanitize import clean_text
from latencymap.units import format_duration, format_number

BLUES = (15, 51, 45, 39, 33, 27, 21)
REDS = (15, 226, 220, 214, 208, 202, 196)
SHADES = (" ", "░", "░", "▒", "▒", "▓", "█")
RESET = "\x1b[0m"
CLEAR = "\x1b[0m\x1b[2J\x1b[H"


@dataclass(slots=True)
class PlainOptions:
    """PyLatencyMap's display options."""

    num_records: int = 90
    min_bucket: int = AUTO
    max_bucket: int = AUTO_MAX
    frequency_maxval: float = -1
    intensity_maxval: float = -1
    color: bool = True


def color_enabled() -> bool:
    """False under NO_COLOR (any value) or a dumb terminal."""
    return "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _row(levels: np.ndarray, pad: int, palette: tuple[int, ...], color: bool) -> str:
    """One map row; with colour, an escape only where the level changes."""
    if not color:
        return SHADES[0] * pad + "".join(SHADES[v] for v in levels.tolist())
    seq = [0] * pad + levels.tolist()
    parts: list[str] = []
    current = -1
    for v in seq:
        if v != current:
            parts.append(f"\x1b[48;5;{palette[v]}m")
            current = v
        parts.append(" ")
    return "".join(parts) + RESET


def _swatch(level: int, palette: tuple[int, ...], color: bool) -> str:
    return f"\x1b[48;5;{palette[level]}m {RESET}" if color else SHADES[level]


def _render_map(frame: MapFrame, opts: PlainOptions, title: str, unit: str) -> list[str]:
    palette = BLUES if frame.kind == "frequency" else REDS
    width = opts.num_records
    pad = width - frame.levels.shape[1]
    label_w = max(len(lbl) for lbl in frame.labels) + 1
    lines = [f"{'Latency':<{label_w}} {title:<{width}}  {'Latest':>9}   Legend",
             f"{'bucket':<{label_w}} {unit:<{width}}"]
    nrows = len(frame.labels)
    for r in range(nrows - 1, -1, -1):
        line = f"{frame.labels[r]:>{label_w}} {_row(frame.levels[r], pad, palette, opts.color)}"
        line += f"  {format_number(float(frame.latest[r]), 4):>9}"
        legend_row = nrows - 1 - r
        if legend_row <= LEVELS:
            bound = 0.0 if legend_row == 0 else frame.maxval * (legend_row - 1) / LEVELS
            text = "0" if legend_row == 0 else ">" + format_number(bound)
            line += f"   {_swatch(legend_row, palette, opts.color)} {text}"
        elif legend_row == LEVELS + 1:
            line += f"   max: {format_number(frame.chart_max)}"
        lines.append(line)
    sums = frame.col_sums
    latest_sum = float(sums[-1]) if sums.size else 0.0
    what = "events per second" if frame.kind == "frequency" else "time waited per second"
    lines.append(f"{'':<{label_w}} x=time, y=latency bucket, color={what}"
                 f"{'':<{max(0, width - 44)}}  {'sum ' + format_number(latest_sum, 4):>9}")
    return lines


def render_stream(hist: StreamHistory, opts: PlainOptions, skipped: int = 0) -> str:
    """Both maps and the footer for one stream."""
    lo, hi = display_range(hist, opts.min_bucket, opts.max_bucket)
    freq = build_frame(hist, "frequency", opts.num_records, lo, hi,
                       maxval=opts.frequency_maxval if opts.frequency_maxval > 0 else None)
    inten = build_frame(hist, "intensity", opts.num_records, lo, hi,
                        maxval=opts.intensity_maxval if opts.intensity_maxval > 0 else None)
    estimate = "" if inten.exact else ", estimated from bucket midpoints"
    lines = _render_map(freq, opts, "Frequency heat map: events per second", "(events/s)")
    lines.append("")
    lines += _render_map(inten, opts, f"Intensity heat map: time waited per second{estimate}", "(s/s)")
    lines.append("")
    lines += footer_lines(hist, skipped)
    return "\n".join(lines) + "\n"


def footer_lines(hist: StreamHistory, skipped: int) -> list[str]:
    """Averages and percentiles, latest column and whole history."""
    s = hist.stream
    head = f"Label: {clean_text(s.label) or '(none)'}  datasource: {clean_text(s.datasource)}  unit: {s.unit}"
    if hist.n == 0:
        return [head, f"Waiting for data (first record is the baseline). Skipped records: {skipped}"]
    last = slice(hist.n - 1, hist.n)
    latest = hist.column_stats(last)
    total = hist.totals()
    pct_latest = "  ".join(f"p{_pname(q)} {format_duration(float(v))}"
                           for q, v in zip(PERCENTILES, latest.percentiles[0], strict=True))
    pct_total = "  ".join(f"p{_pname(q)} {format_duration(v)}" for q, v in total.percentiles.items())
    rate_total = total.events / total.duration_s if total.duration_s else float("nan")
    return [
        head,
        f"Latest:  {format_number(float(latest.events_per_s[0]))} events/s  "
        f"{format_number(float(latest.time_per_s[0]))} s/s  mean {format_duration(float(latest.mean_s[0]))}  "
        f"{pct_latest}",
        f"Overall: {format_number(rate_total)} events/s  mean {format_duration(total.mean_s)}  {pct_total}",
        f"Columns: {hist.n + hist.dropped}  interval: {hist.durations[-1]:.1f}s  date: {clean_text(hist.dates)}  "
        f"skipped records: {skipped}",
    ]


def _pname(q: float) -> str:
    text = f"{q * 100:g}"
    return text.replace(".", "")


def render(acc: Accumulator, opts: PlainOptions) -> str:
    """Every stream, one after another."""
    if not acc.streams:
        return f"latencymap: no data yet (skipped records: {acc.skipped})\n"
    return "\n".join(render_stream(h, opts, acc.skipped) for h in acc.streams.values())


def latest_values(hist: StreamHistory, opts: PlainOptions, kind: str = "frequency") -> np.ndarray:
    """The latest-values column as drawn (rows bottom→top), for checks against the report."""
    lo, hi = display_range(hist, opts.min_bucket, opts.max_bucket)
    return build_frame(hist, kind, opts.num_records, lo, hi).latest
