"""Plain frames in bulk: many frames of one stream composed per NumPy pass, byte for byte what `PlainRenderer` draws.

When the input is ahead of the screen (a replay with `--screen-delay 0`), the plain view appends a batch of
intervals at once and draws all their frames here. Each frame is a list of byte strings joined once per
batch: constant pieces (row labels, legends, heads) are shared, the cells of a row are a slice of one byte
string per map holding every cell's run-length text, and numbers come from `numbers.TextCache`. Everything
a frame shows is computed for all frames at once from the same numbers with the same operations as the
one-frame path (rows and their hysteresis, autoscale, percentiles, running totals), so the bytes are the same;
the renderer's state (fitted rows, running totals) ends as drawing the frames one by one leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from latencymap.core.accumulator import EXACT, GAP, RESET, TIMED, Accumulator, StreamHistory
from latencymap.core.model import Interval
from latencymap.core.percentiles import percentile_estimates
from latencymap.views.bulk_rows import Span, fitted_rows, window_any, window_bounds, window_max
from latencymap.views.frame import LEVELS, Folds, RowFit, RowRange, fold_rates, row_labels
from latencymap.views.numbers import TextCache
from latencymap.views.options import BLUES, REDS, SHADES
from latencymap.views.plain import RESET as RESET_TEXT
from latencymap.views.plain import PlainRenderer

#: Frames composed per call at most (their bytes are held at once: ~12 KB a frame at 90 columns).
MAX_FRAMES = 1024
#: Shortest interval drawn in bulk (shorter ones, or odd ones, take the one-frame path).
MIN_DURATION = 1e-6
_ESTIMATED = ", estimated from bucket midpoints"
_NO_ESCAPE = LEVELS + 1
_PIECE = 12  # bytes of the longest cell text: an escape with a 3-digit colour and a space


def _cell_tables(color: bool) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per map: (cell texts indexed by level * 2 + starts-a-run, padded to `_PIECE` bytes; their lengths;
    the escape to put before a window's first cell, by level, `_NO_ESCAPE`: none)."""
    out = []
    for palette in (BLUES, REDS):
        texts = []
        for level in range(LEVELS + 1):
            escape = f"\x1b[48;5;{palette[level]}m" if color else ""
            cell = " " if color else SHADES[level]
            texts += [cell.encode(), (escape + cell).encode()]
        table = np.zeros((len(texts), _PIECE), dtype=np.uint8)
        for i, text in enumerate(texts):
            table[i, : len(text)] = np.frombuffer(text, dtype=np.uint8)
        escapes = np.empty(LEVELS + 2, dtype=object)
        escapes[:] = [f"\x1b[48;5;{palette[level]}m".encode() if color else b"" for level in range(LEVELS + 1)] + [b""]
        out.append((table, np.array([len(t) for t in texts]), escapes))
    return out


def _runs(keys: list[object]) -> list[tuple[int, int]]:
    """[start, stop) of each run of equal consecutive keys."""
    bounds = [0] + [j for j in range(1, len(keys)) if keys[j] != keys[j - 1]] + [len(keys)]
    return list(pairwise(bounds))


class BulkFrames:
    """Draws a batch of one stream's intervals as frames, exactly as `renderer` would one after another."""

    def __init__(self, renderer: PlainRenderer, clear: str = "", errors: str = "strict") -> None:
        self.r = renderer
        self.opts = renderer.opts
        self.clear = clear.encode()
        self.errors = errors
        self._texts: dict[object, TextCache] = {}
        self._cells = _cell_tables(self.opts.color)

    def ready(self, acc: Accumulator, intervals: Sequence[Interval]) -> int:
        """How many of `intervals`, from the first, can be drawn in bulk now (0: draw the first the usual way)."""
        if self.opts.num_records < 1 or len(acc.streams) != 1 or not intervals:
            return 0
        ((stream, hist),) = acc.streams.items()
        totals = self.r._totals.get(stream)
        if (hist.n < 1 or totals is None or totals.hist is not hist or totals.seen != hist.n
                or totals.dropped != hist.dropped):
            return 0
        count = 0
        for iv in intervals[:MAX_FRAMES]:
            if iv.stream is not stream and iv.stream != stream:
                break
            if not MIN_DURATION <= iv.duration < math.inf or (iv.time is not None and not np.isfinite(iv.time).all()):
                break
            count += 1
        if hist.cap is not None:
            count = min(count, hist.cap - hist.n)
        return count if count > 0 and acc.room_for(count) else 0

    def _cache(self, key: object, digits: int, duration: bool, before: str = "", after: str = "",
               align: int = 0, inner: str = "") -> TextCache:
        """Texts of numbers as `{before}{inner + text:>{align}}{after}`, cached under `key`."""
        cache = self._texts.get(key)
        if cache is None:
            def style(text: str) -> bytes:
                return f"{before}{inner + text:>{align}}{after}".encode()

            cache = self._texts[key] = TextCache(digits, duration, style)
        return cache

    def draw(self, acc: Accumulator, intervals: Sequence[Interval]) -> bytes:
        """Append `intervals` (as many as `ready` said) to `acc`; the bytes of their frames, one after another."""
        stream = intervals[0].stream
        hist = acc.streams[stream]
        n0, timed, skipped, dropped = hist.n, hist.timed, acc.skipped, hist.dropped
        acc.add(intervals)
        k = len(intervals)
        if hist.n != n0 + k or hist.dropped != dropped:
            raise AssertionError("bulk frames: the history dropped columns it was to keep")
        width = self.opts.num_records
        first = max(0, n0 + 1 - width)
        span = Span.read(hist, first, n0 + k)
        starts, stops = window_bounds(n0, k, width, first)
        fit = self.r.fits.setdefault(stream, RowFit())
        rows = fitted_rows(hist, span, starts, stops, fit, self.opts.min_bucket, self.opts.max_bucket)
        new = stops - 1
        timed_now = timed | (np.cumsum(span.flags[new] & TIMED) > 0)
        exact = timed_now & ~window_any((span.flags & EXACT) == 0, starts, stops)
        marks = window_any((span.flags & (RESET | GAP)) != 0, starts, stops)
        footer = self._footer(hist, span, new, intervals, skipped)
        out = []
        for a, b in _runs(rows):  # type: ignore[arg-type]
            lo, hi, folds = rows[a]
            out.append(self._frames(hist, span, starts[a:b], stops[a:b], lo, hi, folds, exact[a:b], marks[a:b],
                                    footer[a:b]))
        return b"".join(out)

    def _frames(self, hist: StreamHistory, span: Span, starts: np.ndarray, stops: np.ndarray, lo: int, hi: int,
                folds: Folds | None, exact: np.ndarray, marks: np.ndarray, footer: np.ndarray) -> bytes:
        """The frames of windows that share their rows."""
        opts, width = self.opts, self.opts.num_records
        labels = row_labels(hist, lo, hi, folds)
        prefixes, label_w = self.r._prefixes(hist.stream, RowRange(lo, hi, folds), labels)
        nrows, frames = len(prefixes), len(starts)
        a = int(starts[0])
        folded = fold_rates(span.counts[a: stops[-1]], span.spent[a: stops[-1]], span.dur[a: stops[-1]], lo, hi)
        starts, stops = starts - a, stops - a
        newest = stops - 1
        col_max = folded.max(axis=2)
        sums = folded.sum(axis=2)
        per_map = 4 * nrows + 4
        pieces = np.empty((frames, 2 * per_map + footer.shape[1]), dtype=object)
        mark_lines = self._marks(span, a, starts, stops, marks, label_w)
        for m, (kind, maxval) in enumerate((("frequency", opts.frequency_maxval),
                                            ("intensity", opts.intensity_maxval))):
            base = m * per_map
            chart = window_max(col_max[m], starts, stops, width)
            scale = np.full(frames, maxval) if maxval > 0 else chart
            if m == 0:
                head = self.r.heads(kind, "Frequency heat map: events per second", "(events/s)", label_w)
                pieces[:, base] = self.clear + f"{head[0]}\n{head[1]}\n".encode()
            else:
                title = "Intensity heat map: time waited per second"
                head = self.r.heads(kind, title, "(s/s)", label_w)
                rough = self.r.heads(kind, title + _ESTIMATED, "(s/s)", label_w)
                choice = np.array([f"{rough[0]}\n{rough[1]}\n".encode(), f"{head[0]}\n{head[1]}\n".encode()],
                                  dtype=object)
                pieces[:, base] = choice[exact.astype(np.intp)]
            latest = self._cache(("latest", opts.color), 4, False, (RESET_TEXT if opts.color else "") + "  ",
                                 align=9)
            pieces[:, base + 4: base + 4 + 4 * nrows: 4] = latest.texts(folded[m, newest, ::-1])
            self._cells_of(pieces, base, m, kind, folded[m], stops, scale, chart, prefixes)
            pieces[:, base + 4 * nrows + 2] = mark_lines
            tail = self._cache(("tail", m, head[2]), 4, False, head[2], "\n\n", 9, "sum ")
            pieces[:, base + 4 * nrows + 3] = tail.texts(sums[m, newest])
        pieces[:, 2 * per_map:] = footer
        return b"".join(pieces.ravel().tolist())

    def _cells_of(self, pieces: np.ndarray, base: int, m: int, kind: str, folded: np.ndarray, stops: np.ndarray,
                  scale: np.ndarray, chart: np.ndarray, prefixes: list[str]) -> None:
        """Fill one map's rows (label, escape, cells) and the legend after the last row, in `pieces`."""
        width, nrows, frames = self.opts.num_records, len(prefixes), len(stops)
        segments = _runs(list(zip(scale.tolist(), chart.tolist(), strict=True)))
        # Each segment (frames with one scale) lays out its columns once: from its first frame's window
        # (columns before the history are the padding's empty cells) to its last frame's newest column.
        seg_a = np.array([sa for sa, _ in segments])
        seg_len = np.array([width + sb - sa - 1 for sa, sb in segments])
        seg_base = np.concatenate(([0], np.cumsum(seg_len)))
        total = int(seg_base[-1])
        seg_of_col = np.repeat(np.arange(len(segments)), seg_len)
        col = np.arange(total) - seg_base[seg_of_col] + (stops[seg_a] - width)[seg_of_col]
        col_scale = scale[seg_a][seg_of_col]
        values = folded[np.maximum(col, 0), ::-1].T  # (row top first, laid-out column)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = (values * LEVELS / np.where(col_scale > 0, col_scale, 1.0)).astype(np.int64)
        level += 1
        np.maximum(level, 1, out=level)
        np.minimum(level, LEVELS, out=level)
        level *= (values > 0) & (col >= 0) & (col_scale > 0)
        starts_run = np.ones(level.shape, dtype=bool)
        np.not_equal(level[:, 1:], level[:, :-1], out=starts_run[:, 1:])
        starts_run[:, seg_base[:-1]] = True
        table, lengths, escapes = self._cells[m]
        code = level * 2 + starts_run
        size = lengths[code].reshape(-1)
        text = table[code].reshape(-1, _PIECE)[np.arange(_PIECE) < size[:, None]].tobytes()
        offset = np.zeros(size.size + 1, dtype=np.int64)
        np.cumsum(size, out=offset[1:])
        seg_of_frame = np.repeat(np.arange(len(segments)), [sb - sa for sa, sb in segments])
        at = seg_base[seg_of_frame] + np.arange(frames) - seg_a[seg_of_frame]  # first laid-out column of a window
        cell = np.arange(nrows)[None, :] * total + at[:, None]
        first, last = offset[cell].ravel().tolist(), offset[cell + width].ravel().tolist()
        cells = np.empty(frames * nrows, dtype=object)
        cells[:] = list(map(text.__getitem__, map(slice, first, last)))
        pieces[:, base + 3: base + 3 + 4 * nrows: 4] = cells.reshape(frames, nrows)
        lead = np.where(starts_run[:, at].T, _NO_ESCAPE, level[:, at].T)
        pieces[:, base + 2: base + 2 + 4 * nrows: 4] = escapes[lead]
        labels = np.empty((len(segments), nrows + 1), dtype=object)
        for s, (sa, _) in enumerate(segments):
            legend = self.r.legend(kind, float(scale[sa]), float(chart[sa]), nrows)
            labels[s] = [prefixes[0].encode()] + [f"{legend[r - 1]}\n{prefixes[r]}".encode()
                                                  for r in range(1, nrows)] + [f"{legend[-1]}\n".encode()]
        rows_of = labels[seg_of_frame]
        pieces[:, base + 1: base + 1 + 4 * nrows: 4] = rows_of[:, :nrows]
        pieces[:, base + 4 * nrows + 1] = rows_of[:, nrows]

    def _marks(self, span: Span, a: int, starts: np.ndarray, stops: np.ndarray, marks: np.ndarray,
               label_w: int) -> np.ndarray:
        """The marks line (and its newline) of each frame, empty where its window has no reset or gap."""
        lines = np.full(len(starts), b"", dtype=object)
        if marks.any():
            flags = span.flags[a:]
            chars = "".join(np.where(flags & RESET, "R", np.where(flags & GAP, "G", " ")).tolist())
            width = self.opts.num_records
            for j in np.flatnonzero(marks).tolist():
                cells = chars[starts[j]: stops[j]].rjust(width)
                lines[j] = f"{'marks':>{label_w}} {cells}  R counter reset, G gap\n".encode()
        return lines

    def _footer(self, hist: StreamHistory, span: Span, new: np.ndarray, intervals: Sequence[Interval],
                skipped: int) -> np.ndarray:
        """(frame, piece): each frame's footer, as `footer_lines` writes it; the running totals move to the end."""
        r = self.r
        s = hist.stream
        totals = r._totals[s]
        counts, dur = span.counts[new], span.dur[new]
        events = counts.sum(axis=1)
        spent = span.spent[new].sum(axis=1)
        nan = float("nan")
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(events != 0, spent / np.where(events != 0, events, 1), nan)
            run_counts = totals.counts + np.cumsum(counts, axis=0)
            run_spent = np.cumsum(np.concatenate(([totals.spent], spent)))[1:]
            run_dur = np.cumsum(np.concatenate(([totals.duration], dur)))[1:]
            run_events = run_counts.sum(axis=1)
            rate_total = np.where(run_dur != 0, run_events / np.where(run_dur != 0, run_dur, 1.0), nan)
            mean_total = np.where(run_events != 0, run_spent / np.where(run_events != 0, run_events, 1), nan)
        pct = percentile_estimates(np.concatenate((counts, run_counts)), hist.low, hist.high)
        k = len(new)
        head = (f"Label: {r._text(s.label) or '(none)'}  datasource: {r._text(s.datasource)}  unit: {s.unit}\n"
                "Latest:  ")
        out = np.empty((k, 15), dtype=object)
        out[:, 0] = head.encode("utf-8", self.errors)
        out[:, 1] = self._cache("ev", 3, False, after=" events/s  ").texts(events / dur)
        out[:, 2] = self._cache("ss", 3, False, after=" s/s  mean ").texts(spent / dur)
        after = ("  p50 ", "  p90 ", "  p99 ", "  p999 ")
        out[:, 3] = self._cache(("d", 0), 3, True, after=after[0]).texts(mean)
        out[:, 4] = self._cache(("d", 1), 3, True, after=after[1]).texts(pct[:k, 0])
        out[:, 5] = self._cache(("d", 2), 3, True, after=after[2]).texts(pct[:k, 1])
        out[:, 6] = self._cache(("d", 3), 3, True, after=after[3]).texts(pct[:k, 2])
        out[:, 7] = self._cache("p999", 3, True, after="\nOverall: ").texts(pct[:k, 3])
        out[:, 8] = self._cache("evt", 3, False, after=" events/s  mean ").texts(rate_total)
        out[:, 9] = self._cache(("d", 0), 3, True, after=after[0]).texts(mean_total)
        out[:, 10] = self._cache(("d", 1), 3, True, after=after[1]).texts(pct[k:, 0])
        out[:, 11] = self._cache(("d", 2), 3, True, after=after[2]).texts(pct[k:, 1])
        out[:, 12] = self._cache(("d", 3), 3, True, after=after[3]).texts(pct[k:, 2])
        out[:, 13] = self._cache("p999t", 3, True, after="\nColumns: ").texts(pct[k:, 3])
        columns = (np.arange(hist.n - k + 1, hist.n + 1) + hist.dropped).tolist()
        text = r._text
        errors = self.errors
        out[:, 14] = [f"{c}  interval: {d:.1f}s  date: {text(iv.date)}  skipped records: {skipped}\n".encode(
            "utf-8", errors) for c, d, iv in zip(columns, dur.tolist(), intervals, strict=True)]
        totals.counts = run_counts[-1].copy()
        totals.spent = float(run_spent[-1])
        totals.duration = float(run_dur[-1])
        totals.seen = hist.n
        return out
