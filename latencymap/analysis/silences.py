"""Silences: a stream that usually has events in every column, and then none for a while.

A throughput collapse, a source that stopped sending, a collector that missed a window: the report's rate over the
whole range halves and nothing else says it. The rule, on columns (gap columns, whose data is missing, are not
silent: they are said as gaps):
- the usual rate is the median events per second of the columns with events;
- a column is quiet when it holds under `QUIET_SHARE` (5%) of what the usual rate would give it;
- quiet columns next to each other join one run; a run is a silence when the usual rate would have given it at least
  `MIN_MISSING` (20) more events than it has (a chance dip of a Poisson rate that size has p < 1e-8), it lasts at
  least twice the median column (one long column counts: the records stopped), and outside it the stream is
  continuous: at least `CONTINUOUS` (90%) of its other columns hold events (a bursty stream's idle seconds are no
  news);
- the usual rate rests on enough outside the run: at least `MIN_BASE_EVENTS` (20, as many as a silence must miss)
  events in at least `MIN_BASE_COLUMNS` (5) columns with events (an application of 4 tasks, 2 of them in one 10 ms
  column, has no "usual 200/s").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from latencymap.analysis.columns import Columns
from latencymap.analysis.episodes import runs
from latencymap.core.lean import dataclass
from latencymap.core.percentiles import median_of

QUIET_SHARE = 0.05
MIN_MISSING = 20.0
CONTINUOUS = 0.9
#: Events outside the run the usual rate rests on: as many as a silence must miss (a rate from 20 is known to ±22%).
MIN_BASE_EVENTS = MIN_MISSING
#: Columns with events outside the run: their median holds with two odd ones out (of two, it is their mean).
MIN_BASE_COLUMNS = 5


@dataclass
class Silence:
    """Columns `first_col..last_col` (absolute, inclusive) with (almost) no events where the usual rate says many."""

    first_col: int
    last_col: int
    start: float
    end: float
    events: float
    expected: float
    usual_rate: float

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return dict(vars(self))


def find_silences(counts: np.ndarray | Columns, starts: np.ndarray, ends: np.ndarray, gaps: np.ndarray | None = None,
                  col_offset: int = 0) -> list[Silence]:
    """The silences of (columns x slots) `counts`, or of `Columns` (see the module docstring); `gaps` marks gap
    columns."""
    if (counts.n if isinstance(counts, Columns) else len(counts)) < 3:
        return []
    n = counts.events() if isinstance(counts, Columns) else np.asarray(counts, dtype=np.float64).sum(axis=1)
    dur = np.asarray(ends, dtype=np.float64) - np.asarray(starts, dtype=np.float64)
    gap = np.zeros(len(n), dtype=bool) if gaps is None else np.asarray(gaps, dtype=bool)
    busy = (n > 0) & (dur > 0) & ~gap
    if busy.sum() < 2:
        return []
    usual = float(median_of(n[busy] / dur[busy]))
    width = float(median_of(dur[dur > 0])) if (dur > 0).any() else 0.0
    quiet = ~gap & (dur > 0) & (n < QUIET_SHARE * usual * dur)
    out = []
    for a, b in runs(quiet, max_gap=0, min_columns=1):
        span = slice(a, b + 1)
        seconds, got = float(dur[span].sum()), float(n[span].sum())
        expected = usual * seconds
        others = int(np.r_[busy[:a], busy[b + 1:]].sum())  # columns with events outside the run
        eligible = np.r_[(~gap & (dur > 0))[:a], (~gap & (dur > 0))[b + 1:]]
        base = float(n[:a].sum() + n[b + 1:].sum())
        if (expected - got < MIN_MISSING or seconds < 2 * width or not eligible.any()
                or others < CONTINUOUS * eligible.sum() or base < MIN_BASE_EVENTS or others < MIN_BASE_COLUMNS):
            continue
        out.append(Silence(a + col_offset, b + col_offset, float(starts[a]), float(ends[b]), got, expected, usual))
    return out
