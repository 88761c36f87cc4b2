"""Numbers of the overview: per stream p50/p99 now and overall, time waited, p99 now against its peers; per-cell p99.

Everything is computed for all streams at once with NumPy (one percentile call per unit/datasource group), and
running totals are kept from frame to frame, so hundreds of streams cost a few milliseconds per frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import StreamId
from latencymap.core.percentiles import median_of, percentile_estimates
from latencymap.core.sanitize import clean_text
from latencymap.tui.window import Window

SHOWN = (0.50, 0.99)
#: Sort orders the overview offers (`o` cycles): key name → what the column header says.
ORDERS = ("p99 now", "waited", "vs peers", "label")
#: A stream whose p99 now is at least this many times its peers' median stands out.
SLOW_PEER = 2.0
#: "Now" is the newest columns, this many merged (one column alone is often a handful of events).
NOW_COLUMNS = 5


@dataclass(slots=True)
class StreamRow:
    """One stream's line of the overview."""

    index: int
    hist: StreamHistory
    label: str
    p50_now: float = math.nan
    p99_now: float = math.nan
    p50_all: float = math.nan
    p99_all: float = math.nan
    waited_s: float = 0.0
    waited_now: float = math.nan
    vs_peers: float = math.nan  # p99 now over the median of the streams of the same unit and datasource

    @property
    def slow(self) -> bool:
        """True when its p99 now is `SLOW_PEER` times its peers' median or more."""
        return self.vs_peers >= SLOW_PEER


class _Running:
    """Whole-history counts and time of one stream, updated with the columns added since the last frame."""

    __slots__ = ("counts", "dropped", "seen", "spent")

    def __init__(self, hist: StreamHistory) -> None:
        self.dropped, self.seen = hist.dropped, hist.n
        self.counts = hist.counts.sum(axis=0)
        self.spent = float(hist.time.sum())

    def update(self, hist: StreamHistory) -> bool:
        if hist.dropped != self.dropped or hist.n < self.seen:
            return False
        if hist.n > self.seen:
            new = slice(self.seen, hist.n)
            self.counts = self.counts + hist.counts[new].sum(axis=0)
            self.spent += float(hist.time[new].sum())
            self.seen = hist.n
        return True


class OverviewStats:
    """The overview's rows for every stream, kept up to date frame after frame."""

    def __init__(self) -> None:
        self._running: dict[StreamId, _Running] = {}
        self._labels: dict[StreamId, str] = {}

    def rows(self, histories: list[StreamHistory], stops: list[int] | None = None) -> list[StreamRow]:
        """A row per history (in order); "now" is the `NOW_COLUMNS` columns before `stops[i]` (default: the newest)."""
        rows = []
        groups: dict[tuple[str, str], list[int]] = {}
        for i, hist in enumerate(histories):
            label = self._labels.get(hist.stream)
            if label is None:
                label = self._labels[hist.stream] = clean_text(hist.stream.label, 200) or "(no label)"
            rows.append(StreamRow(i, hist, label))
            groups.setdefault((hist.stream.datasource, hist.stream.unit), []).append(i)
        for members in groups.values():
            self._fill(rows, members, stops)
            _compare_peers([rows[i] for i in members])
        return rows

    def _fill(self, rows: list[StreamRow], members: list[int], stops: list[int] | None) -> None:
        latest = np.zeros((len(members), NSLOTS), dtype=np.int64)
        totals = np.zeros((len(members), NSLOTS), dtype=np.int64)
        for k, i in enumerate(members):
            hist = rows[i].hist
            stop = hist.n if stops is None else min(stops[i], hist.n)
            run = self._running.get(hist.stream)
            if run is None or not run.update(hist):
                run = self._running[hist.stream] = _Running(hist)
            totals[k] = run.counts
            rows[i].waited_s = run.spent
            if stop > 0:
                now = slice(max(0, stop - NOW_COLUMNS), stop)
                latest[k] = hist.counts[now].sum(axis=0)
                dur = float(hist.durations[now].sum())
                rows[i].waited_now = float(hist.time[now].sum()) / dur if dur > 0 else math.nan
        hist0 = rows[members[0]].hist
        pct = percentile_estimates(np.concatenate((latest, totals)), hist0.low, hist0.high, SHOWN)
        n = len(members)
        for k, i in enumerate(members):
            r = rows[i]
            r.p50_now, r.p99_now = float(pct[k, 0]), float(pct[k, 1])
            r.p50_all, r.p99_all = float(pct[n + k, 0]), float(pct[n + k, 1])


def _compare_peers(peers: list[StreamRow]) -> None:
    """`vs_peers` of streams of one unit and datasource: p99 now over their median p99 now (two or more)."""
    now = np.array([r.p99_now for r in peers])
    ok = np.isfinite(now) & (now > 0)
    if ok.sum() < 2:
        return
    median = float(median_of(now[ok]))
    for r, v, good in zip(peers, now.tolist(), ok.tolist(), strict=True):
        r.vs_peers = v / median if good and median > 0 else math.nan


def sort_rows(rows: list[StreamRow], order: str, needle: str = "") -> list[StreamRow]:
    """Rows whose label contains `needle` (case-insensitive), slowest first by `order` (missing values last)."""
    needle = needle.casefold()
    kept = [r for r in rows if needle in r.label.casefold()] if needle else list(rows)
    if order == "label":
        return sorted(kept, key=lambda r: r.label.casefold())
    attr = {"p99 now": "p99_now", "waited": "waited_s", "vs peers": "vs_peers"}[order]

    def key(r: StreamRow) -> tuple[bool, float]:
        v = getattr(r, attr)
        return (not math.isfinite(v), -v if math.isfinite(v) else 0.0)

    return sorted(kept, key=key)


def strip_p99(hist: StreamHistory, stop: int, cells: int, zoom: int = 1) -> np.ndarray:
    """p99 (seconds) of each of the `cells` cells ending at history index `stop`; NaN where a cell has no events."""
    win = Window(min(stop, hist.n), cells, zoom)
    return percentile_estimates(win.cell_counts(hist), hist.low, hist.high, (0.99,))[:, 0]


def p99_levels(values: list[np.ndarray], levels: int) -> tuple[list[np.ndarray], float, float]:
    """Colour level (0 none, 1..levels) of every cell of every strip on one shared log scale; the scale's ends."""
    finite = [v[np.isfinite(v) & (v > 0)] for v in values]
    pool = np.concatenate(finite) if finite else np.zeros(0)
    if pool.size == 0:
        return [np.zeros(v.shape, dtype=np.uint8) for v in values], math.nan, math.nan
    low, high = float(np.log10(pool.min())), float(np.log10(pool.max()))
    span = max(high - low, 1e-9)
    out = []
    for v in values:
        ok = np.isfinite(v) & (v > 0)
        lv = np.zeros(v.shape, dtype=np.uint8)
        scaled = (np.log10(np.where(ok, v, 10**low)) - low) / span
        lv[ok] = np.clip(1 + np.floor(scaled[ok] * levels), 1, levels).astype(np.uint8)
        out.append(lv)
    return out, 10**low, 10**high
