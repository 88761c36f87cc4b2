"""Bands: the modes of a log2 latency histogram, separated by valleys.

Modes are found on the event counts per slot (log2 slots have equal width in log latency, so
counts per slot are a density over log latency; a lognormal is one mode whatever its spread).
Slot 0, `[0, 1)`, holds every octave below 1 unit, so it is read as its top octave (`zero_slot_octave`): the
fall of the counts towards slot 1 carried on below it, plus whatever slot 0 holds beyond what that fall puts into
all those octaves. A smooth population whose low tail goes on below 1 unit (a Weibull of shape 0.5) makes no peak
there; sub-unit cache hits below a slow band still do.
Every local maximum starts a band; then the least-separated pair of neighbouring bands is merged,
again and again, while the valley between them is

- shallow: valley > `max_valley_ratio` (0.5) x the smaller of the two peaks, or
- not significant: smaller peak - valley < `min_valley_z` (3) x sqrt(peak + valley), i.e. within
  Poisson noise of a flat run (counts are event counts, so sparse tails do not split into bands),

unless the valley is a deep gap: slots holding at most `deep_valley_ratio` (0.1) of the smaller peak (empty
octaves), so many of them that a tail decaying monotonically would leave them that empty with probability
<= `gap_alpha` (0.05; each gap slot expects at least the smaller peak's count: P = Poisson CDF of the gap's
events at gap slots x smaller peak). One far event needs three empty octaves, two need two. So a few far
events (two 1.5 s stalls three empty octaves above an 80 ms band, one 2.5 s task above 64-256 ms tasks)
are not swallowed as their neighbour's tail; whether they stay a band is left to the share rule below.
That is for a thin band *above* the gap, which owns time. A fast group below one owns none, and the low tail
of a wide population (a Weibull of shape 0.5 halves only every two octaves) leaves a few fast events scattered
below empty octaves: it needs more than one event (a lone fast event is no mode) and a gap improbable at
`fast_gap_alpha` (1e-4: two events in a bucket need five empty octaves, three four, five two). So three fast
events one empty octave below the bulk stay its tail, while 8 events at 100 us and 8 at 1 s, or 2 and 3, twelve
empty octaves apart, are two bands. Of peaks of equal height (a handful of events) the upper is a thin band
above the gap when its band holds fewer events than the lower one: two 1 s waits above eight faster ones; else
the lower is the fast group: four waits of 8-500 us above one at 0 stay one band. The gap is looked for in the
longest run of the lowest slots between two peaks.

The log2 scale is already coarse (a lognormal spans a few slots), so no smoothing is applied:
it would fill the one-slot valleys that real bimodal data shows. Finally a band holding less than
`min_band_share` (0.5%) of the events *and* less than `min_band_time_share` (2%) of the time is folded
into its closer neighbour: a thin far band that owns time stays a band; a stray event of a sparse tail
does not.

The valley slot goes to the side whose adjacent slot holds more events (it is more likely that
band's flank). A band owns all slots between its valleys (its shares count them all), but its
`low_s`/`high_s` show its core: edge slots that together hold at most `EDGE_TRIM` (0.5%) of the
band's events and of its time are left out of the range, so one stray event does not stretch a
300 us band down to 16 us.

`is_bimodal`: at least two bands each hold a meaningful share: >= 3% of the events, or >= 10% of
the time. The time criterion catches the thin slow band that owns the waiting: 5% of events at
10 ms next to 95% at 300 us holds ~64% of the time.
"""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from typing import Any

import numpy as np

from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS as _T
from latencymap.core.lean import dataclass

MAX_VALLEY_RATIO = _T.max_valley_ratio
MIN_VALLEY_Z = _T.min_valley_z
DEEP_VALLEY_RATIO = _T.deep_valley_ratio
GAP_ALPHA = _T.gap_alpha
FAST_GAP_ALPHA = _T.fast_gap_alpha
MIN_BAND_SHARE = _T.min_band_share
MIN_BAND_TIME_SHARE = _T.min_band_time_share
MIN_EVENTS_SHARE = _T.band_events_share
MIN_TIME_SHARE = _T.band_time_share
EDGE_TRIM = _T.edge_trim
#: Poisson sigmas by which `zero_slot_octave` takes the fall of the bottom slots low.
ZERO_SLOT_Z = 1.0


@dataclass
class Band:
    """One mode of the histogram: slots `first_slot..last_slot` (inclusive)."""

    first_slot: int
    last_slot: int
    mode_slot: int
    low_s: float
    high_s: float
    events: float
    time_s: float
    events_share: float
    time_share: float
    #: Shares of events and time inside `low_s..high_s`, the band's core that its text names (the band's own slots
    #: may reach further, with a few stray events); None: the same as the band's.
    core_events_share: float | None = None
    core_time_share: float | None = None
    #: When most of the band's events came in a few columns (GC pauses, a flush every 10 s): (absolute column, its
    #: start time) of each of those columns, and the share of the band's events they hold (see `diagnosis`).
    bursts: list[tuple[int, float]] | None = None
    burst_share: float = 0.0
    #: The slot `high_s` ends (the core's last): the open top slot makes the range `≥low_s` (`findings.span`).
    high_slot: int = -1

    @property
    def shown_shares(self) -> tuple[float, float]:
        """(events, time) shares of the range the band is described by."""
        return (self.events_share if self.core_events_share is None else self.core_events_share,
                self.time_share if self.core_time_share is None else self.core_time_share)

    def to_json(self) -> dict[str, Any]:
        """The report's band object."""
        return {"low_s": self.low_s, "high_s": self.high_s, "events_share": self.events_share,
                "time_share": self.time_share}

    def overlaps(self, other: Band) -> bool:
        """True when the slot ranges intersect."""
        return self.first_slot <= other.last_slot and other.first_slot <= self.last_slot


def estimate_time(counts: np.ndarray, low_s: np.ndarray, high_s: np.ndarray) -> np.ndarray:
    """Time per slot when only counts are known: count x arithmetic midpoint of the bucket."""
    return np.asarray(counts, dtype=np.float64) * (np.asarray(low_s) + np.asarray(high_s)) / 2.0


def nonnegative(values: np.ndarray) -> np.ndarray:
    """`values` as float64 with negatives (and -0.0) clipped to 0; no copy when there are none to clip."""
    x = np.asarray(values, dtype=np.float64)
    return np.clip(x, 0, None) if np.signbit(x).any() else x


def counts_and_time(counts_1d: np.ndarray, time_1d: np.ndarray | None, low_s: np.ndarray,
                    high_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Counts and time per slot (time estimated from midpoints when None), negatives clipped, and their totals."""
    c = nonnegative(counts_1d)
    t = estimate_time(c, low_s, high_s) if time_1d is None else nonnegative(time_1d)
    return c, t, float(c.sum()), float(t.sum())


def local_peaks(c: np.ndarray) -> np.ndarray:
    """Indices of local maxima of `c` (the last slot of a flat top); empty slots never peak."""
    padded = np.concatenate(([-1.0], c, [-1.0]))
    left_ok = padded[1:-1] >= padded[:-2]
    right_ok = padded[1:-1] > padded[2:]
    return np.flatnonzero(left_ok & right_ok & (c > 0))


def _lowest(c: np.ndarray, a: int, b: int) -> int:
    """A slot of `c[a:b]` holding its minimum, the first of the longest run of them."""
    low = c[a:b] == c[a:b].min()
    edges = np.flatnonzero(np.diff(np.concatenate(([0], low.view(np.int8), [0]))))
    starts, stops = edges[0::2], edges[1::2]
    return a + int(starts[np.argmax(stops - starts)])


def gap_evidence(c: np.ndarray, left: int, valley: int, right: int, deep_ratio: float = DEEP_VALLEY_RATIO) -> float:
    """P(a deep valley this wide and this empty | every slot of it expects the smaller peak's count).

    A tail that decays monotonically expects at least as many events in each slot of a gap as in the far
    peak; the gap is the run of slots around the valley holding at most `deep_ratio` of the smaller peak.
    """
    peak = min(c[left], c[right])
    limit = deep_ratio * peak
    a = b = valley
    while a - 1 > left and c[a - 1] <= limit:
        a -= 1
    while b + 1 < right and c[b + 1] <= limit:
        b += 1
    return poisson_cdf(float(c[a:b + 1].sum()), (b - a + 1) * float(peak))


def poisson_cdf(k: float, lam: float) -> float:
    """P(X <= k) for X ~ Poisson(lam) (k rounded down)."""
    terms = np.arange(int(k) + 1, dtype=np.float64)
    log_pmf = terms * np.log(lam) - lam - np.cumsum(np.log(np.maximum(terms, 1.0)))
    return float(min(1.0, np.exp(log_pmf).sum()))


def _separation(c: np.ndarray, left: int, valley: int, right: int, max_ratio: float, min_z: float,
                deep_ratio: float = DEEP_VALLEY_RATIO, gap_alpha: float = GAP_ALPHA,
                right_thinner: bool = False, lower_events: float = np.inf,
                fast_gap_alpha: float = FAST_GAP_ALPHA) -> float:
    """How shallow a valley is (valley / smaller peak); +inf when within Poisson noise and no improbable gap.

    `right_thinner`: the upper band holds fewer events than the lower (it decides between peaks of equal height);
    `lower_events`: the events of the lower peak's band (a fast group below the gap needs more than one).
    """
    peak = min(c[left], c[right])
    depth = c[valley] / peak
    noise = peak - c[valley] < min_z * np.sqrt(peak + c[valley])
    if not noise:
        return float(depth) if depth <= max_ratio else float(depth) + 1.0
    far = c[right] < c[left] or (c[right] == c[left] and right_thinner)  # a thin band above the gap: it owns time
    if depth > deep_ratio or (not far and lower_events < 2):
        return np.inf
    if gap_evidence(c, left, valley, right, deep_ratio) > (gap_alpha if far else fast_gap_alpha):
        return np.inf
    return float(depth)


def zero_slot_octave(c: np.ndarray) -> float:
    """What slot 0 (`[0, 1)`, every octave below 1 unit) holds in one octave, its top one (`per_octave`).

    The fall of the counts per octave at the bottom, r = (c1 + c2) / (c2 + c3), carried on below 1 unit, puts c1 x r
    into slot 0's top octave and c1 x r / (1 - r) into all of its octaves (unbounded when r >= 1); what slot 0 holds
    beyond that is a population of its own (cache hits), counted as if all in its top octave. r is taken
    `ZERO_SLOT_Z` Poisson sigmas low, so that a few events in slots 1-3 show no fall that would explain slot 0 away.
    """
    c0, c1, c2, c3 = (float(x) for x in c[:4])
    upper, lower = c1 + c2, c2 + c3
    r = max(0.0, upper - ZERO_SLOT_Z * np.sqrt(upper)) / (lower + ZERO_SLOT_Z * np.sqrt(lower)) if lower > 0 else 0.0
    below = c1 * r / (1.0 - r) if r < 1 else np.inf
    return min(c0, c1 * r) + max(0.0, c0 - below)


def per_octave(c: np.ndarray) -> np.ndarray:
    """Counts per slot as a density over log latency: slot 0 read as its top octave (`zero_slot_octave`)."""
    if len(c) < 4 or c[0] <= 0:
        return c
    out = np.array(c, dtype=np.float64)
    out[0] = zero_slot_octave(c)
    return out


def split_points(c: np.ndarray, *, max_valley_ratio: float = MAX_VALLEY_RATIO,
                 min_valley_z: float = MIN_VALLEY_Z, deep_valley_ratio: float = DEEP_VALLEY_RATIO,
                 gap_alpha: float = GAP_ALPHA, fast_gap_alpha: float = FAST_GAP_ALPHA) -> list[int]:
    """Valley slots that separate bands after merging shallow or insignificant valleys (slot 0 read per octave)."""
    cum = np.concatenate(([0.0], np.cumsum(c)))
    c = per_octave(c)
    peaks = [int(p) for p in local_peaks(c)]

    # a pair of neighbouring peaks keeps its valley and separation while both last: each found once
    @cache
    def valley(a: int, b: int) -> int:
        """The lowest slot between peaks `a` and `b`: in the longest run of such slots (the widest gap)."""
        return _lowest(c, a + 1, b) if b > a + 1 else a

    @cache
    def separation(a: int, v: int, b: int, right_thinner: bool, lower_events: float) -> float:
        """`_separation` of the valley `v` between peaks `a` and `b`."""
        return _separation(c, a, v, b, max_valley_ratio, min_valley_z, deep_valley_ratio, gap_alpha, right_thinner,
                           lower_events, fast_gap_alpha)

    while len(peaks) > 1:
        valleys = [valley(a, b) for a, b in pairwise(peaks)]
        cuts = [0, *(v + 1 for v in valleys), len(c)]
        mass = [cum[b] - cum[a] for a, b in pairwise(cuts)]  # events of each peak's band, valleys to the left
        shallow = [separation(a, v, b, bool(mass[i + 1] < mass[i]), float(mass[i]))
                   for i, ((a, b), v) in enumerate(zip(pairwise(peaks), valleys, strict=True))]
        worst = int(np.argmax(shallow))
        if shallow[worst] <= max_valley_ratio:
            return valleys
        a, b = peaks[worst], peaks[worst + 1]
        peaks.remove(a if c[a] < c[b] else b)
    return []


def _ranges(c: np.ndarray, valleys: list[int]) -> list[tuple[int, int]]:
    """Inclusive slot ranges cut at the valleys, trimmed to non-empty slots."""
    cuts = []
    for v in valleys:
        right_heavier = v + 1 < len(c) and (v == 0 or c[v + 1] > c[v - 1])
        cuts.append(v if right_heavier else v + 1)
    edges = [0, *cuts, len(c)]
    out = []
    for lo, hi in pairwise(edges):
        nz = np.flatnonzero(c[lo:hi] > 0)
        if nz.size:
            out.append((lo + int(nz[0]), lo + int(nz[-1])))
    return out


def core(c: np.ndarray, t: np.ndarray, a: int, b: int, trim: float = EDGE_TRIM) -> tuple[int, int]:
    """Slots a..b less the edge slots that together hold <= `trim` of the range's events and of its time."""
    ev, tm = c[a:b + 1], t[a:b + 1]
    ce, ct = max(ev.sum(), 1e-300), max(tm.sum(), 1e-300)
    keep_left = (np.cumsum(ev) / ce > trim) | (np.cumsum(tm) / ct > trim)
    keep_right = (np.cumsum(ev[::-1]) / ce > trim) | (np.cumsum(tm[::-1]) / ct > trim)
    return a + int(np.argmax(keep_left)), b - int(np.argmax(keep_right))


def _make_band(rng: tuple[int, int], c: np.ndarray, t: np.ndarray, low_s: np.ndarray, high_s: np.ndarray,
               total_c: float, total_t: float) -> Band:
    """A Band over an inclusive slot range, its latency range trimmed to its core."""
    a, b = rng
    ev, tm = float(c[a:b + 1].sum()), float(t[a:b + 1].sum())
    lo, hi = core(c, t, a, b)
    core_ev, core_tm = float(c[lo:hi + 1].sum()), float(t[lo:hi + 1].sum())
    return Band(a, b, a + int(np.argmax(c[a:b + 1])), float(low_s[lo]), float(high_s[hi]), ev, tm,
                ev / total_c if total_c > 0 else 0.0, tm / total_t if total_t > 0 else 0.0,
                core_ev / total_c if total_c > 0 else 0.0, core_tm / total_t if total_t > 0 else 0.0, high_slot=hi)


def find_bands(
    counts_1d: np.ndarray,
    time_1d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    *,
    max_valley_ratio: float = MAX_VALLEY_RATIO,
    min_valley_z: float = MIN_VALLEY_Z,
    min_band_share: float = MIN_BAND_SHARE,
    deep_valley_ratio: float = DEEP_VALLEY_RATIO,
    min_band_time_share: float = MIN_BAND_TIME_SHARE,
    gap_alpha: float = GAP_ALPHA,
    fast_gap_alpha: float = FAST_GAP_ALPHA,
) -> list[Band]:
    """Bands of one histogram, fastest first; `time_1d` None estimates time from bucket midpoints."""
    c, t, total_c, total_t = counts_and_time(counts_1d, time_1d, low_s, high_s)
    if total_c <= 0:
        return []
    ranges = _ranges(c, split_points(c, max_valley_ratio=max_valley_ratio, min_valley_z=min_valley_z,
                                     deep_valley_ratio=deep_valley_ratio, gap_alpha=gap_alpha,
                                     fast_gap_alpha=fast_gap_alpha))
    while len(ranges) > 1:
        ev = np.array([c[a:b + 1].sum() for a, b in ranges]) / total_c
        tm = np.array([t[a:b + 1].sum() for a, b in ranges]) / (total_t if total_t > 0 else 1.0)
        tiny = np.flatnonzero((ev < min_band_share) & (tm < min_band_time_share))
        if tiny.size == 0:
            break
        k = int(tiny[np.argmin(ev[tiny] + tm[tiny])])
        j = _closer_neighbour(c, ranges, k)
        lo, hi = min(k, j), max(k, j)
        ranges[lo:hi + 1] = [(ranges[lo][0], ranges[hi][1])]
    return [_make_band(r, c, t, low_s, high_s, total_c, total_t) for r in ranges]


def _closer_neighbour(c: np.ndarray, ranges: list[tuple[int, int]], k: int) -> int:
    """Index of the neighbouring range across the shallower gap (higher valley relative to peaks)."""
    if k == 0:
        return 1
    if k == len(ranges) - 1:
        return k - 1

    def gap(i: int, j: int) -> float:
        (a0, a1), (b0, b1) = ranges[i], ranges[j]
        valley = min(c[a1], c[b0]) if b0 == a1 + 1 else 0.0
        return valley / max(min(c[a0:a1 + 1].max(), c[b0:b1 + 1].max()), 1e-300)

    return k - 1 if gap(k - 1, k) >= gap(k, k + 1) else k + 1


def significant_bands(bands: list[Band], *, min_events_share: float = MIN_EVENTS_SHARE,
                      min_time_share: float = MIN_TIME_SHARE) -> list[Band]:
    """Bands holding a meaningful share of the events or of the time."""
    return [b for b in bands if b.events_share >= min_events_share or b.time_share >= min_time_share]


def is_bimodal(bands: list[Band], *, min_events_share: float = MIN_EVENTS_SHARE,
               min_time_share: float = MIN_TIME_SHARE) -> bool:
    """True when two or more bands each hold >= `min_events_share` of events or >= `min_time_share` of time."""
    return len(significant_bands(bands, min_events_share=min_events_share, min_time_share=min_time_share)) >= 2
