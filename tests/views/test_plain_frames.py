"""A renderer reused frame after frame draws exactly what a fresh one draws for the same history (and rows)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from latencymap.cli.common import REGISTRY
from latencymap.core.accumulator import Accumulator
from latencymap.core.model import Interval, StreamId
from latencymap.flow.pipeline import input_flow
from latencymap.views.options import ViewOptions
from latencymap.views.plain import PlainRenderer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def synthetic_items(n: int) -> list[Interval]:
    rng = np.random.default_rng(5)
    a, b = StreamId("a", "bpf", "microsec"), StreamId("b", "oracle", "millisec")
    out = []
    for i in range(n):
        counts = np.zeros(64, dtype=np.int64)
        counts[rng.integers(3, 30, 4)] = rng.integers(0, 10**rng.integers(1, 7), 4)
        spent = None if i % 3 else counts * 1e-5
        out.append(Interval(a if i % 2 else b, 100.0 + i, 101.0 + i, counts, spent, reset=i % 17 == 0))
    return out


@pytest.mark.parametrize("opts", [
    ViewOptions(),
    ViewOptions(num_records=7, color=False),
    ViewOptions(num_records=12, frequency_maxval=50.0, intensity_maxval=0.001, min_bucket=4, max_bucket=12),
])
@pytest.mark.parametrize("history", [1000, 9])
def test_incremental_frames_equal_fresh_frames(opts: ViewOptions, history: int) -> None:
    items = list(input_flow([str(FIXTURES / "pylatencymap" / "example_latency_data.txt")], REGISTRY))
    items += synthetic_items(60)
    acc = Accumulator(cap=history)
    reused = PlainRenderer(opts)
    for item in items:
        acc.add([item])
        fresh = PlainRenderer(opts)
        fresh.fits = copy.deepcopy(reused.fits)  # the rows fitted so far are state, not a cache
        assert reused.render(acc) == fresh.render(acc)
