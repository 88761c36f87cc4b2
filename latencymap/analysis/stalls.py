"""Stalls: short bursts of a handful of events far above the stream's normal latencies (episode kind `stall`).

A training loop that waits 1 ms per item, 80 ms for every tenth, and once 1.5 s twice: the 1.5 s waits are
the stall. They are too few to shift a column's shape much (episodes.py needs two columns and a share
shift), yet they own the time of their columns. The rule, on the columns of the diagnosed range:

- the *ceiling* is the highest normal slot: the slot holding the stream's `1 - stall_normal_share` (99th)
  percentile event, raised to any higher slot that holds events in more than
  max(`stall_max_column_share` (10%) x columns, `stall_max_columns`) columns (a steady thin band is normal);
- *far* slots start `stall_gap_octaves` (2) whole octaves above the ceiling's upper bound (4x);
- columns holding far events, joined across gaps of up to `stall_max_gap` (1) column, or across any gap
  that the next far waits span (they began before the previous run ended), make runs; a run is a
  stall when it spans at most `stall_max_columns` (3) columns more than its far events' own time fills
  (three 1.5 s waits fill five 1 s columns back to back) and its far events hold at least
  `stall_min_column_time_share` (25%) of the time spent in its far-event columns;
- its far events' time must also be at least `stall_min_wall_share` (1%) of the wall time of its far-event columns:
  a 25 us "pause" in a 1 s column held nothing up (a 10 ms one in a 1 s column is the least that counts); a column
  counts as at least the median column long (a stream's first column, cut short at the first flush, would weigh a
  first wait many times over);
- the stream was held up: where its usual rate (the median events per second of its columns with events) would have
  completed at least `MIN_MISSING` (20) events during the far waits, at least `stall_min_lost_share` (a third) of
  those, and `LOST_Z` (3) Poisson sigmas, are missing from the columns the waits span (from where the first began);
  a stream that kept completing (one 20 s request among 1,000/s, a power law's far value) had no pause. Spark's slow
  tasks (`PARALLEL`) end side by side: their stall is no pause and is exempt;
- columns count only when they hold events: when far events sit in more of those than allowed above (a scatter of far
  events all along), or in every one of them, or all the events lie in a single column (nothing tells when they
  happened, and the bands say the rest), none is a stall;
- a recurring stall (each epoch's start): when that limit on columns is what rules stalls out, the ceiling is read
  again counting as normal only slots with events in more than `stall_band_column_share` (half) of the columns (a
  band in most columns), and the far columns may be up to that many; each stall must then show the events it held
  back (too few due to tell is no proof), and the far columns outside the stalls must be no more than the first
  limit allows; else none is a stall (a steady thin band, or a scatter).

A stall is an `Episode` of kind `stall`: `start` and `end` are its first column's start and its last column's end
(the columns it names, nothing more). Events are logged when they end: when the mean far wait that ended in its
first column is longer than that column, the waiting surely began before it, and `began_before` says how long before
the column's start, at least (that wait less the column) and at most the longest single far wait of the column (its
bucket's top, or the largest value seen there, `seen_max`): it ended no earlier than the column's start, and
concurrent waits (Spark's parallel tasks) overlap; only a stream whose events run one after another (datasource
`training`: a loop's steps) may have waited every far wait of the column back to back;
`events` and
`time_s` are its far events and their time, `events_share`/`time_share` their shares of the range,
`gained` the far slots it hit (`events_share` and `time_share` there are shares of its columns),
`shift_octaves` the octaves from the range's p50 to the stall's mean latency: the p50 the report's header prints (a
stream's own buckets' where they give its percentiles: `median_s`), or estimated from the rows as the header does.
"""

from __future__ import annotations

import math

import numpy as np

from latencymap.analysis.columns import Columns, as_columns
from latencymap.analysis.episodes import Episode, Region, runs
from latencymap.analysis.silences import MIN_MISSING, Silence
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.buckets import NSLOTS, TOP_SLOT
from latencymap.core.percentiles import median_of, percentile_estimates

#: The datasource whose events run one after another (a training loop's steps): its waits may lie back to back.
SEQUENTIAL = "training"
#: The datasource whose events run side by side and are logged when they end (Spark tasks): its stall is slow tasks
#: ending, not a pause, so the others completing meanwhile do not rule it out.
PARALLEL = "spark"
#: Events missing around a stall must exceed this many Poisson sigmas of what its columns expect (a chance dip).
LOST_Z = 3.0


def ceiling_slot(counts: np.ndarray | Columns, th: Thresholds = DEFAULT_THRESHOLDS, share: float | None = None) -> int:
    """The highest normal slot of (columns x slots) counts (or of `Columns`); -1 when there are no events. `share`:
    the share of columns a slot's events must sit in to be normal however far (`stall_max_column_share`)."""
    cols = as_columns(counts)
    pooled = cols.slot_sums()[0]
    total = pooled.sum()
    if total <= 0:
        return -1
    top = int(np.searchsorted(np.cumsum(pooled), (1.0 - th.stall_normal_share) * total * (1 - 1e-12)))
    steady = np.flatnonzero(cols.presence() > _most_columns(cols, th, share))
    return max(top, int(steady[-1]) if steady.size else -1)


def _most_columns(cols: Columns, th: Thresholds, share: float | None = None) -> float:
    """Far events in more columns than this are a band or a scatter (`share`: `stall_max_column_share`); only the
    columns with events count: empty ones say nothing of what is usual."""
    columns = int((cols.events() > 0).sum())
    return max((th.stall_max_column_share if share is None else share) * columns, th.stall_max_columns)


def _median_s(pooled: np.ndarray, pooled_t: np.ndarray | None, low_s: np.ndarray, high_s: np.ndarray,
              seen: tuple[np.ndarray, np.ndarray] | None) -> float:
    """The range's p50, estimated as the report's header estimates it (`pooled_t`: exact time per slot, or None;
    `seen`: the smallest and the largest value seen per slot)."""
    return float(percentile_estimates(pooled, low_s, high_s, (0.5,), times=pooled_t, seen=seen)[0])


def find_stalls(
    counts: np.ndarray | Columns, times: np.ndarray | None, low_s: np.ndarray, high_s: np.ndarray,
    starts: np.ndarray, ends: np.ndarray, *, th: Thresholds = DEFAULT_THRESHOLDS, col_offset: int = 0,
    exact: bool = False, datasource: str = "", seen_max: np.ndarray | None = None,
    seen_min: np.ndarray | None = None, median_s: float | None = None,
) -> list[Episode]:
    """Stall episodes of (columns x slots) counts and times, or of `Columns` that read both (see the module
    docstring); `exact`: the times are the source's, not estimated (the p50 that `shift_octaves` starts from is then
    read with them, as the report's); `datasource` says whether events run one after another (`training`);
    `seen_max` the largest value seen per slot (s, NaN where not known), `seen_min` the smallest (with both, that p50
    lies within them, as the report's does); `median_s`: that p50 as the report's header prints it, where it is not
    the rows' (a stream's own buckets': `analysis.summary.header_p50`)."""
    cols = as_columns(counts, times, low_s, high_s)
    if int((cols.events() > 0).sum()) < 2:  # every event in one column: nothing says when inside it
        return []
    top = ceiling_slot(cols, th)
    if top < 0:
        return []

    seen = None if seen_min is None or seen_max is None else (seen_min, seen_max)
    far_of: dict[int, Far] = {}  # the ceiling read twice is often the same slot: its far events are summed once

    def above(ceiling: int, proven: bool) -> tuple[list[Episode], np.ndarray]:
        if ceiling not in far_of:
            far_of[ceiling] = _far_events(cols, ceiling, low_s, high_s, th)
        return _stalls_above(cols, far_of[ceiling], low_s, high_s, starts, ends, proven=proven, th=th,
                             col_offset=col_offset, exact=exact, datasource=datasource, seen_max=seen_max,
                             median_s=median_s, seen=seen)

    found, hit = above(top, False)
    most = _most_columns(cols, th)
    if found or datasource == PARALLEL:
        return found
    # Far waits in more columns than that (a recurring stall: each epoch's start): stalls when each shows the events
    # it held back, they are not in most columns (a band), and the far columns left besides them are no more.
    found, hit = above(ceiling_slot(cols, th, th.stall_band_column_share), True)
    if hit.sum() <= most:
        return []
    stalled = np.zeros(len(hit), dtype=bool)
    for e in found:
        stalled[e.first_col - col_offset:e.last_col - col_offset + 1] = True
    return found if (hit & ~stalled).sum() <= most else []


#: The far slots above a ceiling, and per column the events in them and their time.
Far = tuple[np.ndarray, np.ndarray, np.ndarray]


def _far_events(cols: Columns, top: int, low_s: np.ndarray, high_s: np.ndarray, th: Thresholds) -> Far:
    """The far slots above the ceiling slot `top` (`stall_gap_octaves` above it), and each column's events and time
    in them (none when there are no far slots)."""
    far = np.flatnonzero(low_s >= high_s[top] * 2.0 ** th.stall_gap_octaves)
    if far.size == 0:
        return far, np.zeros(0), np.zeros(0)
    parts = [(c[:, far].sum(axis=1), t[:, far].sum(axis=1)) for _, c, t in cols.blocks()]
    far_c, far_t = (np.concatenate([part[k] for part in parts]) for k in range(2))
    return far, far_c, far_t


def _stalls_above(
    cols: Columns, far_events: Far, low_s: np.ndarray, high_s: np.ndarray, starts: np.ndarray, ends: np.ndarray, *,
    proven: bool, th: Thresholds, col_offset: int, exact: bool, datasource: str, seen_max: np.ndarray | None,
    median_s: float | None, seen: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[list[Episode], np.ndarray]:
    """The stalls of the far slots above a ceiling (`_far_events`), and the columns holding far events; `proven`: far
    waits in up to `stall_band_column_share` of the columns, each stall showing the events it held back; `median_s`:
    the range's p50 (s) their `shift_octaves` start from (None: the rows', within the values `seen`)."""
    occupied = cols.events() > 0
    far, far_c, far_t = far_events
    if far.size == 0:
        return [], np.zeros(cols.n, dtype=bool)
    hit = far_c > 0
    most = _most_columns(cols, th, th.stall_band_column_share if proven else None)
    if not hit.any() or hit[occupied].all() or hit.sum() > most:
        return [], hit
    total_c, total_t = (max(total, 1e-300) for total in cols.totals())
    pooled, pooled_t = cols.slot_sums()
    median = median_s if median_s is not None else _median_s(pooled, pooled_t if exact else None, low_s, high_s, seen)
    width = float(median_of(np.asarray(ends) - np.asarray(starts)))
    base_c, base_t = cols.slot_sums(~hit)  # the columns without far events
    column_c, seconds = cols.events(), np.asarray(ends) - np.asarray(starts)
    busy = (column_c > 0) & (seconds > 0)
    usual = float(median_of(column_c[busy] / seconds[busy])) if busy.any() else 0.0  # events/s, as silences.py reads it
    out = []
    for a, b in _joined(runs(hit, max_gap=th.stall_max_gap, min_columns=1), far_c, far_t, starts, ends):
        picked = np.flatnonzero(hit[a:b + 1]) + a
        ev, tm = float(far_c[picked].sum()), float(far_t[picked].sum())
        own = int(np.ceil(tm / width)) if width > 0 else 0  # columns its own waits fill, back to back
        if b - a + 1 > th.stall_max_columns + own:
            continue
        picked_c, picked_t = cols.take(picked)
        col_t = float(picked_t.sum())
        wall = float(np.maximum(np.asarray(ends)[picked] - np.asarray(starts)[picked], width).sum())
        if tm < th.stall_min_column_time_share * col_t or tm < th.stall_min_wall_share * wall:
            continue
        first_wait, first_width = float(far_t[a] / far_c[a]), float(ends[a] - starts[a])
        if datasource != PARALLEL and not _held_up(a, b, max(0.0, first_wait - first_width), tm, column_c, starts,
                                                   ends, usual, th.stall_min_lost_share, proven):
            continue
        slots = far[picked_c[:, far].sum(axis=0) > 0]
        lo, hi = int(slots[0]), int(slots[-1])
        col_c = float(picked_c.sum())
        gained = Region(float(low_s[lo]), float(high_s[hi]), ev / max(col_c, 1e-300),
                        float(base_c[lo:hi + 1].sum() / max(base_c.sum(), 1e-300)), tm / max(col_t, 1e-300),
                        float(base_t[lo:hi + 1].sum() / max(base_t.sum(), 1e-300)), high_slot=hi)
        shift = float(np.log2((tm / ev) / median)) if median > 0 else 0.0
        longest = float(far_t[a]) if datasource == SEQUENTIAL else min(float(far_t[a]), _longest(
            far, cols.take(np.array([a]))[0][0], high_s, seen_max))
        began = (first_wait - first_width, longest) if first_wait > first_width else None
        out.append(Episode("stall", a + col_offset, b + col_offset, float(starts[a]), float(ends[b]), ev, shift,
                           gained, None, tm, ev / total_c, tm / total_t, began_before=began))
    return out, hit


def _held_up(a: int, b: int, before: float, waited: float, column_c: np.ndarray, starts: np.ndarray,
             ends: np.ndarray, usual: float, lost_share: float, proven: bool = False) -> bool:
    """False when the stream went on completing through a stall's waits: from the column where its first wait began
    (`before` its column a) to its last column b, the usual rate would have completed `usual` x `waited` events (at
    most its columns' span) while it waited, and fewer than `lost_share` of those, or than `LOST_Z` Poisson sigmas of
    what those columns expect, are missing. When those due are under `MIN_MISSING`, too few to tell: True, unless
    `proven` asks for the missing events to show."""
    start = float(starts[a]) - before
    first = a - int(np.count_nonzero(np.asarray(ends[:a]) > start))  # earlier columns the first wait reaches into
    span_s = float(np.sum(np.asarray(ends[first:b + 1]) - np.asarray(starts[first:b + 1])))
    due, expected = usual * min(waited, span_s), usual * span_s
    if due < MIN_MISSING:
        return not proven
    return expected - float(column_c[first:b + 1].sum()) >= max(lost_share * due, LOST_Z * math.sqrt(expected))


def _longest(far: np.ndarray, column: np.ndarray, high_s: np.ndarray, seen_max: np.ndarray | None) -> float:
    """The longest one far wait of a column can be: its highest far slot's top, or the largest value seen there; in
    the open top slot, which has no top, that value (unbounded where it is not known)."""
    slot = int(far[column[far] > 0][-1])
    seen = float(seen_max[slot]) if seen_max is not None else np.nan
    top = slot == TOP_SLOT and len(high_s) == NSLOTS
    if np.isfinite(seen) and (seen < high_s[slot] or top):
        return seen
    return math.inf if top else float(high_s[slot])


def _joined(spans: list[tuple[int, int]], far_c: np.ndarray, far_t: np.ndarray, starts: np.ndarray,
            ends: np.ndarray) -> list[tuple[int, int]]:
    """Runs joined when the next run's far waits began before the previous run ended (one stall, long waits)."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        longest = float(far_t[a] / far_c[a])  # the mean far wait of the run's first column
        if out and starts[a] - ends[out[-1][1]] <= longest:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def without_covered(episodes: list[Episode], stalls: list[Episode]) -> list[Episode]:
    """Episodes less those that lie within a stall's columns (give or take one): the stall says it better."""
    def covered(e: Episode) -> bool:
        return any(s.first_col - 1 <= e.first_col and e.last_col <= s.last_col + 1 for s in stalls)

    return [e for e in episodes if not covered(e)]


def silences_left(silences: list[Silence], stalls: list[Episode]) -> list[Silence]:
    """Silences less those the stalls account for: the loop was waiting in them, and without the events their waits
    held back (the usual rate x the waits that fit in the silence's time) the silence would miss under `MIN_MISSING`
    events. The stall says that pause, with when; a second finding would count it twice."""
    def waited(q: Silence) -> float:
        """Seconds of the stalls' waits that may lie in the silence: their waits end by the stall's end."""
        return sum(min(e.time_s, max(0.0, min(q.end, e.end) - max(q.start, e.start - e.time_s))) for e in stalls)

    return [q for q in silences if q.expected - q.events - q.usual_rate * waited(q) >= MIN_MISSING]
