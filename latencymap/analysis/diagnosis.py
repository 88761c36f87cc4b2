"""Diagnosis: bands, bimodality, tail dominance and episodes of a (columns x slots) heat map.

`diagnose(...).to_json()` gives the report keys:

- `"bands"`: `[{"low_s", "high_s", "events_share", "time_share"}]`, fastest first (see bands.py);
- `"bimodal"`: two or more bands each hold >= 3% of the events or >= 10% of the time;
- `"tail"`: `{"threshold_s", "events_share", "time_share", "events", "time_s", "dominant"}` — the
  slowest buckets from `threshold_s` up hold `time_share` (>= half) of the time (see tail.py);
  null when there are no events;
- `"episodes"`: `[{"kind", "first_col", "last_col", "start", "end", "events", "shift_octaves",
  "gained", "lost"}]` — `kind` is appear / disappear / move / reshape, columns are inclusive and
  absolute (not relative to `col_range`), `start`/`end` are epoch seconds, `gained`/`lost` are
  `{"low_s", "high_s", "events_share", "baseline_share", "time_share", "baseline_time_share"}`
  or null (see episodes.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencymap.analysis.bands import Band, estimate_time, find_bands, is_bimodal, significant_bands
from latencymap.analysis.episodes import MIN_MOVE_OCTAVES, Episode, find_episodes
from latencymap.analysis.tail import Tail, tail_dominance
from latencymap.core.units import format_duration

#: A band "owns" the time when its time share is at least this many times its events share (and >= 10%).
OWNS_TIME_FACTOR = 2.0
#: Episode lines shown by `summary_lines` before "... and N more".
MAX_EPISODE_LINES = 5


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

    def to_json(self) -> dict[str, Any]:
        """The report keys `bands`, `bimodal`, `tail`, `episodes`."""
        return {
            "bands": [b.to_json() for b in self.bands],
            "bimodal": self.bimodal,
            "tail": self.tail.to_json() if self.tail else None,
            "episodes": [e.to_json() for e in self.episodes],
        }

    def summary_lines(self) -> list[str]:
        """A short human diagnosis, one finding per line."""
        if self.events <= 0:
            return ["no events"]
        lines = [self._modes_line()]
        if self.tail is not None:
            head = "tail dominates" if self.tail.dominant else "tail"
            lines.append(f"{head}: {pct(self.tail.events_share)} of events (≥ {dur(self.tail.threshold_s)}) "
                         f"take {pct(self.tail.time_share)} of the time")
        lines += [self._episode_line(e) for e in self.episodes[:MAX_EPISODE_LINES]]
        if len(self.episodes) > MAX_EPISODE_LINES:
            lines.append(f"... and {len(self.episodes) - MAX_EPISODE_LINES} more episodes")
        return lines

    def _modes_line(self) -> str:
        """`bimodal: 95% of events in 131µs–1.05ms, 5% in 4.19ms–33.6ms own 64% of the time`."""
        major = self.major or self.bands[:1]
        name = "unimodal" if not self.bimodal else "bimodal" if len(major) == 2 else f"multimodal ({len(major)} bands)"
        parts = []
        for k, b in enumerate(major):
            text = f"{pct(b.events_share)}{' of events' if k == 0 else ''} in {span(b.low_s, b.high_s)}"
            if b.time_share >= max(0.10, OWNS_TIME_FACTOR * b.events_share):
                text += f" own {pct(b.time_share)} of the time"
            parts.append(text)
        minor = [b for b in self.bands if b not in major]
        if minor:
            share = sum(b.events_share for b in minor)
            parts.append(f"plus {len(minor)} minor band{'s' if len(minor) > 1 else ''} ({pct(share)} of events)")
        return f"{name}: " + ", ".join(parts)

    def _episode_line(self, e: Episode) -> str:
        """One episode as `episode cols 40–49 (t+40s–t+50s): a band appeared at ...`."""
        where = f"episode cols {e.first_col}–{e.last_col} (t+{e.start - self.t0:.4g}s–t+{e.end - self.t0:.4g}s)"
        g, lost = e.gained, e.lost
        if e.kind == "appear" and g:
            what = (f"a band appeared at {span(g.low_s, g.high_s)} ({pct(g.events_share)} of events, "
                    f"{pct(g.time_share)} of the time; usually {pct(g.baseline_share)})")
        elif e.kind == "disappear" and lost:
            what = (f"the band at {span(lost.low_s, lost.high_s)} disappeared ({pct(lost.events_share)} of events; "
                    f"usually {pct(lost.baseline_share)})")
        elif e.kind == "move":
            what = f"latency moved {e.shift_octaves:+.1f} octaves" + (
                f": {span(lost.low_s, lost.high_s)} → {span(g.low_s, g.high_s)}" if g and lost else "")
        elif g:
            what = (f"shares shifted toward {span(g.low_s, g.high_s)} ({pct(g.events_share)} of events, "
                    f"{pct(g.time_share)} of the time; usually {pct(g.baseline_share)})")
        else:
            what = f"the latency shape changed ({e.kind})"
        if e.kind != "move" and abs(e.shift_octaves) >= MIN_MOVE_OCTAVES:
            what += f"; median {e.shift_octaves:+.1f} octaves"
        return f"{where}: {what}"


def pct(share: float) -> str:
    """`61%`, `4%`, `0.3%`, `0%`."""
    v = 100.0 * share
    if v >= 1 or v == 0:
        return f"{v:.0f}%"
    return f"{v:.1g}%"


def dur(seconds: float) -> str:
    """A latency for humans (`131µs`)."""
    return format_duration(seconds)


def span(low_s: float, high_s: float) -> str:
    """A latency range `131µs–1.05ms`."""
    return f"{dur(low_s)}–{dur(high_s)}"


def diagnose(
    counts2d: np.ndarray,
    time2d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    col_range: tuple[int, int] | None = None,
    *,
    rows_from: int = 0,
) -> Diagnosis:
    """Bands, bimodality and tail of the pooled columns `col_range` (half-open, None: all), and their episodes.

    `rows_from` is the column of the first row of `counts2d`/`time2d` when they hold only part of the history
    (`starts`/`ends` always cover it all).
    """
    counts = np.asarray(counts2d, dtype=np.float64)
    if counts.ndim == 1:
        counts = counts[None, :]
    first, stop = (rows_from, rows_from + len(counts)) if col_range is None else col_range
    first, stop = max(rows_from, first), min(rows_from + len(counts), stop)
    rows = slice(first - rows_from, stop - rows_from)
    counts = np.clip(counts[rows], 0, None)
    if time2d is None:
        times, estimated = estimate_time(counts, low_s, high_s), True
    else:
        times = np.clip(np.asarray(time2d, dtype=np.float64).reshape(-1, counts.shape[1])[rows], 0, None)
        estimated = False
    all_starts = np.asarray(starts, dtype=np.float64)
    starts, ends = all_starts[first:stop], np.asarray(ends, dtype=np.float64)[first:stop]
    pooled, pooled_t = counts.sum(axis=0), times.sum(axis=0)
    bands = find_bands(pooled, pooled_t, low_s, high_s)
    return Diagnosis(
        bands=bands,
        bimodal=is_bimodal(bands),
        tail=tail_dominance(pooled, pooled_t, low_s, high_s),
        episodes=find_episodes(counts, times, low_s, high_s, starts, ends, col_offset=first),
        events=float(pooled.sum()),
        time_s=float(pooled_t.sum()),
        time_estimated=estimated,
        t0=float(all_starts[0]) if len(all_starts) else 0.0,
        major=significant_bands(bands),
    )
