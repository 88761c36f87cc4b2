"""Vectorized estimates from log2 histograms: percentiles, means, rates."""

from __future__ import annotations

import math

import numpy as np

from latencymap.core.buckets import NSLOTS, TOP_SLOT

PERCENTILES: tuple[float, ...] = (0.50, 0.90, 0.99, 0.999)
#: How reports, gates and diffs name them.
PERCENTILE_NAMES: dict[float, str] = {0.50: "p50", 0.90: "p90", 0.99: "p99", 0.999: "p999"}


def percentile_estimates(counts: np.ndarray, low: np.ndarray, high: np.ndarray,
                         qs: tuple[float, ...] = PERCENTILES, times: np.ndarray | None = None,
                         seen: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Percentiles (seconds) of each histogram row in `counts` (..., slots); NaN for empty rows.

    Inside the bucket holding the target rank the value is interpolated geometrically
    (log-uniform within `[low, high)`), linearly in a bucket that starts at 0. With `times` (the exact seconds
    spent per slot, same shape; NaN where not exact), the bucket's mean is known: its one event is at that mean,
    and more events follow the density of the exponential family that has that mean on the range its count and
    sum allow (`exact_bucket_range`, `_within_mean`), so a bucket whose events all sit near one end is read so,
    and no percentile is past the largest (or below the smallest) value the data allows.
    With `seen` (the smallest and the largest value seen per slot, seconds, each shaped as a row of `counts` or as
    `counts`; NaN or infinite where not known), the bucket is `[smallest, largest]` of its slot instead of
    `[low, high)`, both for the interpolation and for the range the count and sum allow: no percentile lies outside
    the values seen in its bucket.
    The open top slot (`counts` of all NSLOTS slots) has no upper edge: a percentile there lies within the values seen
    in it, past its nominal end as they do; where they are not known it is that slot's low, a lower bound only
    (`open_percentiles` says which).
    """
    counts = np.asarray(counts, dtype=np.float64)
    squeeze = counts.ndim == 1
    if squeeze:
        counts = counts[None, :]
        times = None if times is None else np.asarray(times, dtype=np.float64)[None, :]
    least_seen = most_seen = None
    if seen is not None:
        least_seen, most_seen = (np.broadcast_to(np.asarray(s, dtype=np.float64), counts.shape) for s in seen)
    cum = np.cumsum(counts, axis=-1)
    total = cum[:, -1]
    out = np.full((counts.shape[0], len(qs)), np.nan)
    rows = np.arange(counts.shape[0])
    ok = total > 0
    for j, q in enumerate(qs):
        target = q * total
        idx = _rank_slot(cum, q)
        before = np.where(idx > 0, cum[rows, np.maximum(idx - 1, 0)], 0.0)
        inside = counts[rows, idx]
        frac = np.clip(np.divide(target - before, inside, out=np.zeros_like(target), where=inside > 0), 0.0, 1.0)
        top = (idx == TOP_SLOT) & (counts.shape[-1] == NSLOTS)
        lo, hi = low[idx], np.where(top, np.inf, high[idx])
        known = np.zeros(idx.shape, dtype=bool)
        if least_seen is not None and most_seen is not None:
            lo, hi, known = _seen_range(lo, hi, least_seen[rows, idx], most_seen[rows, idx])
        with np.errstate(divide="ignore", invalid="ignore"):
            geometric = lo * np.power(np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), 1.0), frac)
        value = np.where(lo > 0, geometric, lo + frac * (hi - lo))
        if times is not None:
            value = _within_mean(value, frac, inside, times[rows, idx], lo, hi)
        value = np.where(known, np.clip(value, lo, hi), value)  # float rounding at the ends
        value = np.where(top & ~known, lo, value)  # the open top, its values not known: its low, at least
        out[:, j] = np.where(ok, value, np.nan)
    return out[0] if squeeze else out


def open_percentiles(counts: np.ndarray, qs: tuple[float, ...] = PERCENTILES,
                     seen: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Which of `percentile_estimates`' values (same shape, False for empty rows) are a lower bound only: the rank
    falls in the open top slot and the largest value seen in it is not known, so the value is that slot's low."""
    counts = np.asarray(counts, dtype=np.float64)
    rows = counts if counts.ndim > 1 else counts[None, :]
    out = np.zeros((rows.shape[0], len(qs)), dtype=bool)
    if rows.shape[-1] == NSLOTS:
        cum = np.cumsum(rows, axis=-1)
        known = np.zeros(rows.shape[0], dtype=bool)
        if seen is not None:
            known = _known(*(np.broadcast_to(np.asarray(s, dtype=np.float64), rows.shape)[:, TOP_SLOT] for s in seen))
        for j, q in enumerate(qs):
            out[:, j] = (_rank_slot(cum, q) == TOP_SLOT) & (cum[:, -1] > 0) & ~known
    return out if counts.ndim > 1 else out[0]


def past_finite(events: np.ndarray, over: np.ndarray, qs: tuple[float, ...] = PERCENTILES) -> np.ndarray:
    """Which percentiles ((rows, len(qs)) bool) of rows of `events` events, `over` of them in a rebinned source's
    overflow bucket (`+Inf`: past its largest finite bound, values not known), have their rank among those: past every
    other event, as `outputs.report.source_open` reads the source's own buckets."""
    events, over = np.asarray(events, dtype=np.float64), np.asarray(over, dtype=np.float64)
    ranks = np.asarray(qs, dtype=np.float64)[None, :] * events[:, None]
    past: np.ndarray = (over[:, None] > 0) & (ranks > (events - over)[:, None])
    return past


def overflow_bounds(values: np.ndarray, at_least: np.ndarray, events: np.ndarray, over: np.ndarray,
                    bound: np.ndarray, qs: tuple[float, ...] = PERCENTILES) -> tuple[np.ndarray, np.ndarray]:
    """Percentiles of rows (`values`, seconds, and `at_least`, those a lower bound only; (rows, len(qs))) that fall
    in a rebinned source's overflow bucket (`past_finite`) made its lower bound (`bound` per row, seconds), a lower
    bound only: the rows hold those events in the slot of that bound, as if they were known."""
    past = past_finite(events, over, qs)
    bounds = np.asarray(bound, dtype=np.float64)[:, None]
    return np.where(past, bounds, values), np.asarray(at_least, dtype=bool) | past


def _rank_slot(cum: np.ndarray, q: float) -> np.ndarray:
    """Per row of cumulative counts, the slot holding the rank of quantile `q`."""
    total = cum[:, -1]
    slots: np.ndarray = np.argmax(cum >= (q * total)[:, None] - 1e-9 * total[:, None], axis=1)
    return slots


def seen_bucket(slot: int, low: np.ndarray, high: np.ndarray,
                seen: tuple[np.ndarray, np.ndarray] | None) -> tuple[float, float]:
    """(low, high) of slot `slot`'s values: its bucket narrowed to the values seen in it where they are known (`seen`,
    as `percentile_estimates` takes it, per slot), reaching past the open top slot's nominal end as they do. A bucket
    from 0 keeps 0 as its low: values are read uniform there, and a smallest value seen far below its top would make
    that span many octaves read log-uniform."""
    lo, hi = float(low[slot]), float(high[slot])
    if seen is None:
        return lo, hi
    least, most = (float(np.asarray(s, dtype=np.float64)[slot]) for s in seen)
    top = slot == TOP_SLOT and len(high) == NSLOTS
    narrow_lo, narrow_hi, known = _seen_range(np.array(lo), np.array(math.inf if top else hi), np.array(least),
                                              np.array(most))
    if not known:
        return lo, hi
    return (lo if lo <= 0 else float(narrow_lo)), float(narrow_hi)


def _seen_range(lo: np.ndarray, hi: np.ndarray, least: np.ndarray,
                most: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, known): the bucket `[lo, hi)` narrowed to the values seen in it, `[least, most]`, where both are
    known (finite); `[lo, hi)` elsewhere."""
    known = _known(least, most)
    narrow_lo = np.clip(np.where(known, least, lo), lo, hi)
    narrow_hi = np.clip(np.where(known, most, hi), narrow_lo, hi)
    return narrow_lo, narrow_hi, known


def _known(least: np.ndarray, most: np.ndarray) -> np.ndarray:
    """Where the values seen in a slot are known: its smallest and largest both finite, in order."""
    known: np.ndarray = np.isfinite(least) & np.isfinite(most) & (least <= most)
    return known


def exact_bucket_range(inside: np.ndarray, spent: np.ndarray, lo: np.ndarray,
                       hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(least, most, mean): where the `inside` events of buckets `[lo, hi)` that took `spent` in all can lie.

    Every value is >= lo and < hi, so the largest is at most `spent - (inside - 1) * lo` and the smallest at
    least `spent - (inside - 1) * hi`; `least <= mean <= most` within `[lo, hi]` always (the mean, clipped to
    the bucket, is kept inside when float rounding or sums that disagree with the counts would empty the
    range). One event: least = most = its value. Arrays broadcast; NaN where `inside` is 0 or the sum unknown.
    """
    inside, spent = np.asarray(inside, dtype=np.float64), np.asarray(spent, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = np.clip(spent / np.where(inside > 0, inside, np.nan), lo, hi)
        others = np.maximum(inside - 1.0, 0.0)  # the events besides the one bounded
        least = np.minimum(np.maximum(lo, spent - others * hi), mean)
        most = np.maximum(np.minimum(hi, spent - others * lo), mean)
    return least, most, mean


def _within_mean(value: np.ndarray, frac: np.ndarray, inside: np.ndarray, spent: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray) -> np.ndarray:
    """`value` where a bucket's mean (`spent / inside`) says more: a lone event is at the mean; several, at the
    `frac` quantile of the density proportional to exp(k x) that has that mean (k = 0: uniform) on the range the
    count and sum allow (`exact_bucket_range`)."""
    width = hi - lo
    usable = (inside > 0) & np.isfinite(width) & (width > 0) & np.isfinite(spent)
    least, most, mean = exact_bucket_range(np.where(usable, inside, 1.0), np.where(usable, spent, lo),
                                           np.where(usable, lo, 0.0), np.where(usable, hi, 1.0))
    span = most - least
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.clip((mean - least) / np.where(span > 0, span, 1.0), 0.0, 1.0)
    k = _rate_of_mean(mu)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.where(np.abs(k) < 1e-6, frac, np.log1p(frac * np.expm1(k)) / np.where(k == 0, 1.0, k))
    x = np.clip(np.nan_to_num(x, nan=0.5), 0.0, 1.0)
    x = np.where((inside == 1) | (mu <= 0) | (mu >= 1) | (span <= 0), mu, x)  # one event, or all at an end
    return np.where(usable, np.clip(least + x * span, least, most), value)


def _rate_of_mean(mu: np.ndarray) -> np.ndarray:
    """k such that the density proportional to exp(k x) on [0, 1] has mean `mu` (bisection; |k| <= 500)."""
    a, b = np.full(mu.shape, -500.0), np.full(mu.shape, 500.0)
    for _ in range(60):
        k = (a + b) / 2
        below = _mean_of_rate(k) < mu
        a, b = np.where(below, k, a), np.where(below, b, k)
    rate: np.ndarray = (a + b) / 2
    return rate


def _mean_of_rate(k: np.ndarray) -> np.ndarray:
    """Mean of the density proportional to exp(k x) on [0, 1]: 1 / (1 - e^-k) - 1 / k (1/2 at k = 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = np.abs(k) < 1e-4
        safe = np.where(small, 1.0, k)
        m = -1.0 / np.expm1(-safe) - 1.0 / safe
    return np.where(small, 0.5 + k / 12, m)


def safe_ratio(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    """num / den with NaN where den is 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out: np.ndarray = np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den != 0)
    return out


def column_medians(values: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """`np.median(values, axis=0)` of a 2-D array with rows, the same numbers, without np.median's first-call cost;
    `overwrite`: `values` may be reordered in place (no copy of them is made)."""
    a = np.asarray(values, dtype=np.float64)
    n = len(a)
    if n == 0:
        return np.full(a.shape[1:], math.nan)
    k = n // 2
    if overwrite:
        a.partition(k, axis=0)
        part = a
    else:
        part = np.partition(a, k, axis=0)
    if n % 2:
        middle: np.ndarray = part[k]
        return middle
    # the k-1th value is the largest of those before the kth: one selection (a second costs several times the first)
    mean: np.ndarray = (part[:k].max(axis=0) + part[k]) / 2
    return mean


def median_of(values: np.ndarray | list[float]) -> float:
    """`np.median` of a 1-D array, the same number, without the ~20 ms import of numpy.ma it makes on first use."""
    a = np.asarray(values).ravel()
    n = a.size
    if n == 0 or (a.dtype.kind == "f" and np.isnan(a).any()):
        return math.nan
    k = n // 2
    part = np.partition(a, k)
    if n % 2:
        return float(part[k])
    pair = np.array([part[:k].max(), part[k]])  # the k-1th and kth values, as `column_medians` reads them
    if pair.dtype.kind != "f":
        pair = pair.astype(np.float64)
    return float((pair[0] + pair[1]) / 2)  # in the array's float type, as np.median's mean is
