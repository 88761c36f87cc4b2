"""What the analysis tests share."""

from __future__ import annotations

import re

import numpy as np

from latencymap.core.accumulator import Accumulator
from latencymap.core.buckets import bin_values

#: A unimodal summary: all events, or all but a stray few outside the core range the band is named by (a share short
#: of all is never written 100%).
UNIMODAL = re.compile(r"unimodal: (100|99(\.\d+)?)% of events in ")


def paused(pauses: list[int], ncols: int = 120, seed: int = 3) -> tuple[np.ndarray, ...]:
    """~1 ms requests at 200/s; in each column of `pauses` a 0.5 s pause makes the ~100 requests arriving during it
    wait up to 0.5 s (the GC pause shape)."""
    rng = np.random.default_rng(seed)
    counts, times = [], []
    for j in range(ncols):
        values = rng.lognormal(np.log(1e6), 0.3, 200)
        if j in pauses:
            values = np.r_[values, rng.uniform(10e6, 500e6, 100)]
        c, s = bin_values(values)
        counts.append(c)
        times.append(s * 1e-9)
    starts = 1_700_000_000.0 + np.arange(ncols, dtype=np.float64)
    return np.array(counts), np.array(times), starts, starts + 1.0


def day_long_accumulator(n: int = 86_400) -> Accumulator:
    """One stream of `n` one-second columns of 6 buckets (a day by default), appended as its history takes them."""
    from latencymap.core.model import StreamId

    rng = np.random.default_rng(5)
    counts = np.zeros((n, 64), dtype=np.int64)
    counts[:, 5:11] = rng.poisson([5, 40, 80, 40, 10, 1], (n, 6))
    acc = Accumulator()
    end = 1_795_000_001.0 + np.arange(n, dtype=np.float64)
    ones, no = np.ones(n), np.zeros(n, dtype=bool)
    acc.history(StreamId("day", "bpf", "microsec")).extend_columns(counts, None, None, end - ones, end, ones, no, no,
                                                                   "")
    return acc
