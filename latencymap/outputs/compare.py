"""`latencymap diff`: what changed between a baseline and a candidate, stream by stream.

Streams are paired by identity (label, datasource, unit); when each side has exactly one stream
they are paired whatever their labels. Each side's whole history is pooled into one histogram.
Buckets are matched by their range in seconds; a pair in two units (whose rows never line up: `[1 ms, 2 ms)` against
`[1.024 ms, 2.048 ms)`) has the candidate's buckets cut at the baseline's rows (`onto_rows`: log-uniform, the bucket
shares estimates; tested only beyond where its values may lie, JSON `candidate_rebinned`). A side whose rows are placed
within its source's own buckets (a `.hgrm`'s percentile points, Prometheus' bounds) is tested on what those buckets
observe (`compare_cells`, JSON `rows_placed`), its bucket shares estimates.

Per pair: each bucket's share of the events (frequency share) and of the time (time share) on
both sides and the change in percentage points; percentile and mean deltas and ratios (the report's: a rebinned or
HdrHistogram stream's from its source's own buckets, `stream_total`; one in the open top bucket, its values not
known, is that bucket's low, written `≥low`, its sides listed under `open`, its change a bound or, where the bounds
cannot tell it (both sides bounds, or `≥100ms → 150ms`: risen or fallen), not told, JSON `delta_s` and `ratio` null;
one in a single bucket of the source's on both sides, equal: `same_bucket_s`);
the shift
in octaves (`log2(candidate / baseline)`) of the median and of the mean log2 latency (`locations`: the source's own
buckets where finer than the rows, else rows placed by the exact sums, else exact bucket means, else the rows'
centres; `shift_test` counts the spread each bucket leaves its events); bands found
in the candidate near no baseline band (`_near`: within an octave) ("appeared"), and the reverse ("vanished"); a
band present on both sides (each side's one band near the other's one) whose share of the events or of the time
changed a lot
("changed": at least ×`BAND_CHANGE_RATIO` either way, by at least `BAND_MIN_EVENTS_CHANGE` of the events or
`BAND_MIN_TIME_CHANGE` of the time), such as a slow band that went from 1% to 4% of the events; and one whose values
moved (`bands_moved`: `BAND_MIN_MOVE_OCTAVES` or more beyond chance), such as a slow band from 3.5 ms to 7 ms. The
bands are listed for a changed pair only: an unchanged one's differ within chance, or by too little.
Each side says what its values measure where its reader knows them to be something else than its datasource's
(`measures`: "jhiccup", a jHiccup log's hiccups, whose time is jHiccup's sum of them, not time waited; null otherwise,
also where its input says nothing of it, as a `--compat` recording): a pair whose sides differ says so.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from latencymap.analysis.bands import Band
from latencymap.analysis.findings import why
from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator, StreamHistory
from latencymap.core.bucket_cells import reached
from latencymap.core.buckets import percentile_duration
from latencymap.core.model import StreamId
from latencymap.core.percentiles import PERCENTILE_NAMES
from latencymap.core.sanitize import clean_text
from latencymap.core.source_totals import SourceTotals, bound_seconds
from latencymap.core.units import format_duration, format_number, plural, unit_seconds
from latencymap.outputs.compare_cells import observed_test
from latencymap.outputs.compare_rows import onto_rows, same_rows
from latencymap.outputs.report import gap_count, intervals_words, read_errors, read_notes, source_use, stream_total

#: Share changes below this (absolute, as a fraction) count as no change.
EPSILON = 1e-9
_STATS = (*PERCENTILE_NAMES.values(), "mean")
#: A band on both sides changed when its share of the events, or of the time, grew or shrank at least this many times
#: ...
BAND_CHANGE_RATIO = 2.0
#: ... by at least this much of the events (1 percentage point), or of the time (10 points): noise in a band of 0.1%
#: or a minor band's time is no change.
BAND_MIN_EVENTS_CHANGE = 0.01
BAND_MIN_TIME_CHANGE = 0.10
#: A band on both sides moved when its mean log2 latency moved at least this much (octaves, ×1.41) beyond chance: half
#: the octave within which two bands are one (`_near`), beyond where two runs of one system put a band (the whole
#: stream's mean needs 0.1 octave, `MIN_SHIFT_OCTAVES`; a band of few events wobbles more), yet well under the ×2
#: a slow path that doubled is (130 µs → 140 µs, ×1.08, is no move).
BAND_MIN_MOVE_OCTAVES = 0.5


#: A pair changed only when its bucket counts differ beyond chance (a G-test of the two sides' events per bucket, p
#: below this; or, for a shift, its mean log2 latency, `shift_test`) ...
ALPHA = 0.001
#: ... by at least this much: a shift of the event-weighted mean log2 latency (octaves), a bucket's share of the
#: events (1 percentage point) or of the time (5 points), or a band that appeared, vanished or changed. Two samples
#: of one distribution differ by chance, and two runs of one system by more than chance.
MIN_SHIFT_OCTAVES = 0.1
MIN_EVENTS_SHARE_CHANGE = 0.01
MIN_TIME_SHARE_CHANGE = 0.05
#: The event rate changed when the two sides' events per second differ beyond chance (both sides' events as Poisson
#: counts over their time observed, p below `ALPHA`) by at least this ratio either way.
MIN_RATE_RATIO = 1.1


#: Where a bucket expects fewer events than this on a side (Cochran's rule), G's chi-square tail is too thin to trust
#: (10 events a side in 3 buckets read p = 0.0004, beyond chance): `g_test` then draws ...
FEW_EXPECTED = 5
#: ... this many tables of the same bucket totals and sides (seeded: the same counts give the same p), its p the
#: share of them whose G is as large (no less than 1 / (DRAWS + 1)).
DRAWS = 10_000
#: Tables of more events than this are drawn no more (float sums; such a table's few sparse buckets hardly matter).
MOST_DRAWN = 10**9


def g_test(base: Sequence[float], cand: Sequence[float]) -> tuple[float, int, float]:
    """(G, degrees of freedom, p): whether two sides' events per bucket come from one distribution (the likelihood
    ratio test of a 2 x K table; buckets empty on both sides left out). Its p is G's chi-square tail, or where a
    bucket expects few events (`FEW_EXPECTED`) and the counts are whole, that of tables drawn with the same totals
    (`DRAWS`). Counts may be fractions (a side's on the other's rows, `onto_rows`)."""
    rows = [(b, c) for b, c in zip(base, cand, strict=True) if b or c]
    nb, nc = sum(b for b, _ in rows), sum(c for _, c in rows)
    if len(rows) < 2 or not nb or not nc:
        return 0.0, 0, 1.0
    n = nb + nc
    g = 0.0
    for b, c in rows:
        total = b + c
        for seen, side in ((b, nb), (c, nc)):
            if seen:
                g += seen * math.log(seen * n / (total * side))
    g = max(2 * g, 0.0)
    df = len(rows) - 1
    totals = [b + c for b, c in rows]
    few = min(totals) * min(nb, nc) / n < FEW_EXPECTED
    if few and n <= MOST_DRAWN and all(float(v).is_integer() for row in rows for v in row):
        return g, df, _drawn_p(g, [int(t) for t in totals], int(nb))
    return g, df, chi2_sf(g, df)


def _drawn_p(g: float, totals: list[int], base: int) -> float:
    """The share of `DRAWS` tables of these bucket `totals`, `base` events of them the baseline's (hypergeometric: the
    two sides one distribution), whose G is at least `g` (one more on both sides: the table itself)."""
    col = np.asarray(totals, dtype=np.int64)
    drawn = np.random.default_rng(0).multivariate_hypergeometric(col, base, size=DRAWS).astype(np.float64)
    n, cand = float(col.sum()), float(col.sum()) - base
    # G = 2 (sum of x ln x over the table's cells - sum of C ln C over buckets - each side's N ln (N / n)): with the
    # margins fixed only the cells' x ln x vary from table to table
    cells = drawn * np.log(np.maximum(drawn, 1)) + (col - drawn) * np.log(np.maximum(col - drawn, 1))
    fixed = float((col * np.log(np.maximum(col, 1))).sum()) + base * math.log(base / n) + cand * math.log(cand / n)
    beyond = int((2 * (cells.sum(axis=1) - fixed) >= g * (1 - 1e-9)).sum())
    return (beyond + 1) / (DRAWS + 1)


def rate_test(events: tuple[int, int], seconds: tuple[float, float]) -> float:
    """p of the two sides' event rates being one (each side's events Poisson over its `seconds`: given their sum,
    the candidate's are binomial; a normal approximation with continuity correction, two-sided)."""
    n = events[0] + events[1]
    if n == 0 or not (seconds[0] > 0 and seconds[1] > 0):
        return 1.0
    share = seconds[1] / (seconds[0] + seconds[1])
    sd = math.sqrt(n * share * (1 - share))
    z = max(abs(events[1] - n * share) - 0.5, 0.0) / sd
    return math.erfc(z / math.sqrt(2))


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with `df` degrees of freedom (the regularised upper incomplete gamma function)."""
    if x <= 0 or df <= 0:
        return 1.0
    a, y = df / 2, x / 2
    log_front = a * math.log(y) - y - math.lgamma(a)
    if y < a + 1:  # the series of the lower function
        term = total = 1 / a
        k = a
        while abs(term) > abs(total) * 1e-15:
            k += 1
            term *= y / k
            total += term
        return max(0.0, 1 - total * math.exp(log_front))
    tiny = 1e-300  # Lentz's continued fraction of the upper function
    b = y + 1 - a
    c, d = 1 / tiny, 1 / b
    f = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        f *= step
        if abs(step - 1) < 1e-15:
            break
    return min(1.0, f * math.exp(log_front))


def pair_streams(base: Accumulator, cand: Accumulator) -> tuple[list[tuple[StreamHistory, StreamHistory]],
                                                                  list[StreamHistory], list[StreamHistory]]:
    """(pairs, only in baseline, only in candidate): streams paired by identity, or the only stream of each side
    whatever its identity (`compare` says so)."""
    b, c = list(base.streams.values()), list(cand.streams.values())
    if len(b) == 1 and len(c) == 1:
        return [(b[0], c[0])], [], []
    by_id = {h.stream: h for h in c}
    pairs = [(h, by_id.pop(h.stream)) for h in b if h.stream in by_id]
    paired = {id(p[0]) for p in pairs}
    return pairs, [h for h in b if id(h) not in paired], list(by_id.values())


def _pooled(hist: StreamHistory) -> dict[tuple[float, float], tuple[int, float]]:
    """{(low, high): (events, time)} of every bucket with events over the whole history; events as Python integers,
    exact past 2**53 (as `report` counts them), never rounded through floats."""
    counts = hist.counts.sum(axis=0)
    times = hist.time.sum(axis=0)
    return {(float(hist.low[s]), float(hist.high[s])): (int(counts[s]), float(times[s]))
            for s in np.flatnonzero(counts)}


def _sums(pooled: dict[tuple[float, float], tuple[int, float]]) -> tuple[int, float]:
    """(events, time) of a pooled history."""
    return sum(v[0] for v in pooled.values()), sum(v[1] for v in pooled.values())


def _centres(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Geometric centres of buckets `[low, high)`; one from 0 at half its top."""
    return np.where(low > 0, np.sqrt(low * high), high / 2)


def _octaves_wide(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """How many octaves buckets `[low, high)` span: one from 0 as one octave (`_centres` puts it at half its top, as
    `core.rebin`'s rule reads it), one of a single value none."""
    with np.errstate(divide="ignore", invalid="ignore"):
        wide = np.log2(high / low)
    return np.where(low > 0, wide, np.where(high > 0, 1.0, 0.0))


#: Where a side's events lie (`locations`): values (s), the events at each, and how many octaves of its buckets each
#: value's events may spread over (its bucket, or the part of it they are known to lie in).
Where = tuple[np.ndarray, np.ndarray, np.ndarray]


def locations(hist: StreamHistory, source: SourceTotals | None, events: int) -> Where:
    """(values in seconds, events at each, octaves wide): where the stream's `events` lie, as finely as it says, and
    how wide the buckets they lie in are (`_octaves_wide`: what the values cannot tell). Its source's own buckets
    where they hold every event (as its percentiles come from them) and are finer than the rows: each one holding
    events (within the values seen; an overflow bucket at its low) no wider than the row its low end lies in
    (HdrHistogram's sub-buckets; an OpenTelemetry bucket narrowed by its min and max), each at its geometric centre.
    Coarser ones, with every interval's exact sum, place each column's rows by that sum (`_placed_by_sums`): a bucket
    (250 ms, 1 s] holding 280–320 ms or 850–950 ms has one centre and spreads over the same rows, but not the same
    sum. Else in each column of exact times, each bucket's mean; else each row's geometric centre. The log2 rows
    alone place 66 µs and 130 µs at one centre."""
    counts = hist.counts
    if source is not None and source_use(source, events, hist.n)[0]:
        bounds = np.asarray(source.bounds, dtype=np.float64)
        low, upper = np.concatenate(([0.0], bounds[:-1])), bounds
        if source.least is not None and source.most is not None:
            low, upper = np.clip(low, source.least, source.most), np.clip(upper, source.least, source.most)
        high = np.where(np.isinf(upper), low, upper)
        scale = unit_seconds(hist.stream.unit)
        held = source.counts > 0
        row = np.minimum(np.searchsorted(hist.high, low[held] * scale, side="right"), len(hist.high) - 1)
        finer = ((high[held] - low[held]) * scale <= hist.high[row] - hist.low[row]).all()
        if (high[held] > 0).all():  # (a first bucket up to 0 or below: no log2 of it; the rows say where)
            if finer:
                return (_centres(low, high)[held] * scale, source.counts[held].astype(np.float64),
                        _octaves_wide(low, high)[held])
            if source.timed:
                value, wide = _placed_by_sums(hist, low[held] * scale, upper[held] * scale)
                return (value[counts > 0], counts[counts > 0].astype(np.float64),
                        np.broadcast_to(wide, counts.shape)[counts > 0])
    held = counts > 0
    value = np.broadcast_to(_centres(hist.low, hist.high), counts.shape)
    exact = hist.exact_columns()
    if exact.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.clip(hist.time / counts, hist.low, hist.high)
        value = np.where(exact[:, None] & held & (mean > 0), mean, value)
    wide = np.broadcast_to(_octaves_wide(hist.low, hist.high), counts.shape)
    return value[held], counts[held].astype(np.float64), wide[held]


def _placed_by_sums(hist: StreamHistory, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((columns, rows) values (s), octaves wide per row): each column's rows' geometric centres moved by one factor,
    each kept within the source's buckets holding events that its row overlaps (`low`, `high`, s), the factor the one
    whose values add up to the column's exact time (bisection of its log2, which the sum grows with); the centres
    where a column has no time. What the column's sum says of where its events lie, and no more: each still in its
    own buckets, anywhere in the part of its row they overlap (how wide that is)."""
    counts, time = hist.counts.astype(np.float64), hist.time.sum(axis=1)
    centre = _centres(hist.low, hist.high)
    over = (low[:, None] < hist.high[None, :]) & (high[:, None] > hist.low[None, :])
    floor = np.where(over, low[:, None], np.inf).min(axis=0)
    top = np.where(over, high[:, None], -np.inf).max(axis=0)
    floor, top = np.where(over.any(axis=0), floor, 0.0), np.where(over.any(axis=0), top, np.inf)
    lo, hi = np.full(len(time), -64.0), np.full(len(time), 64.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        total = (counts * np.clip(centre * np.exp2(mid)[:, None], floor, top)).sum(axis=1)
        lo, hi = np.where(total < time, mid, lo), np.where(total < time, hi, mid)
    moved = np.where((time > 0) & (counts.sum(axis=1) > 0), (lo + hi) / 2, 0.0)
    wide = _octaves_wide(*reached(low, high, np.ones(len(low), dtype=bool), np.append(hist.low, hist.high[-1])))
    return np.clip(centre * np.exp2(moved)[:, None], np.maximum(floor, 1e-300), top), wide


def _log2_location(where: Where) -> tuple[float, float, float]:
    """(mean, sum of squares, events) of the events' log2 latency (`locations`); NaN with no events. Each event's
    square is its value's from the mean plus the most its bucket's spread can add (`(octaves wide / 2)²`: half its
    events at either end): the mean says where a bucket's events lie on average, not how far apart."""
    values, events, wide = where
    total = float(events.sum())
    if total <= 0:
        return math.nan, math.nan, 0.0
    log2 = np.log2(values)
    mean = float((events * log2).sum() / total)
    return mean, float((events * ((log2 - mean) ** 2 + (wide / 2) ** 2)).sum()), total


def shift_test(base: Where, cand: Where) -> tuple[float, float]:
    """(shift in octaves, p): how far the candidate's mean log2 latency moved from the baseline's (`locations`), and
    the p of it being chance (two samples' means, Student's t with the two sides' pooled variance, each bucket's
    spread in it: `_log2_location`; two-sided). Two events, one a side, tell no spread: p 1. Sides of exact values
    (buckets of one value), each all one value, differ beyond chance as soon as they differ."""
    (mb, sb, nb), (mc, sc, nc) = _log2_location(base), _log2_location(cand)
    shift = mc - mb
    df = nb + nc - 2
    if math.isnan(shift) or df <= 0:
        return shift, 1.0
    var = (sb + sc) / df * (1 / nb + 1 / nc)
    if var <= 0:
        return shift, 0.0 if abs(shift) > EPSILON else 1.0
    return shift, t_test_p(abs(shift) / math.sqrt(var), df)


#: Past this many degrees of freedom Student's t is the normal distribution (its p 0.02% more at t = 5, 0.1% at 8).
_NORMAL_DF = 1e6


def t_test_p(t: float, df: float) -> float:
    """Two-sided p of Student's t with `df` degrees of freedom, P(|T| >= t): the regularised incomplete beta function
    `I_x(df/2, 1/2)`, `x = df / (df + t²)`; the normal distribution's past `_NORMAL_DF`."""
    if df > _NORMAL_DF:
        return math.erfc(t / math.sqrt(2))
    return beta_inc(df / 2, 0.5, df / (df + t * t))


def beta_inc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function `I_x(a, b)` (its continued fraction, on the side where it converges
    fast)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return min(1.0, front * _beta_fraction(a, b, x) / a)
    return max(0.0, 1 - front * _beta_fraction(b, a, 1 - x) / b)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of `I_x(a, b)` (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (tiny if abs(d) < tiny else d)
    f = d
    for m in range(1, 100_000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (tiny if abs(d) < tiny else d)
            c = 1 + num / c
            c = tiny if abs(c) < tiny else c
            f *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return f


def _stats(hist: StreamHistory, source: SourceTotals | None) -> tuple[dict[str, float], set[str],
                                                                      dict[str, tuple[float, ...]]]:
    """Percentiles and mean (s) as the report gives them (`stream_total`: a rebinned or HdrHistogram stream's from
    its source's own buckets, `source`), the percentiles that are a lower bound only (`open`: in the open top
    bucket, its values not known), and where they come from a finite bucket of the source's, that bucket (low, high)
    and the part of it where the percentile can lie (low, high: narrowed to the values seen, `known_range`, as the
    percentile is; s): the source tells nothing finer. An overflow bucket (`+Inf`) is none: its values are not
    bounded by its bounds."""
    totals = hist.totals()
    total = stream_total(totals, source, hist.stream.unit, hist.n)
    out = {k: total[f"{k}_s"] for k in _STATS}
    at_least = {k for k in _STATS if f"{k}_s" in total.get("open", ())}
    within = {}
    if source is not None and source_use(source, totals.events, hist.n)[0]:
        scale = unit_seconds(hist.stream.unit)
        for q, k in PERCENTILE_NAMES.items():
            i = source.rank_bucket(q)
            if not math.isinf(source.bounds[i]):
                within[k] = tuple(bound_seconds(b, scale) for b in
                                  (source.bounds[i - 1] if i else 0.0, source.bounds[i], *source.known_range(i)))
    return {k: math.nan if v is None else float(v) for k, v in out.items()}, at_least, within


def _open_sides(base: bool, cand: bool) -> dict[str, list[str]]:
    """`{"open": [sides]}`: the sides whose statistic is a lower bound only (the open top bucket's low, as the
    report's `total.open`); nothing when neither is."""
    sides = [side for side, bound in (("baseline", base), ("candidate", cand)) if bound]
    return {"open": sides} if sides else {}


def _change(base: float, cand: float, base_open: bool, cand_open: bool,
            within: tuple[tuple[float, ...] | None, tuple[float, ...] | None] = (None, None)) -> dict[str, Any]:
    """`delta_s` and `ratio` of a statistic: a bound where one side is a lower bound only (`open`: at most where the
    baseline's is, at least where the candidate's is); None where the bounds cannot tell the change (both sides
    bounds, or a bound that leaves its sign open: `≥100ms → 150ms` may have risen or fallen). Both sides in one
    finite bucket of their sources' (`within`, `_stats`), where each can lie in parts of it that overlap, are equal
    as far as the sources tell (`same_bucket_s`, the bucket): where the straight line through it puts each is the
    other buckets' counts, not a change (`100µs → 100µs +3.56ns`). Values seen that keep them apart (280–320 ms and
    850–950 ms in one bucket up to 1 s) are a change."""
    delta = cand - base
    if (base_open and cand_open) or (base_open and delta > 0) or (cand_open and delta < 0):
        return {"delta_s": None, "ratio": None}
    b, c = within
    if (delta and b is not None and c is not None and b[:2] == c[:2] and max(b[2], c[2]) <= min(b[3], c[3])
            and not (base_open or cand_open) and base):
        return {"delta_s": 0.0, "ratio": 1.0, "same_bucket_s": list(b[:2])}
    return {"delta_s": _num(delta), "ratio": _num(cand / base) if base else None}


def _num(v: float) -> float | None:
    return None if v is None or math.isnan(v) or math.isinf(v) else float(v)


def _octaves(new: float, old: float) -> float:
    if not (new > 0 and old > 0):
        return math.nan
    return math.log2(new / old)


def _in_band(band: Band, where: Where) -> Where:
    """The values of `where` (`locations`) that a band's range holds, the events at each and their octaves wide."""
    inside = (where[0] >= band.low_s) & (where[0] < band.high_s)
    return where[0][inside], where[1][inside], where[2][inside]


def _extent(band: Band, where: Where) -> tuple[float, float]:
    """(smallest, largest) of the values a band's range holds (`locations`); the range itself where none is known."""
    values = _in_band(band, where)[0]
    return (float(values.min()), float(values.max())) if values.size else (band.low_s, band.high_s)


def _near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two bands (`_extent`s) are one population moved less than an octave (the rows' width: bands of one
    side lie two apart), not a band that came or went: 130 µs and 140 µs are one band, though a row edge (131 µs)
    lies between them."""
    return a[0] < 2 * b[1] and b[0] < 2 * a[1]


def _share_changed(old: float, new: float, least: float) -> bool:
    """True when a share went from `old` to `new` by at least `BAND_CHANGE_RATIO` times either way and `least`."""
    low, high = min(old, new), max(old, new)
    return high - low >= least and high >= BAND_CHANGE_RATIO * low


def _matched(base: list[Band], cand: list[Band], near: dict[tuple[int, int], bool]) -> list[tuple[Band, Band]]:
    """The bands present on both sides: a baseline band and the one candidate band near it (`near[(i, j)]` for the
    i-th baseline and j-th candidate band), which is near no other baseline band."""
    out = []
    for i, b in enumerate(base):
        over = [j for j in range(len(cand)) if near[i, j]]
        if len(over) == 1 and sum(near[k, over[0]] for k in range(len(base))) == 1:
            out.append((b, cand[over[0]]))
    return out


def _unmatched(base: list[Band], cand: list[Band],
               near: dict[tuple[int, int], bool]) -> tuple[list[Band], list[Band]]:
    """(appeared, vanished): the candidate's bands near no baseline band, and the baseline's near no candidate band."""
    return ([c for j, c in enumerate(cand) if not any(near[i, j] for i in range(len(base)))],
            [b for i, b in enumerate(base) if not any(near[i, j] for j in range(len(cand)))])


def bands_changed(base: list[Band], cand: list[Band], near: dict[tuple[int, int], bool]) -> list[dict[str, Any]]:
    """The bands present on both sides (`_matched`) whose share of the events or of the time changed a lot
    (`_share_changed`), the largest change of the time share first. The band of most events on both sides is left
    out when another band changed, appeared or vanished: its shares only make room for that one's."""
    out, main = [], None
    for b, c in _matched(base, cand, near):
        if _share_changed(b.events_share, c.events_share, BAND_MIN_EVENTS_CHANGE) or \
                _share_changed(b.time_share, c.time_share, BAND_MIN_TIME_CHANGE):
            out.append({"baseline": b.to_json(), "candidate": c.to_json(),
                        "events_share_change": c.events_share - b.events_share,
                        "time_share_change": c.time_share - b.time_share})
            if b is max(base, key=lambda x: x.events) and c is max(cand, key=lambda x: x.events):
                main = out[-1]
    if main is not None and (len(out) > 1 or any(_unmatched(base, cand, near))):
        out.remove(main)
    return sorted(out, key=lambda x: -abs(x["time_share_change"]))


def bands_moved(base: list[Band], cand: list[Band], near: dict[tuple[int, int], bool],
                where: tuple[Where, Where]) -> list[dict[str, Any]]:
    """The bands present on both sides (`_matched`) whose mean log2 latency (of the values each one's range holds,
    `locations`) moved `BAND_MIN_MOVE_OCTAVES` or more beyond chance (`shift_test`, p below `ALPHA`): `octaves`,
    `ratio` (2 ** octaves) and `p`, the largest move first."""
    out = []
    for b, c in _matched(base, cand, near):
        octaves, p = shift_test(_in_band(b, where[0]), _in_band(c, where[1]))
        if abs(octaves) >= BAND_MIN_MOVE_OCTAVES and p < ALPHA:
            out.append({"baseline": b.to_json(), "candidate": c.to_json(), "octaves": octaves,
                        "ratio": 2**octaves, "p": p})
    return sorted(out, key=lambda x: -abs(x["octaves"]))


def _rate(base: StreamHistory, cand: StreamHistory, events: tuple[int, int], untimed: bool) -> dict[str, Any] | None:
    """Each side's events per second observed and whether the rate changed (`rate_test`, `MIN_RATE_RATIO`); None
    when a side's columns carry no time of their own (`untimed`) or cover none."""
    seconds = base.totals().duration_s, cand.totals().duration_s
    if untimed or not (seconds[0] > 0 and seconds[1] > 0):
        return None
    per_s = events[0] / seconds[0], events[1] / seconds[1]
    ratio = per_s[1] / per_s[0] if per_s[0] else None
    p = rate_test(events, seconds)
    big = ratio is None or not (1 / MIN_RATE_RATIO < ratio < MIN_RATE_RATIO)
    return {"baseline_per_s": per_s[0], "candidate_per_s": per_s[1], "ratio": ratio, "p": p,
            "changed": bool(p < ALPHA and big and (events[0] or events[1]))}


def compare_streams(base: StreamHistory, cand: StreamHistory,
                    sources: tuple[SourceTotals | None, SourceTotals | None], untimed: bool = False) -> dict[str, Any]:
    """The JSON object of one pair (see the module docstring); `sources`, each side's own buckets where its source
    has them, over its columns kept (`Accumulator.kept_source`); `untimed`, whether a side's columns carry no time of
    their own (no rates)."""
    pb, pc = _pooled(base), _pooled(cand)
    (eb, tb), (ec, tc) = _sums(pb), _sums(pc)
    rebinned = not same_rows(base, cand)  # another unit: the candidate's buckets on the baseline's rows
    closest = None
    on_rows = cand.counts.sum(axis=0), cand.time.sum(axis=0)  # the candidate's events and time per baseline row
    if rebinned:
        on = onto_rows(cand, base)
        pc = {(float(base.low[r]), float(base.high[r])): (k, float(on.time[r])) for r, k in enumerate(on.events) if k}
        closest = on.closest_events, on.closest_time
        on_rows = np.asarray(on.events), on.time
    buckets = []
    for key in sorted(set(pb) | set(pc)):
        cb, sb = pb.get(key, (0, 0.0))
        cc, sc = pc.get(key, (0, 0.0))
        fb, fc = (cb / eb if eb else 0.0), (cc / ec if ec else 0.0)
        xb, xc = (sb / tb if tb else 0.0), (sc / tc if tc else 0.0)
        buckets.append({"low": key[0], "high": key[1], "baseline_events": cb, "candidate_events": cc,
                        "baseline_events_share": fb, "candidate_events_share": fc, "events_share_change": fc - fb,
                        "baseline_time_share": xb, "candidate_time_share": xc, "time_share_change": xc - xb})
    (sb_, ob, wb), (sc_, oc, wc) = _stats(base, sources[0]), _stats(cand, sources[1])
    stats = {k: {"baseline_s": _num(sb_[k]), "candidate_s": _num(sc_[k]),
                 **_change(sb_[k], sc_[k], k in ob, k in oc, (wb.get(k), wc.get(k))), **_open_sides(k in ob, k in oc)}
             for k in _STATS}
    where = locations(base, sources[0], eb), locations(cand, sources[1], ec)
    db, dc = stream_diagnosis(base, sources[0]), stream_diagnosis(cand, sources[1])
    near = {(i, j): _near(_extent(b, where[0]), _extent(c, where[1]))
            for i, b in enumerate(db.bands) for j, c in enumerate(dc.bands)}
    came, went = _unmatched(db.bands, dc.bands, near)
    appeared, vanished = [c.to_json() for c in came], [b.to_json() for b in went]
    grown = bands_changed(db.bands, dc.bands, near)
    moved = bands_moved(db.bands, dc.bands, near, where)
    shift, shift_p = shift_test(*where)
    observed = observed_test(base, cand, sources)
    if observed is not None:  # a side's rows placed within its source's buckets: what those observe is tested
        tested = observed.cells
        estimated = (base.counts.sum(axis=0), base.time.sum(axis=0)), on_rows
        events_change, time_change = _changes(observed.rows, estimated, _centres(base.low, base.high))
    elif closest is None:
        tested = ([int(b["baseline_events"]) for b in buckets], [int(b["candidate_events"]) for b in buckets])
        events_change = [abs(b["events_share_change"]) for b in buckets]
        time_change = [abs(b["time_share_change"]) for b in buckets]
    else:  # the candidate's counts on the baseline's rows as near the baseline's as its buckets allow
        counts, times = base.counts.sum(axis=0), base.time.sum(axis=0)
        tested = (counts.tolist(), closest[0].tolist())
        events_change = np.abs(closest[0] / (ec or 1) - counts / (eb or 1)).tolist()
        time_change = np.abs(closest[1] / (tc or 1) - times / (tb or 1)).tolist()
    g, df, p = g_test(*tested)
    effect = [what for what, big in (
        ("shift", abs(shift) >= MIN_SHIFT_OCTAVES),
        ("events_share", max(events_change, default=0.0) >= MIN_EVENTS_SHARE_CHANGE),
        ("time_share", max(time_change, default=0.0) >= MIN_TIME_SHARE_CHANGE),
        ("bands", bool(appeared or vanished or grown or moved))) if big]
    rate = _rate(base, cand, (eb, ec), untimed)
    # a shift inside one row leaves the rows' counts alike: its own test (of the mean log2 latency) tells it too, and
    # a band's move its own (`bands_moved`)
    changed = ((p < ALPHA and bool(effect)) or ("shift" in effect and shift_p < ALPHA) or bool(moved)
               or bool(rate and rate["changed"]))
    if not changed:  # an unchanged pair's bands differ within chance or by too little: none came, went or changed
        appeared, vanished, grown = [], [], []
    return {
        "baseline": _identity(base, eb, tb), "candidate": _identity(cand, ec, tc),
        "candidate_rebinned": rebinned,
        "rows_placed": [] if observed is None else observed.placed,
        "changed": changed,
        "test": {"g": g, "df": df, "p": p, "shift_p": shift_p, "alpha": ALPHA, "effects": effect},
        "rate": rate,
        "shift_octaves": _num(shift),
        "median_shift_octaves": _num(_octaves(sc_["p50"], sb_["p50"])),
        "percentiles": stats,
        "buckets": buckets,
        "bands_appeared": appeared,
        "bands_vanished": vanished,
        "bands_changed": grown,
        "bands_moved": moved,
        "bimodal": {"baseline": db.bimodal, "candidate": dc.bimodal},
    }


def _changes(rows: tuple[np.ndarray, np.ndarray], estimated: tuple[tuple[np.ndarray, np.ndarray], ...],
             centres: np.ndarray) -> tuple[list[float], list[float]]:
    """(events' share change, time's share change) per row of the two sides' events taken as near as their buckets
    allow (`Observed.rows`): each row's events at its estimated time per event (`estimated`: each side's events and
    time per row; a row it puts none in, its centre)."""
    shares, times = [], []
    for taken, (events, time) in zip(rows, estimated, strict=True):
        with np.errstate(divide="ignore", invalid="ignore"):
            each = np.where(events > 0, time / events, centres)
        spent = taken * each
        shares.append(taken / (taken.sum() or 1))
        times.append(spent / (spent.sum() or 1))
    return np.abs(shares[1] - shares[0]).tolist(), np.abs(times[1] - times[0]).tolist()


def _identity(hist: StreamHistory, events: int, time_s: float) -> dict[str, Any]:
    s = hist.stream
    return {"label": s.label, "datasource": s.datasource, "unit": s.unit, "measures": hist.measures or None,
            "columns": hist.n, "gap_columns": gap_count(hist), "events": events, "time_s": time_s}


def compare(base: Accumulator, cand: Accumulator,
            untimed: tuple[Collection[StreamId], Collection[StreamId]] = ((), ())) -> dict[str, Any]:
    """The whole diff: pairs plus streams found on one side only (`untimed`: each side's streams whose columns carry
    no time of their own, whose rates are not known). A pair of two streams of different identities, the only
    stream of each side, says so (`paired_as`); a stream on one side only lists the other side's streams of its label
    (`same_label`: another unit or datasource)."""
    pairs, only_b, only_c = pair_streams(base, cand)
    out = []
    for b, c in pairs:
        pair = compare_streams(b, c, (base.kept_source(b), cand.kept_source(c)),
                               untimed=b.stream in untimed[0] or c.stream in untimed[1])
        if b.stream != c.stream:
            pair["paired_as"] = "the only stream of each side"
        out.append(pair)
    return {
        "pairs": out,
        "only_in_baseline": [_alone(h, only_c) for h in only_b],
        "only_in_candidate": [_alone(h, only_b) for h in only_c],
        "errors": {"baseline": read_errors(base), "candidate": read_errors(cand)},
    }


def _alone(hist: StreamHistory, others: list[StreamHistory]) -> dict[str, Any]:
    """A stream on one side only: its identity, and the other side's streams of its label (`others`: those on the
    other side only)."""
    same = [{"datasource": o.stream.datasource, "unit": o.stream.unit} for o in others
            if o.stream.label == hist.stream.label]
    return {**_identity(hist, *_sums(_pooled(hist))), **({"same_label": same} if same else {})}


def _pp(change: float) -> str:
    return f"{100 * change:+.1f}pp"


def compare_text(result: dict[str, Any]) -> str:
    """The diff for humans. With several pairs, a summary comes first (how many changed, each changed pair with how
    much, the most first); then the changed pairs in that order, then the unchanged ones, one line each."""
    pairs = result["pairs"]
    changed = sorted((p for p in pairs if p["changed"]), key=_how_much)
    several = len(pairs) > 1
    out = _summary(result, changed) if several else []
    if not pairs and (result["only_in_baseline"] or result["only_in_candidate"]):
        only = [f"{len(result[key]):,} only in the {side}" for key, side in
                (("only_in_baseline", "baseline"), ("only_in_candidate", "candidate")) if result[key]]
        out.append(f"Nothing compared: no stream is on both sides ({', '.join(only)}).")
    for pair in changed if several else pairs:
        out += _pair_lines(pair)
    if several:
        out += [f"{_heading(p)}  no change: {_events_text(p, short=True)}" for p in pairs if not p["changed"]]
    for key, side, other in (("only_in_baseline", "baseline", "candidate"),
                             ("only_in_candidate", "candidate", "baseline")):
        for s in result[key]:
            why = "; ".join(f"the {other}'s '{clean_text(s['label'])}' is {_kind(o, s)}"
                            for o in s.get("same_label", ()))
            out.append(f"== {clean_text(s['label']) or '(no label)'}: only in the {side}"
                       + (f" ({why})" if why else ""))
    if not out:
        out.append("No data on either side.")
    for side, errors in result["errors"].items():  # what reading each side skipped and said
        out += read_notes(errors["skipped_records"], errors["messages"], whose=f" ({side})",
                          left_out=errors.get("messages_left_out", 0))
    return "\n".join(out) + "\n"


def _kind(other: dict[str, Any], mine: dict[str, Any]) -> str:
    """How a stream of the same label on the other side differs: `millisec, not microsec`, and/or its datasource."""
    out = [f"{clean_text(other[key])}, not {clean_text(mine[key])}" for key in ("unit", "datasource")
           if other[key] != mine[key]]
    return " and ".join(out) or "another stream"


def _name(pair: dict[str, Any]) -> str:
    b, c = pair["baseline"], pair["candidate"]
    name = clean_text(c["label"]) or "(no label)"
    if b["label"] != c["label"]:
        name = f"{clean_text(b['label']) or '(no label)'} → {name}"
    return name


def _heading(pair: dict[str, Any]) -> str:
    b, c = pair["baseline"], pair["candidate"]
    return f"== {_name(pair)}  [{_both(b, c, 'datasource')}, {_both(b, c, 'unit')}]"


def _events_text(pair: dict[str, Any], short: bool = False) -> str:
    """The events and intervals of both sides; `short`, once when they are the same."""
    b, c = _counted(pair["baseline"]), _counted(pair["candidate"])
    return f"{b} on both sides" if short and b == c else f"baseline {b}; candidate {c}"


def _counted(side: dict[str, Any]) -> str:
    """`400 events in 4 intervals and 2 gaps`: one side's events and columns."""
    return f"{plural(int(side['events']), 'event')} in {intervals_words(side['columns'], side['gap_columns'])}"


def _moved(pair: dict[str, Any]) -> float:
    """The share of the events that changed bucket (half the summed share changes: what one side must move to
    become the other)."""
    return sum(abs(row["events_share_change"]) for row in pair["buckets"]) / 2


def _how_much(pair: dict[str, Any]) -> tuple[float, float, int, str]:
    """The order of changed pairs, the most first: by latency shift (either way), then by the events that changed
    bucket, then by the bands that came, went, changed or moved, each as the summary writes it (its last digits are
    noise); then by name."""
    shift = pair["shift_octaves"]
    return (-round(abs(shift) if shift is not None else 0.0, 2), -round(_moved(pair), 3),
            -sum(len(pair[f"bands_{what}"]) for what in _BAND_CHANGES), _name(pair))


#: What a band on one side or both did, as `compare_streams` lists them (`bands_<what>`).
_BAND_CHANGES = ("appeared", "vanished", "changed", "moved")


def _summary(result: dict[str, Any], changed: list[dict[str, Any]]) -> list[str]:
    """The lines before the pairs: how many changed, and each changed pair with how much, the most first."""
    pairs = result["pairs"]
    only = [f"{len(result[key]):,} only in the {side}" for key, side in
            (("only_in_baseline", "baseline"), ("only_in_candidate", "candidate")) if result[key]]
    head = f"{len(changed):,} of {plural(len(pairs), 'pair')} changed, {len(pairs) - len(changed):,} unchanged"
    out = [head + (f"; {', '.join(only)}" if only else "") + (":" if changed else "")]
    width = min(40, max((len(_name(p)) for p in changed), default=0))
    for pair in changed:
        shift, p99 = pair["shift_octaves"], pair["percentiles"]["p99"]
        rate = pair.get("rate")
        how = [f"{shift:+.2f} octaves ({_times(2 ** shift)})" if shift is not None else "no shift known",
               f"p99 {_dur(p99, 'baseline')} → {_dur(p99, 'candidate')}",
               f"{100 * _moved(pair):.1f}% of events changed bucket"]
        if rate is not None and rate["changed"] and rate["ratio"] is not None:
            how.append(f"rate {_times(rate['ratio'])}")
        how += [f"{plural(len(pair[f'bands_{what}']), 'band')} {what}" for what in _BAND_CHANGES
                if pair[f"bands_{what}"]]
        out.append(f"   {_name(pair):<{width}}  {', '.join(how)}")
    return [*out, ""]


def _pair_lines(pair: dict[str, Any]) -> list[str]:
    """One pair in full: its events, percentiles, bands and, when it changed, every bucket's shares."""
    out = [_heading(pair)]
    if "paired_as" in pair:
        b, c = pair["baseline"], pair["candidate"]
        out.append(f"   compared {_who(b, c)} (baseline) with {_who(c, b)} (candidate): the only stream of each")
    measured = _measured(pair)
    if measured:
        out.append(f"   {measured}")
    out.append(f"   {_events_text(pair)}")
    rate = pair.get("rate")
    if rate is not None:
        ratio = f" ({_times(rate['ratio'])})" if rate["ratio"] is not None else ""
        out.append(f"   rate {_per_s(rate['baseline_per_s'])} → {_per_s(rate['candidate_per_s'])}{ratio}"
                   f"{': changed' if rate['changed'] else ''}")
    if pair.get("candidate_rebinned"):
        b, c = pair["baseline"], pair["candidate"]
        out.append(f"   units differ: the candidate's {clean_text(c['unit'])} buckets cut at the baseline's "
                   f"{clean_text(b['unit'])} rows (log-uniform within each); tested only beyond where their values "
                   "may lie")
    placed = pair.get("rows_placed") or []
    if placed:
        whose = " and ".join(f"the {side}'s" for side in placed)
        out.append(f"   rows placed within {whose} own buckets (percentile points, bounds): tested only beyond where "
                   "their events may lie")
    out.append(f"   {_unchanged(pair) if not pair['changed'] else _changed(pair)}")
    shift = pair["shift_octaves"]
    if shift is not None and round(abs(shift), 2) > 0:
        out.append(f"   latency shifted {shift:+.2f} octaves ({_times(2 ** shift)}, event-weighted log2 mean)")
    for change in pair["bands_changed"]:  # a band's share is the summary words a shift of the mean can hide
        b, c = change["baseline"], change["candidate"]
        where = _span(c) if _span(b) == _span(c) else f"{_span(b)} → {_span(c)}"
        out.append(f"   band changed: {where}: {_shares(b, c, 'events_share')} of events, "
                   f"{_shares(b, c, 'time_share')} of the time")
    for move in pair["bands_moved"]:
        b, c = move["baseline"], move["candidate"]
        where = f"within {_span(c)}" if _span(b) == _span(c) else f"{_span(b)} → {_span(c)}"
        out.append(f"   band moved: {where} ({_times(move['ratio'])})")
    for k, s in pair["percentiles"].items():
        bound = _bound(s)
        ratio = f" ({bound}{_times(s['ratio'])})" if s["ratio"] is not None and bound is not None else ""
        delta = "" if s["delta_s"] is None or bound is None else \
            bound + _delta(s["delta_s"], s["baseline_s"], s["candidate_s"])
        if "same_bucket_s" in s:
            low, high = s["same_bucket_s"]
            delta, ratio = "=", f" (one bucket of the source's, {format_duration(high - low)} wide)"
        out.append(f"   {k:<5} {_dur(s, 'baseline'):>9} → {_dur(s, 'candidate'):>9}  {delta}{ratio}")
    for band in pair["bands_appeared"]:
        out.append(f"   band appeared: {_span(band)} ({100 * band['events_share']:.1f}% of events, "
                   f"{100 * band['time_share']:.1f}% of the time)")
    for band in pair["bands_vanished"]:
        out.append(f"   band vanished: {_span(band)} (was {100 * band['events_share']:.1f}% of events)")
    if pair["changed"]:
        out.append("   bucket                 %events (base → cand, change)      %time (base → cand, change)")
        for row in pair["buckets"]:
            rng = f"{format_duration(row['low'])}–{format_duration(row['high'])}"
            out.append(f"   {rng:<18} {100 * row['baseline_events_share']:6.2f}% → "
                       f"{100 * row['candidate_events_share']:6.2f}% {_pp(row['events_share_change']):>9}   "
                       f"{100 * row['baseline_time_share']:6.2f}% → {100 * row['candidate_time_share']:6.2f}% "
                       f"{_pp(row['time_share_change']):>9}")
    return out


def _measured(pair: dict[str, Any]) -> str:
    """`the baseline measures hiccups (...), nothing says the candidate does: unless it does too, the two sides measure
    different things` where the sides' values are said to measure different things (`measures`); "" where not."""
    sides = [(side, pair[side].get("measures")) for side in ("baseline", "candidate")]
    if sides[0][1] == sides[1][1]:
        return ""
    # null: its input says nothing of it (a plain log, a `--compat` recording of a jHiccup log), not that it does not
    said = [f"the {side} measures {why('measured', what) or clean_text(what)}" if what else
            f"nothing says the {side} does" for side, what in sorted(sides, key=lambda side: not side[1])]
    unless = "" if all(what for _, what in sides) else "unless it does too, "
    return f"{', '.join(said)}: {unless}the two sides measure different things"


def _who(side: dict[str, Any], other: dict[str, Any]) -> str:
    """A side's stream as a pairing note names it: its label, and its datasource and unit where they differ from
    the other side's."""
    differ = [clean_text(side[key]) for key in ("datasource", "unit") if side[key] != other[key]]
    label = f"'{clean_text(side['label'])}'"
    return f"{label} [{', '.join(differ)}]" if differ else label


#: How `_changed` names each effect of a pair's test (`test.effects`).
_EFFECTS = {"shift": "the shift", "events_share": "events' shares", "time_share": "time's shares", "bands": "bands"}


def _changed(pair: dict[str, Any]) -> str:
    """Why a changed pair reads so: its bucket counts differ beyond chance by what matters (`test.effects`), its
    latency moved beyond chance, a band moved, or its rate changed."""
    test, why = pair["test"], []
    if test["p"] < test["alpha"] and test["effects"]:
        what = [_EFFECTS[e] for e in test["effects"]]
        why.append(f"bucket shares beyond chance (G-test p = {test['p']:.2g}) by "
                   + (" and ".join(what) if len(what) < 3 else ", ".join(what[:-1]) + " and " + what[-1]))
    if "shift" in test["effects"] and test["shift_p"] < test["alpha"]:
        why.append(f"shift beyond chance (p = {test['shift_p']:.2g})")
    if pair["bands_moved"]:
        why.append(f"{plural(len(pair['bands_moved']), 'band')} moved")
    rate = pair.get("rate")
    if rate is not None and rate["changed"]:
        why.append(f"rate beyond chance (p = {rate['p']:.2g})")
    return "changed: " + "; ".join(why)


def _unchanged(pair: dict[str, Any]) -> str:
    """Why an unchanged pair reads so: its bucket counts differ by chance, or by too little to matter."""
    test = pair.get("test")
    if test is None or test["df"] == 0 or not test["g"]:
        shift = pair["shift_octaves"]
        if test is not None and shift is not None and test["shift_p"] < test["alpha"] and round(abs(shift), 2) > 0:
            return (f"no change that matters: latency moved {shift:+.2f} octaves ({_times(2 ** shift)}), less than "
                    f"{MIN_SHIFT_OCTAVES:g} octave; same shares in every bucket, same bands")
        return "no change: same shares in every bucket, same bands"
    p = f"G-test p = {test['p']:.2g}"
    if test["p"] >= test["alpha"]:
        return f"no change beyond chance: the bucket shares differ as two samples of one distribution do ({p})"
    return (f"no change that matters: the bucket shares differ beyond chance ({p}) but by less than "
            f"{MIN_SHIFT_OCTAVES:g} octave, {100 * MIN_EVENTS_SHARE_CHANGE:g} point of the events and "
            f"{100 * MIN_TIME_SHARE_CHANGE:g} of the time in any bucket, and no band changed")


def _per_s(rate: float) -> str:
    """Events per second: `1,000/s`, `2.5/s`, `0.0012/s`."""
    return f"{rate:,.0f}/s" if rate >= 100 else f"{format_number(rate)}/s"


def _times(ratio: float) -> str:
    """A ratio as `×1.17`, and one under 0.01 as `×1/293` (not `×0.00`)."""
    if 0 < ratio < 0.01:
        return f"×1/{1 / ratio:,.0f}"
    return f"×{ratio:.2f}"


def _both(b: dict[str, Any], c: dict[str, Any], key: str) -> str:
    """The pair's `key` (datasource, unit): once when both sides have it, else `baseline → candidate`."""
    if b[key] == c[key]:
        return clean_text(c[key])
    return f"{clean_text(b[key])} → {clean_text(c[key])}"


def _delta(delta: float, base: float | None, cand: float | None) -> str:
    """A statistic's change, signed: `+0` when it is float noise (within EPSILON of the values, as the bucket shares
    count no change), not `-0ns`."""
    scale = max(abs(base or 0.0), abs(cand or 0.0))
    if abs(delta) <= EPSILON * scale or delta == 0:
        return "+0"
    return f"{'+' if delta >= 0 else '-'}{format_duration(abs(delta))}"


def _dur(stat: dict[str, Any], side: str) -> str:
    """A statistic's value on one side (`baseline`, `candidate`): `≥low` where it is a lower bound only."""
    return percentile_duration(stat[f"{side}_s"], side in stat.get("open", ()))


def _bound(stat: dict[str, Any]) -> str | None:
    """How a statistic's change holds: exactly (``), at least (`≥`: the candidate's is a lower bound only), at most
    (`≤`: the baseline's is), or not known (None: both are; `_change` leaves out a change whose sign is not known)."""
    return {(): "", ("candidate",): "≥", ("baseline",): "≤"}.get(tuple(stat.get("open", ())))


def _shares(b: dict[str, Any], c: dict[str, Any], key: str) -> str:
    """`1.0% → 4.0% (×4.00)`: a band's share `key` on both sides."""
    ratio = f" ({_times(c[key] / b[key])})" if b[key] > 0 else ""
    return f"{100 * b[key]:.1f}% → {100 * c[key]:.1f}%{ratio}"


def _span(band: dict[str, Any]) -> str:
    return f"{format_duration(band['low_s'])}–{format_duration(band['high_s'])}"
