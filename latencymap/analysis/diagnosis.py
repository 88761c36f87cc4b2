"""Diagnosis: bands, bimodality, tail dominance, episodes, stalls and drift of a (columns x slots) heat map.

`diagnose(...).to_json()` gives the report keys:

- `"bands"`: `[{"low_s", "high_s", "events_share", "time_share"}]`, fastest first (see bands.py);
- `"bimodal"`: two or more bands each hold >= 3% of the events or >= 10% of the time;
- `"tail"`: `{"threshold_s", "events_share", "time_share", "events", "time_s", "dominant"}` — the
  slowest events from `threshold_s` up hold `time_share` (half) of the time (see tail.py); a measure
  (gates read it), not a finding: it is a finding only when `dominant` (at most 10% of the events), or, when
  it is not, if the slowest 2% of the events hold 30% of the time (a heavy tail, see
  tail.py `slowest_few`: that finding gives their shares); null when there are no events;
- `"episodes"`: `[{"kind", "first_col", "last_col", "start", "end", "events", "shift_octaves",
  "gained", "lost", "time_s", "events_share", "time_share"}]` — `kind` is appear / disappear / move /
  reshape (episodes.py) or stall (stalls.py), columns are inclusive and absolute (not relative to
  `col_range`), `start`/`end` are epoch seconds (a stall's, its columns'; `began_before_s`: [least, most] seconds its
  first waits began before `start`, when they outlast its first column, else null), `gained`/`lost` are
  `{"low_s", "high_s", "events_share", "baseline_share", "time_share", "baseline_time_share"}` or null;
- `"findings"`: what is worth saying, each with where, how much and why (see findings.py); a silence that a stall's
  waits account for is left to the stall (stalls.py `silences_left`).

Every threshold is a field of `Thresholds` (thresholds.py), passed as `diagnose(..., thresholds=...)`.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any

import numpy as np

from latencymap.analysis.bands import Band, find_bands, significant_bands
from latencymap.analysis.columns import Columns, as_columns
from latencymap.analysis.drift import Drift, find_drift
from latencymap.analysis.episodes import Episode, find_episodes
from latencymap.analysis.findings import (
    Finding,
    Scope,
    band_finding,
    drift_finding,
    dur,
    episode_finding,
    is_startup,
    outliers,
    pct,
    recurring_finding,
    silence_finding,
    span,
    tail_finding,
)
from latencymap.analysis.silences import Silence, find_silences
from latencymap.analysis.stalls import find_stalls, silences_left, without_covered
from latencymap.analysis.tail import Tail, slowest_few, tail_dominance
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.lean import dataclass

__all__ = ["Diagnosis", "diagnose", "dur", "pct", "span"]

#: A band "owns" the time when its time share is at least this many times its events share (and >= 10%).
OWNS_TIME_FACTOR = 2.0
#: Bands each holding at least this share of the most populous one's events are near even: the band that owns the
#: time is then the one to look at (`main_band`).
NEAR_EVEN_EVENTS = 0.8
#: A band and the main one are a shift's two levels when this share of each one's events lie on its side of the jump.
SHIFT_SIDE_SHARE = 0.9
#: A band is the recording's start-up when this share of its events lie in the start-up's columns (`startup_bands`).
STARTUP_BAND_SHARE = 0.9
#: Episode lines shown by `summary_lines` before "... and N more".
MAX_EPISODE_LINES = 5
#: A stream of one band over at most this many buckets gets no modes line beside a bucket table: it would restate it.
TABLE_SAYS_MODES = 2


@dataclass
class Diagnosis:
    """Findings over a range of columns."""

    bands: list[Band]
    bimodal: bool
    tail: Tail | None
    episodes: list[Episode]
    events: float = 0.0
    time_s: float = 0.0
    time_estimated: bool = True
    #: Start of column 0: episode lines give times relative to it.
    t0: float = 0.0
    major: list[Band] = field(default_factory=list)
    drift: Drift | None = None
    findings: list[Finding] = field(default_factory=list)
    #: The slowest 2% of the events (`slowest_few`): a finding when heavy and `tail` is not.
    few: Tail | None = None
    #: Runs of columns without the events a continuous stream's usual rate says were due (`silences`).
    silences: list[Silence] = field(default_factory=list)
    #: How many buckets hold events.
    occupied: int = 0

    @property
    def stalls(self) -> list[Episode]:
        """The episodes of kind `stall`."""
        return [e for e in self.episodes if e.kind == "stall"]

    def to_json(self) -> dict[str, Any]:
        """The report keys `bands`, `bimodal`, `tail`, `episodes`, `findings`."""
        return {
            "bands": [b.to_json() for b in self.bands],
            "bimodal": self.bimodal,
            "tail": self.tail.to_json() if self.tail else None,
            "episodes": [e.to_json() for e in self.episodes],
            "findings": [f.to_json() for f in self.findings],
        }

    def summary_lines(self, table: bool = False) -> list[str]:
        """A short human diagnosis: the modes (with the band findings' why), then one finding per line. `table`: a
        bucket table follows, so a unimodal stream over at most `TABLE_SAYS_MODES` buckets gets no modes line (it
        would say the table's rows again)."""
        if self.events <= 0:
            return ["no events"]
        lines = [] if table and not self.bimodal and self.occupied <= TABLE_SAYS_MODES else [self._modes_line()]
        # several bands: one line per band finding, each with the why of its direction; bursts always (their when)
        lines += [f.line() for f in self.findings if f.kind == "band" and (not self._pair() or f.bursts)]
        shown = [f for f in self.findings if f.kind != "band"]
        episodes = [f for f in shown if f.first_col is not None and f.kind not in ("tail", "drift", "shift")]
        others = [f for f in shown if f not in episodes]
        lines += [f.line() for f in others]
        lines += [f.line() for f in episodes[:MAX_EPISODE_LINES]]
        if len(episodes) > MAX_EPISODE_LINES:
            lines.append(f"... and {len(episodes) - MAX_EPISODE_LINES} more episodes")
        return lines

    def _modes_line(self) -> str:
        """`bimodal: 95% of events in 131µs–1.05ms, 5% in 4.19ms–33.6ms own 64% of the time`."""
        major = self.major or self.bands[:1]
        name = "unimodal" if not self.bimodal else "bimodal" if len(major) == 2 else f"multimodal ({len(major)} bands)"
        parts = []
        for k, b in enumerate(major):
            events_share, time_share = b.shown_shares  # of the range named, not of the band's stray tail too
            few = outliers(b)
            held = f"{few} event{'s' if few > 1 else ''}" if few and k else \
                f"{pct(events_share)}{' of events' if k == 0 else ''}"
            text = f"{held} in {span(b.low_s, b.high_s, b.high_slot)}"
            if self._owns_time(b):
                text += f" own {pct(time_share)} of the time"
            parts.append(text)
        small = [b for b in self.bands if b not in major]  # not "minor": a band finding's word for another thing
        if small:
            share = sum(b.events_share for b in small)
            parts.append(f"plus {len(small)} band{'s' if len(small) > 1 else ''} too small to count as "
                         f"{'modes' if len(small) > 1 else 'a mode'} ({pct(share)} of events)")
        if self._pair():
            why = next((f" — {f.why}" for f in self.findings if f.kind == "band" and not f.bursts), "")
        else:  # each band finding follows on its own line, with its own why
            why = f" — not one spread: the mean describes none of the {len(major)} bands" if self.bimodal else ""
        return f"{name}: " + ", ".join(parts) + why

    def _owns_time(self, b: Band) -> bool:
        """A band of many times its share of events in time, or, among bands near even in events, the one holding
        most of the time (`main_band` then reads the others against another)."""
        if b.time_share >= max(0.10, OWNS_TIME_FACTOR * b.events_share):
            return True
        main = main_band(self.major) if self.major else b
        return b is not main and b.time_share > 0.5 and b.events >= NEAR_EVEN_EVENTS * max(x.events for x in self.major)

    def _pair(self) -> bool:
        """True unless the stream is multimodal (its band findings then get a line each)."""
        return not self.bimodal or len(self.major) <= 2


#: A tail whose time is at least this much a stall's is that stall (said once, with when), not a tail of the usual
#: latencies.
STALL_HOLDS_TAIL = 0.5
#: A tail whose time is at least this much the said bands' above its start is those bands, said once.
BAND_HOLDS_TAIL = 0.8
#: An episode that starts (ends) this close to a shift and lasts to the end (from the start) of the range is that
#: shift.
SHIFT_EPISODE_COLUMNS = 5


def _findings(d: Diagnosis, scope: Scope, th: Thresholds, top_s: float,
              shifted: tuple[Band, ...] = (), started: tuple[tuple[Band, Episode, float], ...] = ()) -> list[Finding]:
    """The findings of a diagnosis, in reading order: bands, tail, drift, then episodes by time; a shift that
    `shifted` bands are the two sides of (`shift_sides`) comes first, as it explains them; a band that is the
    recording's start-up (`started`, see `startup_bands`) says so."""
    out: list[Finding] = []
    bands: list[Band] = []
    episodes = d.episodes
    at = d.drift.at_col if d.drift is not None and d.drift.kind == "shift" else None
    if at is not None:  # a change from the shift to the end (or from the start to it) is the shift itself
        episodes = [e for e in episodes if e.kind == "stall" or not _is_shift(e, at, scope)]
    says_drift = d.drift is not None and not (at is not None and any(
        abs(e.first_col - at) <= 2 for e in episodes))  # that episode says it, with its shape
    explained = [b for b in shifted if says_drift]
    if d.drift is not None and explained:
        out.append(drift_finding(d.drift, scope))
    if d.bimodal and d.major:
        main = main_band(d.major)
        bands = [b for b in d.major if b is not main]
        out += [band_finding(b, scope, main, pair=len(d.major) == 2,
                             shift=d.drift if any(b is x for x in explained) else None,
                             heavy=heavy_beside(b, d.major, th),
                             startup=next(((e, later) for x, e, later in started if x is b), None))
                for b in bands if not _all_in_stalls(b, d.stalls)]
    tail = d.tail
    if tail is not None and tail.events_share > th.tail_max_events_share and d.few is not None and d.few.dominant:
        tail = d.few  # half the time is in too many events, but a few of them hold much of it
    stalled = sum(e.time_s for e in d.stalls)
    if tail is not None and tail.events_share <= th.tail_max_events_share and not _band_says(tail, bands) \
            and stalled < STALL_HOLDS_TAIL * tail.time_s:  # that band (or stall) says it
        out.append(tail_finding(tail, scope, top_s))
    if d.drift is not None and says_drift and not explained:
        out.append(drift_finding(d.drift, scope))
    recurring = recurring_finding(d.stalls, scope)
    if recurring is not None:
        out.append(recurring)
    out += sorted([episode_finding(e, scope, th.startup_share) for e in episodes]
                  + [silence_finding(q, scope) for q in d.silences],
                  key=lambda f: f.first_col if f.first_col is not None else -1)
    return out


#: A band is bursts when at most this many columns (or `BURST_COLUMN_SHARE` of those with events) hold ...
BURST_COLUMNS = 3
BURST_COLUMN_SHARE = 0.10
#: ... this share of its events.
BURST_EVENTS_SHARE = 0.8
#: Columns holding at least this share of the smallest of those few are bursts too (within the same limit on columns).
BURST_ALIKE = 0.5


def _find_bursts(b: Band, cols: Columns, starts: np.ndarray, first: int, episodes: list[Episode]) -> None:
    """Mark band `b` as bursts when few columns hold most of its events (`b.bursts`): a GC pause makes every request
    that arrives during it slow, so a slow band of many events can sit in three columns of a hundred. Said as a
    population spread over the range, it would hide the one thing that identifies it: when. Columns that episodes
    (or stalls) cover already say when, so bursts all inside them are not said again."""
    per_col = band_columns(b, cols)
    total = float(per_col.sum())
    occupied = int((cols.events() > 0).sum())
    if total <= 0 or outliers(b) or occupied < 2 * BURST_COLUMNS:
        return
    order = np.argsort(-per_col, kind="stable")
    held = np.cumsum(per_col[order])
    k = int(np.searchsorted(held, BURST_EVENTS_SHARE * total * (1 - 1e-12))) + 1
    most = max(BURST_COLUMNS, BURST_COLUMN_SHARE * occupied)
    if k > most:
        return
    # every column of the pattern, not only the fewest that reach the share: six equal bursts are six, not five
    alike = int(np.count_nonzero(per_col[order] >= BURST_ALIKE * per_col[order[k - 1]]))
    picked = sorted(int(c) for c in order[:max(k, min(alike, int(most)))])
    if all(any(e.first_col <= first + c <= e.last_col for e in episodes) for c in picked):
        return
    b.bursts = [(first + c, float(starts[c])) for c in picked]
    b.burst_share = float(per_col[picked].sum()) / total


def band_columns(b: Band, cols: Columns) -> np.ndarray:
    """The events of band `b` in each of the columns `cols`."""
    band = slice(b.first_slot, b.last_slot + 1)
    parts = [c[:, band].sum(axis=1) for _, c, _ in cols.chunks()]
    return np.concatenate(parts) if parts else np.zeros(0)


def heavy_beside(b: Band, major: list[Band], th: Thresholds) -> Band | None:
    """The band holding more than half of the time when `b` holds less than `th.minor_band_time_share` of it (`b` is
    then minor: that band is the one to look at); None otherwise."""
    heavy = max(major, key=lambda x: x.time_share)
    return heavy if heavy is not b and heavy.time_share > 0.5 and b.time_share < th.minor_band_time_share else None


def _band_says(tail: Tail, bands: list[Band]) -> bool:
    """True when a band finding already says the tail: the tail starts inside one of `bands`, or those of them that
    lie in it hold `BAND_HOLDS_TAIL` of its time (a tail from the main band's trimmed edge up is that slow band)."""
    inside = sum(b.time_s for b in bands if b.first_slot >= tail.first_slot)
    return any(b.first_slot <= tail.first_slot <= b.last_slot for b in bands) or \
        inside >= BAND_HOLDS_TAIL * tail.time_s


def main_band(major: list[Band]) -> Band:
    """The band the others are read against: the one of most events, but among bands near even in events (each
    `NEAR_EVEN_EVENTS` of the most), the one of least time, so that the band owning the time carries a finding."""
    most = max(b.events for b in major)
    return min((b for b in major if b.events >= NEAR_EVEN_EVENTS * most), key=lambda b: b.time_s)


def shift_sides(major: list[Band], main: Band | None, drift: Drift | None, cols: Columns,
                first: int) -> tuple[Band, ...]:
    """The bands besides `main` that are, with it, the two levels of a shift: each holds `SHIFT_SIDE_SHARE` of its
    events on its own side of the jump (one before it, the other after), so the shift explains why there are two."""
    if main is None or drift is None or drift.kind != "shift" or drift.at_col is None:
        return ()
    at = drift.at_col - first

    def after(b: Band) -> float:
        """The share of the band's events in the columns from the shift on."""
        per_col = band_columns(b, cols)
        total = float(per_col.sum())
        return float(per_col[at:].sum()) / total if total > 0 else math.nan

    late = after(main)
    return tuple(b for b in major if b is not main and (
        (late <= 1 - SHIFT_SIDE_SHARE and after(b) >= SHIFT_SIDE_SHARE)
        or (late >= SHIFT_SIDE_SHARE and after(b) <= 1 - SHIFT_SIDE_SHARE)))


def startup_bands(major: list[Band], main: Band | None, episodes: list[Episode], cols: Columns, first: int,
                  scope: Scope, th: Thresholds) -> tuple[tuple[Band, Episode, float], ...]:
    """The bands besides `main` that are the recording's start-up (`is_startup`), each with that episode and its
    events after it: they hold `STARTUP_BAND_SHARE` of their events in its columns, so the start-up explains them
    (those after it, in the run, still have a cause to find)."""
    started = [e for e in episodes if is_startup(e, scope, th.startup_share)]
    out = []
    for b in [b for b in major if b is not main] if started else []:
        per_col = band_columns(b, cols)
        total = float(per_col.sum())
        for e in started:
            inside = float(per_col[e.first_col - first:e.last_col + 1 - first].sum())
            if 0 < STARTUP_BAND_SHARE * total <= inside:
                out.append((b, e, total - inside))
                break
    return tuple(out)


def _is_shift(e: Episode, at: int, scope: Scope) -> bool:
    """True when episode `e` runs from a shift at column `at` to the range's end, or from its start to the shift:
    the columns on one side of the jump, which the shift finding ("and stayed") says better."""
    near = SHIFT_EPISODE_COLUMNS
    return ((e.last_col >= scope.last_col - 1 and abs(e.first_col - at) <= near)
            or (e.first_col <= scope.first_col + 1 and abs(e.last_col + 1 - at) <= near))


def _all_in_stalls(b: Band, stalls: list[Episode]) -> bool:
    """True when the stalls hold every event of the band: the stall findings say it with times."""
    inside = sum(e.events for e in stalls if e.gained and b.low_s <= e.gained.low_s and e.gained.high_s <= b.high_s)
    return bool(stalls) and inside >= b.events


def diagnose(
    counts2d: np.ndarray | Columns,
    time2d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    col_range: tuple[int, int] | None = None,
    *,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    rows_from: int = 0,
    datasource: str = "",
    label: str = "",
    measures: str = "",
    exact: bool | None = None,
    gaps: np.ndarray | None = None,
    seen_max: np.ndarray | None = None,
    seen_min: np.ndarray | None = None,
    dropped: int = 0,
    median_s: float | None = None,
) -> Diagnosis:
    """Bands, bimodality and tail of the pooled columns `col_range` (half-open, None: all), their episodes,
    stalls and drift, and the findings among them.

    `counts2d` and `time2d` are (columns x slots) arrays (`time2d` None: estimated from the buckets' midpoints), or
    `counts2d` is `Columns` that read both (a stream's history, a chunk at a time: `history_columns`; `time2d` is
    then None and taken as given). `rows_from` is the column of the first row of `counts2d`/`time2d` when they hold
    only part of the history (`starts`/`ends` always cover it all); `datasource` (`spark`, `training`...) words the
    findings' causes, and `label` (the stream's) too where it names them (an Oracle wait event's class), and
    `measures` instead where the values are not what the datasource's usually are (a jHiccup log's hiccups); `exact`:
    `time2d` is the source's own time, not estimated (None: when it is given), so a stall's p50 is read as the
    report's header reads it; `gaps` marks (over all columns, as `starts`) the gap columns: missing data is no
    silence; `seen_max` (s per slot, NaN where not known) the largest value seen, which bounds a stall's wait; with
    `seen_min` (the smallest), the columns' medians that drift reads, the p50 a stall is compared with and the tail's
    threshold lie within both, as the report's percentiles do; `dropped`: the columns a history limit dropped before
    column 0, which is then no start-up; `median_s`: the range's p50 as the report's header prints it where that is
    not the rows' (a stream's own buckets': `summary.header_p50`), which a stall's wait is compared with.
    """
    th = thresholds
    estimated = time2d is None and not isinstance(counts2d, Columns)
    if isinstance(counts2d, Columns):
        cols = counts2d
    else:
        counts = np.asarray(counts2d, dtype=np.float64)
        if counts.ndim == 1:
            counts = counts[None, :]
        times = None if time2d is None else np.asarray(time2d, dtype=np.float64).reshape(-1, counts.shape[1])
        cols = as_columns(counts, times, low_s, high_s, clip=True)
    first, stop = (rows_from, rows_from + cols.n) if col_range is None else col_range
    first, stop = max(rows_from, first), min(rows_from + cols.n, stop)
    cols = cols.part(first - rows_from, stop - rows_from)
    all_starts = np.asarray(starts, dtype=np.float64)
    starts, ends = all_starts[first:stop], np.asarray(ends, dtype=np.float64)[first:stop]
    pooled, pooled_t = cols.slot_sums()
    bands = find_bands(pooled, pooled_t, low_s, high_s, max_valley_ratio=th.max_valley_ratio,
                       min_valley_z=th.min_valley_z, min_band_share=th.min_band_share,
                       deep_valley_ratio=th.deep_valley_ratio, min_band_time_share=th.min_band_time_share,
                       gap_alpha=th.gap_alpha, fast_gap_alpha=th.fast_gap_alpha)
    major = significant_bands(bands, min_events_share=th.band_events_share, min_time_share=th.band_time_share)
    timed = not estimated if exact is None else exact
    episodes = find_episodes(
        cols, None, low_s, high_s, starts, ends, z=th.episode_z, min_shift=th.episode_min_shift,
        min_time_shift=th.episode_min_time_shift, min_column_events=th.episode_min_column_events,
        min_columns=th.episode_min_columns, max_gap=th.episode_max_gap, col_offset=first,
        min_move_octaves=th.min_move_octaves, exact=timed, new_band_time_share=th.episode_new_band_time_share)
    seen = None if seen_min is None or seen_max is None else (seen_min, seen_max)
    stalls = find_stalls(cols, None, low_s, high_s, starts, ends, th=th, col_offset=first, exact=timed,
                         datasource=datasource, seen_max=seen_max, seen_min=seen_min, median_s=median_s)
    episodes = sorted(without_covered(episodes, stalls) + stalls, key=lambda e: (e.first_col, e.kind != "stall"))
    d = Diagnosis(
        bands=bands,
        bimodal=len(major) >= 2,
        tail=tail_dominance(pooled, pooled_t, low_s, high_s, time_fraction=th.tail_time_fraction,
                            max_events_share=th.tail_max_events_share, seen=seen),
        episodes=episodes,
        events=float(pooled.sum()),
        time_s=float(pooled_t.sum()),
        time_estimated=estimated,
        t0=float(all_starts[0]) if len(all_starts) else 0.0,
        major=major,
        drift=find_drift(cols, low_s, high_s, starts, ends, th=th, col_offset=first, exact=timed, seen=seen)
        if cols.n else None,
        few=slowest_few(pooled, pooled_t, low_s, high_s, events_share=th.tail_few_events_share,
                        time_share=th.tail_few_time_share, seen=seen),
        occupied=int(np.count_nonzero(pooled)),
        silences=silences_left(find_silences(cols, starts, ends, None if gaps is None else
                                             np.asarray(gaps)[first:stop], col_offset=first), stalls),
    )
    main = main_band(major) if major else None
    for b in major:
        if b is not main:
            _find_bursts(b, cols, starts, first, episodes)
    if d.events > 0:
        used = np.flatnonzero(pooled > 0)
        scope = Scope(first, stop - 1, float(starts[0]), float(ends[-1]), d.t0, d.events, d.time_s, datasource, label,
                      dropped, measures)
        d.findings = _findings(d, scope, th, float(high_s[used[-1]]), shift_sides(major, main, d.drift, cols, first),
                               startup_bands(major, main, episodes, cols, first, scope, th))
    return d
