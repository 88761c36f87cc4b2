"""`latencymap replay --start/--end`: a window that holds no interval says where the recording's intervals are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import Recorder


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "latencymap", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def recording(path: Path, n: int = 20) -> Path:
    """`n` one-second intervals of one stream, recorded."""
    recorder = Recorder(str(path))
    for i in range(n):
        recorder.write(Interval(StreamId("io", "bpf", "microsec"), 1_700_000_000.0 + i, 1_700_000_001.0 + i,
                                np.full(64, 3, dtype=np.int64)))
    recorder.close()
    return path


def test_a_window_past_the_end_says_where_the_intervals_are_and_fails(tmp_path: Path) -> None:
    # It said `latencymap: no data yet` and exited 0, as if the recording were empty.
    rec = recording(tmp_path / "rec.txt")
    done = cli("replay", "--max", "--plain", "--once", "--start", "1000", str(rec))
    assert done.returncode == 1, done.stderr
    assert f"latencymap: {rec}: no interval from 1000 s on; the recording's intervals cover 0 s to 20 s" in done.stderr
    done = cli("replay", "--max", "--plain", "--once", "--start", "30.5", "--end", "40", str(rec))
    assert done.returncode == 1
    assert "no interval between 30.5 s and 40 s; the recording's intervals cover 0 s to 20 s" in done.stderr
    done = cli("replay", "--max", "--emit", "--start", "1000", str(rec))
    assert done.returncode == 1 and "no interval from 1000 s on" in done.stderr and "<begin record>" not in done.stdout


def test_a_window_that_holds_intervals_is_replayed_as_before(tmp_path: Path) -> None:
    rec = recording(tmp_path / "rec.txt")
    done = cli("replay", "--max", "--emit", "--start", "15", str(rec))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("<begin record>") == 5 and "no interval" not in done.stderr
    done = cli("replay", "--max", "--plain", "--once", str(rec))
    assert done.returncode == 0 and "no interval" not in done.stderr


def test_an_empty_recording_is_not_said_to_miss_the_window(tmp_path: Path) -> None:
    rec = recording(tmp_path / "rec.txt", n=0)
    done = cli("replay", "--max", "--plain", "--once", "--start", "1000", str(rec))
    assert done.returncode == 0 and "no interval" not in done.stderr


def test_replay_reads_another_input_with_its_format_options(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1.5 3.0\n2.0 5.0\n3.5 120.0\n4.0 7.0\n")  # time (s) and latency: the raw format's pairs
    done = cli("replay", "--input-format", "raw", "--unit", "us", "--max", "--plain", "--once", str(pairs))
    assert done.returncode == 0, done.stderr
    assert "Columns: 4" in done.stdout and "unit: microsec" in done.stdout
    assert "replay trace.zst --speed 10" in cli("replay", "--help").stdout  # its own examples
