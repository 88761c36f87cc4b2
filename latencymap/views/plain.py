"""PyLatencyMap-style ANSI frames: frequency map in blues, intensity in reds, latest values, legend, footer.

`PlainRenderer` draws frame after frame of one accumulator (the plain view's loop): it keeps what does
not change between frames (labels, headers, legends, formatted numbers, running totals) and draws the
cells of both maps with a few NumPy calls per frame.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from latencymap.core.accumulator import GAP as GAP_FLAG
from latencymap.core.accumulator import RESET as RESET_FLAG
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.columns import observed_s
from latencymap.core.model import Interval, StreamId
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals
from latencymap.core.units import format_duration, format_number
from latencymap.outputs.report import stream_time_words
from latencymap.views.frame import LEVELS, FoldCache, MapFrame, RowFit, RowRange, both_frames, build_frame, row_range
from latencymap.views.options import BLUES, REDS, SHADES, ViewOptions

RESET = "\x1b[0m"
CLEAR = "\x1b[0m\x1b[2J\x1b[H"
#: Between a map's newest column's sum and PyLatencyMap's `Max(Sum)`: the largest column sum of the window.
MAX_SUM = "   max(sum): "

_PNAMES = tuple(f"{q * 100:g}".replace(".", "") for q in PERCENTILES)
_ROW_END = 2 * (LEVELS + 1)  # cell code after the last cell of a row: frequency 0..6, intensity 7..13
_CACHE_MAX = 1 << 14


#: Column ends (epoch seconds) that NumPy writes as `time.strftime` does, four-digit years: 1000 to 9999.
_NUMPY_DATES = (datetime(1000, 1, 1, tzinfo=UTC).timestamp(),
                datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() + 1)


def column_date(end: float) -> str:
    """The footer's date of a column whose source gave no date text: its end as a recording of it writes it
    (`latencymap.protocol.writer.format_record`), so a replay shows what the original view showed:
    `2023-11-14 22:13:32 UTC`; "" for an end no calendar holds (not finite, out of range)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(end)) + " UTC"
    except (OverflowError, OSError, ValueError):
        return ""


def column_dates(intervals: Sequence[Interval]) -> list[str]:
    """Each interval's date text, or `column_date` of its end where the source gave none (at once, by NumPy)."""
    dates = [iv.date for iv in intervals]
    missing = [i for i, date in enumerate(dates) if not date]
    if not missing:
        return dates
    ends = np.array([intervals[i].end for i in missing], dtype=np.float64)
    ok = (ends >= _NUMPY_DATES[0]) & (ends < _NUMPY_DATES[1])  # NaN too: not ok
    seconds = np.floor(np.where(ok, ends, 0.0)).astype(np.int64).astype("datetime64[s]")  # gmtime floors too
    texts = np.datetime_as_string(seconds).tolist()  # `2023-11-14T22:13:32`
    for i, text, fits, end in zip(missing, texts, ok.tolist(), ends.tolist(), strict=True):
        dates[i] = text.replace("T", " ") + " UTC" if fits else column_date(end)
    return dates


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


def _run_table(width: int, color: bool) -> list[str]:
    """Text of a run of `k` equal cells of code `c` (see `_ROW_END`) at index `c * (width + 1) + k`."""
    table = [""] * ((_ROW_END + 1) * (width + 1))
    for code in range(_ROW_END):
        palette = BLUES if code <= LEVELS else REDS
        level = code % (LEVELS + 1)
        for k in range(1, width + 1):
            table[code * (width + 1) + k] = (f"\x1b[48;5;{palette[level]}m" + " " * k) if color else SHADES[level] * k
    table[_ROW_END * (width + 1) + 1] = RESET + "\n" if color else "\n"
    return table


def footer_percentiles(hist: StreamHistory, latest: np.ndarray, latest_times: np.ndarray, latest_exact: np.ndarray,
                       overall: np.ndarray, overall_times: np.ndarray, overall_exact: np.ndarray,
                       seen: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """The footers' `PERCENTILES` (s): of latest columns (`latest`, (k, slots) counts; `latest_times` their seconds per
    slot, exact in the rows `latest_exact`) then of running totals (`overall`, `overall_times`, `overall_exact`
    likewise), (2k, len(PERCENTILES)), read as the report reads them (`StreamHistory.estimates`: between the values
    seen in each slot as of each frame, `seen` (k, slots) each, by the exact times where the source gave them)."""
    exact = np.concatenate((latest_exact, overall_exact))
    rows = np.concatenate((latest, overall))
    times = np.where(exact[:, None], np.concatenate((latest_times, overall_times)), np.nan) if exact.any() else None
    both = None if seen is None else (np.concatenate((seen[0], seen[0])), np.concatenate((seen[1], seen[1])))
    if both is None and hist.seen is not None:  # none seen by then: none known
        both = (np.full(rows.shape, np.nan), np.full(rows.shape, np.nan))
    return hist.estimates(rows, times, both)


def seen_by_frame(least: np.ndarray | None, most: np.ndarray | None, intervals: Sequence[Interval],
                  counts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The values seen per slot as of each of the frames drawn for `intervals` (their `counts`), from those seen
    before them (`least`, `most`; None: none), as the history widens its own (`StreamHistory.seen`): each interval's
    extremes, and a slot an interval without them put events in no longer known (-inf, inf). None where none is."""
    ext = [iv.extremes for iv in intervals]
    if least is None and all(e is None for e in ext):
        return None
    k = len(ext)
    lo, hi = np.full((k + 1, counts.shape[1]), np.nan), np.full((k + 1, counts.shape[1]), np.nan)
    if least is not None and most is not None:
        lo[0], hi[0] = least, most
    for j, e in enumerate(ext):
        if e is not None:
            lo[j + 1], hi[j + 1] = e[0], e[1]
        else:
            used = counts[j] != 0
            lo[j + 1, used], hi[j + 1, used] = -np.inf, np.inf
    return np.fmin.accumulate(lo, axis=0)[1:], np.fmax.accumulate(hi, axis=0)[1:]


class RunningTotals:
    """Running totals of every column of one stream seen so far, kept or dropped (`StreamHistory.totals` with
    `all_seen`), updated with the columns added since the last frame.

    Counts are exact; `spent`, `times` (per slot) and `duration` are running float sums, which may differ from one
    NumPy sum over the whole history in the last bits (never in the 3 digits shown, bar an exact tie). `exact`: every
    column's time was given by the source (the percentiles then read `times`, as the report's do).
    """

    __slots__ = ("counts", "dropped", "duration", "exact", "hist", "least", "most", "seen", "spent", "times")

    def __init__(self, hist: StreamHistory) -> None:
        self.hist = hist
        self.seen = hist.n
        self.dropped = hist.dropped
        whole = hist.totals(fast=True, all_seen=True)
        self.counts = whole.counts
        self.spent = whole.time_s
        self.duration = whole.duration_s
        self.times = whole.times if whole.times is not None else np.zeros(len(whole.counts))
        self.exact = whole.exact
        #: The values seen per slot as of the last frame (`StreamHistory.seen` then; None: none).
        self.least, self.most = _copies(hist.seen)

    def update(self) -> bool:
        """Add the new columns; False when some of them were dropped before they were counted (then start over).
        Columns dropped after they were counted change nothing: the totals are of every column seen."""
        hist = self.hist
        added = hist.n + hist.dropped - self.seen - self.dropped
        if added < 0 or added > hist.n:
            return False
        if added:
            new = slice(hist.n - added, hist.n)
            columns = hist.counts_in(new)
            spent = hist.time_in(new)
            self.counts = self.counts + columns.sum(axis=0)
            self.times = self.times + spent.sum(axis=0)
            self.spent += float(spent.sum())
            self.duration += observed_s(hist.meta_in("dur", new), hist.meta_in("flags", new), columns)
            self.exact = self.exact and bool(hist.exact_columns(new).all())
        self.seen, self.dropped = hist.n, hist.dropped
        self.least, self.most = _copies(hist.seen)
        return True


def _copies(seen: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Copies of a history's values seen (it widens them in place)."""
    return (None, None) if seen is None else (seen[0].copy(), seen[1].copy())


def time_note(exact: bool, source: SourceTotals | None, hist: StreamHistory) -> str:
    """The intensity map title's note on how its times are known, in the report header's words (`time_words`:
    per-bucket times, bucket midpoints, or a rebinned stream's `source` sum); none when they are exact."""
    words = stream_time_words(hist, source, exact)
    return "" if words == "exact" else f", {words}"


class PlainRenderer:
    """Frames of an accumulator, one after another, as `render` draws them."""

    def __init__(self, opts: ViewOptions) -> None:
        self.opts = opts
        #: The footer's running totals per stream; frames drawn in bulk (`plain_bulk`) carry them on.
        self.totals: dict[StreamId, RunningTotals] = {}
        self._folds: dict[StreamId, FoldCache] = {}
        self.fits: dict[StreamId, RowFit] = {}
        self._latest: dict[float, str] = {}
        self._legends: dict[tuple[str, float, float, int, bool], list[str]] = {}
        self._heads: dict[tuple[str, int, int, str], list[str]] = {}
        self._labels: dict[tuple[StreamId, RowRange], tuple[list[str], int]] = {}
        self._texts: dict[str, str] = {}
        self._runs: tuple[int, bool, list[str]] | None = None

    def render(self, acc: Accumulator) -> str:
        """Every stream, one after another."""
        if not acc.streams:
            return f"latencymap: no data yet (skipped records: {acc.skipped})\n"
        return "\n".join([self.render_stream(h, acc.skipped, acc.sources.get(h.stream))
                          for h in acc.streams.values()])

    def render_stream(self, hist: StreamHistory, skipped: int = 0, source: SourceTotals | None = None) -> str:
        """Both maps and the footer for one stream; `source`: its source's own buckets and sum (a rebinned stream),
        which say how its time is known."""
        opts = self.opts
        fit = self.fits.get(hist.stream)
        if fit is None:
            fit = self.fits[hist.stream] = RowFit()
        rows = row_range(hist, opts.min_bucket, opts.max_bucket, first=hist.n - opts.num_records, fit=fit)
        lo, hi = rows.lo, rows.hi
        cache = self._folds.get(hist.stream)
        if cache is None or cache.hist is not hist or (cache.lo, cache.hi) != (lo, hi):
            cache = self._folds[hist.stream] = FoldCache(hist, lo, hi, opts.num_records)
        freq, inten, levels = both_frames(hist, opts.num_records, lo, hi, opts.frequency_maxval,
                                          opts.intensity_scale(hist.stream), cache, rows.folds)
        estimate = time_note(inten.exact, source, hist)
        cells = self._cells(levels)
        prefixes, label_w = self.label_prefixes(hist.stream, rows, freq.labels)
        nrows = len(prefixes)
        marks = self._marks(hist, freq.first_col, label_w)
        lines = self._map(freq, cells[:nrows], prefixes, label_w, "Frequency heat map: events per second",
                          "(events/s)", marks)
        lines.append("")
        lines += self._map(inten, cells[nrows:], prefixes, label_w,
                           f"Intensity heat map: time waited per second{estimate}", "(s/s)", marks)
        lines.append("")
        lines += self.footer_lines(hist, skipped)
        lines.append("")
        return "\n".join(lines)

    def _marks(self, hist: StreamHistory, first: int, label_w: int) -> str | None:
        """The line under a map marking reset (R) and gap (G) columns; None when the window has none."""
        flags = hist.flags[first:] & (RESET_FLAG | GAP_FLAG)  # other bits (EXACT, TIMED) are not marks
        if not flags.any():
            return None
        width = self.opts.num_records
        chars: list[str] = np.where(flags & RESET_FLAG, "R", np.where(flags & GAP_FLAG, "G", " ")).tolist()
        cells = "".join(chars[-width:] if width > 0 else []).rjust(width)
        return f"{'marks':>{label_w}} {cells}  R counter reset, G gap"

    def label_prefixes(self, stream: StreamId, rows: RowRange, labels: list[str]) -> tuple[list[str], int]:
        """Each row's label and the space after it, top row first; the label width."""
        key = (stream, rows)
        got = self._labels.get(key)
        if got is None:
            label_w = max(len("Latency"), max(len(lbl) for lbl in labels) + 1)
            got = self._labels[key] = ([f"{lbl:>{label_w}} " for lbl in reversed(labels)], label_w)
        return got

    def _cells(self, levels: np.ndarray) -> list[str]:
        """The cells of every row of both maps (`levels`: map, row, column), top row first.

        Runs of equal cells are found with NumPy; each run's text comes from a table.
        """
        width = self.opts.num_records
        color = self.opts.color
        _, rows, ncols = levels.shape
        if width < 1:  # no cells: the simple way
            return [_row(levels[m, r], width - ncols, (BLUES, REDS)[m], color)
                    for m in (0, 1) for r in range(rows - 1, -1, -1)]
        if self._runs is None or self._runs[:2] != (width, color):
            self._runs = (width, color, _run_table(width, color))
        table = self._runs[2]
        step = width + 1  # codes are scaled by it: code * step + run length indexes the table
        pad = width - ncols
        codes = np.empty((2, rows, step), dtype=np.int64)
        np.multiply(levels[:, ::-1], step, out=codes[:, :, pad:width], dtype=np.int64)
        codes[1, :, pad:width] += (LEVELS + 1) * step
        if pad:
            codes[0, :, :pad] = 0
            codes[1, :, :pad] = (LEVELS + 1) * step
        codes[:, :, width] = _ROW_END * step
        flat = codes.reshape(-1)
        change = np.empty(flat.size, dtype=bool)
        change[0] = True
        np.not_equal(flat[1:], flat[:-1], out=change[1:])  # a row's first cell follows a row end: a change
        starts = np.flatnonzero(change)
        keys = flat[starts]
        keys[:-1] += starts[1:] - starts[:-1]
        keys[-1] += flat.size - starts[-1]
        return "".join(map(table.__getitem__, keys.tolist())).split("\n")[:-1]

    def legend(self, kind: str, maxval: float, chart_max: float, nrows: int) -> list[str]:
        """What follows the latest value on each row of a map, top row first."""
        key = (kind, maxval, chart_max, nrows, self.opts.color)
        legend = self._legends.get(key)
        if legend is None:
            if len(self._legends) >= _CACHE_MAX:
                self._legends.clear()
            palette = BLUES if kind == "frequency" else REDS
            legend = []
            for legend_row in range(nrows):
                if legend_row <= LEVELS:
                    bound = 0.0 if legend_row == 0 else maxval * (legend_row - 1) / LEVELS
                    text = "0" if legend_row == 0 else ">" + format_number(bound)
                    legend.append(f"   {_swatch(legend_row, palette, self.opts.color)} {text}")
                elif legend_row == LEVELS + 1:
                    legend.append(f"   max: {format_number(chart_max)}")
                else:
                    legend.append("")
            self._legends[key] = legend
        return legend

    def _latest_text(self, value: float) -> str:
        """A latest value as its column shows it (cached: the same values come back frame after frame)."""
        text = self._latest.get(value)
        if text is None:
            if len(self._latest) >= _CACHE_MAX:
                self._latest.clear()
            text = self._latest[value] = f"  {format_number(value, 4):>9}"
        return text

    def _map(self, frame: MapFrame, cells: list[str], prefixes: list[str], label_w: int, title: str,
             unit: str, marks: str | None = None) -> list[str]:
        head = self.heads(frame.kind, title, unit, label_w)
        latest = map(self._latest_text, frame.latest[::-1].tolist())
        legend = self.legend(frame.kind, frame.maxval, frame.chart_max, len(prefixes))
        lines = head[:2]
        lines += map("".join, zip(prefixes, cells, latest, legend, strict=True))
        if marks is not None:
            lines.append(marks)
        sums = frame.col_sums
        latest_sum, max_sum = (float(sums[-1]), float(sums.max())) if sums.size else (0.0, 0.0)
        lines.append(f"{head[2]}{'sum ' + format_number(latest_sum, 4):>9}{MAX_SUM}{format_number(max_sum, 4)}")
        return lines

    def heads(self, kind: str, title: str, unit: str, label_w: int) -> list[str]:
        """A map's two title lines and the start of its last line (before the newest column's sum)."""
        width = self.opts.num_records
        head_key = (title, label_w, width, unit)
        head = self._heads.get(head_key)
        if head is None:
            what = "events per second" if kind == "frequency" else "time waited per second"
            head = self._heads[head_key] = [
                f"{'Latency':<{label_w}} {title:<{width}}  {'Latest':>9}   Legend",
                f"{'bucket':<{label_w}} {unit:<{width}}",
                f"{'':<{label_w}} x=time, y=latency bucket, color={what}{'':<{max(0, width - 44)}}  ",
            ]
        return head

    def _text(self, text: str) -> str:
        clean = self._texts.get(text)
        if clean is None:
            if len(self._texts) >= _CACHE_MAX:
                self._texts.clear()
            clean = self._texts[text] = clean_text(text)
        return clean

    def footer_lines(self, hist: StreamHistory, skipped: int) -> list[str]:
        """Averages and percentiles: latest column, and overall, every column seen (dropped from history or not)."""
        s = hist.stream
        head = f"Label: {self._text(s.label) or '(none)'}  datasource: {self._text(s.datasource)}  unit: {s.unit}"
        if hist.n == 0:
            return [head, f"Waiting for data (first record is the baseline). Skipped records: {skipped}"]
        totals = self.totals.get(s)
        if totals is None or totals.hist is not hist or not totals.update():
            totals = self.totals[s] = RunningTotals(hist)
        last = slice(hist.n - 1, hist.n)
        counts = hist.counts_in(last)
        events = int(counts.sum())
        spent = float(hist.time_in(last).sum(axis=1)[0])
        dur = float(hist.meta_in("dur", last)[0])
        date = self._text(hist.dates) if hist.dates else column_date(float(hist.meta_in("end", last)[0]))
        seen = hist.seen
        pct = footer_percentiles(hist, counts, hist.time_in(last), hist.exact_columns(last), totals.counts[None, :],
                                 totals.times[None, :], np.array([totals.exact]),
                                 None if seen is None else (seen[0][None, :], seen[1][None, :])).tolist()
        pct_latest = "  ".join([f"p{name} {format_duration(v)}" for name, v in zip(_PNAMES, pct[0], strict=True)])
        pct_total = "  ".join([f"p{name} {format_duration(v)}" for name, v in zip(_PNAMES, pct[1], strict=True)])
        nan = float("nan")
        total_events = int(totals.counts.sum())
        rate_total = total_events / totals.duration if totals.duration else nan
        mean_total = totals.spent / total_events if total_events else nan
        return [
            head,
            f"Latest:  {format_number(events / dur)} events/s  "
            f"{format_number(spent / dur)} s/s  mean {format_duration(spent / events if events else nan)}  "
            f"{pct_latest}",
            f"Overall: {format_number(rate_total)} events/s  mean {format_duration(mean_total)}  {pct_total}",
            f"Columns: {hist.n + hist.dropped}  interval: {dur:.1f}s  date: {date}  "
            f"skipped records: {skipped}",
        ]


def render_stream(hist: StreamHistory, opts: ViewOptions, skipped: int = 0) -> str:
    """Both maps and the footer for one stream."""
    return PlainRenderer(opts).render_stream(hist, skipped)


def footer_lines(hist: StreamHistory, skipped: int) -> list[str]:
    """Averages and percentiles, latest column and whole history."""
    return PlainRenderer(ViewOptions()).footer_lines(hist, skipped)


def render(acc: Accumulator, opts: ViewOptions) -> str:
    """Every stream, one after another (`PlainRenderer` draws a sequence of frames faster)."""
    return PlainRenderer(opts).render(acc)


def latest_values(hist: StreamHistory, opts: ViewOptions, kind: str = "frequency") -> np.ndarray:
    """The latest-values column as a fresh frame draws it (rows bottom→top), for checks against the report."""
    rows = row_range(hist, opts.min_bucket, opts.max_bucket, first=hist.n - opts.num_records)
    return build_frame(hist, kind, opts.num_records, rows.lo, rows.hi).latest
