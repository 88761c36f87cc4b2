"""Issue 20's streams as `<time> <latency>` raw pairs through the real `latencymap report`: what it must say."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from diagnosis_support import UNIMODAL

from latencymap.analysis import synthetic
from latencymap.cli.main import main


def write_pairs(path: Path, s: synthetic.Stream) -> Path:
    """The stream as `<time s> <latency ms>` lines, the raw format's pairs."""
    path.write_text("".join(f"{t:.6f} {v * 1e3:.6f}\n" for t, v in zip(s.times, s.latencies, strict=True)))
    return path


def report(path: Path, fmt: str = "json") -> str:
    r = CliRunner().invoke(main, ["report", "--format", fmt, "--unit", "ms", "--interval", "1", str(path)])
    assert r.exit_code == 0, r.output
    return r.output


def test_unimodal_lognormal_is_one_band_with_no_trivia(tmp_path: Path) -> None:
    s = synthetic.unimodal(7, sigma=0.6)
    (stream,) = json.loads(report(write_pairs(tmp_path / "uni.txt", s)))["streams"]
    assert stream["bimodal"] is False and stream["episodes"] == []
    assert not any(f["kind"] == "tail" and f["events_share"] > 0.5 for f in stream["findings"])
    assert stream["findings"] == []
    # The tail measure (kept for gates): the share of the slowest events that spend half of the time, as the raw
    # latencies say it (about 1 - Phi(0.6), 27%), no minority.
    tail = stream["tail"]
    slowest = np.sort(s.latencies)[::-1]
    assert tail["events_share"] == pytest.approx(np.searchsorted(np.cumsum(slowest), slowest.sum() / 2) / len(slowest),
                                                 abs=0.01)
    assert tail["events_share"] > 0.2 and tail["time_share"] == 0.5
    text = report(tmp_path / "uni.txt", "text")
    assert UNIMODAL.search(text) and "tail" not in text and "episode" not in text


def test_dataloader_stall_is_an_episode_and_no_band_spans_80ms_and_1_5s(tmp_path: Path) -> None:
    s = synthetic.dataloader(0)
    (stream,) = json.loads(report(write_pairs(tmp_path / "dl.txt", s)))["streams"]
    # The stall, from the raw pairs: the waits over 1 s, logged at their end.
    stall = s.latencies > 1.0
    assert stall.sum() == 2
    began, ended = float((s.times - s.latencies)[stall].min()), float(s.times[stall].max())
    covering = [e for e in stream["episodes"] if e["start"] - (e["began_before_s"] or [0, 0])[1] <= began
                and ended <= e["end"]]
    assert [e["kind"] for e in covering] == ["stall"]
    (e,) = covering
    assert began <= e["start"] - e["began_before_s"][0]  # the waits began before its columns, as it says
    assert e["events"] == 2 and e["end"] - e["start"] < (ended - began) + 3.0
    total = float(s.latencies.sum())
    assert abs(e["time_s"] - s.latencies[stall].sum()) < 1e-5 * stall.sum()  # values were written in µs
    assert abs(e["time_share"] - s.latencies[stall].sum() / total) < 1e-4
    # No band holds both an 80 ms wait and a 1.5 s one.
    slow80 = float(np.median(s.latencies[::10]))
    for band in stream["bands"]:
        assert not (band["low_s"] <= slow80 < band["high_s"] and band["low_s"] <= 1.5 < band["high_s"])
    assert any(b["low_s"] <= slow80 < b["high_s"] for b in stream["bands"])
    assert any(b["low_s"] <= 1.5 < b["high_s"] for b in stream["bands"])
    finding = next(f for f in stream["findings"] if f["kind"] == "stall")
    assert finding["where"]["start"] == e["start"] and finding["why"]
    text = report(tmp_path / "dl.txt", "text")
    assert "stall cols " in text and "2 events of " in text


def test_a_slow_phase_of_five_seconds_in_a_16s_stream_is_said_with_its_columns_and_times(tmp_path: Path) -> None:
    """A loop whose calls take 50 ms instead of 11 ms from t+5s to t+10s, 16 s in all: the report said only
    'bimodal ... 12% in 32ms–64ms', with no time to pick a flame graph's range from (20 s or more said the episode)."""
    rng = np.random.default_rng(0)
    at, lines = 0.0, []
    while at < 16:
        value = rng.uniform(50, 51) if 5 <= at < 10 else rng.uniform(10, 12)
        at += (value + 5) / 1000
        lines.append(f"{at:.4f} {value:.3f}\n")
    path = tmp_path / "phase.txt"
    path.write_text("".join(lines))
    (stream,) = json.loads(report(path))["streams"]
    assert [(e["kind"], e["first_col"], e["last_col"]) for e in stream["episodes"]] == [("move", 5, 9)]
    assert "episode cols 5–9 (t+5s–t+10s): latency moved +2.3 octaves: 8ms–16ms → 32ms–64ms" in report(path, "text")
