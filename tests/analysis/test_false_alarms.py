"""Synthetic streams over many seeds: each finds what was planted, nothing else (figures recomputed from raw)."""

from __future__ import annotations

import numpy as np
import pytest
from diagnosis_support import UNIMODAL

from latencymap.analysis import synthetic
from latencymap.analysis.diagnosis import Diagnosis, diagnose
from latencymap.analysis.thresholds import Thresholds

SEEDS = range(25)


def run(s: synthetic.Stream, width: float = 1.0, **kw: object) -> Diagnosis:
    counts, time, starts, ends = synthetic.columns(s, width)
    return diagnose(counts, time, synthetic.LOW_S, synthetic.HIGH_S, starts, ends, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", SEEDS)
def test_unimodal_says_nothing_but_its_mode(seed: int) -> None:
    s = synthetic.unimodal(seed)
    d = run(s)
    assert not d.bimodal and d.episodes == [] and d.drift is None
    assert d.findings == []
    assert UNIMODAL.match(d.summary_lines()[0]) and len(d.summary_lines()) == 1
    # The tail measure is still there for gates, and it is no minority: the share of the slowest raw latencies that
    # spend half of the time.
    assert d.tail is not None
    slowest = np.sort(s.latencies)[::-1]
    half = float(np.searchsorted(np.cumsum(slowest), slowest.sum() / 2) / len(slowest))
    assert d.tail.events_share == pytest.approx(half, abs=0.015) and half > 0.10


@pytest.mark.parametrize("seed", SEEDS)
def test_bimodal_finds_the_slow_band_and_only_it(seed: int) -> None:
    s = synthetic.bimodal(seed)
    d = run(s)
    assert d.bimodal and d.episodes == [] and d.drift is None
    (band,) = [f for f in d.findings if f.kind == "band"]
    assert band.low_s is not None and band.high_s is not None
    inside = (s.latencies >= band.low_s) & (s.latencies < band.high_s)
    slow = s.latencies > 300e-6 * 4  # the fast population hardly reaches two octaves above its median
    assert band.events_share == pytest.approx(float(inside.mean()), abs=0.005)
    assert band.events_share == pytest.approx(float(slow.mean()), abs=0.01)
    assert band.time_share == pytest.approx(float(s.latencies[slow].sum() / s.latencies.sum()), abs=0.02)


@pytest.mark.parametrize("seed", SEEDS)
def test_drift_is_found_with_its_size(seed: int) -> None:
    s = synthetic.drifting(seed, octaves=2.0)
    d = run(s)
    assert not d.bimodal and d.stalls == []
    assert d.drift is not None and [f.kind for f in d.findings] == ["drift"]
    tenth = len(s.latencies) // 10
    moved = np.log2(np.median(s.latencies[-tenth:]) / np.median(s.latencies[:tenth]))
    assert d.drift.octaves == pytest.approx(moved * 10 / 9, abs=0.3)  # fitted end to end vs tenths' centres


@pytest.mark.parametrize("seed", range(10))
def test_a_lasting_jump_is_a_shift_not_a_drift(seed: int) -> None:
    s = synthetic.shifted(seed, octaves=1.5)
    d = run(s)
    assert d.drift is not None and [f.kind for f in d.findings] == ["shift"]
    half = len(s.latencies) // 2
    jumped = np.log2(np.median(s.latencies[half:]) / np.median(s.latencies[:half]))
    assert d.drift.octaves == pytest.approx(jumped, abs=0.2)
    assert d.drift.at is not None and abs(d.drift.at - s.times[half]) <= 1.0  # the column of the jump


@pytest.mark.parametrize("seed", SEEDS)
def test_stall_is_named_with_when_and_how_much(seed: int) -> None:
    s = synthetic.stalled(seed)
    d = run(s)
    (stall,) = d.stalls
    (start, end), = s.stalls
    # Its times are its columns'; the waits that began before them are said as such, with bounds that hold.
    assert start < stall.start and stall.began_before is not None and end <= stall.end
    least, most = stall.began_before
    assert stall.start - most <= start <= stall.start - least
    assert stall.end - stall.start <= end - start + 3.0
    far = s.latencies > 0.5
    assert stall.events == far.sum()
    assert stall.time_s == pytest.approx(float(s.latencies[far].sum()), rel=1e-9)
    assert stall.time_share == pytest.approx(float(s.latencies[far].sum() / s.latencies.sum()), rel=1e-9)
    assert not d.drift and [e.kind for e in d.episodes] == ["stall"]
    line = next(x for x in d.summary_lines() if x.startswith(("stall col ", "stall cols ")))
    assert f"{int(far.sum())} event" in line and "of all the time" in line


def test_thresholds_are_tunable() -> None:
    s = synthetic.stalled(1)
    assert run(s).stalls
    assert run(s, thresholds=Thresholds(stall_gap_octaves=30.0)).stalls == []
    u = synthetic.unimodal(1)
    assert [f.kind for f in run(u, thresholds=Thresholds(tail_max_events_share=1.0)).findings] == ["tail"]


def test_steady_thin_far_band_is_a_band_not_stalls() -> None:
    rng = np.random.default_rng(4)
    s = synthetic.unimodal(4, sigma=0.3)
    far = rng.random(len(s.latencies)) < 0.004  # 0.4% of the events, all along, at ~1 s
    s.latencies = np.where(far, rng.lognormal(0.0, 0.1, len(far)), s.latencies)
    d = run(s)
    assert d.stalls == []
    (slow,) = [b for b in d.bands if b.low_s <= 1.0 < b.high_s]
    assert slow.events_share == pytest.approx(float(far.mean()), abs=1e-9)
    assert d.bimodal and [f.kind for f in d.findings][:1] == ["band"]


@pytest.mark.parametrize("seed", range(5))
def test_far_waits_in_every_column_are_no_stall_not_even_in_one_column(seed: int) -> None:
    """A stall says when: a single column (or far waits in every column) tells nothing of the sort."""
    rng = np.random.default_rng(seed)
    s = synthetic.unimodal(seed, sigma=0.3)
    s.latencies[rng.choice(len(s.latencies), 12, replace=False)] = 1.5  # a dozen 1.5 s waits
    span = float(s.times.max() - s.times.min()) + 1.0
    whole = run(s, width=span)  # one column holds everything
    assert whole.stalls == [] and [e for e in whole.episodes if e.kind == "stall"] == []
    assert any(b.low_s <= 1.5 < b.high_s for b in whole.bands)  # the far waits are still a band of their own
