"""Synthetic latency streams with known findings: the false-alarm suite's tests and bench draw from here.

Every generator returns raw events, `(times, latencies)` in seconds (a `<time> <latency>` pair per event, the
`raw` format's input), so a test can bin them itself or feed them to the real reader. `columns` bins events
into fixed-width columns as (counts, time, starts, ends) in nanosecond slots, the way the sources do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from latencymap.core.buckets import NSLOTS, bin_values, bounds_seconds

#: Slot bounds of the nanosecond streams `columns` builds.
LOW_S, HIGH_S = bounds_seconds("raw", "nanosec")


@dataclass
class Stream:
    """Raw events of one synthetic stream and what a diagnosis should find in them."""

    name: str
    times: np.ndarray
    latencies: np.ndarray
    #: Bimodal by the documented rule (a band with >= 3% of the events or >= 10% of the time).
    bimodal: bool = False
    #: (start, end) times of planted stalls; a stall episode must cover each.
    stalls: list[tuple[float, float]] = field(default_factory=list)
    drift: bool = False


def _clocked(rng: np.random.Generator, latencies: np.ndarray, think_s: float, t0: float) -> np.ndarray:
    """Event end times of a loop that waits `latencies[i]` then works ~`think_s`."""
    work = rng.exponential(think_s, len(latencies)) if think_s > 0 else np.zeros(len(latencies))
    return t0 + np.cumsum(latencies + work)


def unimodal(seed: int, n: int = 20_000, median_s: float = 300e-6, sigma: float | None = None,
             t0: float = 1000.0) -> Stream:
    """One lognormal population (`sigma` in natural-log units, drawn in 0.2..1.0 when None)."""
    rng = np.random.default_rng(seed)
    sigma = float(rng.uniform(0.2, 1.0)) if sigma is None else sigma
    lat = rng.lognormal(np.log(median_s), sigma, n)
    return Stream(f"unimodal s={sigma:.2f}", _clocked(rng, lat, 2e-3, t0), lat)


def bimodal(seed: int, n: int = 20_000, t0: float = 1000.0, shares: tuple[float, float] = (0.03, 0.2),
            octaves: tuple[float, float] = (4.0, 6.0)) -> Stream:
    """Cache hits ~300 µs and a 3-20% share (`shares`) of misses 4-6 octaves (`octaves`) slower."""
    rng = np.random.default_rng(seed)
    share = float(rng.uniform(*shares))
    slow = rng.random(n) < share
    ratio = 2.0 ** rng.uniform(*octaves)
    lat = np.where(slow, rng.lognormal(np.log(300e-6 * ratio), 0.3, n), rng.lognormal(np.log(300e-6), 0.3, n))
    # Expected bimodal by the documented rule: the slow band holds >= 3% of the events or >= 10% of the time.
    meets = slow.mean() >= 0.03 or lat[slow].sum() >= 0.10 * lat.sum()
    return Stream(f"bimodal {100 * share:.0f}% x{ratio:.0f}", _clocked(rng, lat, 2e-3, t0), lat, bimodal=bool(meets))


def drifting(seed: int, n: int = 20_000, octaves: float = 2.0, t0: float = 1000.0) -> Stream:
    """One lognormal population whose median grows by `octaves` from the first event to the last."""
    rng = np.random.default_rng(seed)
    ramp = np.exp2(np.linspace(0.0, octaves, n))
    lat = rng.lognormal(np.log(300e-6), 0.3, n) * ramp
    return Stream(f"drifting +{octaves:g} oct", _clocked(rng, lat, 2e-3, t0), lat, drift=True)


def shifted(seed: int, n: int = 20_000, octaves: float = 1.0, t0: float = 1000.0) -> Stream:
    """One lognormal population whose median jumps by `octaves` halfway through, and stays."""
    rng = np.random.default_rng(seed)
    lat = rng.lognormal(np.log(300e-6), 0.3, n) * np.where(np.arange(n) < n // 2, 1.0, 2.0 ** octaves)
    return Stream(f"shifted +{octaves:g} oct", _clocked(rng, lat, 2e-3, t0), lat)


def stalled(seed: int, n: int = 20_000, waits: int | None = None, t0: float = 1000.0,
            sigma: float | None = None) -> Stream:
    """A lognormal stream with one stall: 1-3 waits of ~1.5 s next to each other, at a random point."""
    rng = np.random.default_rng(seed)
    sigma = float(rng.uniform(0.2, 0.6)) if sigma is None else sigma
    lat = rng.lognormal(np.log(300e-6), sigma, n)
    k = int(rng.integers(n // 5, 4 * n // 5))
    waits = int(rng.integers(1, 4)) if waits is None else waits
    lat[k:k + waits] = rng.lognormal(np.log(1.5), 0.1, waits)
    times = _clocked(rng, lat, 2e-3, t0)
    start = float(times[k] - lat[k])
    return Stream(f"stalled {waits}x1.5s", times, lat, stalls=[(start, float(times[k + waits - 1]))])


def dataloader(seed: int = 0, n: int = 3000, stall_at: float = 0.5, t0: float = 1000.0) -> Stream:
    """The issue's DataLoader: waits ~1 ms, every 10th item ~80 ms, one stall of two ~1.5 s waits."""
    rng = np.random.default_rng(seed)
    lat = rng.lognormal(np.log(1e-3), 0.25, n)
    lat[::10] = rng.lognormal(np.log(80e-3), 0.15, len(lat[::10]))
    k = int(n * stall_at) | 1  # an odd index: not one of the 80 ms items
    lat[k:k + 2] = rng.lognormal(np.log(1.5), 0.05, 2)
    times = _clocked(rng, lat, 5e-3, t0)
    return Stream("dataloader", times, lat, bimodal=True, stalls=[(float(times[k] - lat[k]), float(times[k + 1]))])


def columns(stream: Stream, width_s: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(counts, time in s, starts, ends) of the stream's events in columns of `width_s`, nanosecond slots."""
    col = np.floor((stream.times - stream.times.min()) / width_s).astype(np.int64)
    ncols = int(col.max()) + 1
    counts = np.zeros((ncols, NSLOTS), dtype=np.int64)
    time = np.zeros((ncols, NSLOTS), dtype=np.float64)
    order = np.argsort(col, kind="stable")
    bounds = np.searchsorted(col[order], np.arange(ncols + 1))
    for j in range(ncols):
        c, s = bin_values(stream.latencies[order[bounds[j]:bounds[j + 1]]] * 1e9)
        counts[j], time[j] = c, s * 1e-9
    starts = stream.times.min() + width_s * np.arange(ncols, dtype=np.float64)
    return counts, time, starts, starts + width_s


def ranks(seed: int, n: int = 4, events: int = 4000, slow: int | None = None, factor: float = 1.0,
          stall: int | None = None, run: str = "train", phase: str = "data_wait") -> dict[str, Stream]:
    """Peer streams `run/rank<k>/phase`: lognormal waits; rank `slow` x `factor`; rank `stall` gets a stall."""
    rng = np.random.default_rng(seed)
    out = {}
    for k in range(n):
        s = stalled(int(rng.integers(1 << 31)), events, waits=2, sigma=0.4) if k == stall else \
            unimodal(int(rng.integers(1 << 31)), events, sigma=0.4, t0=1000.0 + float(rng.uniform(0, 0.5)))
        if k == slow:
            s.latencies = s.latencies * factor
        if k != stall:
            s.stalls = []
        out[f"{run}/rank{k}/{phase}"] = s
    return out
