"""`report --format svg`: both heat maps of every stream as one self-contained SVG picture.

Each stream is a panel: title (the stream label), the frequency map (blues) and the intensity map
(reds) over time with latency axes in human units, a colour legend per map, and the findings
(totals, percentiles, bands, tail, episodes, stragglers when given) printed under the maps; stragglers no stream
is known to hold come after the panels. A column with a
counter reset is outlined in dashed orange (`<rect class="mark reset">`), one with missing data in dashed grey
(`class="mark gap"`), each with a tooltip; the findings list their columns.

Cells: one `<rect class="cell frequency|intensity">` per non-empty cell, with `data-col`,
`data-slot`, `data-level` and a `<title>` tooltip (time, latency range, count, share of the column,
cumulative share). Histories longer than `MAX_COLUMNS` columns are merged: every `g = ceil(n /
MAX_COLUMNS)` adjacent columns are summed (counts, time and durations), so a cell's rate is the
rate over its merged span. Rows fit the whole history as every view's do (`frame.row_range`): from the
fastest to the slowest bucket holding events, with negligible edges folded into an edge row.
Colours are the plain view's linear 6-level scale (`frame.quantize`) against the map's maximum. The time axis is
labelled at round steps since the first column (`time_ticks`), in one unit, each tick where its time falls.
"""

from __future__ import annotations

import html
import math
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from latencymap.analysis.findings import intensity_what
from latencymap.core.accumulator import GAP, RESET, Accumulator, StreamHistory
from latencymap.core.buckets import TOP_SLOT, range_text
from latencymap.core.model import StreamId
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import REAL_EPOCH, format_duration, format_number
from latencymap.outputs.report import (
    Causes,
    epoch_lines,
    gap_count,
    intervals_words,
    peer_lines,
    straggler_lines,
    stream_summary,
    stream_time_words,
)
from latencymap.views.frame import LEVELS, Folds, fold_rows, quantize, row_labels, row_range
from latencymap.views.options import BLUES, REDS

MAX_COLUMNS = 400
PLOT_WIDTH = 800
#: Widest cell: a short history still gets a map wide enough for its time axis.
MAX_CELL = 40.0
#: Least room between two time-axis labels (give or take a pixel: ticks are where their times fall), and the most
#: labels on one axis.
TICK_SPACING = 80
MAX_TICKS = 7
CELL_HEIGHT = 16
LEFT = 78
LEGEND_WIDTH = 170
LINE = 15
#: Advance of one character at font-size 11 (DejaVu Sans Mono: 0.602 em; other monospace fonts are no wider).
CHAR_WIDTH = 6.7
TITLE_SIZE = 16
FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
_BASIC16 = ("000000", "800000", "008000", "808000", "000080", "800080", "008080", "c0c0c0",
            "808080", "ff0000", "00ff00", "ffff00", "0000ff", "ff00ff", "00ffff", "ffffff")
_CUBE = (0, 95, 135, 175, 215, 255)


def xterm_hex(index: int) -> str:
    """`#rrggbb` of an xterm-256 colour index."""
    if index < 16:
        return "#" + _BASIC16[index]
    if index < 232:
        n = index - 16
        return "#" + "".join(f"{_CUBE[v]:02x}" for v in (n // 36, n // 6 % 6, n % 6))
    grey = 8 + 10 * (index - 232)
    return f"#{grey:02x}{grey:02x}{grey:02x}"


def esc(text: str) -> str:
    """Text from anywhere, made safe for SVG/HTML text and attributes."""
    return html.escape(clean_text(str(text), 2000), quote=True)


#: A line break in a `<title>` tooltip: browsers show the newline it stands for as one.
LINE_BREAK = "&#10;"


def esc_lines(lines: list[str]) -> str:
    """Lines of a tooltip, each made safe as `esc` makes text (a control character in one is no line break), joined
    by line breaks."""
    return LINE_BREAK.join(esc(line) for line in lines)


@dataclass
class Merged:
    """A stream's columns summed in groups of `group`, restricted to slots `lo..hi`."""

    counts: np.ndarray  # (cols, rows)
    time: np.ndarray
    durations: np.ndarray
    start: np.ndarray
    end: np.ndarray
    lo: int
    hi: int
    group: int
    flags: np.ndarray  # (cols,) the RESET/GAP flags of the columns merged into each
    folds: Folds = (False, False)
    used: tuple[int, int] = (0, 0)

    def rates(self, kind: str) -> np.ndarray:
        """Events/s (frequency) or s/s (intensity) per (col, row)."""
        num = self.counts if kind == "frequency" else self.time
        dur = np.where(self.durations > 0, self.durations, np.nan)
        return np.nan_to_num(num / dur[:, None])


def merge_columns(hist: StreamHistory, max_columns: int = MAX_COLUMNS) -> Merged | None:
    """The history with adjacent columns summed so that at most `max_columns` remain; None if empty."""
    used = hist.used_slots()
    if used is None:
        return None
    rows = row_range(hist)
    lo, hi = rows.lo, rows.hi
    group = max(1, math.ceil(hist.n / max(1, max_columns)))
    idx = np.arange(0, hist.n, group)

    def summed(a: np.ndarray) -> np.ndarray:
        return np.add.reduceat(a, idx, axis=0)

    ends = hist.end[np.minimum(idx + group, hist.n) - 1]
    return Merged(fold_rows(summed(hist.counts), lo, hi), fold_rows(summed(hist.time), lo, hi),
                  summed(hist.durations), hist.start[idx].copy(), ends, lo, hi, group,
                  np.bitwise_or.reduceat(hist.flags, idx) & (RESET | GAP), rows.folds or (False, False), used)


def utc(epoch: float) -> str:
    """`2013-08-26 14:26:51 UTC`."""
    try:
        return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{epoch:.0f}"


def dated(m: Merged) -> bool:
    """Whether the columns' times are dates (else a time of day or seconds since a start: `REAL_EPOCH`)."""
    return float(m.end[-1]) >= REAL_EPOCH


def offset(seconds: float) -> str:
    """`+0s`, `+45s`, `+12.5m`, `+2.1h` since the first column."""
    if abs(seconds) < 120:
        return f"+{seconds:.4g}s"
    if abs(seconds) < 7200:
        return f"+{seconds / 60:.3g}m"
    return f"+{seconds / 3600:.3g}h"


def cell_width(ncols: int) -> float:
    """Width of one column's cells: the plot spread over PLOT_WIDTH, between 1 and MAX_CELL pixels."""
    return max(1.0, min(MAX_CELL, PLOT_WIDTH / max(1, ncols)))


def map_title(hist: StreamHistory, kind: str, source: SourceTotals | None = None) -> str:
    """A map's title; the intensity map's says how its times are known, in the report header's words (`source`: a
    rebinned stream's own buckets and sum)."""
    if kind == "frequency":
        return "Frequency heat map: events per second"
    what = intensity_what(hist.stream.datasource, hist.measures, hist.stream.label)
    return f"Intensity heat map: {what} per second ({stream_time_words(hist, source)})"


def _text(x: float, y: float, text: str, **attrs: Any) -> str:
    extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{v}"' for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{esc(text)}</text>'


def _tooltip(m: Merged, hist: StreamHistory, kind: str, c: int, r: int, rates: np.ndarray) -> list[str]:
    slot = m.lo + r
    t0 = float(m.start[0])
    when = f"({utc(float(m.start[c]))})" if dated(m) else "since the first interval"
    span = f"{offset(float(m.start[c]) - t0)}–{offset(float(m.end[c]) - t0)} {when}"
    rng = f"latency {range_text(float(hist.low[slot]), float(hist.high[slot]), slot)}"
    if slot == TOP_SLOT:
        rng += " (the top bucket: open, it counts longer values too)"
    if (r == 0 and m.folds[0]) or (r == m.hi - m.lo and m.folds[1]):
        rng = f"latency {row_labels(hist, m.lo, m.hi, m.folds)[r]} (folded edge row)"
    count = int(m.counts[c, r])
    if kind == "frequency":
        col, share_of = m.counts[c], "events"
        what = f"count {count} ({format_number(float(rates[c, r]))}/s)"
    else:
        col, share_of = m.time[c], "time"
        waited = format_duration(float(m.time[c, r]))
        time = intensity_what(hist.stream.datasource, hist.measures, hist.stream.label)
        what = f"{time} {waited} ({format_number(float(rates[c, r]))} s/s), count {count}"
    total = float(col.sum())
    share = 100 * float(col[r]) / total if total else 0.0
    cum = 100 * float(col[: r + 1].sum()) / total if total else 0.0
    return [span, rng, what, f"{share:.1f}% of the column's {share_of}, cumulative {cum:.1f}%"]


def map_elements(hist: StreamHistory, m: Merged, kind: str, y0: float,
                 source: SourceTotals | None = None) -> tuple[list[str], float]:
    """One heat map with its axes and legend at vertical offset `y0`; returns (elements, height)."""
    palette = BLUES if kind == "frequency" else REDS
    rates = m.rates(kind)
    ncols, nrows = rates.shape
    cell_w = cell_width(ncols)
    width, height = cell_w * ncols, CELL_HEIGHT * nrows
    maxval = float(rates.max()) if rates.size else 0.0
    levels = quantize(rates, maxval)
    top = y0 + 18
    out = [_text(LEFT, y0 + 12, map_title(hist, kind, source), font_weight="bold"),
           f'<rect class="plot {kind}" x="{LEFT}" y="{top}" width="{width:.1f}" height="{height}" '
           f'fill="{xterm_hex(palette[0])}" stroke="#888"/>']
    for c, r in zip(*np.nonzero(levels), strict=True):
        x = LEFT + c * cell_w
        y = top + (nrows - 1 - r) * CELL_HEIGHT
        lvl = int(levels[c, r])
        tip = esc_lines(_tooltip(m, hist, kind, c, r, rates))
        out.append(f'<rect class="cell {kind}" data-col="{c}" data-slot="{m.lo + r}" data-level="{lvl}" '
                   f'x="{x:.2f}" y="{y}" width="{cell_w:.2f}" height="{CELL_HEIGHT}" '
                   f'fill="{xterm_hex(palette[lvl])}"><title>{tip}</title></rect>')
    out += _marks(m, top, cell_w, height)
    step = max(1, math.ceil(nrows / 24))
    for r in range(0, nrows + 1, step):
        slot = m.lo + min(r, nrows - 1)
        edge = float(hist.low[slot]) if r < nrows else float(hist.high[slot])
        if r == 0 and m.folds[0]:
            edge = float(hist.low[m.used[0]])  # a folded bottom row starts at the fastest bucket used
        elif r == nrows and m.folds[1]:
            edge = float(hist.high[m.used[1]])
        open_top = r == nrows and (m.used[1] if m.folds[1] else m.hi) == TOP_SLOT  # the top bucket has no upper edge
        y = top + (nrows - r) * CELL_HEIGHT
        out.append(f'<line x1="{LEFT - 4}" y1="{y}" x2="{LEFT}" y2="{y}" stroke="#444"/>')
        out.append(_text(LEFT - 6, y + 4, "∞" if open_top else format_duration(edge), text_anchor="end"))
    out.append(_text(12, top + height / 2, "latency", transform=f"rotate(-90 12 {top + height / 2:.1f})",
                     text_anchor="middle"))
    out += _time_axis(m, top + height, cell_w)
    out += _legend(palette, maxval, kind, LEFT + width + 20, top)
    return out, 18 + height + 34


def _marks(m: Merged, top: float, cell_w: float, height: float) -> list[str]:
    """A dashed outline over each column with a counter reset (orange) or missing data (grey)."""
    out = []
    t0 = float(m.start[0])
    for c in np.flatnonzero(m.flags).tolist():
        reset = bool(m.flags[c] & RESET)
        kind, colour = ("reset", "#e07000") if reset else ("gap", "#808080")
        what = ("counter reset: a counter went down; the column counts from the reset" if reset
                else "gap: data missing from the column")
        tip = esc(f"{offset(float(m.start[c]) - t0)}–{offset(float(m.end[c]) - t0)}: {what}")
        out.append(f'<rect class="mark {kind}" data-col="{c}" x="{LEFT + c * cell_w:.2f}" y="{top}" '
                   f'width="{cell_w:.2f}" height="{height}" fill="none" stroke="{colour}" stroke-dasharray="2 2">'
                   f"<title>{tip}</title></rect>")
    return out


#: Time-axis steps in seconds, with the unit their labels are written in: 1, 2, 5 x 10^k seconds (milliseconds below
#: one), then whole minutes, hours and days.
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
TIME_STEPS: tuple[tuple[float, str], ...] = (
    *[(m * 10.0 ** k, "ms") for k in range(-4, 0) for m in (1, 2, 5)],
    *[(m * 10.0 ** k, "s") for k in range(0, 2) for m in (1, 2, 5)],
    *[(m * 60.0, "m") for m in (1, 2, 5, 10, 15, 30)],
    *[(h * 3600.0, "h") for h in (1, 2, 3, 6, 12)],
    *[(m * 10.0 ** k * 86400.0, "d") for k in range(0, 6) for m in (1, 2, 5)],
)


def column_x(m: Merged, seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where times (seconds since the first column's start) fall on the time axis, in columns from the plot's left
    edge (inside the column holding the time, in proportion to it), and whether a column holds them (not a time
    between two columns, where data is missing: there, the next column's left edge)."""
    t = np.asarray(seconds, dtype=np.float64) + float(m.start[0])
    ends = np.maximum.accumulate(m.end)  # in order even where a column's end overlaps the next one's
    c = np.minimum(np.searchsorted(ends, t, side="left"), len(ends) - 1)
    start, length = m.start[c], m.end[c] - m.start[c]
    inside = np.divide(t - start, length, out=np.zeros_like(t), where=length > 0)
    held = (t >= start) & (t <= m.end[c])
    return c + np.clip(inside, 0.0, 1.0), held


def time_ticks(m: Merged, cell_w: float) -> tuple[np.ndarray, list[str]]:
    """The time axis's ticks: x in columns from the plot's left edge, and labels (`+0s +20s +40s`, one unit per
    axis) at round times since the first column's start that a column holds: the smallest of `TIME_STEPS` that
    gives at most `MAX_TICKS` ticks, each `TICK_SPACING` (less a pixel) or more from the next where its time falls
    (gaps and merged columns make the axis uneven in time)."""
    span = float(np.max(m.end) - m.start[0])
    for step, unit in TIME_STEPS:
        count = math.floor(span / step * (1 + 1e-9)) + 1 if math.isfinite(span) and span > 0 else 1
        if count > 64 * MAX_TICKS:
            continue
        times = np.arange(count) * step
        x, held = column_x(m, times)
        times, x = times[held], x[held]
        if len(x) > MAX_TICKS or (len(x) > 1 and float(np.diff(x).min()) * cell_w < TICK_SPACING - 1):
            continue
        scale = _UNITS[unit]
        digits = max(0, -math.floor(math.log10(step / scale) + 1e-9))
        return x, [f"+{t / scale:.{digits}f}{unit}" for t in times.tolist()]
    return np.zeros(1), ["+0s"]  # no step fits (times too far apart for any): the start alone


def _time_axis(m: Merged, y: float, cell_w: float) -> list[str]:
    t0 = float(m.start[0])
    out = []
    x_cols, labels = time_ticks(m, cell_w)
    for col, label in zip(x_cols.tolist(), labels, strict=True):
        x = LEFT + col * cell_w
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#444"/>')
        out.append(_text(x, y + 15, label, text_anchor="middle"))
    merged = f", {m.group} intervals per column" if m.group > 1 else ""
    since = utc(t0) if dated(m) else "the first interval (the input's times are not dates)"
    out.append(_text(LEFT, y + 29, f"time since {since}{merged}", fill="#555"))
    return out


def _legend(palette: tuple[int, ...], maxval: float, kind: str, x: float, y: float) -> list[str]:
    unit = "events/s" if kind == "frequency" else "s/s"
    out = [_text(x, y + 10, f"legend ({unit})", font_weight="bold")]
    for level in range(LEVELS + 1):
        yy = y + 16 + level * 15
        bound = "0" if level == 0 else ">" + format_number(maxval * (level - 1) / LEVELS)
        out.append(f'<rect class="legend {kind}" data-level="{level}" x="{x}" y="{yy}" width="14" height="12" '
                   f'fill="{xterm_hex(palette[level])}" stroke="#888"/>')
        out.append(_text(x + 20, yy + 10, bound))
    out.append(_text(x, y + 16 + (LEVELS + 1) * 15 + 10, f"max {format_number(maxval)}"))
    return out


#: Stragglers by the stream that counted their tasks: one (run, stragglers) per input whose tasks the stream holds,
#: `run` naming the input where it holds those of several ("" where of one).
Stragglers = dict[StreamId, list[tuple[str, list[dict[str, Any]]]]]
#: Stragglers no stream shown is known to hold: (heading, stragglers) per input.
Unplaced = list[tuple[str, list[dict[str, Any]]]]
#: The heading of the stragglers placed on no stream in SVG and HTML reports.
UNPLACED_TITLE = "Stragglers on no stream above: no stream shown is known to have counted their tasks"
#: What a source's own analysis says besides its stragglers, per input: (heading, lines) (`report.source_notes`).
Notes = list[tuple[str, list[str]]]
#: The heading of those lines in SVG and HTML reports.
NOTES_TITLE = "The source's analysis: the application's time, warm-up tasks, stages (stragglers: under their streams)"


def findings_lines(hist: StreamHistory, stragglers: list[tuple[str, list[dict[str, Any]]]] | None = None,
                   acc: Accumulator | None = None, causes: list[dict[str, Any]] | None = None) -> list[str]:
    """What the text report says of one stream above its bucket table (its numbers from the source's own buckets
    and sums where `acc` has them, its findings naming the cause of the stragglers `causes` where the log gives it),
    then its stragglers, each run's under its name when it names one."""
    return stream_summary(hist, acc, causes=causes) + [line for run, found in stragglers or [] for line in
                                                       [*([f"{run}:"] if run and found else []),
                                                        *straggler_lines(found)]]


def notes_lines(notes: Notes | None) -> list[str]:
    """Lines of what the sources' analysis says besides stragglers: each input's heading (where it has one), then its
    lines."""
    return [line for head, said in notes or [] if said for line in ([head] if head else []) + said]


def unplaced_lines(unplaced: Unplaced | None) -> list[str]:
    """Lines of the stragglers placed on no stream: each input's heading, then its stragglers."""
    return [line for head, found in unplaced or [] if found for line in (head, *straggler_lines(found))]


def panel(hist: StreamHistory, *, with_findings: bool = True,
          stragglers: list[tuple[str, list[dict[str, Any]]]] | None = None,
          acc: Accumulator | None = None, causes: list[dict[str, Any]] | None = None) -> tuple[list[str], float, float]:
    """(elements, width, height) of one stream's panel."""
    s = hist.stream
    label = clean_text(s.label) or "(no label)"
    subtitle = f"datasource {s.datasource}, unit {s.unit}, {intervals_words(hist.n, gap_count(hist))}"
    out = [_text(LEFT, 18, label, font_size=str(TITLE_SIZE), font_weight="bold"),
           _text(LEFT, 34, subtitle, fill="#555")]
    y = 46.0
    # Wide enough for its own titles: SVG text past the picture's edge is lost.
    width = LEFT + 12 + max(300.0, len(label) * CHAR_WIDTH * TITLE_SIZE / 11, len(subtitle) * CHAR_WIDTH)
    m = merge_columns(hist)
    source = acc.sources.get(s) if acc is not None else None
    if m is None:
        out.append(_text(LEFT, y + 14, "no events"))
        y += 24
    else:
        for kind in ("frequency", "intensity"):
            elems, h = map_elements(hist, m, kind, y, source)
            out += elems
            y += h + 10
        titles = max(len(map_title(hist, kind, source)) for kind in ("frequency", "intensity")) * CHAR_WIDTH + 12
        width = max(width, LEFT + max(cell_width(len(m.start)) * len(m.start) + 20 + LEGEND_WIDTH, titles))
    if with_findings:
        chars = max(20, int((width - LEFT - 12) / CHAR_WIDTH))
        for line in findings_lines(hist, stragglers, acc, causes):
            what, _, why = line.partition(" — ")  # a finding's why on a line of its own: SVG text does not wrap
            for k, part in enumerate(p for p in (what, why) if p):
                # Past the picture's edge a text is lost: long parts go on as many lines as they need.
                for piece in textwrap.wrap(f"— {part}" if k else part, chars, subsequent_indent="  ") or [part]:
                    y += LINE
                    out.append(_text(LEFT + 12 * k, y, piece, class_="finding"))
        y += 10
    return out, width, y + 10


def svg_element(elements: list[str], width: float, height: float) -> str:
    """An `<svg>` root around elements."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" font-size="11">\n'
            f'<rect class="background" width="100%" height="100%" fill="#ffffff"/>\n'
            + "\n".join(elements) + "\n</svg>\n")


#: The heading of the peer comparison in SVG and HTML reports.
PEERS_TITLE = "Peers: streams doing the same work, compared interval by interval"
#: The heading of the epoch start-up findings (analysis/epochs.py) in SVG and HTML reports.
EPOCHS_TITLE = "Epoch start-up: a DataLoader's epochs starting, against its batches' waits"


def lines_panel(lines: list[str], width: float, title: str, kind: str) -> tuple[list[str], float]:
    """(elements, height) of lines under `title` (the peer comparison, the stragglers of no stream), each of class
    `kind`, wrapped to `width`; nothing without lines."""
    if not lines:
        return [], 0.0
    out, y = [_text(LEFT, 18, title, font_size="14", font_weight="bold")], 18.0
    chars = max(40, int((width - LEFT - 12) / CHAR_WIDTH))
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))  # SVG text drops leading spaces: the indent is a position
        for k, piece in enumerate(textwrap.wrap(line.strip(), chars - indent - 3) or [""]):
            y += LINE
            out.append(_text(LEFT + (indent + 3 * (k > 0)) * CHAR_WIDTH, y, piece, class_=kind))
    return out, y + 16


def render_svg(acc: Accumulator, stragglers: Stragglers | None = None, unplaced: Unplaced | None = None,
               notes: Notes | None = None, causes: Causes | None = None) -> str:
    """The whole standalone SVG: the peer comparison first, the epoch start-up findings (analysis/epochs.py) after it,
    then one panel per stream, stacked (stragglers keyed by stream; `causes`: see `report.Causes`), then the
    stragglers of no stream shown, then the sources' other `notes` (stages, application time)."""
    parts: list[str] = []
    y, width = 0.0, 400.0
    panels = []
    for hist in acc.streams.values():
        panels.append((hist, *panel(hist, stragglers=(stragglers or {}).get(hist.stream), acc=acc,
                                    causes=(causes or {}).get(hist.stream))))
        width = max(width, panels[-1][2])
    elems, y = lines_panel(peer_lines(acc), width, PEERS_TITLE, "peers")
    if elems:
        parts += ['<g class="peers">', *elems, "</g>"]
    elems, h = lines_panel(epoch_lines(acc), width, EPOCHS_TITLE, "epochs")
    if elems:
        parts += [f'<g class="epochs" transform="translate(0 {y:.0f})">', *elems, "</g>"]
        y += h
    for hist, elems, _, h in panels:
        label = esc(hist.stream.label)
        parts.append(f'<g class="panel" data-stream="{label}" transform="translate(0 {y:.0f})">')
        parts += elems
        parts.append("</g>")
        y += h
    if not acc.streams:
        parts.append(_text(20, 30, "No data."))
        y = 50
    elems, h = lines_panel(unplaced_lines(unplaced), width, UNPLACED_TITLE, "unplaced")
    if elems:
        parts += [f'<g class="unplaced" transform="translate(0 {y:.0f})">', *elems, "</g>"]
        y += h
    elems, h = lines_panel(notes_lines(notes), width, NOTES_TITLE, "analysis")
    if elems:
        parts += [f'<g class="analysis" transform="translate(0 {y:.0f})">', *elems, "</g>"]
        y += h
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg_element(parts, width, y)
