"""Episodes: runs of columns whose latency *shape* departs from the stream's usual shape.

Per column, the histogram is compared with a baseline: the pooled shares of the columns that are
not anomalous (re-estimated `iterations` times, so a burst does not pollute its own reference).
Only the shape counts: a change of load alone (more events, same shares) is not an episode.

A column is anomalous when all of these hold:

- it has at least `min_column_events` (10) events;
- Poisson deviance against `N_col x baseline shares`, divided by the over-dispersion of the
  stream (median deviance per degree of freedom over normal columns, at least 1: real streams
  wobble more than Poisson), exceeds the chi-square quantile at `z` (4, one-sided p ~ 3e-5,
  Wilson-Hilferty approximation). The baseline gives half an event to each of its empty slots from
  the first to the last that some column uses, none beyond them: a share there would be missing
  from every column alike, and on a short stream (few events in all) the over-dispersion read from
  that made a slow phase of several seconds look like noise;
- the shares moved enough to matter: total variation distance of event shares >= `min_shift`
  (5%), or of time shares >= `min_time_shift` (20%, so a thin slow band that owns the waiting
  counts even when it holds few events).

A column is also anomalous when a thin slow band appeared in it, beside the usual ones: a run of neighbouring slots,
each holding at least 1 / `APPEAR_RATIO` (4) times its baseline share of the events and of the time, holds at least
`new_band_time_share` (10%) of the column's time (in a run of `NEW_BAND_COLUMNS`, 3, such columns or more: a usual band
that comes in bursts is high a column or two at a time), less than half of its events (more is the whole column's shape,
which the test above judges) and a smaller share of them than of the time (the fast edge of a distribution that drifted
is no band), and its events exceed `N_col x` their usual (mean) share beyond chance: the signed root of their Poisson
deviance, divided by the over-dispersion `1 + alpha x expected`, above `z`. `alpha` is the stream's wobble (the median
over normal columns of `(sum (O - E)^2 - O) / sum E^2`): where the usual bands' mix wobbles, their thousands of events
vary far beyond Poisson while a slot that usually holds a few events does not, so the whole column's over-dispersion (20
on a fast disk whose two 4 KiB bands trade places) hid a band of 1 MiB writes that was never there before and now held
15% of the time.

Anomalous columns closer than `max_gap` + 1 join one run; a run of fewer than `min_columns` (2)
anomalous columns or shorter than `min_seconds` is dropped (a lone column is noise or a hiccup).

Each episode pools its columns and compares them with the baseline slot by slot: `gained` is the
contiguous slot region around the largest excess of events (slots beyond `SLOT_Z`, 3, Poisson
sigmas above expectation), `lost` the one around the largest deficit. The kind is `appear` when
the gained region held at most `APPEAR_RATIO` (a quarter) of its episode share in the baseline (or, where it did not,
a band appeared by time as above, the episode's pooled events beyond `SLOT_Z`: that band is the gained region),
`disappear` when the lost region keeps at most a quarter of its baseline share, `move` when both;
`surge` when the gained region's events per second are at least `SURGE_RATIO` (2) times its usual rate
while the rest keeps at least `KEPT_RATIO` (60%) of its own and the total rate grows by at least `surge_min_added`
(half) of what the region added (events added on top of the usual load: the median may move, yet nothing moved;
where the rest lost as many as the region gained, the mix changed at a steady rate: a reshape); checked first when
the region held at least `EXISTED_SHARE` (5%) of the baseline's events, since the shares alone would then make the
added events a band that appeared and the rest one that went; `move` when the median latency (interpolated inside its
bucket, as the report's p50 is) moved by >= `min_move_octaves` (0.75), else `reshape` (shares moved between regions
that exist in both). A change covering more than half of the testable columns has no baseline to stand against and
is not reported: select a range of columns (`col_range` in `diagnose`) around it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from latencymap.analysis.columns import Columns, as_columns
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS as _T
from latencymap.core import chunked
from latencymap.core.lean import dataclass
from latencymap.core.percentiles import column_medians, median_of, percentile_estimates

Z = _T.episode_z
MIN_SHIFT = _T.episode_min_shift
MIN_TIME_SHIFT = _T.episode_min_time_shift
MIN_COLUMN_EVENTS = _T.episode_min_column_events
MIN_COLUMNS = _T.episode_min_columns
MAX_GAP = _T.episode_max_gap
MIN_MOVE_OCTAVES = _T.min_move_octaves
NEW_BAND_TIME_SHARE = _T.episode_new_band_time_share
SLOT_Z = 3.0
APPEAR_RATIO = 0.25
#: A column the new-band test alone flags counts in a run of at least this many such columns (gaps bridged as an
#: episode's): a band that appeared stays, while a usual slow band that comes in bursts is high a column or two at a
#: time.
NEW_BAND_COLUMNS = 3
#: A surge: the gained region at least this many times its usual events per second ...
SURGE_RATIO = 2.0
#: ... while the other slots keep at least this share of theirs ...
KEPT_RATIO = 0.6
#: ... and the total rate grows by at least this share of what the region added (thresholds.py).
SURGE_MIN_ADDED = _T.surge_min_added
#: A region holding at least this share of the baseline's events existed before: more of it is a surge, not a band
#: that appeared (however small its share was next to the episode's).
EXISTED_SHARE = 0.05


@dataclass
class Region:
    """A slot range and its shares in the episode and in the baseline."""

    low_s: float
    high_s: float
    events_share: float
    baseline_share: float
    time_share: float
    baseline_time_share: float
    #: The slot `high_s` ends: the open top slot makes the range `≥low_s` (`findings.span`); not in the JSON.
    high_slot: int = -1

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {k: v for k, v in vars(self).items() if k != "high_slot"}


@dataclass
class Episode:
    """Columns `first_col..last_col` (inclusive) whose shape departs from the baseline."""

    kind: str
    first_col: int
    last_col: int
    start: float
    end: float
    events: float
    shift_octaves: float
    gained: Region | None
    lost: Region | None
    #: Time of `events` (a stall: only its own far events and their time), and their shares of the diagnosed range.
    time_s: float = 0.0
    events_share: float = 0.0
    time_share: float = 0.0
    #: Events per second in the gained region during the episode and usually (a `surge` says both).
    gained_rate: float | None = None
    usual_rate: float | None = None
    #: ... and the other slots' events per second against their usual ones.
    rest_ratio: float | None = None
    #: A stall whose first waits outlast its first column: they began (least, most) seconds before `start`.
    began_before: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        """The report's episode object."""
        return {
            "kind": self.kind, "first_col": self.first_col, "last_col": self.last_col, "start": self.start,
            "end": self.end, "events": self.events, "shift_octaves": self.shift_octaves,
            "gained": self.gained.to_json() if self.gained else None,
            "lost": self.lost.to_json() if self.lost else None,
            "time_s": self.time_s, "events_share": self.events_share, "time_share": self.time_share,
            "gained_rate": self.gained_rate, "usual_rate": self.usual_rate, "rest_ratio": self.rest_ratio,
            "began_before_s": list(self.began_before) if self.began_before else None,
        }


def chi2_quantile(df: np.ndarray, z: float) -> np.ndarray:
    """Upper chi-square quantile at standard-normal deviate `z` (Wilson-Hilferty)."""
    df = np.maximum(np.asarray(df, dtype=np.float64), 1.0)
    k = 2.0 / (9.0 * df)
    return df * np.maximum(1.0 - k + z * np.sqrt(k), 0.0) ** 3


def poisson_deviance(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Row-wise Poisson deviance 2 * sum(O ln(O/E) - (O - E)); E must be > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(observed > 0, observed * np.log(observed / expected), 0.0)
    return 2.0 * (term - (observed - expected)).sum(axis=-1)


def _shares(x: np.ndarray) -> np.ndarray:
    """Rows normalised to sum 1 (zero rows stay zero)."""
    total = x.sum(axis=-1, keepdims=True)
    if (total > 0).all():
        return x / total  # the same quotients, without a masked division's cost
    return np.divide(x, total, out=np.zeros_like(x), where=total > 0)


def _baseline_shares(base: np.ndarray) -> np.ndarray:
    """Baseline shares with half an event in every empty slot, so no expectation is zero."""
    total = base.sum()
    p = np.where(base > 0, base, 0.5) / max(total, 1.0)
    return p / p.sum()


def anomalous_columns(
    counts: np.ndarray | Columns, times: np.ndarray | None = None, *, z: float = Z, min_shift: float = MIN_SHIFT,
    min_time_shift: float = MIN_TIME_SHIFT, min_column_events: int = MIN_COLUMN_EVENTS, iterations: int = 3,
    new_band_time_share: float = NEW_BAND_TIME_SHARE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(anomalous mask, baseline counts, baseline time) over columns (see the module docstring): (columns x slots)
    `counts` and `times`, or `Columns` that read both.

    The work runs on the slots from the first to the last that some column uses; the slots beyond them tell no
    column from another and get no share. Each step reads the columns a chunk at a time and keeps a few numbers per
    column.
    """
    cols = as_columns(counts, times)
    used = np.flatnonzero(cols.used())
    lo, hi = (int(used[0]), int(used[-1]) + 1) if used.size else (0, cols.width)
    window = cols.window(slice(lo, hi))
    n = window.events()
    testable = n >= min_column_events
    anomalous = np.zeros(cols.n, dtype=bool)
    for step in range(iterations):
        normal = testable & ~anomalous
        sums = base, base_t = window.slot_sums(normal)
        if step == 0 and normal.sum() >= 3:
            # The first baseline is the median column's shape, not the pooled one: a change lasting a third of the
            # range (a slow band from t+40s to the end) would otherwise be in the pooled shape, making every column
            # before it look as changed as those after, and no majority would be left to stand as the baseline.
            base = _median_shape_of(window, normal, of_time=False) * float(base.sum())
            base_t = _median_shape_of(window, normal, of_time=True) * float(base_t.sum())
        p, pt = _baseline_shares(base), _shares(base_t)
        pooled = _baseline_shares(sums[0])  # a slot's mean share: what a band's events are expected from
        deviance, tvd, tvd_time, df = np.empty(cols.n), np.empty(cols.n), np.empty(cols.n), np.empty(cols.n, int)
        wobble, new = np.empty(cols.n), np.empty((3, cols.n))
        for span, c, t in window.blocks():
            deviance[span], df[span], tvd[span], tvd_time[span] = _column_tests(c, t, n[span], base > 0, p, pt)
            wobble[span] = _wobble(c, n[span], p)
            new[:, span] = _new_band(c, t, p, pt, pooled, new_band_time_share)[2:]
        ratio = deviance / (df * (1.0 - 2.0 / (9.0 * df)) ** 3)  # ~1 at the median of chi2(df)
        dispersion = max(1.0, float(median_of(ratio[normal]))) if normal.any() else 1.0
        significant = deviance / dispersion > chi2_quantile(df, z)
        alpha = max(0.0, float(median_of(wobble[normal]))) if normal.any() else 0.0
        events, usual, time_share = new
        appeared = _lasting(_thin_slow(events, n, time_share, new_band_time_share)
                            & (excess_z(events, n * usual, alpha) > z), NEW_BAND_COLUMNS)
        found = testable & ((significant & ((tvd >= min_shift) | (tvd_time >= min_time_shift))) | appeared)
        if found.sum() * 2 > testable.sum() or np.array_equal(found, anomalous):
            break  # converged, or no majority of normal columns to stand as the baseline
        anomalous = found
    else:
        sums = window.slot_sums(testable & ~anomalous)
    # the baseline over every slot: the window's sums, as the slots beyond it hold nothing in any column (a window of
    # one slot is summed as a vector, wider ones slot by slot: `chunked.SlotSums`)
    if window.width == 1 < cols.width:
        return (anomalous, *cols.slot_sums(testable & ~anomalous))
    wide = [np.zeros(cols.width, dtype=part.dtype) for part in sums]
    for whole, part in zip(wide, sums, strict=True):
        whole[lo:hi] = part
    return anomalous, wide[0], wide[1]


def _column_tests(counts: np.ndarray, times: np.ndarray, n: np.ndarray, in_base: np.ndarray, p: np.ndarray,
                  pt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column: Poisson deviance against the baseline shares `p`, its degrees of freedom, and the total variation
    distances of event and time shares."""
    deviance = poisson_deviance(counts, n[:, None] * p[None, :])
    df = np.maximum((in_base[None, :] | (counts > 0)).sum(axis=1) - 1, 1)
    tvd = 0.5 * np.abs(_shares(counts) - p[None, :]).sum(axis=1)
    tvd_time = 0.5 * np.abs(_shares(times) - pt[None, :]).sum(axis=1)
    return deviance, df, tvd, tvd_time


def _lasting(mask: np.ndarray, columns: int) -> np.ndarray:
    """`mask` where it holds in runs of at least `columns` (bridging gaps as episodes do)."""
    out = np.zeros_like(mask)
    for first, last in runs(mask, min_columns=columns):
        out[first:last + 1] = mask[first:last + 1]
    return out


def _wobble(counts: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per column, the over-dispersion `alpha` of a negative binomial (variance E + alpha E^2) read by moments against
    the baseline shares `p`: how far the slots' counts vary beyond Poisson, in proportion to their size."""
    expected = n[:, None] * p[None, :]
    beyond = (np.square(counts - expected) - counts).sum(axis=1)
    return beyond / np.maximum(np.square(expected).sum(axis=1), 1e-300)


def excess_z(observed: np.ndarray, expected: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """How far `observed` counts lie above `expected` ones, in sigmas: the signed root of their Poisson deviance
    (right for a few events), divided by `1 + alpha x expected` (a large count's extra variance); 0 at or below."""
    observed, expected = np.asarray(observed, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    deviance = poisson_deviance(observed[..., None], np.maximum(expected, 1e-300)[..., None])
    return np.where(observed > expected, np.sqrt(np.maximum(deviance, 0.0) / (1.0 + alpha * expected)), 0.0)


def _thin_slow(events: np.ndarray, n: np.ndarray, time_share: np.ndarray, min_time_share: float) -> np.ndarray:
    """A thin slow band: at least `min_time_share` of the time, less than half of the events and a smaller share of
    them than of the time (the fast edge of a distribution that drifted holds more of the events)."""
    return (time_share >= min_time_share) & (events * 2 < n) & (events < time_share * n)


def _new_band(counts: np.ndarray, times: np.ndarray, p: np.ndarray, pt: np.ndarray, usual: np.ndarray | None = None,
              min_share: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of `counts` and `times`: the run of neighbouring slots, each holding at least 1 / `APPEAR_RATIO` times
    its baseline share of the row's events (`p`) and of its time (`pt`), that holds the most of its time: (first slot,
    last slot, its events, their usual share of events by `usual` (default `p`), its share of the time); a row with
    no such slot gets first = last = -1 and zeros, as does one whose such slots hold less than `min_share` of its time
    in all. (Time alone would make the usual fast band new where a slow one that held most of the time went.)"""
    held = _shares(times)
    fresh = (held > 0) & (held * APPEAR_RATIO >= pt[None, :]) & (_shares(counts) * APPEAR_RATIO >= p[None, :])
    out = np.full((2, len(fresh)), -1), np.zeros((3, len(fresh)))
    rows = np.flatnonzero(np.where(fresh, held, 0.0).sum(axis=1) >= max(min_share, 1e-300))  # most columns: none
    if not rows.size:
        return out[0][0], out[0][1], *out[1]
    fresh, held, width = fresh[rows], held[rows], fresh.shape[1]
    run = np.cumsum(fresh & ~np.pad(fresh, ((0, 0), (1, 0)))[:, :-1], axis=1) * fresh  # 1, 2, ... per run; 0 outside
    at = (np.arange(len(rows))[:, None] * (width + 1) + run).ravel()
    share = np.bincount(at, held.ravel(), len(rows) * (width + 1)).reshape(len(rows), -1)
    share[:, 0] = -1.0
    best = np.argmax(share, axis=1)
    mine = run == best[:, None]
    usual = p if usual is None else usual
    out[0][0, rows] = np.argmax(mine, axis=1)
    out[0][1, rows] = width - 1 - np.argmax(mine[:, ::-1], axis=1)
    out[1][:, rows] = (np.where(mine, counts[rows], 0.0).sum(axis=1), np.where(mine, usual[None, :], 0.0).sum(axis=1),
                       share[np.arange(len(rows)), best])
    return out[0][0], out[0][1], *out[1]


#: Bytes of shares gathered at a time for the per-slot medians of the first baseline.
MEDIAN_BYTES = 4 << 20


def _median_shape(shares: np.ndarray) -> np.ndarray:
    """The per-slot median of columns' shares, as shares again (the pooled shares when every median is 0)."""
    return _shape(column_medians(shares), lambda: shares.sum(axis=0))


def _shape(med: np.ndarray, pooled: Callable[[], np.ndarray]) -> np.ndarray:
    """Per-slot medians as shares, or the `pooled` shares when every median is 0."""
    total = float(med.sum())
    return med / total if total > 0 else _shares(pooled())


def _median_shape_of(window: Columns, normal: np.ndarray, *, of_time: bool) -> np.ndarray:
    """`_median_shape` of the `normal` columns' shares of events (`of_time`: of time), read a block at a time: a
    few slots at a time, as many as `MEDIAN_BYTES` holds."""

    def shares(slots: slice = slice(None)) -> Iterator[np.ndarray]:
        for span, c, t in window.blocks():
            yield _shares(t if of_time else c)[normal[span], slots]

    count = int(normal.sum())
    group = max(1, MEDIAN_BYTES // (8 * max(count, 1)))
    med = np.empty(window.width)
    for at in range(0, window.width, group):
        slots = slice(at, at + group)
        gathered = np.empty((len(range(*slots.indices(window.width))), count))  # a slot's shares side by side
        filled = 0
        for part in shares(slots):
            gathered[:, filled: filled + len(part)] = part.T
            filled += len(part)
        med[slots] = column_medians(gathered.T, overwrite=True)
    return _shape(med, lambda: chunked.slot_sums(shares(), window.width))


def runs(mask: np.ndarray, *, max_gap: int = MAX_GAP, min_columns: int = MIN_COLUMNS) -> list[tuple[int, int]]:
    """Inclusive (first, last) runs of True, bridging gaps of up to `max_gap`, with >= `min_columns` True."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > max_gap + 1)
    firsts = np.r_[0, breaks + 1]
    lasts = np.r_[breaks, idx.size - 1]
    return [(int(idx[a]), int(idx[b])) for a, b in zip(firsts, lasts, strict=True) if b - a + 1 >= min_columns]


def _region(slots: np.ndarray, pick: int, ep: np.ndarray, ep_t: np.ndarray, p: np.ndarray, pt: np.ndarray,
            low_s: np.ndarray, high_s: np.ndarray) -> Region:
    """The contiguous run of `slots` (a mask) around slot `pick`, described."""
    a = pick
    while a > 0 and slots[a - 1]:
        a -= 1
    b = pick
    while b + 1 < len(slots) and slots[b + 1]:
        b += 1
    sl = slice(a, b + 1)
    return Region(float(low_s[a]), float(high_s[b]), float(ep[sl].sum()), float(p[sl].sum()),
                  float(ep_t[sl].sum()), float(pt[sl].sum()), high_slot=b)


def _median_log2(counts: np.ndarray, low_s: np.ndarray, high_s: np.ndarray, times: np.ndarray | None) -> float:
    """log2 of the median, read inside its bucket as the report's p50 is (`times`: the exact seconds per slot, or
    None): a bucket's centre would make a median that crosses a bucket edge by a tenth of an octave move a whole one.
    In the bucket from 0 it is at least that bucket's centre: its values of 0 (exact time 0) have no octave."""
    median = float(percentile_estimates(counts, low_s, high_s, (0.5,), times=times)[0])
    lowest = float(np.max(high_s[low_s <= 0], initial=0.0)) / 2.0
    return float(np.log2(max(median, lowest, np.finfo(np.float64).tiny)))


def describe(
    ep_counts: np.ndarray, ep_time: np.ndarray, base: np.ndarray, base_t: np.ndarray,
    low_s: np.ndarray, high_s: np.ndarray, *, min_move_octaves: float = MIN_MOVE_OCTAVES,
    seconds: tuple[float, float] | None = None, exact: bool = False, new_band_time_share: float = NEW_BAND_TIME_SHARE,
) -> tuple[str, float, Region | None, Region | None, tuple[float, float, float] | None]:
    """(kind, shift in octaves, gained region, lost region, the gained region's (episode, usual) events per second
    and the other slots' rate against their usual one)
    of pooled episode counts against the baseline; `seconds`: (the episode's, the baseline's) length, which rates
    need (without it there is no `surge`); `exact`: the times are the source's, which place the medians inside
    their buckets."""
    p, pt = _baseline_shares(base), _shares(base_t)
    base_share = _shares(base)  # what a region usually holds, as said: `p`'s half events in empty slots are no data
    ep, ep_t = _shares(ep_counts), _shares(ep_time)
    expected = ep_counts.sum() * p
    z = (ep_counts - expected) / np.sqrt(np.maximum(expected, 1.0))
    up, down = z > SLOT_Z, z < -SLOT_Z
    diff = ep_counts - expected
    gained = _region(up, int(np.argmax(np.where(up, diff, -np.inf))), ep, ep_t, base_share, pt, low_s, high_s) \
        if up.any() else None
    lost = _region(down, int(np.argmin(np.where(down, diff, np.inf))), ep, ep_t, base_share, pt, low_s, high_s) \
        if down.any() else None
    shift = _median_log2(ep_counts, low_s, high_s, ep_time if exact else None) - \
        _median_log2(base, low_s, high_s, base_t if exact else None)
    appeared = gained is not None and gained.baseline_share <= APPEAR_RATIO * gained.events_share
    if not appeared:  # the most events gained may be the usual bands' mix: a thin band that appeared holds the time
        first, last, held, usual, share = (v[0] for v in _new_band(ep_counts[None, :], ep_time[None, :], p, pt))
        total = ep_counts.sum()
        if _thin_slow(held, total, share, new_band_time_share) and excess_z(held, total * usual) > SLOT_Z:
            band = (np.arange(len(p)) >= first) & (np.arange(len(p)) <= last)
            gained, appeared = _region(band, int(first), ep, ep_t, base_share, pt, low_s, high_s), True
    gone = lost is not None and lost.events_share <= APPEAR_RATIO * lost.baseline_share
    rates = None
    if gained is not None and seconds is not None and min(seconds) > 0:
        inside = (low_s >= gained.low_s * (1 - 1e-9)) & (high_s <= gained.high_s * (1 + 1e-9))
        ep_s, base_s = seconds
        usual_rest = float(base[~inside].sum()) / base_s
        rest = float(ep_counts[~inside].sum()) / ep_s / usual_rest if usual_rest > 0 else 1.0
        rates = (float(ep_counts[inside].sum()) / ep_s, float(base[inside].sum()) / base_s, rest)
        added = float(ep_counts.sum()) / ep_s - float(base.sum()) / base_s
        surge = rest >= KEPT_RATIO and rates[0] >= SURGE_RATIO * rates[1] and \
            added >= SURGE_MIN_ADDED * (rates[0] - rates[1])
    else:
        surge = False
    if surge and gained is not None and gained.baseline_share >= EXISTED_SHARE:
        kind = "surge"  # shares alone would call it a band that appeared where the rest was "gone"
    elif appeared and gone:
        kind = "move"
    elif appeared:
        kind = "appear"
    elif gone:
        kind = "disappear"
    elif surge:
        kind = "surge"
    else:
        kind = "move" if abs(shift) >= min_move_octaves else "reshape"
    return kind, shift, gained, lost, rates


def find_episodes(
    counts2d: np.ndarray | Columns,
    time2d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    *,
    z: float = Z,
    min_shift: float = MIN_SHIFT,
    min_time_shift: float = MIN_TIME_SHIFT,
    min_column_events: int = MIN_COLUMN_EVENTS,
    min_columns: int = MIN_COLUMNS,
    max_gap: int = MAX_GAP,
    min_seconds: float = 0.0,
    col_offset: int = 0,
    min_move_octaves: float = MIN_MOVE_OCTAVES,
    exact: bool | None = None,
    new_band_time_share: float = NEW_BAND_TIME_SHARE,
) -> list[Episode]:
    """Episodes over columns (rows of `counts2d`, or `Columns` that read counts and times); column numbers are
    shifted by `col_offset`; `exact`: the times are the source's, not estimated (None: when `time2d` or `Columns` give
    them)."""
    exact = (time2d is not None or isinstance(counts2d, Columns)) if exact is None else exact
    if not isinstance(counts2d, Columns) and np.ndim(counts2d) != 2:
        return []
    cols = as_columns(counts2d, time2d, low_s, high_s, clip=True)
    if cols.n < 2 * min_columns + 1:
        return []
    anomalous, base, base_t = anomalous_columns(
        cols, z=z, min_shift=min_shift, min_time_shift=min_time_shift, min_column_events=min_column_events,
        new_band_time_share=new_band_time_share)
    if base.sum() <= 0:
        return []
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    lengths = ends - starts
    base_s = float(lengths[(cols.events() >= min_column_events) & ~anomalous].sum())  # the baseline's
    out = []
    total_c, total_t = (max(total, 1e-300) for total in cols.totals())
    for a, b in runs(anomalous, max_gap=max_gap, min_columns=min_columns):
        if ends[b] - starts[a] < min_seconds:
            continue
        ep_counts, ep_time = cols.part(a, b + 1).slot_sums()
        kind, shift, gained, lost, rates = describe(ep_counts, ep_time, base, base_t, low_s, high_s,
                                                    min_move_octaves=min_move_octaves,
                                                    seconds=(float(lengths[a:b + 1].sum()), base_s), exact=exact,
                                                    new_band_time_share=new_band_time_share)
        ev, tm = float(ep_counts.sum()), float(ep_time.sum())
        out.append(Episode(kind, a + col_offset, b + col_offset, float(starts[a]), float(ends[b]),
                           ev, shift, gained, lost, tm, ev / total_c, tm / total_t,
                           *(rates if kind == "surge" and rates else (None, None, None))))
    return out
