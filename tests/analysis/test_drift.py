"""Drift and shift: the medians they report are the columns' medians read as the report reads its percentiles."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latencymap.analysis.diagnosis import diagnose
from latencymap.cli.main import main
from latencymap.core.buckets import bin_values, bounds_seconds

LOW, HIGH = bounds_seconds("bpf", "nanosec")


def shift_20_to_60ms(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(times s, latencies s): 50/s for 60 s, uniform 16–24 ms for the first 30 s, then 48–72 ms."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 60, 3000))
    return t, np.where(t < 30, rng.uniform(16e-3, 24e-3, 3000), rng.uniform(48e-3, 72e-3, 3000))


def test_a_shift_reports_the_medians_each_side_has() -> None:
    """Exact times and the values seen say where inside its bucket each median lies: counts alone read 20 ms → 60 ms
    as 22.7 ms → 52.6 ms, pulled towards each other (the bucket edges are 16.4, 32.8 and 65.5 ms)."""
    t, v = shift_20_to_60ms()
    cols = np.minimum(t.astype(int), 59)
    counts, times = np.zeros((60, len(LOW))), np.zeros((60, len(LOW)))
    for j in range(60):
        c, s = bin_values(v[cols == j] * 1e9)
        counts[j], times[j] = c, s * 1e-9
    slot = np.searchsorted(HIGH, v, side="right")
    least, most = np.full(len(LOW), np.nan), np.full(len(LOW), np.nan)
    for k in np.unique(slot):
        least[k], most[k] = v[slot == k].min(), v[slot == k].max()
    starts = 1_800_000_000.0 + np.arange(60.0)
    d = diagnose(counts, times, LOW, HIGH, starts, starts + 1, seen_min=least, seen_max=most)
    assert d.drift is not None and d.drift.kind == "shift" and d.drift.at_col == 30
    before, after = float(np.median(v[t < 30])), float(np.median(v[t >= 30]))
    assert d.drift.first_median_s == pytest.approx(before, rel=0.02)
    assert d.drift.last_median_s == pytest.approx(after, rel=0.02)
    assert d.drift.octaves == pytest.approx(np.log2(after / before), abs=0.05)


def test_the_report_says_the_shift_with_the_true_medians(tmp_path: Path) -> None:
    """Raw `<time> <latency>` pairs through `latencymap report`: the shift line's medians are each side's."""
    t, v = shift_20_to_60ms()
    path = tmp_path / "shift.txt"
    path.write_text("".join(f"{1_800_000_000 + a:.6f} {b * 1e6:.3f}\n" for a, b in zip(t, v, strict=True)))
    done = CliRunner().invoke(main, ["report", str(path)])
    assert done.exit_code == 0, done.output
    line = next(x for x in done.output.splitlines() if "shift at col" in x)
    m = re.search(r"the median went ([\d.]+)ms → ([\d.]+)ms", line)
    assert m is not None, line
    assert float(m.group(1)) == pytest.approx(np.median(v[t < 30]) * 1e3, rel=0.02)
    assert float(m.group(2)) == pytest.approx(np.median(v[t >= 30]) * 1e3, rel=0.02)
    data = json.loads(CliRunner().invoke(main, ["report", "--format", "json", str(path)]).output)
    (stream,) = data["streams"]
    (shift,) = [f for f in stream["findings"] if f["kind"] == "shift"]
    assert shift["where"]["first_col"] == 30
