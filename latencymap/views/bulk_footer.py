"""The footers of frames drawn in bulk (`plain_bulk`): averages, percentiles and running totals as `footer_lines`
writes them, for a batch of frames at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.columns import EXACT, observed
from latencymap.core.model import Interval
from latencymap.core.percentiles import PERCENTILES
from latencymap.core.sanitize import MAX_TEXT
from latencymap.views.bulk_rows import Span
from latencymap.views.numbers import TextCache
from latencymap.views.plain import PlainRenderer, column_dates, footer_percentiles, seen_by_frame
from latencymap.views.scatter import Buffers

_PNAMES = tuple(f"{q * 100:g}".replace(".", "") for q in PERCENTILES)
#: A footer's pieces: words (the first, the label line's, is set per stream), numbers (events/s, s/s, overall
#: events/s), durations (mean, percentiles; overall mean, percentiles) and the columns line, in order.
_FOOTER_LAYOUT = ["", "n", " events/s  ", "n", " s/s  mean ", "d", *[x for n in _PNAMES for x in (f"  p{n} ", "d")],
                  "\nOverall: ", "n", " events/s  mean ", "d", *[x for n in _PNAMES for x in (f"  p{n} ", "d")], "c"]
FOOTER_PIECES = len(_FOOTER_LAYOUT)
_WORDS = [i for i, x in enumerate(_FOOTER_LAYOUT) if x not in ("n", "d", "c")]
_NUMBERS = [i for i, x in enumerate(_FOOTER_LAYOUT) if x == "n"]
_DURATIONS = [i for i, x in enumerate(_FOOTER_LAYOUT) if x == "d"]


def _clean(text: str, clean: Callable[[str], str]) -> str:
    """`clean_text(text)` (through `clean`, a cached one) without the call for plain short ASCII text."""
    return text if len(text) <= MAX_TEXT and text.isascii() and text.isprintable() else clean(text)


class Footer:
    """Footer pieces of one renderer's frames; its running totals move on as the frames are drawn."""

    def __init__(self, renderer: PlainRenderer, errors: str = "strict") -> None:
        self.renderer = renderer
        self.errors = errors
        self.numbers = TextCache(3, False)
        self.durations = TextCache(3, True)

    def pieces(self, sources: Buffers, hist: StreamHistory, span: Span, new: np.ndarray,
               intervals: Sequence[Interval], skipped: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(source, offset, length) of each frame's footer pieces, as `footer_lines` writes it; the running totals
        move to the end of the batch."""
        r = self.renderer
        s = hist.stream
        totals = r.totals[s]
        counts, dur = span.counts[new], span.dur[new]
        events = counts.sum(axis=1)
        spent = span.spent[new].sum(axis=1)
        nan = float("nan")
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(events != 0, spent / np.where(events != 0, events, 1), nan)
            run_counts = totals.counts + np.cumsum(counts, axis=0)
            run_spent = np.cumsum(np.concatenate(([totals.spent], spent)))[1:]
            run_dur = np.cumsum(np.concatenate(([totals.duration], observed(dur, span.flags[new], counts))))[1:]
            run_events = run_counts.sum(axis=1)
            rate_total = np.where(run_dur != 0, run_events / np.where(run_dur != 0, run_dur, 1.0), nan)
            mean_total = np.where(run_events != 0, run_spent / np.where(run_events != 0, run_events, 1), nan)
        spent_slots = span.spent[new]
        exact = ((span.flags[new] & EXACT) > 0) & hist.timed
        run_times = totals.times + np.cumsum(spent_slots, axis=0)
        run_exact = totals.exact & np.logical_and.accumulate(exact)
        seen = seen_by_frame(totals.least, totals.most, intervals, counts)
        pct = footer_percentiles(hist, counts, spent_slots, exact, run_counts, run_times, run_exact, seen)
        k = len(new)
        shape = (FOOTER_PIECES, k)
        src, off, size = np.zeros(shape, dtype=np.int64), np.empty(shape, dtype=np.int64), np.empty(shape, np.int64)
        label = (f"Label: {r._text(s.label) or '(none)'}  datasource: {r._text(s.datasource)}  unit: {s.unit}\n"
                 "Latest:  ").encode("utf-8", self.errors)
        at, length = sources.texts([label] + [_FOOTER_LAYOUT[i].encode() for i in _WORDS[1:]])
        off[_WORDS], size[_WORDS] = at[:, None], length[:, None]
        numbers, durations = self.numbers, self.durations
        for cache, cols, values in (
                (numbers, _NUMBERS, np.stack((events / dur, spent / dur, rate_total), axis=1)),
                (durations, _DURATIONS, np.concatenate((mean[:, None], pct[:k], mean_total[:, None], pct[k:]),
                                                       axis=1))):
            at, length = cache.lookup(values)
            off[cols], size[cols] = at.reshape(values.shape).T, length.reshape(values.shape).T
        columns = (np.arange(hist.n - k + 1, hist.n + 1) + hist.dropped).tolist()
        clean = r._text
        dates = [_clean(date, clean) for date in column_dates(intervals)]  # a source's own text, or the end's
        line = f"\nColumns: %d  interval: %.1fs  date: %s  skipped records: {skipped}\n"
        lines = list(map(line.__mod__, zip(columns, dur.tolist(), dates, strict=True)))
        data = "".join(lines).encode("utf-8", self.errors)
        src[-1] = sources.buffer(np.frombuffer(data, dtype=np.uint8))
        lengths = np.array(list(map(len, lines)) if data.isascii() else
                           [len(x.encode("utf-8", self.errors)) for x in lines], dtype=np.int64)
        off[-1], size[-1] = np.cumsum(lengths) - lengths, lengths
        # The number arenas are final once both lookups are done.
        src[_NUMBERS] = sources.buffer(numbers.arena)
        src[_DURATIONS] = sources.buffer(durations.arena)
        totals.counts = run_counts[-1].copy()
        totals.times = run_times[-1].copy()
        totals.exact = bool(run_exact[-1])
        totals.least, totals.most = (None, None) if seen is None else (seen[0][-1].copy(), seen[1][-1].copy())
        totals.spent = float(run_spent[-1])
        totals.duration = float(run_dur[-1])
        totals.seen, totals.dropped = hist.n, hist.dropped
        return src, off, size
