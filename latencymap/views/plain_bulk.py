"""Plain frames in bulk: many frames of one stream composed per NumPy pass, byte for byte what `PlainRenderer` draws.

When the input is ahead of the screen (a replay with `--screen-delay 0`), the plain view appends a batch of
intervals at once and draws all their frames here. A frame is a sequence of pieces, each a slice of one of a
few buffers: the cells of a map row are a slice of one byte string per map holding every cell's run-length
text, numbers come from `numbers.TextCache` arenas, and the fixed words (labels, legends, heads) are stored
once per batch. NumPy lays out every piece of every frame as (buffer, offset, length); `scatter` writes them.
Everything a frame shows is computed for all frames at once from the same numbers with the same operations as
the one-frame path (rows and their hysteresis, autoscale, percentiles, running totals), so the bytes are the
same; the renderer's state (fitted rows, running totals) ends as drawing the frames one by one leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from latencymap.core.accumulator import EXACT, GAP, RESET, TIMED, Accumulator, StreamHistory
from latencymap.core.model import Interval
from latencymap.core.units import format_number
from latencymap.outputs.report import time_words
from latencymap.views.bulk_footer import FOOTER_PIECES, Footer
from latencymap.views.bulk_rows import Span, fitted_rows, window_any, window_bounds, window_max
from latencymap.views.frame import LEVELS, Folds, RowFit, RowRange, fold_rates, row_labels
from latencymap.views.numbers import TextCache
from latencymap.views.options import BLUES, REDS, SHADES
from latencymap.views.plain import MAX_SUM, PlainRenderer
from latencymap.views.plain import RESET as RESET_TEXT
from latencymap.views.scatter import Buffers, Pieces

#: Frames composed per call at most.
MAX_FRAMES = 1024
#: Shortest interval drawn in bulk (shorter ones, or odd ones, take the one-frame path).
MIN_DURATION = 1e-6
#: The intensity title's note on frames whose columns do not all carry their times (a rebinned stream is drawn
#: frame by frame: `BulkFrames.ready`).
_ESTIMATED = f", {time_words(False, None, 0, 0)}"
_NO_ESCAPE = LEVELS + 1
_NUMBERS_MAX = 1 << 14
_PIECE = 12  # bytes of the longest cell text: an escape with a 3-digit colour and a space


def _per_map(nrows: int) -> int:
    """Pieces of one map in a frame: its heads; per row the legend after the row above with the row's label, an
    escape, the cells and the latest value; the legend after the bottom row; the marks line; the start of the last
    line; the newest column's sum; the largest column sum (`MAX_SUM`) and the blank line."""
    return 4 * nrows + 6


def _cell_tables(color: bool) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """Cell texts indexed by (map * (LEVELS + 1) + level) * 2 + starts-a-run, padded to `_PIECE` bytes; their
    lengths; the escapes to put before a window's first cell, by map * (LEVELS + 2) + level (`_NO_ESCAPE`: none)."""
    texts: list[bytes] = []
    escapes: list[bytes] = []
    for palette in (BLUES, REDS):
        for level in range(LEVELS + 1):
            escape = f"\x1b[48;5;{palette[level]}m" if color else ""
            cell = " " if color else SHADES[level]
            texts += [cell.encode(), (escape + cell).encode()]
            escapes.append(escape.encode())
        escapes.append(b"")
    table = np.zeros((len(texts), _PIECE), dtype=np.uint8)
    for i, text in enumerate(texts):
        table[i, : len(text)] = np.frombuffer(text, dtype=np.uint8)
    return table, np.array([len(t) for t in texts]), escapes


def _runs(keys: Sequence[object]) -> list[tuple[int, int]]:
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
        # A row's latest value (after the reset ending its cells), a map's newest column's sum, and the largest
        # column sum of its window (and the blank line).
        self._latest = TextCache(4, False, (RESET_TEXT if self.opts.color else "") + "  ", align=9)
        self._sums = TextCache(4, False, inner="sum ", align=9)
        self._max_sums = TextCache(4, False, MAX_SUM, after="\n\n")
        self._cells = _cell_tables(self.opts.color)
        table, lengths = self._cells[0], self._cells[1]
        # Cell sizes to store: every one but a lone space's (`_cell_text` starts from spaces). A one-byte cell that
        # is not a space (a shade such as `:`) makes the one-byte cells stored too.
        self._long_cells = sorted({int(n) for n, first in zip(lengths.tolist(), table[:, 0].tolist(), strict=True)
                                   if n > 1 or first != ord(" ")})
        self._sources = Buffers()
        self._footer = Footer(renderer, errors)
        self._numbers: dict[float, bytes] = {}

    def ready(self, acc: Accumulator, intervals: Sequence[Interval]) -> int:
        """How many of `intervals`, from the first, can be drawn in bulk now (0: draw the first the usual way)."""
        if self.opts.num_records < 1 or len(acc.streams) != 1 or not intervals:
            return 0
        ((stream, hist),) = acc.streams.items()
        # A stream with buckets of its own: its title's note follows its source's totals frame by frame, unless
        # every frame is exact (a note of none: HdrHistogram logs, whose rows carry their times).
        kept = stream in acc.sources
        if kept and not hist.exact:
            return 0
        totals = self.r.totals.get(stream)
        if (hist.n < 1 or totals is None or totals.hist is not hist or totals.seen != hist.n
                or totals.dropped != hist.dropped):
            return 0
        count = 0
        for iv in intervals[:MAX_FRAMES]:
            if iv.stream is not stream and iv.stream != stream:
                break
            if not MIN_DURATION <= iv.duration < math.inf or (iv.time is not None and not np.isfinite(iv.time).all()):
                break
            if kept and iv.time is None:
                break
            count += 1
        if hist.cap is not None:
            count = min(count, hist.cap - hist.n)
        return count if count > 0 and acc.room_for(count) else 0

    def _number(self, value: float) -> bytes:
        """`format_number(value)` as bytes (a few per legend: one at a time, remembered)."""
        text = self._numbers.get(value)
        if text is None:
            if len(self._numbers) > _NUMBERS_MAX:
                self._numbers.clear()
            text = self._numbers[value] = format_number(value).encode()
        return text

    def draw(self, acc: Accumulator, intervals: Sequence[Interval]) -> Pieces:
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
        sources = self._sources
        sources.start()
        runs = [self._layout(sources, hist, span, starts[a:b], stops[a:b], *rows[a], exact[a:b], marks[a:b])
                for a, b in _runs(rows)]
        # Every run's numbers, each kind looked up at once; their texts' arenas are final after the lookups.
        latest, sums, max_sums = self._latest, self._sums, self._max_sums
        latest_at = latest.lookup(np.concatenate([run[3].reshape(-1) for run in runs]))
        sums_at = sums.lookup(np.concatenate([run[4].reshape(-1) for run in runs]))
        max_at = max_sums.lookup(np.concatenate([run[5].reshape(-1) for run in runs]))
        footer = self._footer.pieces(sources, hist, span, new, intervals, skipped)
        latest_src, sums_src = sources.buffer(latest.arena), sources.buffer(sums.arena)
        max_src = sources.buffer(max_sums.arena)
        done_latest = done_sum = done = 0
        bases = sources.bases()
        iov = np.empty((sum(run[0].size for run in runs), 2), dtype=np.int64)
        at = 0
        for src, off, size, values, _, _ in runs:
            frames, nrows = values.shape[1], values.shape[2]
            per_map = _per_map(nrows)
            for m in (0, 1):
                base, count = m * per_map, frames * nrows
                cols = slice(base + 4, base + 4 + 4 * nrows, 4)
                src[cols] = latest_src
                off[cols] = latest_at[0][done_latest: done_latest + count].reshape(frames, nrows).T
                size[cols] = latest_at[1][done_latest: done_latest + count].reshape(frames, nrows).T
                done_latest += count
                src[base + per_map - 2] = sums_src
                off[base + per_map - 2] = sums_at[0][done_sum: done_sum + frames]
                size[base + per_map - 2] = sums_at[1][done_sum: done_sum + frames]
                src[base + per_map - 1] = max_src
                off[base + per_map - 1] = max_at[0][done_sum: done_sum + frames]
                size[base + per_map - 1] = max_at[1][done_sum: done_sum + frames]
                done_sum += frames
            for whole, part in zip((src, off, size), footer, strict=True):
                whole[2 * per_map:] = part[:, done: done + frames]
            done += frames
            off += bases[src]
            block = iov[at: at + src.size].reshape(frames, src.shape[0], 2)
            block[:, :, 0] = off.T
            block[:, :, 1] = size.T
            at += src.size
        return Pieces(iov, list(sources.buffers))

    def _layout(self, sources: Buffers, hist: StreamHistory, span: Span, starts: np.ndarray, stops: np.ndarray,
                lo: int, hi: int, folds: Folds | None, exact: np.ndarray,
                marks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The pieces (source, offset, length: (piece, frame)) of frames whose windows share their rows, numbers and
        footer left out; the latest values (map, frame, row top first), newest columns' sums (map, frame) and the
        largest column sum of each window (map, frame)."""
        opts, width = self.opts, self.opts.num_records
        labels = row_labels(hist, lo, hi, folds)
        prefixes, label_w = self.r.label_prefixes(hist.stream, RowRange(lo, hi, folds), labels)
        nrows, frames = len(prefixes), len(starts)
        a = int(starts[0])
        folded = fold_rates(span.counts[a: stops[-1]], span.spent[a: stops[-1]], span.dur[a: stops[-1]], lo, hi)
        starts, stops = starts - a, stops - a
        newest = stops - 1
        col_max = folded.max(axis=2)
        per_map = _per_map(nrows)
        shape = (2 * per_map + FOOTER_PIECES, frames)
        src, off, size = np.zeros(shape, dtype=np.int64), np.empty(shape, dtype=np.int64), np.empty(shape, np.int64)
        charts = np.stack([window_max(col_max[m], starts, stops, width) for m in (0, 1)])
        scales = np.stack([np.full(frames, maxval) if maxval > 0 else charts[m]
                           for m, maxval in enumerate((opts.frequency_maxval, opts.intensity_scale(hist.stream)))])
        self._cells_of(sources, (src, off, size), folded, stops, scales, charts, prefixes)
        head = self.r.heads("frequency", "Frequency heat map: events per second", "(events/s)", label_w)
        off[0], size[0] = sources.text(self.clear + f"{head[0]}\n{head[1]}\n".encode())
        off[per_map - 3], size[per_map - 3] = sources.text(head[2].encode())
        title = "Intensity heat map: time waited per second"
        head = self.r.heads("intensity", title, "(s/s)", label_w)
        rough = self.r.heads("intensity", title + _ESTIMATED, "(s/s)", label_w)
        at, length = sources.texts([f"{rough[0]}\n{rough[1]}\n".encode(), f"{head[0]}\n{head[1]}\n".encode()])
        off[per_map], size[per_map] = at[exact.astype(np.intp)], length[exact.astype(np.intp)]
        off[2 * per_map - 3], size[2 * per_map - 3] = sources.text(head[2].encode())
        mark_at, mark_size = self._marks(sources, span, a, starts, stops, marks, label_w)
        off[per_map - 4: 2 * per_map - 3: per_map], size[per_map - 4: 2 * per_map - 3: per_map] = mark_at, mark_size
        # Each column's sum over its rows, as `both_frames` sums a window's columns (the same reduction of the same
        # numbers), and PyLatencyMap's Max(Sum): the largest of a window's.
        col_sums = folded.sum(axis=2)
        max_sums = np.stack([window_max(col_sums[m], starts, stops, width) for m in (0, 1)])
        return src, off, size, folded[:, newest, ::-1], col_sums[:, newest], max_sums

    def _cells_of(self, sources: Buffers, pieces: tuple[np.ndarray, np.ndarray, np.ndarray], folded: np.ndarray,
                  stops: np.ndarray, scales: np.ndarray, charts: np.ndarray, prefixes: list[str]) -> None:
        """Lay out both maps' rows (label, escape, cells) and the legends after the last rows, in `pieces`."""
        src, off, size = pieces
        width, nrows, frames = self.opts.num_records, len(prefixes), len(stops)
        per_map = _per_map(nrows)
        # Each segment (frames of one map with one scale) lays out its columns once: from its first frame's window
        # (columns before the history are the padding's empty cells) to its last frame's newest column. The
        # frequency map's segments come first, then the intensity map's.
        seg_a, seg_map = [], []
        for m in (0, 1):
            change = np.flatnonzero((scales[m, 1:] != scales[m, :-1]) | (charts[m, 1:] != charts[m, :-1])) + 1
            seg_a.append(np.concatenate(([0], change)))
            seg_map.append(np.full(len(change) + 1, m))
        firsts, maps = np.concatenate(seg_a), np.concatenate(seg_map)
        seg_frames = np.concatenate([np.diff(np.append(x, frames)) for x in seg_a])
        seg_len = width + seg_frames - 1
        seg_base = np.concatenate(([0], np.cumsum(seg_len)))
        total = int(seg_base[-1])
        seg_of_col = np.repeat(np.arange(len(firsts)), seg_len)
        col = np.arange(total) - seg_base[seg_of_col] + (stops[firsts] - width)[seg_of_col]
        col_map = maps[seg_of_col]
        col_scale = scales[maps, firsts][seg_of_col]
        values = folded[col_map, np.maximum(col, 0), ::-1].T  # (row top first, laid-out column)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = (values * LEVELS / np.where(col_scale > 0, col_scale, 1.0)).astype(np.int64)
        level += 1
        np.maximum(level, 1, out=level)
        np.minimum(level, LEVELS, out=level)
        level *= (values > 0) & (col >= 0) & (col_scale > 0)
        starts_run = np.ones(level.shape, dtype=bool)
        np.not_equal(level[:, 1:], level[:, :-1], out=starts_run[:, 1:])
        starts_run[:, seg_base[:-1]] = True
        text, offset = self._cell_text(level + (col_map * (LEVELS + 1))[None, :], starts_run)
        text_src = sources.buffer(text)
        escape_at, escape_size = sources.texts(self._cells[2])
        label_at, label_size = self._labels(sources, prefixes, maps, scales[maps, firsts], charts[maps, firsts])
        cols_row = np.arange(nrows)[:, None] * total
        for m in (0, 1):
            segs = np.flatnonzero(maps == m)
            seg_of_frame = np.repeat(segs, seg_frames[segs])
            at = seg_base[seg_of_frame] + np.arange(frames) - firsts[seg_of_frame]  # a window's first laid-out column
            cell = cols_row + at[None, :]  # (row, frame)
            base = m * per_map
            cols = slice(base + 3, base + 3 + 4 * nrows, 4)
            src[cols] = text_src
            off[cols] = offset[cell]
            size[cols] = offset[cell + width] - offset[cell]
            lead = np.where(starts_run[:, at], _NO_ESCAPE, level[:, at]) + m * (_NO_ESCAPE + 1)
            cols = slice(base + 2, base + 2 + 4 * nrows, 4)
            off[cols], size[cols] = escape_at[lead], escape_size[lead]
            cols = slice(base + 1, base + 1 + 4 * nrows, 4)
            off[cols], size[cols] = label_at[:nrows, seg_of_frame], label_size[:nrows, seg_of_frame]
            off[base + 4 * nrows + 1] = label_at[nrows, seg_of_frame]
            size[base + 4 * nrows + 1] = label_size[nrows, seg_of_frame]

    def _cell_text(self, level: np.ndarray, starts_run: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The text of every laid-out cell (`level`: plus LEVELS + 1 in the intensity map), row after row (a cell
        starting a run carries its colour's escape), and where each cell starts in it (one more offset: the end)."""
        table, lengths = self._cells[0], self._cells[1]
        code = (level * 2 + starts_run).reshape(-1)
        cell_size = lengths[code]
        offset = np.zeros(code.size + 1, dtype=np.int64)
        np.cumsum(cell_size, out=offset[1:])
        # Start with spaces, then store every cell size holding something else (`_long_cells`).
        text = np.full(int(offset[-1]), ord(" "), dtype=np.uint8)
        for n in self._long_cells:
            sel = np.flatnonzero(cell_size == n)
            text[offset[sel][:, None] + np.arange(n)] = table[code[sel], :n]
        return text, offset

    def _labels(self, sources: Buffers, prefixes: list[str], maps: np.ndarray, scales: np.ndarray,
                charts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fixed texts (offset, length: (row, segment)) of what goes before each row's cells (the legend after the
        row above, the row's label) and, last, the legend after the bottom row, for each segment's map and scale.

        The legends are `PlainRenderer.legend`'s, their numbers looked up for every segment at once.
        """
        nrows = len(prefixes)
        swatches = [[(f"\x1b[48;5;{palette[level]}m {RESET_TEXT}" if self.opts.color else SHADES[level]).encode()
                     for level in range(LEVELS + 1)] for palette in (BLUES, REDS)]
        bounds = scales[:, None] * np.arange(LEVELS)[None, :] / LEVELS  # legend rows 1..LEVELS: maxval * (row - 1)
        numbers = list(map(self._number, np.concatenate((bounds, charts[:, None]), axis=1).reshape(-1).tolist()))
        per = LEVELS + 1
        label = [p.encode() for p in prefixes]
        # Legend rows 0 and 1 ("0", ">0") and those past the scale ("") read the same whatever the scale.
        varying = [r for r in range(1, nrows + 1) if 2 <= r - 1 <= LEVELS + 1]
        columns: list[list[tuple[int, int]]] = []
        first: dict[int, int] = {}
        text = sources.text
        for s, m in enumerate(maps.tolist()):
            swatch, texts = swatches[m], numbers[s * per: (s + 1) * per]
            legend = [b"   " + swatch[0] + b" 0"] + [b"   " + swatch[r] + b" >" + texts[r - 1]
                                                      for r in range(1, LEVELS + 1)]
            legend += [b"   max: " + texts[LEVELS]] + [b""] * max(0, nrows - LEVELS - 2)
            if m in first:
                column = list(columns[first[m]])
                for r in varying:
                    column[r] = text(legend[r - 1] + b"\n" + (label[r] if r < nrows else b""))
            else:
                first[m] = s
                column = [text(label[0])] + [text(legend[r - 1] + b"\n" + label[r]) for r in range(1, nrows)]
                column.append(text(legend[nrows - 1] + b"\n"))
            columns.append(column)
        table = np.array(columns, dtype=np.int64)  # (segment, row, offset/length)
        return table[:, :, 0].T, table[:, :, 1].T

    def _marks(self, sources: Buffers, span: Span, a: int, starts: np.ndarray, stops: np.ndarray, marks: np.ndarray,
               label_w: int) -> tuple[np.ndarray, np.ndarray]:
        """The fixed text (offset, length) of each frame's marks line and its newline: empty where its window has no
        reset or gap."""
        at, size = np.zeros(len(starts), dtype=np.int64), np.zeros(len(starts), dtype=np.int64)
        if marks.any():
            flags = span.flags[a:]
            chars = "".join(np.where(flags & RESET, "R", np.where(flags & GAP, "G", " ")).tolist())
            width = self.opts.num_records
            for j in np.flatnonzero(marks).tolist():
                cells = chars[starts[j]: stops[j]].rjust(width)
                at[j], size[j] = sources.text(f"{'marks':>{label_w}} {cells}  R counter reset, G gap\n".encode())
        return at, size
