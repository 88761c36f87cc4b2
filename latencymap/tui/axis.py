"""The time axis every panel under the maps shares: one cell per column (or per `zoom` columns), labels every few
cells, and the cursor on a line of its own; the overview's over runs far apart (`runs_strip`)."""

from __future__ import annotations

import math
import re
import time
import weakref

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from latencymap.core.accumulator import StreamHistory
from latencymap.core.percentiles import median_of
from latencymap.core.units import REAL_EPOCH
from latencymap.tui.overview_axis import GAP, Runs, gap_cells, run_cell_ends, run_widths
from latencymap.tui.window import Window

#: Label steps (seconds); the axis takes the smallest that leaves `LABEL_GAP` cells between labels.
STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
         86400, 172800, 604800)
LABEL_GAP = 12
TICK = "╵"
CURSOR = "▲"
LABEL_W = 8
DIM = Style(dim=True)
CURSOR_STYLE = Style(bold=True)
PLAIN = Style()


#: A time of day inside an input's date text (`14:03:07`, `04.30.26.120610 PM`).
TIME_OF_DAY = re.compile(r"(?<![\d.:])(\d{1,2})[:.](\d{2})[:.](\d{2})(?:[.,](\d+))?\s*([AaPp][Mm])?")
#: Streams whose times are not real dates but whose date text gives the time of day: seconds to add to their
#: times to get that time of day (set by `learn_clock`).
_CLOCKS: weakref.WeakKeyDictionary[StreamHistory, float] = weakref.WeakKeyDictionary()


def learn_clock(hist: StreamHistory, epoch: float, date: str) -> None:
    """Remember how an input's own date text reads a time that is not a real date (the first one seen)."""
    if epoch >= REAL_EPOCH or hist in _CLOCKS or not date:
        return
    m = TIME_OF_DAY.search(date)
    if m is None:
        return
    hours, minutes, seconds = int(m[1]), int(m[2]), int(m[3])
    if m[5]:
        hours = hours % 12 + (12 if m[5].lower() == "pm" else 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        return
    fraction = float("0." + m[4]) if m[4] else 0.0
    _CLOCKS[hist] = hours * 3600 + minutes * 60 + seconds + fraction - epoch


def clock_shift(hist: StreamHistory) -> float | None:
    """Seconds from a stream's relative times to its input's time of day, when known."""
    return _CLOCKS.get(hist)


def clock(epoch: float, origin: float, step: float = 1.0, shift: float | None = None,
          digits: int | None = None) -> str:
    """A column time as the axis writes it: local `HH:MM:SS` (`.f` under a second); for times that are not
    dates, the input's own time of day (`shift`) or `+90s` since `origin`. `digits`: that many decimals of a second,
    rounded to them (whole seconds too: a column ending at :25.6 reads :26, not :25), in place of tenths under a
    one-second `step` and whole seconds as they are above (the axis's marks, which fall on round times)."""
    if not math.isfinite(epoch):
        return ""
    places = (1 if step < 1 else 0) if digits is None else digits
    scale = 10**places
    if places:  # round first, so that 20.96 s reads 21.0, not 20.0
        epoch = round(epoch * scale) / scale
    if epoch < REAL_EPOCH and shift is None:
        return "+" + _offset(epoch - origin)
    shown = epoch if epoch >= REAL_EPOCH else epoch + (shift or 0.0)
    if places or digits is not None:
        shown = round(shown * scale) / scale
    if epoch >= REAL_EPOCH:
        text = time.strftime("%H:%M:%S", time.localtime(shown))
    else:
        text = time.strftime("%H:%M:%S", time.gmtime(shown % 86400))
    return text + f".{round(shown * scale) % scale:0{places}d}" if places else text


def column_time(hist: StreamHistory, epoch: float, digits: int | None = None) -> str:
    """A column's time for the inspector: `2026-11-23 13:44:17` (local), or as the axis writes relative times;
    `digits` as `clock` takes them."""
    if epoch < REAL_EPOCH:
        return time_of_day(hist, epoch, digits)
    scale = 10 ** (digits or 0)
    day = epoch if digits is None else round(epoch * scale) / scale  # 23:59:59.7 in whole seconds: the next day
    return time.strftime("%Y-%m-%d ", time.localtime(day)) + time_of_day(hist, epoch, digits)


def time_of_day(hist: StreamHistory, epoch: float, digits: int | None = None) -> str:
    """A column's time without its date (`13:44:17`), or as the axis writes relative times; `digits` as `clock`
    takes them."""
    return clock(epoch, float(hist.start[0]) if hist.n else 0.0, 1.0, clock_shift(hist), digits)


def telling_digits(hist: StreamHistory, start: float, end: float, digits: int) -> int:
    """`digits`, or more (up to thousandths) where the span from `start` to `end` is too short to tell its start
    from its end with them: a short column does not read as none."""
    for places in range(digits, 3):
        if end <= start or time_of_day(hist, start, places) != time_of_day(hist, end, places):
            return places
    return max(digits, 3)


def cell_seconds(hist: StreamHistory, win: Window) -> float:
    """The seconds a cell of the window covers: its median column's length, times the columns per cell."""
    spans = hist.durations[win.first: win.stop]
    return float(median_of(spans)) * win.zoom if spans.size else 1.0


def view_digits(hist: StreamHistory, win: Window) -> int:
    """The decimals of a second the cursor and the inspector write times with: one precision for the whole view,
    not one per column (neighbours of 0.9999 s and 1.0001 s read alike), as many as a typical cell needs to span
    one step of the last digit or more (whole seconds from about a second up; at most 3)."""
    cell = cell_seconds(hist, win)
    if not (math.isfinite(cell) and cell > 0):
        return 0
    return min(3, max(0, math.ceil(-math.log10(cell) - 0.02)))


def _offset(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g}s"
    if seconds < 7200:
        m, s = divmod(round(seconds), 60)
        return f"{m}m{s:02d}s" if s else f"{m}m"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h}h{m:02d}m" if m else f"{h}h"


def tick_cells(ends: np.ndarray, seconds_per_cell: float, utc_offset: float = 0.0,
               step: float | None = None) -> tuple[list[int], float]:
    """Cells where a label goes (a round time falls inside them), and the step between labels (`step`, or the
    smallest of `STEPS` that leaves `LABEL_GAP` cells between labels)."""
    if step is None:
        step = STEPS[_step_index(seconds_per_cell)]
    ok = np.isfinite(ends)
    if not ok.any():
        return [], step
    marks = np.floor((np.where(ok, ends, -np.inf) + utc_offset) / step)
    new = np.flatnonzero(ok[1:] & ok[:-1] & (marks[1:] > marks[:-1])) + 1
    cells: list[int] = []
    for c in new.tolist():
        if not cells or c - cells[-1] >= LABEL_GAP:
            cells.append(c)
    return cells, step


def _step_index(seconds_per_cell: float) -> int:
    """Index in `STEPS` of the smallest step of `LABEL_GAP` cells or more."""
    return next((k for k, s in enumerate(STEPS) if s >= seconds_per_cell * LABEL_GAP), len(STEPS) - 1)


def axis_strip(hist: StreamHistory, win: Window, width: int, offset: int = LABEL_W + 1) -> Strip:
    """Time labels at round times, each starting at its cell with a tick."""
    if not hist.n:
        return Strip([Segment(" " * width, DIM)], width)
    return times_strip(hist, win.cell_ends(hist), cell_seconds(hist, win), width, offset)


def times_strip(hist: StreamHistory, ends: np.ndarray, per_cell: float, width: int, offset: int = LABEL_W + 1) -> Strip:
    """Time labels at round times under cells ending at `ends` (NaN: no time), `per_cell` seconds each, written as
    `hist`'s times are (dates, or its input's time of day, or offsets from its start).

    Every label stays under the cells: one that would run past the last cell ends at its tick instead
    (`12:43:15╵`), or is left out where that would touch the label before it. Where the step that leaves
    `LABEL_GAP` cells between labels puts none under the cells (a few cells, or a zoomed map's few columns), a
    smaller step does: a label whenever one fits."""
    line = [" "] * width
    if hist.n and np.isfinite(ends).any():
        origin = float(hist.start[0])
        real = bool(np.nanmax(ends) >= REAL_EPOCH)
        shift = None if real else clock_shift(hist)
        utc_offset = _utc_offset(float(np.nanmax(ends))) if real else -origin if shift is None else shift
        labels: list[tuple[int, str]] = []
        for step in STEPS[_step_index(max(per_cell, 1e-3))::-1]:
            labels = _labels(ends, step, utc_offset, origin, shift)
            if labels:
                break
        for at, text in labels:
            _put(line, offset + at, text)
    return Strip([Segment("".join(line), DIM)], width)


def _labels(ends: np.ndarray, step: float, utc_offset: float, origin: float,
            shift: float | None) -> list[tuple[int, str]]:
    """(cell, text) of the labels every `step` seconds that fit under the cells (`times_strip`)."""
    cells, _ = tick_cells(ends, 0.0, utc_offset, step)
    out: list[tuple[int, str]] = []
    taken = 0  # cells before this one are (or touch) an earlier label
    for c in cells:
        mark = math.floor((ends[c] + utc_offset) / step) * step - utc_offset
        text = clock(mark, origin, step, shift)
        if c + 1 + len(text) <= len(ends):
            out.append((c, TICK + text))
            taken = c + 2 + len(text)
        elif c - len(text) >= taken:
            out.append((c - len(text), text + TICK))
            taken = c + 2
    return out


def cursor_strip(hist: StreamHistory, win: Window, cursor: int, width: int, offset: int = LABEL_W + 1) -> Strip:
    """`▲` under the cursor cell and the cell's end time beside it (the end of its last column: with several columns
    per cell, the cell's, not the cursor column's), as precise as the view's other times (`view_digits`; more for a
    cell too short to tell its start from its end that way, as the inspector writes it)."""
    cell = win.cell_of(cursor) if cursor >= 0 else -1
    if not 0 <= cell < win.cells:
        return Strip.blank(width, PLAIN)
    first, stop = win.columns_of(cell)
    last = max(cursor, min(stop, win.stop, hist.n) - 1)
    start, end = float(hist.start[min(first, last)]), float(hist.end[last])
    label = time_of_day(hist, end, telling_digits(hist, start, end, view_digits(hist, win)))
    at = offset + cell
    if at + 2 + len(label) <= offset + win.cells:
        segs = [Segment(" " * at, PLAIN), Segment(CURSOR, CURSOR_STYLE), Segment(" " + label, DIM)]
    else:
        start = max(0, at - len(label) - 1)
        segs = [Segment(" " * start, PLAIN), Segment(label[: at - start - 1] + " ", DIM), Segment(CURSOR, CURSOR_STYLE)]
    return Strip(segs).adjust_cell_length(width, PLAIN)


def _utc_offset(epoch: float) -> float:
    try:
        return float(time.localtime(epoch).tm_gmtoff)
    except (OverflowError, OSError, ValueError):
        return 0.0


def _put(line: list[str], at: int, text: str) -> None:
    for i, ch in enumerate(text):
        if 0 <= at + i < len(line):
            line[at + i] = ch


def _start_labels(hist: StreamHistory, runs: Runs) -> list[tuple[str, ...]]:
    """Each run's start as its first label, the longest wording first: its date where the runs are on different days
    (`2026-11-23`, `2026-11`, `2026`, `'26`), else its time of day."""
    real = [a >= REAL_EPOCH for a, _ in runs]
    days = {time.strftime("%Y-%m-%d", time.localtime(a)) for (a, _), r in zip(runs, real, strict=True) if r}
    out: list[tuple[str, ...]] = []
    for (a, _), r in zip(runs, real, strict=True):
        if r and len(days) > 1:
            day = time.localtime(a)
            out.append(tuple(time.strftime(f, day) for f in ("%Y-%m-%d", "%Y-%m", "%Y", "'%y")))
        else:
            text = time_of_day(hist, a)
            out.append((text, text[:5]) if len(text) == 8 else (text,))
    return out


def runs_strip(hist: StreamHistory, runs: Runs, allotted: tuple[int, ...], width: int, offset: int) -> Strip:
    """The axis of a strip over runs apart: `GAP` in the cell of each silence; at each run's first cell its start
    (`_start_labels`: its date where the runs are on different days), then time labels at round times where they fit
    in the run's cells (the last run's may run on past the strip: nothing else is on that line)."""
    line = [" "] * width
    ends = run_cell_ends(runs, allotted)
    gaps = gap_cells(allotted)
    for c in gaps:
        _put(line, offset + c, GAP)
    firsts = [0, *(c + 1 for c in gaps)]
    origin = float(hist.start[0]) if hist.n else 0.0
    shift = clock_shift(hist)
    for k, (first, n, w, wordings) in enumerate(zip(firsts, allotted, run_widths(runs, allotted),
                                                    _start_labels(hist, runs), strict=True)):
        room = (gaps[k] - first) if k < len(gaps) else width - offset - first
        text = next((t for t in wordings if len(t) + 1 <= room), None)
        if text is None:
            continue
        _put(line, offset + first, TICK + text)
        taken = first + len(text) + 2
        real = runs[k][0] >= REAL_EPOCH
        utc_offset = _utc_offset(runs[k][1]) if real else -origin if shift is None else shift
        run_ends = ends[first: first + n]
        for step in STEPS[_step_index(max(w, 1e-3))::-1]:
            labels = [(first + c, t) for c, t in _labels(run_ends, step, utc_offset, origin,
                                                          None if real else shift) if first + c >= taken]
            if labels:
                break
        for at, label in labels:
            if at >= taken:
                _put(line, offset + at, label)
                taken = at + len(label) + 1
    return Strip([Segment("".join(line), DIM)], width)
